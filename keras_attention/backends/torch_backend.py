"""PyTorch-only helpers; imported only under `KERAS_BACKEND=torch`."""

from __future__ import annotations

import keras
import torch
from keras import ops


def _kind(device_type: str) -> str:
    if device_type in ("cuda", "mps", "xpu"):
        return "gpu"
    return "tpu" if device_type == "xla" else "cpu"


def device_kind(tensor=None) -> str:
    """ "cpu", "gpu" or "tpu": the tensor's device, else CUDA when Keras would use it."""
    device = getattr(tensor, "device", None)
    if isinstance(device, torch.device):
        return _kind(device.type)
    return "gpu" if torch.cuda.is_available() else "cpu"


def free_memory() -> int | None:
    """Free bytes of the current CUDA device (`torch.cuda.mem_get_info`), or None."""
    if not torch.cuda.is_available():
        return None
    free, _total = torch.cuda.mem_get_info()
    return int(free)


def matmul(x1, x2):
    """`ops.matmul`, kept in float64 when either input is float64.

    Keras 3.15's torch `matmul` computes two float64 tensors in float32 (its
    dtype rule gives float32 there, and a float64 `Dense` without bias returns
    float32); `einsum` keeps float64, so a float64 layer computes and returns
    float64 on PyTorch as on TensorFlow.
    """
    dtypes = {keras.backend.standardize_dtype(x.dtype) for x in (x1, x2)}
    if "float64" not in dtypes:
        return ops.matmul(x1, x2)
    x1, x2 = ops.cast(x1, "float64"), ops.cast(x2, "float64")
    return ops.einsum("...ij,...jk->...ik", x1, x2)
