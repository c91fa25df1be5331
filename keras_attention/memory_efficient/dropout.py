"""Dropout for the chunked path: each tile regenerates its own mask.

One random int32 per query row and per key column is drawn per call (`O(T)`
memory); an element's keep decision hashes its row's and its column's numbers
(MurmurHash3's finalizer), so the forward and the backward pass drop the same
elements without a `(Tq, Tv)` mask ever being stored.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_attention.memory_efficient.tiles import slice_axes


def _shift_right(x, bits: int):
    """Logical right shift of int32 (arithmetic shift, then drop the sign)."""
    return ops.bitwise_and(ops.right_shift(x, bits), (1 << (32 - bits)) - 1)


def _mix32(x):
    """MurmurHash3's 32-bit finalizer in wrapping int32 arithmetic."""
    x = ops.bitwise_xor(x, _shift_right(x, 16))
    x = x * -2048144789  # 0x85EBCA6B
    x = ops.bitwise_xor(x, _shift_right(x, 13))
    x = x * -1028477387  # 0xC2B2AE35
    return ops.bitwise_xor(x, _shift_right(x, 16))


class TileDropout:
    """`keep / (1 - rate)` multipliers of any tile, identical in both passes.

    Args:
        plan: the call's `tiles.Plan`.
        rate: fraction of the attention weights dropped (0 disables).
        seed: int, `keras.random.SeedGenerator` or None.
        batch_heads: `(B, H)` of the call.
    """

    def __init__(self, plan, rate: float, seed, batch_heads):
        self.plan, self.rate = plan, float(rate)
        if not self.rate:
            return
        shape = tuple(batch_heads) + (plan.tq + plan.tv,)
        numbers = keras.random.randint(shape, 0, 2**31 - 1, dtype="int32", seed=seed)
        self.rows = _pad_last(numbers[..., : plan.tq], plan.padded_tq - plan.tq)  # (B, H, Tq')
        cols = _mix32(numbers[..., plan.tq :])
        self.cols = _pad_last(cols, plan.padded_tv - plan.tv)  # (B, H, Tv')

    def multiplier(self, r0, c0):
        """float32 `(B, H, bq, bk)` multipliers of the tile at `(r0, c0)`; None without dropout."""
        if not self.rate:
            return None
        rows = slice_axes(self.rows, {2: (r0, self.plan.bq)})
        cols = slice_axes(self.cols, {2: (c0, self.plan.bk)})
        bits = _mix32(ops.bitwise_xor(rows[..., :, None], cols[..., None, :]))
        uniform = ops.cast(_shift_right(bits, 8), "float32") * (1.0 / (1 << 24))
        return ops.where(ops.greater_equal(uniform, self.rate), 1.0 / (1.0 - self.rate), 0.0)


def _pad_last(x, amount: int):
    return ops.pad(x, [(0, 0), (0, 0), (0, amount)]) if amount else x
