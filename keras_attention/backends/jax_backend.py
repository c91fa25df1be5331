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
