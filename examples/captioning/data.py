"""Scenes of handwritten digits, their captions and gold boxes: raw glyphs -> NumPy -> batches.

A scene is a ``(height, width)`` uint8 image holding 1 to 5 digit glyphs at
random positions. The glyphs never share a pixel column (at least one empty
column between two footprints), so the caption, the digits in reading order
(left to right), is never ambiguous. Each digit's gold box is the bounding
box of its inked pixels, ``(top, left, bottom, right)``, bottom and right
exclusive. ``make_scenes`` is deterministic from its seed.

The glyphs: scikit-learn's bundled copy of the UCI optical digits (1,797
8x8 images, 0..16; no download) by default, or MNIST (``keras.datasets``'s
``mnist.npz``: downloaded once, or a local copy). ``split_glyphs`` holds a
fixed share of each digit's glyphs out for validation and for test: test
scenes are made only of glyphs training never saw.

Token ids: ``PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3`` (the NMT
example's), digit ``d`` is ``d + DIGIT_OFFSET``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from examples.captioning.config import Config
from examples.common.batches import ArrayBatches

PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3
DIGIT_OFFSET = 4
VOCABULARY_SIZE = DIGIT_OFFSET + 10
TOKENS = ["", "<unk>", "<s>", "</s>", *"0123456789"]  # what each id prints as
SPLITS = {"train": 0.7, "validation": 0.15, "test": 0.15}


class Glyphs(NamedTuple):
    images: np.ndarray  # (N, g, g) uint8, ink bright on 0
    labels: np.ndarray  # (N,) int64 digits


class Scenes(NamedTuple):
    images: np.ndarray  # (N, H, W) uint8
    digits: np.ndarray  # (N, max_digits) int64, -1 after the caption
    boxes: np.ndarray  # (N, max_digits, 4) int64 (top, left, bottom, right), -1 after
    counts: np.ndarray  # (N,) digits per scene


# ------------------------------------------------------------------ glyphs
def _resize(images: np.ndarray, size: int) -> np.ndarray:
    """``(N, h, w)`` uint8 -> ``(N, size, size)``, box-filtered (Pillow)."""
    if images.shape[1:] == (size, size):
        return images
    from PIL import Image  # noqa: PLC0415  (Pillow comes with matplotlib)

    resample = Image.Resampling.BOX
    return np.stack(
        [np.asarray(Image.fromarray(image).resize((size, size), resample)) for image in images]
    )


def load_glyphs(config: Config) -> Glyphs:
    """Every glyph of ``config.digits``, resized to ``glyph_size``; uint8, ink bright."""
    if config.digits == "sklearn":
        from sklearn.datasets import load_digits  # noqa: PLC0415

        bunch = load_digits()
        images = np.round(bunch.images * (255 / 16)).astype("uint8")  # 0..16 -> 0..255
        labels = bunch.target.astype("int64")
    else:
        if config.mnist_path is not None:
            with np.load(config.mnist_path) as file:
                images = np.concatenate([file["x_train"], file["x_test"]])
                labels = np.concatenate([file["y_train"], file["y_test"]]).astype("int64")
        else:
            import keras  # noqa: PLC0415

            (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
            images = np.concatenate([x_train, x_test])
            labels = np.concatenate([y_train, y_test]).astype("int64")
    return Glyphs(_resize(images.astype("uint8"), config.glyph_size), labels)


def split_glyphs(glyphs: Glyphs, seed: int) -> dict[str, Glyphs]:
    """Each digit's glyphs shuffled and cut by ``SPLITS``: disjoint train/validation/test."""
    rng = np.random.default_rng([seed, 1])
    parts: dict[str, list[np.ndarray]] = {name: [] for name in SPLITS}
    for digit in range(10):
        rows = rng.permutation(np.flatnonzero(glyphs.labels == digit))
        train_end = round(len(rows) * SPLITS["train"])
        validation_end = train_end + round(len(rows) * SPLITS["validation"])
        parts["train"].append(rows[:train_end])
        parts["validation"].append(rows[train_end:validation_end])
        parts["test"].append(rows[validation_end:])
    return {
        name: Glyphs(
            glyphs.images[np.sort(np.concatenate(rows))],
            glyphs.labels[np.sort(np.concatenate(rows))],
        )
        for name, rows in parts.items()
    }


def ink_box(glyph: np.ndarray) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` of a glyph's nonzero pixels (exclusive ends)."""
    rows, cols = np.flatnonzero(glyph.any(axis=1)), np.flatnonzero(glyph.any(axis=0))
    if not len(rows):
        return 0, 0, 0, 0
    return int(rows[0]), int(cols[0]), int(rows[-1]) + 1, int(cols[-1]) + 1


# ------------------------------------------------------------------ scenes
def place(count: int, glyph_size: int, height: int, width: int, rng: np.random.Generator):
    """``(tops, lefts)`` of ``count`` glyphs, left to right, at least one empty column apart.

    The lefts are ``c_i + i * glyph_size`` for ``count`` sorted distinct
    ``c_i`` drawn from ``range(width - count * glyph_size + 1)``: every
    placement with gaps of at least one column is equally likely.
    """
    free = width - count * glyph_size + 1
    cuts = np.sort(rng.choice(free, size=count, replace=False))
    lefts = cuts + np.arange(count) * glyph_size
    tops = rng.integers(0, height - glyph_size + 1, size=count)
    return tops, lefts


def _stroke(canvas: np.ndarray, taken: np.ndarray, rng: np.random.Generator) -> None:
    """One short straight stroke (3 to 6 pixels) on pixels no glyph footprint covers."""
    height, width = canvas.shape
    length = int(rng.integers(3, 7))
    dy, dx = [(0, 1), (1, 0), (1, 1), (1, -1)][rng.integers(0, 4)]
    y, x = int(rng.integers(0, height)), int(rng.integers(0, width))
    ys, xs = y + dy * np.arange(length), x + dx * np.arange(length)
    inside = (ys >= 0) & (ys < height) & (xs >= 0) & (xs < width)
    ys, xs = ys[inside], xs[inside]
    if len(ys) and not taken[ys, xs].any():
        canvas[ys, xs] = np.maximum(canvas[ys, xs], 200)


def distort(glyph: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random affine copy of a ``(g, g)`` uint8 glyph, about its centre, in its footprint.

    Rotation up to 12 degrees, scale 0.85 to 1.1 on each axis, shear up to
    0.2 and a shift up to half a pixel, resampled bilinearly (``scipy.ndimage``);
    what interpolation leaves below 10% of full ink is cleared, so the ink box
    stays tight.
    """
    from scipy import ndimage  # noqa: PLC0415  (scipy comes with scikit-learn)

    angle = np.deg2rad(rng.uniform(-12, 12))
    scale = rng.uniform(0.85, 1.1, size=2)
    shear = rng.uniform(-0.2, 0.2)
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    forward = rotation @ np.array([[1.0, shear], [0.0, 1.0]]) @ np.diag(scale)
    inverse = np.linalg.inv(forward)  # output pixel -> input pixel
    centre = (np.array(glyph.shape) - 1) / 2
    offset = centre - inverse @ (centre + rng.uniform(-0.5, 0.5, size=2))
    out = ndimage.affine_transform(glyph.astype("float64"), inverse, offset, order=1)
    return np.where(out < 25.5, 0, np.round(out)).clip(0, 255).astype("uint8")


def make_scenes(
    glyphs: Glyphs, count: int, seed: int, config: Config, augment: bool = False
) -> Scenes:
    """``count`` scenes of ``glyphs`` (see the module doc), the same for the same seed.

    With ``augment``, each placed glyph is a fresh ``distort``-ed copy (the
    same scenes otherwise: the distortions draw from their own stream).
    """
    config.check_scenes()
    rng = np.random.default_rng([seed, 2])
    warp = np.random.default_rng([seed, 3])  # its own stream: the same scenes, glyphs distorted
    size, most = glyphs.images.shape[1], config.max_digits
    images = np.zeros((count, config.height, config.width), "uint8")
    digits = np.full((count, most), -1, "int64")
    boxes = np.full((count, most, 4), -1, "int64")
    counts = rng.integers(config.min_digits, most + 1, size=count)
    for n in range(count):
        chosen = rng.integers(0, len(glyphs.labels), size=counts[n])
        tops, lefts = place(int(counts[n]), size, config.height, config.width, rng)
        taken = np.zeros((config.height, config.width), bool)
        for i, (glyph, top, left) in enumerate(zip(chosen, tops, lefts)):
            ink = distort(glyphs.images[glyph], warp) if augment else glyphs.images[glyph]
            images[n, top : top + size, left : left + size] = ink
            taken[top : top + size, left : left + size] = True
            y0, x0, y1, x1 = ink_box(ink)
            boxes[n, i] = (top + y0, left + x0, top + y1, left + x1)
            digits[n, i] = glyphs.labels[glyph]
        for _ in range(config.clutter):
            _stroke(images[n], taken, rng)
    return Scenes(images, digits, boxes, counts)


# ------------------------------------------------------------------ tokens and batches
def caption_ids(digits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(N, D)`` digits (-1 padded) -> decoder inputs and targets, ``(N, D + 1)`` int32.

    ``[<s>, d_1 .. d_n, pad ..]`` and ``[d_1 .. d_n, </s>, pad ..]``.
    """
    count, most = digits.shape
    tokens = np.where(digits >= 0, digits + DIGIT_OFFSET, PAD_ID)
    lengths = (digits >= 0).sum(axis=1)
    targets = np.concatenate([tokens, np.full((count, 1), PAD_ID)], axis=1)
    targets[np.arange(count), lengths] = END_ID
    inputs = np.concatenate([np.full((count, 1), START_ID), tokens], axis=1)
    return inputs.astype("int32"), targets.astype("int32")


def text(ids: np.ndarray) -> str:
    """Token ids (a search's output) -> the caption: its digits up to the first end."""
    out = []
    for token in np.asarray(ids).tolist():
        if token in (END_ID, PAD_ID):
            break
        out.append(TOKENS[token] if 0 <= token < len(TOKENS) else "?")
    return "".join(out)


def digits_text(digits: np.ndarray) -> str:
    """A scene's gold ``(D,)`` digits (-1 padded) as its caption."""
    return "".join(str(d) for d in np.asarray(digits).tolist() if d >= 0)


def batches(scenes: Scenes, batch_size: int, shuffle_seed: int | None = None, passes: int = 1):
    """``({"image", "caption_in"}, caption_out)`` ``ArrayBatches`` of scenes."""
    inputs, targets = caption_ids(scenes.digits)
    arrays = ({"image": scenes.images[..., None], "caption_in": inputs}, targets)
    return ArrayBatches(arrays, batch_size, shuffle_seed=shuffle_seed, passes=passes)


def load(config: Config) -> dict[str, Scenes]:
    """The train, validation and test scenes of ``config``, each from its own glyphs and seed."""
    parts = split_glyphs(load_glyphs(config), config.seed)
    sizes = {
        "train": config.train_scenes,
        "validation": config.validation_scenes,
        "test": config.test_scenes,
    }
    return {
        name: make_scenes(
            parts[name],
            sizes[name],
            config.seed * 3 + index,
            config,
            augment=config.augment_glyphs and name == "train",
        )
        for index, name in enumerate(SPLITS)
    }


# ------------------------------------------------------------------ a user's image
def as_image(image, height: int, width: int, name: str = "image") -> np.ndarray:
    """A user's picture as the model's ``(height, width)`` uint8 scene, or a clear error.

    Takes ``(H, W)`` or ``(H, W, C)`` with C in 1, 3, 4 (colour is averaged to
    gray, alpha dropped); integers as 0..255, floats as 0..1. Digits must be
    light on a dark background, as in the scenes (invert a scan first).

    Raises:
        TypeError: not a numeric array.
        ValueError: wrong rank, channels or size; non-finite or out-of-range pixels.
    """
    array = np.asarray(image)
    if array.dtype == bool or not np.issubdtype(array.dtype, np.number):
        raise TypeError(f"Expected {name} a numeric array. Received: dtype {array.dtype}")
    if array.ndim == 3 and array.shape[-1] in (1, 3, 4):
        channels = array[..., :3] if array.shape[-1] == 4 else array
        array = channels.astype("float64").mean(axis=-1)
    elif array.ndim != 2:
        raise ValueError(
            f"Expected {name} of shape (H, W) or (H, W, C) with C in 1, 3, 4. "
            f"Received: shape {tuple(np.asarray(image).shape)}"
        )
    if array.shape != (height, width):
        raise ValueError(
            f"Expected {name} of {height}x{width} pixels (the model's scenes). "
            f"Received: {array.shape[0]}x{array.shape[1]}"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"Expected {name} with finite pixels. Received: NaN or infinity")
    floating = np.issubdtype(np.asarray(image).dtype, np.floating)
    top = 1.0 if floating else 255.0
    if array.min() < 0 or array.max() > top:
        raise ValueError(
            f"Expected {name} pixels in [0, {top:g}]. Received: [{array.min():g}, {array.max():g}]"
        )
    return np.round(array * (255.0 / top)).astype("uint8")
