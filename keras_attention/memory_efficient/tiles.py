"""The tile layout of the chunked path: its geometry, its masks, its two passes.

A call is cut into `(bq, bk)` tiles of queries and keys. `Plan` holds the
static geometry and which tiles the band (causal mask, sliding window)
leaves out; `TileMasks` slices the
call's mask pieces per tile (never combining them whole); `Tiles` runs the
forward pass (online softmax) and the recomputing backward pass with any
score of `keras_attention.scores`. Tile starts may be tensors (loop indices).

Shape letters: `B` batch, `H` heads (1 for single-head layers), `Tq`, `Tv`
lengths and `Tq'`, `Tv'` the lengths padded to whole tiles, `bq`, `bk` tile
sides, `d` features.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_attention import masks as masks_lib
from keras_attention.backends import matmul
from keras_attention.scores import append_feature


def _floor_div(x, y: int):
    return x // y if isinstance(x, int) else ops.floor_divide(x, y)


def _clip(x, low: int, high: int):
    return min(max(x, low), high) if isinstance(x, int) else ops.clip(x, low, high)


class Plan:
    """Static tile sides and counts, and which tiles the band leaves out.

    The band is the package's end-aligned rule (`masks.band_rule` with offset
    `Tv - Tq`, `(left, right)` from `masks.key_band`: causal, a sliding
    `window`, or both), here in units of whole tiles. Query block `i` visits
    key blocks `[first_key_block(i), key_blocks(i))`; key block `j` is visited
    by query blocks `[first_query_block(j), query_blocks(j))`.
    """

    def __init__(self, tq: int, tv: int, block: int, causal: bool, window=None):
        self.tq, self.tv, self.causal, self.offset = tq, tv, causal, tv - tq
        self.band = masks_lib.key_band(causal, window)
        self.banded = self.band != (None, None)
        self.bq, self.bk = max(1, min(block, tq)), max(1, min(block, tv))
        self.nq, self.nk = -(-tq // self.bq), -(-tv // self.bk)
        self.padded_tq, self.padded_tv = self.nq * self.bq, self.nk * self.bk

    def _keys_of(self, first_row, last_row):
        """The first key `first_row` sees and the last key `last_row` sees (None: no bound)."""
        first, _ = masks_lib.visible_keys(first_row, self.offset, *self.band)
        _, last = masks_lib.visible_keys(last_row, self.offset, *self.band)
        return first, last

    def _rows_of(self, first_col, last_col):
        """The first query that sees `first_col` and the last that sees `last_col`.

        Query `r` sees key `c` iff `r + offset - left <= c <= r + offset +
        right`, i.e. `c - offset - right <= r <= c - offset + left`: the
        band of the keys, with the offset negated and the sides swapped.
        """
        left, right = self.band
        first, _ = masks_lib.visible_keys(first_col, -self.offset, right, left)
        _, last = masks_lib.visible_keys(last_col, -self.offset, right, left)
        return first, last

    def first_key_block(self, i):
        """First key block query block `i` may see."""
        first, _ = self._keys_of(i * self.bq, (i + 1) * self.bq - 1)
        if first is None:
            return 0
        return _clip(_floor_div(first, self.bk), 0, self.nk)

    def key_blocks(self, i):
        """One past the last key block query block `i` may see."""
        _, last = self._keys_of(i * self.bq, (i + 1) * self.bq - 1)
        if last is None:
            return self.nk
        return _clip(_floor_div(last, self.bk) + 1, 0, self.nk)

    def first_query_block(self, j):
        """First query block that may see key block `j`."""
        first, _ = self._rows_of(j * self.bk, (j + 1) * self.bk - 1)
        if first is None:
            return 0
        return _clip(_floor_div(first, self.bq), 0, self.nq)

    def query_blocks(self, j):
        """One past the last query block that may see key block `j`."""
        _, last = self._rows_of(j * self.bk, (j + 1) * self.bk - 1)
        if last is None:
            return self.nq
        return _clip(_floor_div(last, self.bq) + 1, 0, self.nq)

    def visited_fraction(self) -> float:
        """The share of the `nq · nk` tiles the band leaves to compute (1.0 without one)."""
        visited = sum(max(self.key_blocks(i) - self.first_key_block(i), 0) for i in range(self.nq))
        return visited / (self.nq * self.nk)


class TileMasks:
    """The call's mask pieces, padded once and sliced per tile."""

    def __init__(self, plan, query_mask, value_mask, attention_mask):
        self.plan = plan
        pad_q, pad_k = plan.padded_tq - plan.tq, plan.padded_tv - plan.tv

        def prepare(mask, pads, axes):
            if mask is None:
                return None
            mask = ops.pad(ops.cast(mask, "bool"), [(0, 0)] + pads, constant_values=False)
            for axis in axes:
                mask = ops.expand_dims(mask, axis)
            return mask

        self.query = prepare(query_mask, [(0, pad_q)], (1, -1))  # (B, 1, Tq', 1)
        self.value = prepare(value_mask, [(0, pad_k)], (1, 1))  # (B, 1, 1, Tv')
        self.pairs = prepare(attention_mask, [(0, pad_q), (0, pad_k)], (1,))  # (B, 1, Tq', Tv')
        self.ragged_keys = pad_k > 0 and value_mask is None
        self.any = (
            plan.banded
            or self.ragged_keys
            or any(m is not None for m in (query_mask, value_mask, attention_mask))
        )

    def tile(self, r0, c0):
        """Boolean `(B|1, 1, bq, bk)` mask of the tile at `(r0, c0)`, or None."""
        if not self.any:
            return None
        bq, bk = self.plan.bq, self.plan.bk
        rows = r0 + ops.arange(bq, dtype="int32")  # (bq,)
        cols = c0 + ops.arange(bk, dtype="int32")  # (bk,)
        parts = [
            None if self.query is None else slice_axes(self.query, {2: (r0, bq)}),
            None if self.value is None else slice_axes(self.value, {3: (c0, bk)}),
            None if self.pairs is None else slice_axes(self.pairs, {2: (r0, bq), 3: (c0, bk)}),
        ]
        if self.ragged_keys:
            parts.append(ops.less(cols, self.plan.tv)[None, None, None])
        if self.plan.banded:
            parts.append(
                masks_lib.band_rule(rows, cols, self.plan.offset, *self.plan.band)[None, None]
            )
        return masks_lib.combine_masks(*parts)


class Tiles:
    """The forward and backward passes over `(bq, bk)` tiles, as nested loops.

    `score` is a `keras_attention.scores` object; `params` its tensors.
    Inputs are `(B, H, T, d)`, the query already `score.prepare`d and padded.
    """

    def __init__(self, score, plan, masks, dropout):
        self.score, self.plan, self.masks, self.dropout = score, plan, masks, dropout

    def pad(self, query, key, value):
        plan = self.plan
        return (
            pad_time(query, plan.padded_tq - plan.tq),
            pad_time(key, plan.padded_tv - plan.tv),
            pad_time(value, plan.padded_tv - plan.tv),
        )

    def _rows(self, x, i):
        return slice_axes(x, {2: (i * self.plan.bq, self.plan.bq)})

    def _cols(self, x, j):
        return slice_axes(x, {2: (j * self.plan.bk, self.plan.bk)})

    def _weights(self, logits, i, j, shift=None):
        """`exp(logits - shift)`, zero where masked, float32 `(B, H, bq, bk)`.

        `shift` maps the tile's masked row max to the shift (forward pass);
        None when `logits` are already shifted (backward pass).
        """
        mask = self.masks.tile(i * self.plan.bq, j * self.plan.bk)
        logits = masks_lib.fill_masked(logits, mask)
        if shift is not None:
            shift = shift(ops.max(logits, axis=-1))  # (B, H, bq)
            logits = logits - shift[..., None]
        return masks_lib.zero_masked(ops.exp(logits), mask), shift

    def forward(self, query, key, value, params):
        """Context (float32) and log-sum-exp `(B, H, Tq')` of every (padded) row."""
        plan, batch_heads = self.plan, tuple(ops.shape(query)[:2])

        def query_block(i, buffers):
            q_tile = self._rows(query, after(i, buffers[1]))  # (B, H, bq, dk)

            def key_block(j, state):
                running_max, total, acc = state
                k_tile = self._cols(key, after(j, total))
                logits = ops.cast(self.score.logits(q_tile, k_tile, *params), "float32")
                weights, new_max = self._weights(
                    logits, i, j, shift=lambda tile_max: ops.maximum(running_max, tile_max)
                )
                multiplier = self.dropout.multiplier(i * plan.bq, j * plan.bk)
                dropped = weights if multiplier is None else weights * multiplier
                v_tile = self._cols(value, j)
                partial = matmul(ops.cast(dropped, v_tile.dtype), v_tile)  # (B, H, bq, dv)
                decay = ops.exp(running_max - new_max)  # (B, H, bq)
                total = decay * total + ops.sum(weights, axis=-1)
                acc = decay[..., None] * acc + ops.cast(partial, "float32")
                return new_max, total, acc

            start = (
                ops.full(batch_heads + (plan.bq,), masks_lib.MASKED_LOGIT),
                ops.zeros(batch_heads + (plan.bq,)),
                ops.zeros(batch_heads + (plan.bq, ops.shape(value)[-1])),
            )
            running_max, total, acc = ops.fori_loop(
                plan.first_key_block(i), plan.key_blocks(i), key_block, start
            )
            seen = ops.greater(total, 0.0)  # False on rows that see nothing
            safe_total = ops.where(seen, total, 1.0)
            context = acc / safe_total[..., None]  # acc is 0 on unseen rows
            log_sum_exp = ops.where(seen, running_max + ops.log(safe_total), 0.0)
            contexts, log_sum_exps = buffers
            return (
                ops.slice_update(contexts, (0, 0, i * plan.bq, 0), context),
                ops.slice_update(log_sum_exps, (0, 0, i * plan.bq), log_sum_exp),
            )

        buffers = (
            ops.zeros(batch_heads + (plan.padded_tq, ops.shape(value)[-1])),
            ops.zeros(batch_heads + (plan.padded_tq,)),
        )
        return ops.fori_loop(0, plan.nq, query_block, buffers)

    def backward(self, query, key, value, params, context, log_sum_exp, d_context):
        """float32 gradients for `(query, key, value, *params)`, unpadded.

        One pass over the tiles, keys outer: a key block's dK, dV (and the
        score parameters' gradient) are carried through its query blocks,
        and each tile adds its share of dQ to a blocked dQ buffer. Shifts
        ride along in the matmuls as one more feature where they can
        (`score.augment`), which leaves a column to drop at the end.
        """
        plan, batch_heads = self.plan, tuple(ops.shape(query)[:2])
        d_context = pad_time(d_context, plan.padded_tq - plan.tq)
        delta = ops.sum(ops.cast(d_context, "float32") * context, axis=-1)  # (B, H, Tq')
        q_rows, k_cols = self.score.augment(query, key, log_sum_exp)
        d_rows, v_cols = d_context, value
        if not self.dropout.rate:  # [dO, -D] · [v, 1]ᵀ = dO vᵀ - D
            d_rows = append_feature(d_context, -delta)
            v_cols = append_feature(value, 1.0)
        rows = (q_rows, d_rows, log_sum_exp, delta)

        def key_block(j, buffers):
            d_query, d_key, d_value, d_params = buffers
            j_after = after(j, d_key)
            k_tile, v_tile = self._cols(k_cols, j_after), self._cols(v_cols, j_after)

            def query_block(i, carry):
                d_query, d_k, d_v, d_p = carry
                i_after = after(i, d_k)
                q_tile, d_out, lse, delta = (self._rows(x, i_after) for x in rows)
                logits, cache = self.score.shifted_logits(q_tile, k_tile, lse, *params)
                weights, _ = self._weights(logits, i, j)  # P, (B, H, bq, bk)
                d_weights = ops.einsum("bhqd,bhkd->bhqk", d_out, v_tile)  # (B, H, bq, bk)
                d_weights = ops.cast(d_weights, "float32")
                multiplier = self.dropout.multiplier(i * plan.bq, j * plan.bk)
                dropped = weights
                if multiplier is not None:
                    d_weights = d_weights * multiplier - delta[..., None]
                    dropped = weights * multiplier
                d_logits = weights * d_weights  # dS = P (dP - D)
                dropped = ops.cast(dropped, d_out.dtype)
                d_v_tile = ops.einsum("bhqk,bhqd->bhkd", dropped, d_out)  # (B, H, bk, dv)
                g_q, g_k, g_p = self.score.grads(d_logits, q_tile, k_tile, cache, *params)
                d_query = _add_block(d_query, i, g_q)
                d_v = d_v + ops.cast(d_v_tile, "float32")
                return d_query, d_k + g_k, d_v, tuple(a + b for a, b in zip(d_p, g_p))

            carry = (d_query, _zeros_like(k_tile), _zeros_like(v_tile), d_params)
            first, stop = plan.first_query_block(j), plan.query_blocks(j)
            d_query, d_k, d_v, d_params = ops.fori_loop(first, stop, query_block, carry)
            start = (0, 0, j * plan.bk, 0)
            return (
                d_query,
                ops.slice_update(d_key, start, d_k),
                ops.slice_update(d_value, start, d_v),
                d_params,
            )

        d_query = ops.zeros((plan.nq,) + batch_heads + (plan.bq, ops.shape(q_rows)[-1]))
        d_params = tuple(map(_zeros_like, params))
        buffers = (d_query, _zeros_like(k_cols), _zeros_like(v_cols), d_params)
        d_query, d_key, d_value, d_params = ops.fori_loop(0, plan.nk, key_block, buffers)
        d_query = ops.moveaxis(d_query, 0, 2)  # (B, H, nq, bq, dk[+1])
        d_query = ops.reshape(d_query, batch_heads + (plan.padded_tq, -1))  # (B, H, Tq', dk[+1])
        dk, dv = ops.shape(query)[-1], ops.shape(value)[-1]
        return (
            d_query[..., : plan.tq, :dk],
            d_key[..., : plan.tv, :dk],
            d_value[..., : plan.tv, :dv],
        ) + tuple(d_params)


def after(index, tensor):
    """`index`, made to depend on `tensor` on TensorFlow (a no-op elsewhere).

    TensorFlow runs up to 10 iterations of a `while_loop` at once, and a
    tile's logits depend only on the loop index: without this, iterations
    would run ahead and keep many tiles alive. Slicing a tile at an index
    derived from the previous iteration's result keeps one tile at a time.
    """
    if keras.backend.backend() != "tensorflow":
        return index
    nothing = ops.sum(ops.reshape(tensor, (-1,))[:0])  # 0, computed after `tensor`
    return index + ops.cast(nothing, "int32")


def slice_axes(x, spans):
    """`x` sliced to `{axis: (start, size)}`, whole (possibly dynamic) elsewhere."""
    shape = ops.shape(x)
    starts = [spans[axis][0] if axis in spans else 0 for axis in range(len(x.shape))]
    sizes = [spans[axis][1] if axis in spans else shape[axis] for axis in range(len(x.shape))]
    return ops.slice(x, starts, sizes)


def pad_time(x, amount: int):
    """Zeros appended on the time axis of `(B, H, T, d)`."""
    return x if not amount else ops.pad(x, [(0, 0), (0, 0), (0, amount), (0, 0)])


def _add_block(blocks, index, update):
    """`blocks[index] += update` for a `(n, ...)` buffer, as one scatter."""
    index = ops.reshape(ops.convert_to_tensor(index, "int32"), (1, 1))
    current = ops.take(blocks, index[0], axis=0)  # (1, ...)
    return ops.scatter_update(blocks, index, current + update[None])


def _zeros_like(x):
    return ops.zeros(ops.shape(x))  # float32
