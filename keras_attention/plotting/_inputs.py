"""Input preparation shared by every plotting entry point.

Converts weights (NumPy or any backend tensor) to NumPy, picks the example and
heads, trims padding by lengths or masks, and matches the token labels, raising
`ValueError` with the argument's name on bad input. Needs only NumPy and Keras.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

HeadSpec = int | str
REDUCTIONS = ("mean", "max")


# ----------------------------------------------------------------------------
# Head reduction
# ----------------------------------------------------------------------------
def reduce_heads(weights: Any, head: HeadSpec = "mean") -> np.ndarray:
    """Reduces multi-head weights `(..., H, Tq, Tv)` to one alignment matrix.

    Args:
        weights: array or backend tensor with the head axis third from last,
            e.g. `(H, Tq, Tv)` or `(B, H, Tq, Tv)`.
        head: a head index (negative counts from the end), `"mean"` (the
            average over heads) or `"max"` (the elementwise maximum).

    Returns:
        A float32 NumPy array `(..., Tq, Tv)`.

    Example:
        >>> import numpy as np
        >>> w = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])  # (H=2, Tq=1, Tv=2)
        >>> reduce_heads(w, "mean").tolist()
        [[0.5, 0.5]]
        >>> reduce_heads(w, 1).tolist()
        [[0.0, 1.0]]
    """
    weights = to_numpy(weights)
    if weights.ndim < 3:
        raise ValueError(
            "reduce_heads expects weights with a head axis, (..., H, Tq, Tv); "
            f"received shape {weights.shape}."
        )
    if isinstance(head, str):
        if head not in REDUCTIONS:
            raise ValueError(f'Expected head to be an index, "mean" or "max"; received {head!r}.')
        return weights.mean(axis=-3) if head == "mean" else weights.max(axis=-3)
    position = _check_index(head, weights.shape[-3], "head", "H")
    return weights[..., position, :, :]


# ----------------------------------------------------------------------------
# Input preparation (shared by every entry point)
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Padding:
    """Where the real tokens are: lengths or boolean masks, per side (or None)."""

    source_length: Any = None
    target_length: Any = None
    source_mask: Any = None
    target_mask: Any = None


@dataclass(frozen=True)
class Alignment:
    """Weights `(H, Tq, Tv)` of one example, padding removed, with its tokens."""

    weights: np.ndarray  # (H, Tq, Tv)
    source_tokens: list
    target_tokens: list


def to_numpy(x: Any, dtype: str = "float32") -> np.ndarray:
    """A NumPy copy of an array, a list or a tensor of any Keras backend."""
    if not isinstance(x, np.ndarray):
        x = keras.ops.convert_to_numpy(x)
    return np.asarray(x).astype(dtype)


def _check_index(index: Any, size: int, name: str, letter: str) -> int:
    if isinstance(index, bool) or not isinstance(index, numbers.Integral):
        raise ValueError(f"Expected {name} to be an integer; received {index!r}.")
    if not -size <= index < size:
        raise ValueError(f"{name}={index} is out of range for {letter}={size}.")
    return int(index) % size


def _split_axes(
    w: np.ndarray, index: int | None, head: HeadSpec | None, keep_heads: bool
) -> np.ndarray:
    """Selects the example and heads; returns `(H, Tq, Tv)` (H=1 unless kept)."""
    shape = w.shape
    if w.ndim not in (2, 3, 4):
        raise ValueError(
            "Expected weights of shape (Tq, Tv), (H, Tq, Tv), (B, Tq, Tv) or "
            f"(B, H, Tq, Tv); received shape {shape}."
        )
    if index is None and w.ndim == 4:
        raise ValueError(f"weights of shape (B, H, Tq, Tv)={shape} need index=.")
    if index is not None:
        if w.ndim == 2:
            raise ValueError(f"index= given but weights {shape} have no batch axis.")
        w = w[_check_index(index, shape[0], "index", "B")]
    if w.ndim == 2:
        if head is not None or keep_heads:
            raise ValueError(
                f"weights of shape {shape} have no head axis; expected (H, Tq, Tv) "
                "or (B, H, Tq, Tv) with index=."
            )
        return w[None]  # (1, Tq, Tv)
    if keep_heads:
        return w  # (H, Tq, Tv)
    if head is None:
        raise ValueError(
            f"3-D weights {shape} are ambiguous: pass head= (an index, 'mean' or "
            "'max') for (H, Tq, Tv), or index= for (B, Tq, Tv)."
        )
    return reduce_heads(w, head)[None]  # (1, Tq, Tv)


def _keep_positions(
    size: int, length: Any, mask: Any, index: int | None, name: str, letter: str
) -> np.ndarray:
    """Indices of the real (non-padding) positions along an axis of `size`."""
    if length is not None and mask is not None:
        raise ValueError(f"Pass {name}_length or {name}_mask, not both.")
    if length is not None:
        length = to_numpy(length, dtype="int64")
        if length.ndim == 1 and index is not None:
            length = length[index]
        if length.ndim != 0:
            raise ValueError(
                f"Expected {name}_length to be an int, or (B,) lengths "
                f"with index=; received shape {length.shape}."
            )
        length = int(length)
        if not 0 <= length <= size:
            raise ValueError(f"{name}_length={length} but weights have {letter}={size}.")
        return np.arange(length)
    if mask is None:
        return np.arange(size)
    mask = to_numpy(mask, dtype="bool")
    if mask.ndim == 2 and index is not None:
        mask = mask[index]
    if mask.shape != (size,):
        raise ValueError(f"{name}_mask has shape {mask.shape} but weights have {letter}={size}.")
    return np.flatnonzero(mask)


def _match_tokens(
    tokens: Sequence[Any], keep: np.ndarray, size: int, name: str, letter: str
) -> list:
    """Labels for the kept positions: `tokens` may be padded or already trimmed."""
    if isinstance(tokens, str):
        raise ValueError(f"{name}_tokens must be a sequence of tokens, not a string.")
    tokens = [_token_text(t) for t in tokens]
    if len(tokens) == size:
        return [tokens[i] for i in keep]
    if len(tokens) == len(keep):
        return tokens
    trimmed = f" ({len(keep)} after trimming padding)" if len(keep) != size else ""
    raise ValueError(
        f"{name}_tokens has {len(tokens)} tokens but weights have {letter}={size}{trimmed}."
    )


def _token_text(token: Any) -> str:
    if isinstance(token, bytes):
        return token.decode("utf-8", errors="replace")
    if isinstance(token, np.ndarray) and token.ndim == 0:
        return _token_text(token.item())
    return str(token)


def prepare(
    weights: Any,
    source_tokens: Sequence[Any],
    target_tokens: Sequence[Any],
    *,
    index: int | None,
    head: HeadSpec | None,
    keep_heads: bool,
    padding: Padding,
) -> Alignment:
    """Validates and trims the inputs of every public entry point."""
    w = _split_axes(to_numpy(weights), index, head, keep_heads)  # (H, Tq, Tv)
    _, tq, tv = w.shape
    rows = _keep_positions(tq, padding.target_length, padding.target_mask, index, "target", "Tq")
    cols = _keep_positions(tv, padding.source_length, padding.source_mask, index, "source", "Tv")
    if not (len(rows) and len(cols)):
        raise ValueError(
            f"No tokens left after trimming padding: {len(rows)} "
            f"target and {len(cols)} source tokens."
        )
    return Alignment(
        weights=w[:, rows][:, :, cols],  # (H, Tq', Tv')
        source_tokens=_match_tokens(source_tokens, cols, tv, "source", "Tv"),
        target_tokens=_match_tokens(target_tokens, rows, tq, "target", "Tq"),
    )


# ----------------------------------------------------------------------------
# Attention over an image: weights (..., Tq, H', W') and the picture they cover
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ImageAlignment:
    """One example's weights over an image grid, padding removed, with its tokens."""

    image: np.ndarray  # (H, W) or (H, W, C), floats in [0, 1]
    weights: np.ndarray  # (heads, Tq, H', W')
    tokens: list


GRID_SHAPES = (
    "(Tq, H', W'), (heads, Tq, H', W') with head=, or (B, Tq, H', W') / "
    "(B, heads, Tq, H', W') with index="
)


def image_pixels(image: Any) -> np.ndarray:
    """`image` `(H, W)` or `(H, W, C)` (C in 1, 3, 4) as floats in [0, 1].

    Integers are read as 0..255; floats outside [0, 1] are rescaled by their
    finite minimum and maximum; non-finite pixels become 0.
    """
    if not isinstance(image, np.ndarray):
        image = keras.ops.convert_to_numpy(image)
    image = np.asarray(image)
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[-1] not in (3, 4)):
        raise ValueError(
            "Expected image of shape (H, W) or (H, W, C) with C in 1, 3 or 4; "
            f"received shape {image.shape}."
        )
    if not image.size:
        raise ValueError(f"Expected a non-empty image; received shape {image.shape}.")
    if np.issubdtype(image.dtype, np.integer) or image.dtype == bool:
        return image.astype("float32") / (1.0 if image.dtype == bool else 255.0)
    image = np.nan_to_num(image.astype("float32"), nan=0.0, posinf=0.0, neginf=0.0)
    low, high = float(image.min()), float(image.max())
    if low < 0.0 or high > 1.0:
        image = (image - low) / (high - low) if high > low else np.zeros_like(image)
    return image


def prepare_image(
    image: Any,
    weights: Any,
    tokens: Sequence[Any],
    *,
    index: int | None,
    head: HeadSpec | None,
    keep_heads: bool,
    target_length: Any = None,
    target_mask: Any = None,
) -> ImageAlignment:
    """Validates the inputs of the image plots; trims padded tokens (never grid cells)."""
    w = to_numpy(weights)
    batch = index is not None
    extra = w.ndim - 3 - batch  # 1 with a heads axis, 0 without
    if extra not in (0, 1):
        raise ValueError(f"Expected weights of shape {GRID_SHAPES}; received shape {w.shape}.")
    if extra and head is None and not keep_heads:
        kind = "(B, heads, Tq, H', W')" if batch else "(heads, Tq, H', W') (or pass index=)"
        raise ValueError(f"weights {w.shape} read as {kind} need head= (an index, 'mean', 'max').")
    if not extra and head is not None:
        raise ValueError(f"head= given but weights {w.shape} have no heads axis.")
    grid = w.shape[-2:]
    data = prepare(
        w.reshape(*w.shape[:-2], -1),  # (..., Tq, H'*W')
        [str(cell) for cell in range(int(np.prod(grid)))],
        tokens,
        index=index,
        head=head,
        keep_heads=keep_heads,
        padding=Padding(target_length=target_length, target_mask=target_mask),
    )
    heads, rows = data.weights.shape[:2]
    return ImageAlignment(
        image=image_pixels(image),
        weights=data.weights.reshape(heads, rows, *grid),  # (heads, Tq', H', W')
        tokens=data.target_tokens,
    )
