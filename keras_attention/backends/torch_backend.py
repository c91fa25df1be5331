"""PyTorch-only helpers; imported only under `KERAS_BACKEND=torch`."""

from __future__ import annotations

import torch


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
