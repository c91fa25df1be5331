"""JAX-only helpers; imported only under `KERAS_BACKEND=jax`."""

from __future__ import annotations

import jax


def _kind(platform: str) -> str:
    platform = platform.lower()
    if platform in ("gpu", "cuda", "rocm"):
        return "gpu"
    return "tpu" if platform == "tpu" else "cpu"


def device_kind(tensor=None) -> str:
    """ "cpu", "gpu" or "tpu": a concrete array's device, else JAX's default backend."""
    devices = getattr(tensor, "devices", None)
    if callable(devices) and not isinstance(tensor, jax.core.Tracer):
        try:
            return _kind(next(iter(devices())).platform)
        except (StopIteration, RuntimeError, AttributeError):  # deleted or abstract arrays
            pass
    return _kind(jax.default_backend())


def free_memory() -> int | None:
    """Free bytes of the first accelerator (`memory_stats`), or None."""
    device = jax.devices()[0]
    if _kind(device.platform) == "cpu":
        return None
    stats = device.memory_stats() or {}
    if "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def additive_projection(hidden, vector):
    """`hidden · v` over the last axis in the form XLA runs fastest here, or None.

    On a GPU: multiply-and-reduce, `sum(hidden * v, -1)`, accumulated in
    float32. XLA fuses it with the tanh that makes `hidden`, where the generic
    rank-2 matrix product (`scores.AdditiveScore.project`) has to write the
    whole `(..., Tq, Tv, U)` tanh to memory first. Elsewhere None: on a CPU the
    matrix product was measured faster (docs/performance.md).
    """
    if device_kind(hidden) != "gpu":
        return None
    return multiply_reduce(hidden, vector)


def multiply_reduce(hidden, vector):
    """`sum(hidden * v, -1)` in float32, returned in `hidden`'s dtype."""
    product = hidden.astype("float32") * vector.astype("float32")
    return jax.numpy.sum(product, axis=-1).astype(hidden.dtype)


def windowed_attention(query, key, value, scale, left, right, causal):
    """`jax.nn.dot_product_attention` with `local_window_size=(left, right)`.

    Layout `(B, T, H, d)`, `Tq == Tv` (JAX's window is start-aligned). On a
    GPU cuDNN's fused kernel, which takes a left window under a causal mask
    (`paths.fused_attention_refusal` asks for one); where cuDNN refuses the
    call, and off GPUs, XLA's implementation (a masked quadratic product), as
    `keras.ops.dot_product_attention` falls back itself.
    """
    options = dict(scale=scale, is_causal=causal, local_window_size=(left, right))
    if device_kind(query) == "gpu":
        try:
            return jax.nn.dot_product_attention(
                query, key, value, implementation="cudnn", **options
            )
        except Exception:  # cuDNN refuses some shapes, dtypes and versions
            pass
    return jax.nn.dot_product_attention(query, key, value, **options)
