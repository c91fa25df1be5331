"""Attention over grids: the reshapes at a layer's boundary, written once.

Two ways to attend over more than one axis, both reduced to the package's
one-axis attention (every path, exact, chunked or fused, and the `step`
contract unchanged) by a reshape going in and one coming out:

- a query `(B, Tq, d)` (or one step `(B, d)`) over a grid memory `(B, *grid,
  d)`, e.g. an image's `(B, H', W', C)` features (`BahdanauAttention`,
  `LuongAttention`, `ScaledDotProduct`): the grid is flattened to one axis of
  `N = prod(grid)` positions in row-major order (`flatten`), and the weights
  `(B, [Tq,] N)` are reshaped back to `(B, [Tq,] *grid)` (`unflatten`);
- `MultiHead(attention_axes=...)`, `keras.layers.MultiHeadAttention`'s
  meaning: query, key and value of one rank attend over the given axes, and
  the other non-batch, non-feature axes act as batch axes. `fold` moves those
  into the batch and flattens the attended ones, `(B, *axes, d) -> (B·O, N,
  d)`; `unfold_context` and `unfold_weights` undo it, the weights in Keras's
  layout `(B, *other, H, *query_attention_axes, *value_attention_axes)`.

Sizes unknown at trace time (`None`, or symbolic on JAX) are read from the
tensor when it runs, so `keras.Input((None, None, C))` grids work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import keras
from keras import ops

from keras_attention import call_checks


def sizes(x) -> list:
    """The shape of `x`: a Python int where known, a scalar tensor where not."""
    dynamic = None
    out = []
    for axis, dim in enumerate(x.shape):
        if isinstance(dim, int):
            out.append(dim)
        else:
            dynamic = ops.shape(x) if dynamic is None else dynamic
            out.append(dynamic[axis])
    return out


def product(dims: Sequence):
    """The product of sizes: a Python int when all are known, else a tensor."""
    total = 1
    for dim in dims:
        total = total * dim
    return total


def flatten(x, start: int, stop: int):
    """`x` with axes `start..stop-1` merged into one (row-major order)."""
    dims = sizes(x)
    return ops.reshape(x, (*dims[:start], product(dims[start:stop]), *dims[stop:]))


def unflatten(x, grid: Sequence):
    """`x` `(..., N)` with its last axis split into `grid` (`N = prod(grid)`)."""
    return ops.reshape(x, (*sizes(x)[:-1], *grid))  # (..., *grid)


def broadcast(mask, shape: Sequence):
    """A mask broadcast to `shape` (masks may hold axes of size 1)."""
    return None if mask is None else ops.broadcast_to(ops.cast(mask, "bool"), tuple(shape))


def memory_grid(key_features, value_features, heads: bool):
    """The grid of a memory `(B, [H,] *grid, d)`: None for a sequence (one axis).

    Sizes as `sizes` gives them, the keys' where the values' are unknown.
    """
    start = 2 if heads else 1
    if len(value_features.shape) - start - 1 <= 1:
        return None
    keys, values = sizes(key_features)[start:-1], sizes(value_features)[start:-1]
    return [v if isinstance(v, int) else k for k, v in zip(keys, values)]


def flatten_memory(key_features, value_features, value_mask, attention_mask, grid, single_step):
    """The memory and its masks with the grid as one axis of `N` positions.

    `key_features` `(B, *grid, dk)`, `value_features` `(B, *grid, dv)`,
    `value_mask` `(B, *grid)`, `attention_mask` `(B, [Tq,] *grid)` (`Tq`
    absent for a single step) become `(B, N, ·)`, `(B, N)` and `(B, [Tq,] N)`.
    """
    rank = len(grid)
    key_features = flatten(key_features, 1, 1 + rank)  # (B, N, dk)
    value_features = flatten(value_features, 1, 1 + rank)  # (B, N, dv)
    batch = sizes(value_features)[0]
    if value_mask is not None:
        value_mask = flatten(broadcast(value_mask, (batch, *grid)), 1, 1 + rank)  # (B, N)
    if attention_mask is not None:
        rows = [batch] if single_step else [batch, sizes(attention_mask)[1]]  # Tq may be 1
        attention_mask = broadcast(attention_mask, (*rows, *grid))
        attention_mask = flatten(attention_mask, len(rows), len(rows) + rank)  # (B, [Tq,] N)
    return key_features, value_features, value_mask, attention_mask


# ----------------------------------------------------------------------------
# attention_axes (MultiHead): other axes into the batch, attended ones into one.
# ----------------------------------------------------------------------------
class Fold(NamedTuple):
    """How `fold` rearranged a `(B, *axes, d)` tensor, for `unfold_*`."""

    permutation: tuple  # the axes of x in the order (B, *other, *attended, d)
    batch: list  # sizes of (B, *other)
    attended: list  # sizes of the attended axes, in `attention_axes` order


def layout(rank: int, attention_axes: Sequence[int]) -> tuple:
    """`(other, attended)`: the axes of a rank-`rank` input that act as batch, and attend."""
    other = tuple(a for a in range(1, rank - 1) if a not in attention_axes)
    return other, tuple(attention_axes)


def fold(x, attention_axes: Sequence[int]):
    """`(folded, Fold)`: `x` `(B, *axes, d)` as `(B·O, N, d)`.

    The non-attended axes `O` join the batch, the `attention_axes` (positive,
    in that order) become one axis of `N` positions.
    """
    rank = len(x.shape)
    other, attended = layout(rank, attention_axes)
    permutation = (0, *other, *attended, rank - 1)
    x = ops.transpose(x, permutation)  # (B, *other, *attended, d)
    dims = sizes(x)
    batch, grid = dims[: 1 + len(other)], dims[1 + len(other) : -1]
    folded = ops.reshape(x, (product(batch), product(grid), dims[-1]))  # (B·O, N, d)
    return folded, Fold(permutation, batch, grid)


def fold_mask(mask, axes_of: Fold, shape: Sequence):
    """A `(B, *axes)` mask of the tensor folded as `axes_of`, as `(B·O, N)`."""
    if mask is None:
        return None
    mask = broadcast(mask, shape)  # (B, *axes)
    mask = ops.transpose(mask, axes_of.permutation[:-1])  # (B, *other, *attended)
    return ops.reshape(mask, (product(axes_of.batch), product(axes_of.attended)))  # (B·O, N)


def fold_attention_mask(mask, query_fold: Fold, value_fold: Fold):
    """Keras's `(B, *other, *query_attended, *value_attended)` mask as `(B·O, Nq, Nv)`."""
    if mask is None:
        return None
    mask = broadcast(mask, (*query_fold.batch, *query_fold.attended, *value_fold.attended))
    shape = (product(query_fold.batch), product(query_fold.attended))
    return ops.reshape(mask, (*shape, product(value_fold.attended)))  # (B·O, Nq, Nv)


def unfold_context(context, query_fold: Fold):
    """`(B·O, Nq, d)` back to the query's layout `(B, *axes, d)`."""
    d = sizes(context)[-1]
    context = ops.reshape(context, (*query_fold.batch, *query_fold.attended, d))
    inverse = [0] * len(query_fold.permutation)
    for position, axis in enumerate(query_fold.permutation):
        inverse[axis] = position
    return ops.transpose(context, inverse)  # (B, *axes, d)


def unfold_weights(weights, query_fold: Fold, value_fold: Fold):
    """`(B·O, H, Nq, Nv)` as Keras's `(B, *other, H, *query_attended, *value_attended)`."""
    heads = sizes(weights)[1]
    shape = (*query_fold.batch, heads, *query_fold.attended, *value_fold.attended)
    return ops.reshape(weights, shape)


def folds(attention_axes, query, value=None, key=None) -> bool:
    """Whether a `MultiHead` call attends over other axes than a sequence's."""
    ranks = [len(t.shape) for t in (query, value, key) if t is not None]
    return max(ranks) > 3 or attention_axes not in (None, (1,), (-2,))


def _resolve(query, value, key, query_mask, value_mask, mask):
    """The contract's defaults: `layer(x)` is self-attention under `x`'s Keras mask."""
    query_mask = mask if query_mask is None else query_mask
    if value is None:
        value, value_mask = query, query_mask if value_mask is None else value_mask
    return value, value if key is None else key, query_mask, value_mask


def call_over_axes(layer, call, query, value, key, masks: dict, return_weights, training):
    """`layer`'s one-axis `call` on inputs folded over `layer.attention_axes`.

    `masks` holds the call's `query_mask`, `value_mask`, `attention_mask`,
    `use_causal_mask` and `mask`; returns the context `(B, *axes, d_out)`
    and with `return_weights` the weights `(B, *other, H, *query attended,
    *value attended)`, as `keras.layers.MultiHeadAttention` gives them.
    """
    value, key, query_mask, value_mask = _resolve(
        query, value, key, masks["query_mask"], masks["value_mask"], masks["mask"]
    )
    axes = _checked_axes(layer, query, value, key, query_mask, value_mask, masks)
    folded_query, query_fold = fold(query, axes)  # (B·O, Nq, dq)
    folded_value, value_fold = fold(value, axes)  # (B·O, Nv, dv)
    folded_key, _ = fold(key, axes)  # (B·O, Nv, dk)
    outputs = call(
        folded_query,
        folded_value,
        folded_key,
        query_mask=fold_mask(query_mask, query_fold, sizes(query)[:-1]),
        value_mask=fold_mask(value_mask, value_fold, sizes(value)[:-1]),
        attention_mask=fold_attention_mask(masks["attention_mask"], query_fold, value_fold),
        use_causal_mask=masks["use_causal_mask"],
        return_attention_scores=return_weights,
        training=training,
    )
    if not return_weights:
        return unfold_context(outputs, query_fold)
    context, weights = outputs
    return unfold_context(context, query_fold), unfold_weights(weights, query_fold, value_fold)


def output_spec_over_axes(layer, query, value, key, masks: dict, return_weights):
    """The shapes of `call_over_axes`, from the inputs' shapes alone."""
    value, key, query_mask, value_mask = _resolve(
        query, value, key, masks["query_mask"], masks["value_mask"], masks["mask"]
    )
    axes = _checked_axes(layer, query, value, key, query_mask, value_mask, masks)
    shape = layer.compute_output_shape(query.shape, value.shape, key.shape)
    context = keras.KerasTensor(shape, dtype=layer.compute_dtype)
    if not return_weights:
        return context
    other, _ = layout(len(query.shape), axes)
    weights_shape = (
        query.shape[0],
        *(query.shape[a] for a in other),
        layer.num_heads,
        *(query.shape[a] for a in axes),
        *(value.shape[a] for a in axes),
    )
    return context, keras.KerasTensor(weights_shape, dtype=layer.compute_dtype)


def _checked_axes(layer, query, value, key, query_mask, value_mask, masks) -> tuple:
    owner = layer._owner  # noqa: SLF001  (the layer's name, as its own messages give it)
    axes = call_checks.check_attention_axes_call(
        owner,
        layer.attention_axes,
        query,
        value,
        key,
        query_mask,
        value_mask,
        masks["attention_mask"],
    )
    if len(axes) > 1 and getattr(layer, "rotary", False):
        call_checks.call_fail(
            owner,
            "attention_axes",
            "one axis with rotary=True (rotary positions lie on one axis)",
            f"attention_axes={layer.attention_axes}, query shape {tuple(query.shape)}",
        )
    return axes
