"""Memory-efficient attention: the chunked path, the fused path and the rule between them.

The exact path (`keras_attention.ops`) builds the `(B, H, Tq, Tv)` logits and
weights (and, for additive scores, a `(B, Tq, Tv, U)` tanh), and autodiff keeps
them for the backward pass: memory grows as `Tq * Tv`. The chunked path cuts
queries and keys into blocks, keeps per query row only a running max `m`, a
running sum `l` and the unnormalized context `acc` (the "online softmax",
Milakov & Gimelshein 2018; Rabe & Staats 2021), and defines its own gradient
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
a causal mask or a sliding window, tiles wholly outside the band are never
computed: a window `w` costs `O(T * w)`, not `O(T²)`.

The scores are those of `keras_attention.scores`, the same objects the exact
path uses. Masks follow the package's convention (`True` = may attend) and are
given as pieces, so no `(B, Tq, Tv)` mask is ever built: `query_mask`
`(B, Tq)`, `value_mask` `(B, Tv)`, `attention_mask` `(B, Tq, Tv)` (already
quadratic when given), `use_causal_mask` (end-aligned like
`masks.causal_mask`), `window` (a sliding window, `masks.sliding_window_mask`).
A query with nothing to attend to gets a zero context and zero gradients, as
on the exact path.

Modules: `chunked` (the functions), `tiles` (tile geometry, masks and the two
passes), `dropout` (per-tile dropout masks), `fused` (the backend kernel
wrapper), `paths` (the rule).
"""

from keras_attention.memory_efficient.chunked import DEFAULT_ADDITIVE_BLOCK_SIZE
from keras_attention.memory_efficient.chunked import DEFAULT_DOT_BLOCK_SIZE
from keras_attention.memory_efficient.chunked import chunked_additive_attention
from keras_attention.memory_efficient.chunked import chunked_attention
from keras_attention.memory_efficient.chunked import chunked_dot_product_attention
from keras_attention.memory_efficient.fused import fused_dot_product_attention
from keras_attention.memory_efficient.paths import AUTO_CHUNKED_MIN_ELEMENTS
from keras_attention.memory_efficient.paths import AUTO_CHUNKED_MIN_ELEMENTS_JAX
from keras_attention.memory_efficient.paths import IMPLEMENTATIONS
from keras_attention.memory_efficient.paths import choose_implementation
from keras_attention.memory_efficient.paths import fused_attention_available
from keras_attention.memory_efficient.paths import fused_attention_refusal

__all__ = [
    "AUTO_CHUNKED_MIN_ELEMENTS",
    "AUTO_CHUNKED_MIN_ELEMENTS_JAX",
    "DEFAULT_ADDITIVE_BLOCK_SIZE",
    "DEFAULT_DOT_BLOCK_SIZE",
    "IMPLEMENTATIONS",
    "choose_implementation",
    "chunked_additive_attention",
    "chunked_attention",
    "chunked_dot_product_attention",
    "fused_attention_available",
    "fused_attention_refusal",
    "fused_dot_product_attention",
]
