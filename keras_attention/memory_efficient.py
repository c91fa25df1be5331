"""Memory-efficient attention: tiles, an online softmax, a recomputing backward.

The exact path (`keras_attention.ops`) builds the `(B, H, Tq, Tv)` logits and
weights (and, for additive scores, a `(B, Tq, Tv, U)` tanh), and autodiff keeps
them for the backward pass: memory grows as `Tq * Tv`. The functions here cut
queries and keys into blocks, keep per query row only a running max `m`, a
running sum `l` and the unnormalized context `acc` (the "online softmax",
Milakov & Gimelshein 2018; Rabe & Staats 2021), and define their own gradient
(`keras.ops.custom_gradient`) that stores only the context `O` and the
log-sum-exp `L = m + log l` per row and recomputes each tile's weights, as in
FlashAttention (Dao et al., 2022):

    P = exp(S - L)            D = rowsum(dO * O)
    dV += Pᵀ dO               dS = P * (dO Vᵀ - D)
    dQ += dS ∂S/∂Q            dK += dSᵀ ∂S/∂K

Memory is `O((Tq + Tv) * d)` plus one tile, on TensorFlow, JAX and PyTorch.
Tiles are visited by `keras.ops.fori_loop` (a `tf.while_loop`, a
`lax.fori_loop`, a Python loop on PyTorch), so the traced graph does not grow
with the sequence; tile shapes are static, so the sequence lengths must be
known when the function is traced (padding to whole blocks is masked). Under
causal masking, tiles wholly in the future are never computed: loop bounds
skip them.

Masks follow the package's convention (`True` = may attend) and are given as
pieces, so no `(B, Tq, Tv)` mask is ever built: `query_mask` `(B, Tq)`,
`value_mask` `(B, Tv)`, `attention_mask` `(B, Tq, Tv)` (already quadratic when
given), `use_causal_mask` (end-aligned like `masks.causal_mask`: query `i` sees
key `j` iff `j <= i + Tv - Tq`). A query with nothing to attend to gets a zero
context and zero gradients, as on the exact path.

Shape letters: `B` batch, `H` heads, `Tq` queries, `Tv` keys/values, `dk`,
`dv` features, `U` additive units; `...` is `(B,)` or `(B, H)`.
"""

from __future__ import annotations

import math
from typing import Optional

import keras
from keras import ops

from keras_attention.masks import _FLOAT32_LARGE_NEGATIVE

IMPLEMENTATIONS = ("auto", "exact", "chunked")

# Tile sides that keep one tile's temporaries a few MiB: a dot-product tile is
# (B, H, block, block); an additive tile is (B, block, block, U).
DEFAULT_DOT_BLOCK_SIZE = 512
DEFAULT_ADDITIVE_BLOCK_SIZE = 32

# "auto" switches to the chunked path once the exact path's largest
# temporary, (B, H, Tq, Tv) weights or the (B, Tq, Tv, U) tanh, would reach
# this many elements (256 MiB in float32; the exact step peaks at about four
# times that). Below it the exact path is faster on TensorFlow and PyTorch
# and small enough. On JAX, XLA fuses each tile and the chunked path was
# measured faster than the exact one from T = 256 (B=1, H=8) on.
AUTO_CHUNKED_MIN_ELEMENTS = 2**26
AUTO_CHUNKED_MIN_ELEMENTS_JAX = 2**20


# ----------------------------------------------------------------------------
# Public functions
# ----------------------------------------------------------------------------
def chunked_dot_product_attention(
    query,
    key,
    value,
    *,
    scale: Optional[float] = None,
    query_mask=None,
    value_mask=None,
    attention_mask=None,
    use_causal_mask: bool = False,
    dropout_rate: float = 0.0,
    seed=None,
    block_size: Optional[int] = None,
):
    """Softmax attention `softmax(scale · q kᵀ) v` in tiles, `O(T)` memory.

    Equal to `ops.scaled_dot_product_attention(...)[0]` with the combined
    mask, forward and backward, without ever holding the `(..., Tq, Tv)`
    weights.

    Args:
        query: `(..., Tq, dk)`; `...` is `(B,)` or `(B, H)`.
        key: `(..., Tv, dk)`.
        value: `(..., Tv, dv)`.
        scale: multiplies the logits; `None` means `1/sqrt(dk)`.
        query_mask, value_mask, attention_mask, use_causal_mask: the mask
            pieces described in the module docstring (heads share them).
        dropout_rate: fraction of the attention weights dropped.
        seed: int, `keras.random.SeedGenerator` or None, for the dropout.
        block_size: queries and keys per tile (default 512).

    Returns:
        The context `(..., Tq, dv)` in `value`'s dtype.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    return _chunked(
        _DotScore(float(scale)),
        (query, key, value),
        block_size or DEFAULT_DOT_BLOCK_SIZE,
        masks=(query_mask, value_mask, attention_mask, use_causal_mask),
        dropout=(dropout_rate, seed),
    )


def chunked_additive_attention(
    query,
    key,
    value,
    score_vector,
    *,
    query_mask=None,
    value_mask=None,
    attention_mask=None,
    use_causal_mask: bool = False,
    dropout_rate: float = 0.0,
    seed=None,
    block_size: Optional[int] = None,
):
    """Additive attention `softmax(v · tanh(q_i + k_j)) value` in tiles.

    The blockwise form of `ops.additive_scores` followed by a masked softmax
    and `ops.attend`: the `(B, Tq, Tv, U)` tanh exists one
    `(B, block, block, U)` tile at a time, forward and backward.

    Args:
        query: `(B, Tq, U)`, the projected queries (plus any bias).
        key: `(B, Tv, U)`, the projected keys.
        value: `(B, Tv, dv)`.
        score_vector: `(U,)`, the `v` of the score (scaled as you need).
        query_mask, value_mask, attention_mask, use_causal_mask,
        dropout_rate, seed: as in `chunked_dot_product_attention`.
        block_size: queries and keys per tile (default 32).

    Returns:
        The context `(B, Tq, dv)` in `value`'s dtype.
    """
    return _chunked(
        _AdditiveScore(),
        (query, key, value, score_vector),
        block_size or DEFAULT_ADDITIVE_BLOCK_SIZE,
        masks=(query_mask, value_mask, attention_mask, use_causal_mask),
        dropout=(dropout_rate, seed),
    )


def choose_implementation(
    implementation: str = "auto",
    *,
    score: Optional[str] = "dot",
    probability_fn: str = "softmax",
    return_attention_scores: bool = False,
    query_length: Optional[int] = None,
    value_length: Optional[int] = None,
    batch_size: Optional[int] = None,
    heads: int = 1,
    units: Optional[int] = None,
    fused_available: bool = False,
    backend: Optional[str] = None,
) -> str:
    """Which attention path a layer call takes: "exact", "chunked" or "fused".

    - `"exact"` always gives the exact path.
    - `"chunked"` gives the chunked path, and raises a ValueError when the
      call needs the weights (`return_attention_scores=True`) or a normalizer
      other than softmax. With lengths unknown at trace time it gives the
      exact path (the tiles need static lengths).
    - `"auto"` gives the exact path whenever the weights are requested, the
      normalizer is not softmax, or a length is unknown. Otherwise it gives
      `"fused"` when `fused_available` (a backend kernel; see
      `fused_attention_available`), else `"chunked"` once the exact path's
      largest temporary would hold `AUTO_CHUNKED_MIN_ELEMENTS` (2**26)
      elements: `B * H * Tq * Tv` weights for dot-product scores,
      `B * Tq * Tv * units` for the tanh of additive scores (an unknown
      batch size counts as 1). Smaller problems stay exact: on TensorFlow
      and PyTorch the chunked path, which recomputes the logits in the
      backward pass, is slower. On JAX the bar is
      `AUTO_CHUNKED_MIN_ELEMENTS_JAX` (2**20), where the fused tiles are
      already faster than the exact path.

    Args:
        implementation: "auto", "exact" or "chunked".
        score: "dot" (scaled dot product, Luong dot/general, multi-head),
            "additive" (Bahdanau, Luong concat), or None (no blockwise form).
        probability_fn: the layer's normalizer.
        return_attention_scores: whether the call returns the weights.
        query_length, value_length: static `Tq`, `Tv`, or None when unknown.
        batch_size: static `B`, or None when unknown.
        heads: `H` of a multi-head score.
        units: `U` of an additive score.
        fused_available: result of `fused_attention_available` for this call.
        backend: the Keras backend; defaults to the current one.
    """
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(
            f"`implementation` must be one of {IMPLEMENTATIONS}. "
            f"Received: implementation={implementation!r}"
        )
    if implementation == "exact":
        return "exact"
    if score is None:  # a score without a blockwise form
        if implementation == "chunked":
            raise ValueError("implementation='chunked' needs a dot-product or additive score.")
        return "exact"
    if implementation == "chunked":
        if return_attention_scores or probability_fn != "softmax":
            raise ValueError(
                "implementation='chunked' never materializes the attention "
                "weights, so it supports only probability_fn='softmax' and "
                "return_attention_scores=False. Received: "
                f"probability_fn={probability_fn!r}, "
                f"return_attention_scores={return_attention_scores!r}. Use "
                "implementation='auto' to fall back to the exact path."
            )
    elif return_attention_scores or probability_fn != "softmax":
        return "exact"
    if not isinstance(query_length, int) or not isinstance(value_length, int):
        return "exact"
    if implementation == "chunked":
        return "chunked"
    if fused_available:
        return "fused"
    width = (units or 1) if score == "additive" else heads
    elements = (batch_size or 1) * width * query_length * value_length
    jax = (backend or keras.backend.backend()) == "jax"
    threshold = AUTO_CHUNKED_MIN_ELEMENTS_JAX if jax else AUTO_CHUNKED_MIN_ELEMENTS
    return "chunked" if elements >= threshold else "exact"


def fused_attention_available(
    *,
    dtype,
    head_dim: Optional[int],
    query_length: Optional[int],
    value_length: Optional[int],
    use_causal_mask: bool = False,
    has_value_mask: bool = False,
    has_attention_mask: bool = False,
    dropout: float = 0.0,
    backend: Optional[str] = None,
    on_gpu: Optional[bool] = None,
) -> bool:
    """Whether `keras.ops.dot_product_attention` can run a call, fused, in `O(T)`.

    Deliberately conservative:

    - PyTorch on any device (`scaled_dot_product_attention` has flash and
      memory-efficient kernels on CUDA and a flash kernel on CPUs; measured
      here on CPU: `O(T)` memory and faster than our tiles);
    - JAX only on a GPU, in float16/bfloat16 (cuDNN flash attention; float32,
      or a CPU, would take XLA's quadratic path). Not testable here;
    - not TensorFlow (there the op is a plain einsum);
    - head size (`head_dim`, the same for keys and values; None when they
      differ) a multiple of 8, at most 128;
    - no dropout, no `value_mask`, no `attention_mask` (as boolean masks the
      kernels turn them into a materialized bias, and a key-less row gives
      NaN); a `query_mask` is fine (applied to the output);
    - causal only with `Tq == Tv` (the kernels align the triangle to the top
      left, this package to the end; they agree when the lengths are equal).

    `backend` defaults to the current backend; `on_gpu` (JAX) to whether
    JAX has a GPU.
    """
    backend = backend or keras.backend.backend()
    dtype = keras.backend.standardize_dtype(dtype)
    if backend == "jax":
        if on_gpu is None:
            on_gpu = _jax_has_gpu()
        if not on_gpu or dtype not in ("float16", "bfloat16"):
            return False
    elif backend != "torch":
        return False
    if not isinstance(head_dim, int) or head_dim % 8 or head_dim > 128:
        return False
    if dropout or has_value_mask or has_attention_mask:
        return False
    return not use_causal_mask or (
        isinstance(query_length, int) and query_length == value_length
    )


def fused_dot_product_attention(
    query,
    key,
    value,
    *,
    scale: Optional[float] = None,
    query_mask=None,
    use_causal_mask: bool = False,
):
    """`keras.ops.dot_product_attention` on this package's layout and masks.

    `query` `(..., Tq, dk)`, `key` `(..., Tv, dk)`, `value` `(..., Tv, dv)`
    with `...` `(B,)` or `(B, H)`; `query_mask` `(B, Tq)` zeroes masked rows.
    Only for the cases `fused_attention_available` accepts.
    """
    heads = len(query.shape) == 4
    if not heads:
        query, key, value = (ops.expand_dims(x, 1) for x in (query, key, value))
    query, key, value = (ops.swapaxes(x, 1, 2) for x in (query, key, value))  # (B, T, H, d)
    context = ops.dot_product_attention(query, key, value, scale=scale, is_causal=use_causal_mask)
    context = ops.swapaxes(context, 1, 2)  # (B, H, Tq, dv)
    if query_mask is not None:
        keep = ops.cast(query_mask, "bool")[:, None, :, None]  # (B, 1, Tq, 1)
        context = ops.where(keep, context, ops.zeros_like(context))
    return context if heads else ops.squeeze(context, 1)


_JAX_HAS_GPU = []


def _jax_has_gpu() -> bool:
    if not _JAX_HAS_GPU:
        devices = keras.distribution.list_devices()
        _JAX_HAS_GPU.append(any(str(d).lower().startswith(("gpu", "cuda")) for d in devices))
    return _JAX_HAS_GPU[0]


# ----------------------------------------------------------------------------
# Scores: logits of one tile and their gradient. Logits are float32.
# ----------------------------------------------------------------------------
class _DotScore:
    """`scale · q kᵀ`, with the scale folded into the query once."""

    def __init__(self, scale: float):
        self.scale = scale

    def prepare(self, query):
        return query * ops.cast(self.scale, query.dtype)

    def logits(self, query, key, extra):
        logits = ops.einsum("bhqd,bhkd->bhqk", query, key)  # (B, H, R, C)
        return ops.cast(logits, "float32")

    def augment(self, query, key, log_sum_exp):
        """`[q, -L]` and `[k, 1]`: their product is `S - L` (backward pass)."""
        return _augment(query, -log_sum_exp), _augment(key, 1.0)

    def shifted_logits(self, query, key, extra, shift):
        """`(S - shift, cache)`; the shift is already in the augmented features."""
        return self.logits(query, key, extra), None

    def grads(self, d_logits, query, key, extra, cache):
        """`(dq, dk, d_extra)` of a tile, float32; `query` is the scaled one."""
        d_logits = ops.cast(d_logits, query.dtype)
        d_query = ops.matmul(d_logits, key)  # (B, H, R, dk)
        d_key = ops.einsum("bhqk,bhqd->bhkd", d_logits, query)  # (B, H, C, dk)
        return ops.cast(d_query, "float32") * self.scale, ops.cast(d_key, "float32"), ()


class _AdditiveScore:
    """`w · tanh(q_i + k_j)`; `extra = (w,)`, shapes `(B, 1, R, U)`, `(U,)`."""

    def prepare(self, query):
        return query

    def _hidden(self, query, key):
        return ops.tanh(query[..., :, None, :] + key[..., None, :, :])  # (B, 1, R, C, U)

    def _project(self, hidden, w):
        return ops.cast(ops.squeeze(ops.matmul(hidden, w[:, None]), -1), "float32")

    def logits(self, query, key, extra):
        return self._project(self._hidden(query, key), extra[0])

    def augment(self, query, key, log_sum_exp):
        return query, key

    def shifted_logits(self, query, key, extra, shift):
        """`(S - shift, tanh)`: the backward pass reuses the tanh."""
        hidden = self._hidden(query, key)
        return self._project(hidden, extra[0]) - shift[..., None], hidden

    def grads(self, d_logits, query, key, extra, hidden):
        (w,) = extra
        hidden = ops.cast(hidden, "float32")
        d_w = ops.einsum("bhqk,bhqku->u", d_logits, hidden)  # (U,)
        slope = 1.0 - hidden * hidden  # tanh' (B, 1, R, C, U)
        w = ops.cast(w, "float32")
        d_query = ops.einsum("bhqk,bhqku->bhqu", d_logits, slope) * w  # (B, 1, R, U)
        d_key = ops.einsum("bhqk,bhqku->bhku", d_logits, slope) * w  # (B, 1, C, U)
        return d_query, d_key, (d_w,)


# ----------------------------------------------------------------------------
# Tile geometry, masks and dropout. Tile starts may be tensors (loop indices).
# ----------------------------------------------------------------------------
def _floor_div(x, y: int):
    return x // y if isinstance(x, int) else ops.floor_divide(x, y)


def _clip(x, low: int, high: int):
    return min(max(x, low), high) if isinstance(x, int) else ops.clip(x, low, high)


class _Plan:
    """Static block sizes and counts, and which tiles causality leaves out."""

    def __init__(self, tq: int, tv: int, block: int, causal: bool):
        self.tq, self.tv, self.causal, self.offset = tq, tv, causal, tv - tq
        self.bq, self.bk = min(block, tq), min(block, tv)
        self.nq, self.nk = -(-tq // self.bq), -(-tv // self.bk)

    def key_blocks(self, i):
        """Number of key blocks query block `i` may see: blocks `[0, n)`."""
        if not self.causal:
            return self.nk
        last_row = (i + 1) * self.bq - 1  # sees keys up to last_row + offset
        return _clip(_floor_div(last_row + self.offset, self.bk) + 1, 0, self.nk)

    def first_query_block(self, j):
        """First query block that may see key block `j`: blocks `[n, nq)`."""
        if not self.causal:
            return 0
        return _clip(_floor_div(j * self.bk - self.offset, self.bq), 0, self.nq)


class _TileMasks:
    """The call's mask pieces, padded once and sliced per tile; never combined whole."""

    def __init__(self, plan, query_mask, value_mask, attention_mask):
        self.plan = plan
        pad_q, pad_k = plan.nq * plan.bq - plan.tq, plan.nk * plan.bk - plan.tv

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
        self.any = plan.causal or self.ragged_keys or any(
            m is not None for m in (query_mask, value_mask, attention_mask)
        )

    def tile(self, r0, c0):
        """Boolean `(B|1, 1, bq, bk)` mask of the tile at `(r0, c0)`, or None."""
        bq, bk = self.plan.bq, self.plan.bk
        parts = []
        if self.query is not None:
            parts.append(_slice(self.query, (0, 0, r0, 0), (None, 1, bq, 1)))
        if self.value is not None:
            parts.append(_slice(self.value, (0, 0, 0, c0), (None, 1, 1, bk)))
        if self.pairs is not None:
            parts.append(_slice(self.pairs, (0, 0, r0, c0), (None, 1, bq, bk)))
        cols = c0 + ops.arange(bk, dtype="int32")[None, :]  # (1, bk)
        if self.ragged_keys:
            parts.append(ops.less(cols, self.plan.tv)[None, None])
        if self.plan.causal:
            rows = r0 + ops.arange(bq, dtype="int32")[:, None]  # (bq, 1)
            parts.append(ops.less_equal(cols, rows + self.plan.offset)[None, None])
        combined = None
        for part in parts:
            combined = part if combined is None else ops.logical_and(combined, part)
        return combined


def _after(index, tensor):
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


def _add_block(blocks, index, update):
    """`blocks[index] += update` for a `(n, ...)` buffer, as one scatter."""
    index = ops.reshape(ops.convert_to_tensor(index, "int32"), (1, 1))
    current = ops.take(blocks, index[0], axis=0)  # (1, ...)
    return ops.scatter_update(blocks, index, current + update[None])


def _slice(x, starts, sizes):
    """`ops.slice` with `None` sizes meaning the whole (possibly dynamic) axis."""
    shape = ops.shape(x)
    sizes = [shape[axis] if size is None else size for axis, size in enumerate(sizes)]
    return ops.slice(x, starts, sizes)


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


class _TileDropout:
    """Dropout whose mask each tile regenerates, identically in both passes.

    One random int32 per query row and per key column is drawn per call
    (`O(T)`); an element's keep decision hashes its row's and column's
    numbers, so no `(Tq, Tv)` mask is ever stored.
    """

    def __init__(self, plan, rate, seed, batch_heads):
        self.plan, self.rate = plan, float(rate)
        if not self.rate:
            return
        shape = tuple(batch_heads) + (plan.tq + plan.tv,)
        numbers = keras.random.randint(shape, 0, 2**31 - 1, dtype="int32", seed=seed)
        pad = lambda x, n: ops.pad(x, [(0, 0), (0, 0), (0, n)]) if n else x  # noqa: E731
        self.rows = pad(numbers[..., : plan.tq], plan.nq * plan.bq - plan.tq)  # (B, H, Tq')
        cols = _mix32(numbers[..., plan.tq :])
        self.cols = pad(cols, plan.nk * plan.bk - plan.tv)  # (B, H, Tv')

    def multiplier(self, r0, c0):
        """`keep / (1 - rate)`, float32 `(B, H, bq, bk)`; None without dropout."""
        if not self.rate:
            return None
        rows = _slice(self.rows, (0, 0, r0), (None, None, self.plan.bq))
        cols = _slice(self.cols, (0, 0, c0), (None, None, self.plan.bk))
        bits = _mix32(ops.bitwise_xor(rows[..., :, None], cols[..., None, :]))
        uniform = ops.cast(_shift_right(bits, 8), "float32") * (1.0 / (1 << 24))
        return ops.where(ops.greater_equal(uniform, self.rate), 1.0 / (1.0 - self.rate), 0.0)


# ----------------------------------------------------------------------------
# The tiled forward and backward passes
# ----------------------------------------------------------------------------
def _chunked(score, inputs, block, masks, dropout):
    """The custom-gradient attention over `inputs = (query, key, value, *score_params)`."""
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"`block_size` must be a positive integer. Received: {block!r}")
    (query, key, value), extra = inputs[:3], tuple(inputs[3:])
    query_mask, value_mask, attention_mask, causal = masks
    heads = len(query.shape) == 4
    if not heads:  # (B, T, d) -> (B, 1, T, d)
        query, key, value = (ops.expand_dims(x, 1) for x in (query, key, value))
    tq, tv = query.shape[-2], key.shape[-2]
    if not isinstance(tq, int) or not isinstance(tv, int):
        raise ValueError(
            "The chunked attention path needs static sequence lengths. "
            f"Received: query shape {tuple(query.shape)}, key shape {tuple(key.shape)}"
        )
    plan = _Plan(tq, tv, block, bool(causal))
    tiles = _Tiles(
        score,
        plan,
        _TileMasks(plan, query_mask, value_mask, attention_mask),
        _TileDropout(plan, *dropout, ops.shape(query)[:2]),
    )

    @ops.custom_gradient
    def attention(query, key, value, *extra):
        padded = tiles.pad(score.prepare(query), key, value)
        context, log_sum_exp = tiles.forward(*padded, extra)
        output = ops.cast(context[..., :tq, :], value.dtype)

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            grads = tiles.backward(*padded, extra, context, log_sum_exp, upstream)
            return tuple(ops.cast(g, x.dtype) for g, x in zip(grads, (query, key, value) + extra))

        return output, grad

    context = attention(query, key, value, *extra)
    return context if heads else ops.squeeze(context, 1)


class _Tiles:
    """The forward and backward passes over `(bq, bk)` tiles, as nested loops."""

    def __init__(self, score, plan, masks, dropout):
        self.score, self.plan, self.masks, self.dropout = score, plan, masks, dropout

    def pad(self, query, key, value):
        plan = self.plan
        return (
            _pad_time(query, plan.nq * plan.bq - plan.tq),
            _pad_time(key, plan.nk * plan.bk - plan.tv),
            _pad_time(value, plan.nk * plan.bk - plan.tv),
        )

    def _rows(self, x, i):
        starts = (0, 0, i * self.plan.bq) + (0,) * (len(x.shape) - 3)
        return _slice(x, starts, (None, None, self.plan.bq) + (None,) * (len(x.shape) - 3))

    def _cols(self, x, j):
        return _slice(x, (0, 0, j * self.plan.bk, 0), (None, None, self.plan.bk, None))

    def _weights(self, logits, i, j, shift=None):
        """`exp(logits - shift)`, zero where masked, float32 `(B, H, bq, bk)`.

        `shift` is a function of the tile's masked row max (forward pass), or
        None when `logits` are already shifted (backward pass).
        """
        mask = self.masks.tile(i * self.plan.bq, j * self.plan.bk) if self.masks.any else None
        if mask is not None:
            logits = ops.where(mask, logits, _FLOAT32_LARGE_NEGATIVE)
        if shift is not None:
            shift = shift(ops.max(logits, axis=-1))  # (B, H, bq)
            logits = logits - shift[..., None]
        weights = ops.exp(logits)
        if mask is not None:
            weights = ops.where(mask, weights, 0.0)
        return weights, shift

    def forward(self, query, key, value, extra):
        """Context (float32) and log-sum-exp `(B, H, Tq')` of every (padded) row."""
        plan, batch_heads = self.plan, tuple(ops.shape(query)[:2])

        def query_block(i, buffers):
            q_tile = self._rows(query, _after(i, buffers[1]))  # (B, H, bq, dk)

            def key_block(j, state):
                running_max, total, acc = state
                k_tile = self._cols(key, _after(j, total))
                logits = self.score.logits(q_tile, k_tile, extra)  # (B, H, bq, bk)
                weights, new_max = self._weights(
                    logits, i, j, shift=lambda tile_max: ops.maximum(running_max, tile_max)
                )
                multiplier = self.dropout.multiplier(i * plan.bq, j * plan.bk)
                dropped = weights if multiplier is None else weights * multiplier
                v_tile = self._cols(value, j)
                partial = ops.matmul(ops.cast(dropped, v_tile.dtype), v_tile)  # (B, H, bq, dv)
                decay = ops.exp(running_max - new_max)  # (B, H, bq)
                total = decay * total + ops.sum(weights, axis=-1)
                acc = decay[..., None] * acc + ops.cast(partial, "float32")
                return new_max, total, acc

            start = (
                ops.full(batch_heads + (plan.bq,), _FLOAT32_LARGE_NEGATIVE),
                ops.zeros(batch_heads + (plan.bq,)),
                ops.zeros(batch_heads + (plan.bq, ops.shape(value)[-1])),
            )
            running_max, total, acc = ops.fori_loop(0, plan.key_blocks(i), key_block, start)
            seen = ops.greater(total, 0.0)  # False on rows that see nothing
            safe_total = ops.where(seen, total, 1.0)
            context = acc / safe_total[..., None]  # acc is 0 on unseen rows
            log_sum_exp = ops.where(seen, running_max + ops.log(safe_total), 0.0)
            contexts, log_sum_exps = buffers
            return (
                ops.slice_update(contexts, (0, 0, i * plan.bq, 0), context),
                ops.slice_update(log_sum_exps, (0, 0, i * plan.bq), log_sum_exp),
            )

        rows = plan.nq * plan.bq
        buffers = (
            ops.zeros(batch_heads + (rows, ops.shape(value)[-1])),
            ops.zeros(batch_heads + (rows,)),
        )
        return ops.fori_loop(0, plan.nq, query_block, buffers)

    def backward(self, query, key, value, extra, context, log_sum_exp, d_context):
        """Gradients for `(query, key, value, *extra)` (unpadded, float32).

        One pass over the tiles, keys outer: a key block's dK, dV (and the
        score parameters' gradient) are carried through its query blocks,
        and each tile adds its share of dQ to a blocked dQ buffer. Shifts
        ride along in the matmuls as one more feature where they can
        (`_augment`), which leaves a column to drop at the end.
        """
        plan, batch_heads = self.plan, tuple(ops.shape(query)[:2])
        d_context = _pad_time(d_context, plan.nq * plan.bq - plan.tq)
        delta = ops.sum(ops.cast(d_context, "float32") * context, axis=-1)  # (B, H, Tq')
        q_rows, k_cols = self.score.augment(query, key, log_sum_exp)
        d_rows, v_cols = d_context, value
        if not self.dropout.rate:  # [dO, -D] · [v, 1]ᵀ = dO vᵀ - D
            d_rows, v_cols = _augment(d_context, -delta), _augment(value, 1.0)
        rows = (q_rows, d_rows, log_sum_exp, delta)

        def key_block(j, buffers):
            d_query, d_key, d_value, d_extra = buffers
            j_after = _after(j, d_key)
            k_tile, v_tile = self._cols(k_cols, j_after), self._cols(v_cols, j_after)

            def query_block(i, carry):
                d_query, d_k, d_v, d_e = carry
                i_after = _after(i, d_k)
                q_tile, d_out, lse, delta = (self._rows(x, i_after) for x in rows)
                logits, cache = self.score.shifted_logits(q_tile, k_tile, extra, lse)
                weights, _ = self._weights(logits, i, j)  # P, (B, H, bq, bk)
                d_weights = ops.cast(ops.einsum("bhqd,bhkd->bhqk", d_out, v_tile), "float32")
                multiplier = self.dropout.multiplier(i * plan.bq, j * plan.bk)
                dropped = weights
                if multiplier is not None:
                    d_weights = d_weights * multiplier - delta[..., None]
                    dropped = weights * multiplier
                d_logits = weights * d_weights  # dS = P (dP - D)
                dropped = ops.cast(dropped, d_out.dtype)
                d_v = d_v + ops.cast(ops.einsum("bhqk,bhqd->bhkd", dropped, d_out), "float32")
                g_q, g_k, g_e = self.score.grads(d_logits, q_tile, k_tile, extra, cache)
                d_query = _add_block(d_query, i, g_q)
                return d_query, d_k + g_k, d_v, tuple(a + b for a, b in zip(d_e, g_e))

            carry = (d_query, _zeros_like(k_tile), _zeros_like(v_tile), d_extra)
            first = plan.first_query_block(j)
            d_query, d_k, d_v, d_extra = ops.fori_loop(first, plan.nq, query_block, carry)
            start = (0, 0, j * plan.bk, 0)
            return (
                d_query,
                ops.slice_update(d_key, start, d_k),
                ops.slice_update(d_value, start, d_v),
                d_extra,
            )

        d_query = ops.zeros((plan.nq,) + batch_heads + (plan.bq, ops.shape(q_rows)[-1]))
        d_extra = tuple(map(_zeros_like, extra))
        buffers = (d_query, _zeros_like(k_cols), _zeros_like(v_cols), d_extra)
        d_query, d_key, d_value, d_extra = ops.fori_loop(0, plan.nk, key_block, buffers)
        d_query = ops.moveaxis(d_query, 0, 2)  # (B, H, nq, bq, dk[+1])
        d_query = ops.reshape(d_query, batch_heads + (plan.nq * plan.bq, -1))  # (B, H, Tq', dk[+1])
        dk, dv = ops.shape(query)[-1], ops.shape(value)[-1]
        return (
            d_query[..., : plan.tq, :dk],
            d_key[..., : plan.tv, :dk],
            d_value[..., : plan.tv, :dv],
        ) + tuple(d_extra)


def _zeros_like(x):
    return ops.zeros(ops.shape(x))  # float32


def _augment(x, column):
    """`(B, H, T, d)` -> `(B, H, T, d + 1)` with `column` (`(B, H, T)` or a number) last."""
    if not hasattr(column, "shape"):
        column = ops.full(ops.shape(x)[:-1], column)
    return ops.concatenate([x, ops.cast(column, x.dtype)[..., None]], axis=-1)


def _pad_time(x, amount: int):
    """Zeros appended on the time axis of `(B, H, T, d)`."""
    return x if not amount else ops.pad(x, [(0, 0), (0, 0), (0, amount), (0, 0)])
