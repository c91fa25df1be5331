"""The path rule: which of the exact, chunked and fused paths a call takes.

`implementation="exact"`, `"chunked"` or `"fused"` asks for one path (and
raises a ValueError, saying why, where that path cannot run the call);
`"auto"` takes:

- any device, any backend: exact whenever the weights are returned, the
  normalizer is not softmax or a length is unknown;
- cpu, torch: fused when `fused_attention_available`, else as TensorFlow;
- cpu, tensorflow: exact below `AUTO_CHUNKED_MIN_ELEMENTS` (2**26) elements
  of the largest temporary, chunked from there;
- cpu, jax: the same with `AUTO_CHUNKED_MIN_ELEMENTS_JAX` (2**20): XLA fuses
  each tile;
- gpu or tpu, any backend: fused when available; else exact while its step
  (about `EXACT_PEAK_TEMPORARIES` times the largest temporary) fits in
  `ACCELERATOR_MEMORY_FRACTION` of the free device memory; chunked beyond;
- cpu, with a sliding window (the chunked path computes only the tiles of the
  band, a share `f` of them, `tiles.Plan.visited_fraction`; the exact and the
  fused paths compute every one): chunked when `f · WINDOW_TILE_COST_FUSED <
  1` where the fused kernel is available, when `f · WINDOW_TILE_COST_EXACT <
  1` where it is not, else as above.

The largest temporary is the `(B, H, Tq, Tv)` weights of a dot-product score
or the `(B, Tq, Tv, U)` tanh of an additive one. On a GPU the chunked path,
which recomputes the logits in its backward pass, was measured 2x slower than
the exact one at sizes the exact path holds easily (issue 10), so there it is
kept for what does not fit.
"""

from __future__ import annotations

import keras

from keras_attention import backends
from keras_attention import call_checks
from keras_attention import validation
from keras_attention.memory_efficient.chunked import DEFAULT_ADDITIVE_BLOCK_SIZE
from keras_attention.memory_efficient.chunked import DEFAULT_DOT_BLOCK_SIZE
from keras_attention.memory_efficient.tiles import Plan

IMPLEMENTATIONS = ("auto", "exact", "chunked", "fused")

AUTO_CHUNKED_MIN_ELEMENTS = 2**26
AUTO_CHUNKED_MIN_ELEMENTS_JAX = 2**20
EXACT_PEAK_TEMPORARIES = 4
ACCELERATOR_MEMORY_FRACTION = 0.5
# Free memory assumed on an accelerator whose backend cannot say (TensorFlow).
ACCELERATOR_DEFAULT_FREE_BYTES = 8 * 2**30
# What a chunked tile costs against the same elements on the fused kernel (PyTorch's
# scaled_dot_product_attention with a band mask) and on the exact path, with a window
# on a CPU (benchmarks/window_paths.py, docs/performance-long-sequences.md: forward and
# training steps on PyTorch; forward and training steps on TensorFlow).
WINDOW_TILE_COST_FUSED = 3.0
WINDOW_TILE_COST_EXACT = 1.25


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
    fused_refusal: str | None = None,
    use_causal_mask: bool = False,
    window=None,
    block_size: int | None = None,
) -> str:
    """Which attention path a layer call takes: "exact", "chunked" or "fused".

    - `"exact"` always gives the exact path.
    - `"chunked"` gives the chunked path, and raises a ValueError when the
      call needs the weights (`return_attention_scores=True`) or a normalizer
      other than softmax. With lengths unknown at trace time it gives the
      exact path (the tiles need static lengths).
    - `"fused"` gives the fused path, and raises a ValueError as `"chunked"`
      does, or when the backend's kernel cannot run the call
      (`fused_available` False; `fused_refusal` says why).
    - `"auto"` follows the rule in this module's docstring.

    Args:
        implementation: "auto", "exact", "chunked" or "fused".
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
        fused_refusal: why the fused kernel cannot run the call, for the
            error of an explicit `"fused"` (`fused_attention_refusal`).
        use_causal_mask, window, block_size: the call's band and the chunked
            path's tiles (None: the score's default), for a windowed call.
    """
    validation.choice("choose_implementation", "implementation", implementation, IMPLEMENTATIONS)
    if implementation == "exact":
        return "exact"
    needs = {"chunked": "a dot-product or additive score", "fused": "a dot-product score"}
    if implementation in needs and (
        score is None or (implementation == "fused" and score != "dot")
    ):
        raise ValueError(
            f"choose_implementation: implementation={implementation!r} needs "
            f"{needs[implementation]}. Received: score={score!r}"
        )
    if score is None:  # a score without a blockwise form
        return "exact"
    if implementation in needs:
        if return_attention_scores or probability_fn != "softmax":
            raise ValueError(
                f"implementation={implementation!r} never materializes the attention "
                "weights, so it supports only probability_fn='softmax' and "
                "return_attention_scores=False. Received: "
                f"probability_fn={probability_fn!r}, "
                f"return_attention_scores={return_attention_scores!r}. Use "
                "implementation='auto' to fall back to the exact path."
            )
    elif return_attention_scores or probability_fn != "softmax":
        return "exact"
    if implementation == "fused":
        if not fused_available:
            raise ValueError(
                "implementation='fused': the backend's fused attention kernel cannot run "
                f"this call. Received: {fused_refusal or 'a call it does not take'}. Use "
                "implementation='auto' to take the fastest path that can."
            )
        return "fused"
    if not isinstance(query_length, int) or not isinstance(value_length, int):
        return "exact"
    if implementation == "chunked":
        return "chunked"
    device = device or backends.device_kind()
    validation.choice("choose_implementation", "device", device, backends.DEVICE_KINDS)
    band_share = 1.0
    if window is not None and device == "cpu":
        default = DEFAULT_ADDITIVE_BLOCK_SIZE if score == "additive" else DEFAULT_DOT_BLOCK_SIZE
        plan = Plan(query_length, value_length, block_size or default, use_causal_mask, window)
        band_share = plan.visited_fraction()
    if fused_available:
        return "chunked" if band_share * WINDOW_TILE_COST_FUSED < 1 else "fused"
    width = (units or 1) if score == "additive" else heads
    elements = (batch_size or 1) * width * query_length * value_length
    if device == "cpu":
        if band_share * WINDOW_TILE_COST_EXACT < 1:
            return "chunked"
        jax = (backend or keras.backend.backend()) == "jax"
        threshold = AUTO_CHUNKED_MIN_ELEMENTS_JAX if jax else AUTO_CHUNKED_MIN_ELEMENTS
        return "chunked" if elements >= threshold else "exact"
    if free_memory is None:
        free_memory = backends.free_memory() or ACCELERATOR_DEFAULT_FREE_BYTES
    peak = EXACT_PEAK_TEMPORARIES * elements * itemsize
    return "exact" if peak <= ACCELERATOR_MEMORY_FRACTION * free_memory else "chunked"


def fused_attention_refusal(
    *,
    dtype,
    head_dim: int | None,
    query_length: int | None,
    value_length: int | None,
    use_causal_mask: bool = False,
    has_value_mask: bool = False,
    has_attention_mask: bool = False,
    window=None,
    soft_cap: bool = False,
    dropout: float = 0.0,
    backend: str | None = None,
    device: str | None = None,
) -> str | None:
    """Why the fused kernel cannot run a call, or None when it can (`fused_attention_available`)."""
    backend = backend or keras.backend.backend()
    dtype = keras.backend.standardize_dtype(dtype)
    if backend == "jax":
        device = device or backends.device_kind()
        if device != "gpu" or dtype not in ("float16", "bfloat16"):
            return (
                f"{dtype} on a JAX {device} (only float16/bfloat16 on a GPU have a fused "
                "kernel, cuDNN's; elsewhere XLA runs the quadratic path)"
            )
    elif backend != "torch":
        return f"the {backend} backend (its `dot_product_attention` is a plain einsum)"
    if not isinstance(head_dim, int) or head_dim % 8 or head_dim > 128:
        return f"head size {head_dim} (keys and values of one size, a multiple of 8, <= 128)"
    for refused, what in (
        (dropout, f"dropout={dropout}"),
        (has_value_mask, "a value_mask"),
        (has_attention_mask, "an attention_mask"),
        (soft_cap, "a logit soft cap (no fused kernel has a tanh cap)"),
    ):
        if refused:
            return what
    static = isinstance(query_length, int) and isinstance(value_length, int)
    if static and (query_length == 0 or value_length == 0):
        return "an empty sequence"
    same_lengths = static and query_length == value_length
    if use_causal_mask and not same_lengths:
        return "a causal mask with Tq != Tv (the kernels align it to the top left)"
    if window is None:
        return None
    if backend == "jax" and not use_causal_mask:
        return "a sliding window without use_causal_mask (cuDNN takes left windows only)"
    if backend == "torch" and not (static and query_length <= value_length):
        return "a sliding window with Tq > Tv or unknown lengths (rows without keys)"
    return None


def fused_attention_available(**call) -> bool:
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
      NaN); a `query_mask` is fine (applied to the output); no logit soft
      cap (`soft_cap`);
    - causal only with `Tq == Tv` (the kernels align the triangle to the top
      left, this package to the end; they agree when the lengths are equal);
    - a sliding `window` (`masks.sliding_window_mask`): on PyTorch with `Tq <=
      Tv` (every query then sees its own position), as a `(Tq, Tv)` band
      mask; on JAX only with `use_causal_mask` (cuDNN's left window,
      `jax.nn.dot_product_attention(local_window_size=...)`).

    Takes the keyword arguments of `fused_attention_refusal`, which says why
    a call is refused. `backend` defaults to the current backend, `device`
    ("cpu", "gpu", "tpu") to where a call runs now.
    """
    return fused_attention_refusal(**call) is None


def call_path(layer, score_kind, query, value_features, masks, dropout, return_weights) -> str:
    """The path, "exact", "chunked" or "fused", of one call of an attention `layer`.

    `query` `(B, [H,] Tq, dk)` and `value_features` `(B, [H,] Tv, dv)` as the
    score sees them; `masks` the call's (`query_mask`, `value_mask`,
    `attention_mask`, `use_causal_mask`, `window`); `dropout` its rate. The
    layer gives its `implementation`, `probability_fn`, compute dtype, heads,
    `units` and `logit_soft_cap`; `fused_attention_refusal` and
    `choose_implementation` decide.
    """
    static = call_checks.static
    query_length = static(query.shape[-2])
    value_length = static(value_features.shape[-2])
    dk, dv = static(query.shape[-1]), static(value_features.shape[-1])
    device = backends.device_kind(query)
    refusal = f"a {score_kind} score"
    if score_kind == "dot":
        refusal = fused_attention_refusal(
            dtype=layer.compute_dtype,
            head_dim=dk if dk == dv else None,
            query_length=query_length,
            value_length=value_length,
            use_causal_mask=bool(masks["use_causal_mask"]),
            has_value_mask=masks["value_mask"] is not None,
            has_attention_mask=masks["attention_mask"] is not None,
            window=masks["window"],
            soft_cap=getattr(layer, "logit_soft_cap", None) is not None,
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
        fused_available=refusal is None,
        device=device,
        fused_refusal=refusal,
        use_causal_mask=bool(masks["use_causal_mask"]),
        window=masks["window"],
        block_size=layer.block_size,
    )
