"""The scene generator: boxes and captions against hand-computed cases; a user's image checked."""

import dataclasses

import numpy as np
import pytest

from examples.captioning import data
from examples.captioning.config import Config

pytestmark = pytest.mark.backend_independent

# Two 3x3 glyphs whose ink boxes are known by hand: "0" one dot, "1" a bar in the last column.
ZERO = np.array([[0, 0, 0], [0, 9, 0], [0, 0, 0]], "uint8")  # box (1, 1, 2, 2)
ONE = np.array([[0, 0, 7], [0, 0, 7], [0, 0, 7]], "uint8")  # box (0, 2, 3, 3)
GLYPHS = data.Glyphs(np.stack([ZERO, ONE]), np.array([0, 1]))


def test_ink_box_by_hand():
    assert data.ink_box(ZERO) == (1, 1, 2, 2)
    assert data.ink_box(ONE) == (0, 2, 3, 3)
    assert data.ink_box(np.zeros((3, 3), "uint8")) == (0, 0, 0, 0)


def test_a_full_width_scene_by_hand():
    # Two 3-pixel glyphs in 7 columns, 1 apart, and 3 rows: the only placement is
    # lefts 0 and 4, top 0; the boxes follow from the glyphs' ink boxes.
    config = Config(height=3, width=7, min_digits=2, max_digits=2, glyph_size=3)
    scenes = data.make_scenes(GLYPHS, 20, seed=0, config=config)
    assert scenes.counts.tolist() == [2] * 20
    by_digit = {0: (1, 1, 2, 2), 1: (0, 2, 3, 3)}
    for image, digits, boxes in zip(scenes.images, scenes.digits, scenes.boxes):
        first, second = digits.tolist()
        assert np.array_equal(image[:, 0:3], GLYPHS.images[first])
        assert np.array_equal(image[:, 4:7], GLYPHS.images[second])
        assert not image[:, 3].any()  # the empty column between them
        top, left, bottom, right = by_digit[second]
        assert boxes.tolist() == [list(by_digit[first]), [top, left + 4, bottom, right + 4]]
    assert {tuple(d) for d in scenes.digits.tolist()} == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_one_digit_scene_by_hand():
    config = Config(height=4, width=3, min_digits=1, max_digits=1, glyph_size=3)
    scenes = data.make_scenes(GLYPHS, 10, seed=3, config=config)
    for image, digits, boxes in zip(scenes.images, scenes.digits, scenes.boxes):
        top = int(np.flatnonzero(image.any(axis=1))[0]) - (1 if digits[0] == 0 else 0)
        assert np.array_equal(image[top : top + 3], GLYPHS.images[digits[0]])
        expected = (top + 1, 1, top + 2, 2) if digits[0] == 0 else (top, 2, top + 3, 3)
        assert tuple(boxes[0]) == expected


def test_random_scenes_read_left_to_right_without_overlap():
    config = Config(train_scenes=50, validation_scenes=10, test_scenes=200, clutter=3)
    scenes = data.load(config)["test"]
    assert 1 <= scenes.counts.min() and scenes.counts.max() <= 5
    for image, digits, boxes, count in zip(*scenes):
        assert (digits[:count] >= 0).all() and (digits[count:] == -1).all()
        real = boxes[:count]
        assert (real[:, 2] > real[:, 0]).all() and (real[:, 3] > real[:, 1]).all()
        assert (real[1:, 1] > real[:-1, 3]).all()  # each box starts right of the last one
        assert real[:, 2].max() <= config.height and real[:, 3].max() <= config.width
        for top, left, bottom, right in real:  # every box holds ink on its four edges
            block = image[top:bottom, left:right]
            assert block[0].any() and block[-1].any() and block[:, 0].any() and block[:, -1].any()


def test_scenes_are_deterministic_from_the_seed():
    config = Config(height=8, width=44)
    glyphs = data.split_glyphs(data.load_glyphs(config), 0)["train"]
    a, b = (data.make_scenes(glyphs, 30, 5, config) for _ in range(2))
    c = data.make_scenes(glyphs, 30, 6, config)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a.images, c.images)


def test_test_glyphs_are_held_out():
    glyphs = data.load_glyphs(Config())
    parts = data.split_glyphs(glyphs, 0)
    assert sum(len(part.labels) for part in parts.values()) == len(glyphs.labels) == 1797
    seen = {image.tobytes() for image in parts["train"].images}
    unseen = [image.tobytes() not in seen for image in parts["test"].images]
    assert np.mean(unseen) > 0.99  # (the UCI set holds a few identical glyphs)
    assert set(parts["test"].labels.tolist()) == set(range(10))


def test_caption_ids_by_hand():
    inputs, targets = data.caption_ids(np.array([[3, 0, -1], [-1, -1, -1], [9, 8, 7]]))
    start, end, four = data.START_ID, data.END_ID, data.DIGIT_OFFSET
    assert inputs.tolist() == [
        [start, 3 + four, 0 + four, 0],
        [start, 0, 0, 0],
        [start, 9 + four, 8 + four, 7 + four],
    ]
    assert targets.tolist() == [
        [3 + four, four, end, 0],
        [end, 0, 0, 0],
        [9 + four, 8 + four, 7 + four, end],
    ]
    assert data.text(targets[0]) == "30" and data.text(targets[1]) == ""
    assert data.digits_text(np.array([9, 8, 7])) == "987"


def test_config_refuses_scenes_that_cannot_be_made():
    with pytest.raises(ValueError, match="width"):
        Config(width=40, max_digits=5).check()
    with pytest.raises(ValueError, match="pooling"):
        Config(pooling=3).check()


def test_user_image_is_converted():
    gray = np.arange(24 * 64).reshape(24, 64) % 256
    assert np.array_equal(data.as_image(gray.astype("uint8"), 24, 64), gray)
    rgba = np.stack([gray, gray, gray, np.zeros_like(gray)], -1).astype("uint8")
    assert np.array_equal(data.as_image(rgba, 24, 64), gray)
    floats = np.full((24, 64, 1), 0.5)
    assert (data.as_image(floats, 24, 64) == 128).all()


@pytest.mark.parametrize(
    "image, error, words",
    [
        (np.zeros((2, 24, 64, 1)), ValueError, ["image", "(H, W)", "(2, 24, 64, 1)"]),
        (np.zeros((24, 64, 2)), ValueError, ["image", "(H, W, C)", "(24, 64, 2)"]),
        (np.zeros((28, 28)), ValueError, ["image", "24x64", "28x28"]),
        (np.full((24, 64), np.nan), ValueError, ["image", "finite", "NaN"]),
        (np.full((24, 64), 2.0), ValueError, ["image", "[0, 1]", "2"]),
        (np.zeros((24, 64), bool), TypeError, ["image", "numeric", "bool"]),
        (np.full((24, 64), "a"), TypeError, ["image", "numeric"]),
    ],
)
def test_bad_images_get_a_clear_error(image, error, words):
    with pytest.raises(error) as raised:
        data.as_image(image, 24, 64)
    for word in words:
        assert word in str(raised.value)


def test_clutter_stays_off_the_digits():
    config = dataclasses.replace(Config(), clutter=8)
    base = dataclasses.replace(config, clutter=0)
    glyphs = data.split_glyphs(data.load_glyphs(config), 0)["test"]
    with_clutter = data.make_scenes(glyphs, 40, 1, config)
    clean = data.make_scenes(glyphs, 40, 1, base)
    assert with_clutter.images.sum() > clean.images.sum()  # strokes were drawn
    for image, boxes, count in zip(with_clutter.images, with_clutter.boxes, with_clutter.counts):
        for top, left, bottom, right in boxes[:count]:
            assert not (image[top:bottom, left:right] == 200).any()


def test_mnist_from_a_local_file_is_resized(tmp_path):
    images = np.zeros((6, 28, 28), "uint8")
    images[:, 0:14, 0:14] = 255  # the top-left quarter inked: 4x4 of the 8x8 glyph
    path = tmp_path / "mnist.npz"
    np.savez(path, x_train=images[:4], y_train=np.arange(4), x_test=images[4:], y_test=[4, 5])
    glyphs = data.load_glyphs(Config(digits="mnist", mnist_path=str(path)))
    assert glyphs.images.shape == (6, 8, 8) and glyphs.labels.tolist() == [0, 1, 2, 3, 4, 5]
    assert (glyphs.images[:, :3, :3] == 255).all() and (glyphs.images[:, 5:, :] == 0).all()


def test_distorted_glyphs_keep_their_footprint_and_seed():
    glyphs = data.split_glyphs(data.load_glyphs(Config()), 0)["train"]
    first = [data.distort(g, np.random.default_rng(4)) for g in glyphs.images[:20]]
    again = [data.distort(g, np.random.default_rng(4)) for g in glyphs.images[:20]]
    for glyph, a, b in zip(glyphs.images[:20], first, again):
        assert a.shape == glyph.shape and a.dtype == np.uint8 and np.array_equal(a, b)
        assert a.any() and not np.array_equal(a, glyph)
        assert ((a == 0) | (a >= 26)).all()  # interpolation's faint fringe cleared


def test_augmented_glyphs_only_in_the_training_scenes():
    config = Config(train_scenes=20, validation_scenes=10, test_scenes=10)
    plain, augmented = (
        data.load(config),
        data.load(dataclasses.replace(config, augment_glyphs=True)),
    )
    assert not np.array_equal(plain["train"].images, augmented["train"].images)
    assert np.array_equal(plain["train"].digits, augmented["train"].digits)
    for name in ("validation", "test"):
        assert all(np.array_equal(a, b) for a, b in zip(plain[name], augmented[name]))
    for image, boxes, count in zip(*augmented["train"][::2], augmented["train"].counts):
        for top, left, bottom, right in boxes[:count]:  # each box is its ink's tight box
            block = image[top:bottom, left:right]
            assert block[0].any() and block[-1].any() and block[:, 0].any() and block[:, -1].any()
