"""The path rule: which of the exact, chunked and fused paths a call takes.

- any device, any backend: exact whenever the weights are returned, the
  normalizer is not softmax or a length is unknown;
- cpu, torch: fused when `fused_attention_available`, else as TensorFlow;
- cpu, tensorflow: exact below `AUTO_CHUNKED_MIN_ELEMENTS` (2**26) elements
  of the largest temporary, chunked from there;
- cpu, jax: the same with `AUTO_CHUNKED_MIN_ELEMENTS_JAX` (2**20): XLA fuses
  each tile;
- gpu or tpu, any backend: fused when available; else exact while its step
  (about `EXACT_PEAK_TEMPORARIES` times the largest temporary) fits in
  `ACCELERATOR_MEMORY_FRACTION` of the free device memory; chunked beyond.

The largest temporary is the `(B, H, Tq, Tv)` weights of a dot-product score
or the `(B, Tq, Tv, U)` tanh of an additive one. On a GPU the chunked path,
which recomputes the logits in its backward pass, was measured 2x slower than
the exact one at sizes the exact path holds easily (issue 10), so there it is
kept for what does not fit.
"""

from __future__ import annotations

import keras

from keras_attention import backends
from keras_attention import validation

IMPLEMENTATIONS = ("auto", "exact", "chunked")

AUTO_CHUNKED_MIN_ELEMENTS = 2**26
AUTO_CHUNKED_MIN_ELEMENTS_JAX = 2**20
EXACT_PEAK_TEMPORARIES = 4
ACCELERATOR_MEMORY_FRACTION = 0.5
# Free memory assumed on an accelerator whose backend cannot say (TensorFlow).
ACCELERATOR_DEFAULT_FREE_BYTES = 8 * 2**30


def choose_implementation(
    implementation: str = "auto",
    *,
    score: str | None = "dot",
    probability_fn: str = "softmax",
    return_attention_scores: bool = False,
    query_length: int | None = None,
    value_length: int | None = None,
    batch_size: int | None = None,
    heads: int = 1,
    units: int | None = None,
    fused_available: bool = False,
    backend: str | None = None,
    device: str | None = None,
    free_memory: int | None = None,
    itemsize: int = 4,
) -> str:
    """Which attention path a layer call takes: "exact", "chunked" or "fused".

    - `"exact"` always gives the exact path.
    - `"chunked"` gives the chunked path, and raises a ValueError when the
      call needs the weights (`return_attention_scores=True`) or a normalizer
      other than softmax. With lengths unknown at trace time it gives the
      exact path (the tiles need static lengths).
    - `"auto"` follows the rule in this module's docstring.

    Args:
        implementation: "auto", "exact" or "chunked".
        score: "dot" (scaled dot product, Luong dot/general, multi-head),
            "additive" (Bahdanau, Luong concat), or None (no blockwise form).
        probability_fn: the layer's normalizer.
        return_attention_scores: whether the call returns the weights.
        query_length, value_length: static `Tq`, `Tv`, or None when unknown.
        batch_size: static `B`, or None when unknown (counted as 1).
        heads: `H` of a multi-head score.
        units: `U` of an additive score.
        fused_available: result of `fused_attention_available` for this call.
        backend: the Keras backend; defaults to the current one.
        device: "cpu", "gpu" or "tpu"; defaults to where a call runs now.
        free_memory: free device bytes; on an accelerator defaults to what the
            backend reports (`ACCELERATOR_DEFAULT_FREE_BYTES` when it cannot).
        itemsize: bytes per element of the largest temporary (4 for float32).
    """
    validation.choice("choose_implementation", "implementation", implementation, IMPLEMENTATIONS)
    if implementation == "exact":
        return "exact"
    if score is None:  # a score without a blockwise form
        if implementation == "chunked":
            raise ValueError(
                "choose_implementation: implementation='chunked' needs a dot-product or "
                f"additive score. Received: score={score!r}"
            )
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
    device = device or backends.device_kind()
    validation.choice("choose_implementation", "device", device, backends.DEVICE_KINDS)
    if device == "cpu":
        jax = (backend or keras.backend.backend()) == "jax"
        threshold = AUTO_CHUNKED_MIN_ELEMENTS_JAX if jax else AUTO_CHUNKED_MIN_ELEMENTS
        return "chunked" if elements >= threshold else "exact"
    if free_memory is None:
        free_memory = backends.free_memory() or ACCELERATOR_DEFAULT_FREE_BYTES
    peak = EXACT_PEAK_TEMPORARIES * elements * itemsize
    return "exact" if peak <= ACCELERATOR_MEMORY_FRACTION * free_memory else "chunked"


def fused_attention_available(
    *,
    dtype,
    head_dim: int | None,
    query_length: int | None,
    value_length: int | None,
    use_causal_mask: bool = False,
    has_value_mask: bool = False,
    has_attention_mask: bool = False,
    has_window: bool = False,
    dropout: float = 0.0,
    backend: str | None = None,
    device: str | None = None,
) -> bool:
    """Whether `keras.ops.dot_product_attention` can run a call, fused, in `O(T)`.

    Deliberately conservative:

    - PyTorch on any device (`scaled_dot_product_attention` has flash and
      memory-efficient kernels on CUDA and a flash kernel on CPUs; measured
      here on CPU: `O(T)` memory and faster than our tiles);
    - JAX only on a GPU, in float16/bfloat16 (cuDNN flash attention; float32,
      or a CPU, would take XLA's quadratic path);
    - not TensorFlow (there the op is a plain einsum);
    - head size (`head_dim`, the same for keys and values; None when they
      differ) a multiple of 8, at most 128;
    - no dropout, no `value_mask`, no `attention_mask` (as boolean masks the
      kernels turn them into a materialized bias, and a key-less row gives
      NaN); a `query_mask` is fine (applied to the output);
    - no sliding window (`has_window`): `keras.ops.dot_product_attention`
      takes one only as such a `(Tq, Tv)` mask; the chunked path skips the
      tiles outside the band instead;
    - causal only with `Tq == Tv` (the kernels align the triangle to the top
      left, this package to the end; they agree when the lengths are equal).

    `backend` defaults to the current backend, `device` ("cpu", "gpu", "tpu")
    to where a call runs now.
    """
    backend = backend or keras.backend.backend()
    dtype = keras.backend.standardize_dtype(dtype)
    if backend == "jax":
        device = device or backends.device_kind()
        if device != "gpu" or dtype not in ("float16", "bfloat16"):
            return False
    elif backend != "torch":
        return False
    if not isinstance(head_dim, int) or head_dim % 8 or head_dim > 128:
        return False
    if dropout or has_value_mask or has_attention_mask or has_window:
        return False
    if isinstance(query_length, int) and isinstance(value_length, int):
        if query_length == 0 or value_length == 0:
            return False
    return not use_causal_mask or (isinstance(query_length, int) and query_length == value_length)


def call_path(layer, score_kind, query, value_features, masks, dropout, return_weights) -> str:
    """The path, "exact", "chunked" or "fused", of one call of an attention `layer`.

    `query` `(B, [H,] Tq, dk)` and `value_features` `(B, [H,] Tv, dv)` as the
    score sees them; `masks` the call's (`query_mask`, `value_mask`,
    `attention_mask`, `use_causal_mask`, `window`); `dropout` its rate. The
    layer gives its `implementation`, `probability_fn`, compute dtype, heads
    and `units`; `fused_attention_available` and `choose_implementation`
    decide.
    """
    static = validation.static
    query_length = static(query.shape[-2])
    value_length = static(value_features.shape[-2])
    dk, dv = static(query.shape[-1]), static(value_features.shape[-1])
    device = backends.device_kind(query)
    fused = score_kind == "dot" and fused_attention_available(
        dtype=layer.compute_dtype,
        head_dim=dk if dk == dv else None,
        query_length=query_length,
        value_length=value_length,
        use_causal_mask=bool(masks["use_causal_mask"]),
        has_value_mask=masks["value_mask"] is not None,
        has_attention_mask=masks["attention_mask"] is not None,
        has_window=masks["window"] is not None,
        dropout=dropout,
        device=device,
    )
    return choose_implementation(
        layer.implementation,
        score=score_kind,
        probability_fn=layer.probability_fn,
        return_attention_scores=return_weights,
        query_length=query_length,
        value_length=value_length,
        batch_size=static(query.shape[0]),
        heads=layer.num_heads if layer.has_heads else 1,
        units=getattr(layer, "units", None),
        fused_available=fused,
        device=device,
    )
