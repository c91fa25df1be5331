"""What only one backend can say or do, one module per Keras backend.

`current()` imports the module of the running backend and no other, so the
TensorFlow module is never imported under JAX or PyTorch. Each module answers
the same questions for the path rule (`keras_attention.memory_efficient`):
`device_kind(tensor=None)`, "cpu", "gpu" or "tpu", for where a call runs; and
`free_memory()`, the free bytes of the default accelerator, or None when the
backend cannot say. A module may also offer its own form of a loop
(`scan_states`), used where the generic one fails on that backend, or of a
piece of math (`additive_projection`, `windowed_attention`), used where it
was measured faster or is the kernel's own form, or where the generic form
loses precision (`matmul`); each is tested against the generic `keras.ops`
form.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import keras
from keras import ops

_MODULES = {"tensorflow": "tensorflow_backend", "jax": "jax_backend", "torch": "torch_backend"}
DEVICE_KINDS = ("cpu", "gpu", "tpu")


def current(backend: str | None = None) -> ModuleType | None:
    """The module for `backend` (default: the running one), or None (e.g. numpy)."""
    name = _MODULES.get(backend or keras.backend.backend())
    return None if name is None else importlib.import_module(f"keras_attention.backends.{name}")


def device_kind(tensor=None) -> str:
    """Where `tensor` lives, or where a new computation runs: "cpu", "gpu" or "tpu"."""
    module = current()
    return "cpu" if module is None else module.device_kind(tensor)


def free_memory() -> int | None:
    """Free bytes on the default accelerator, or None when unknown (or no accelerator)."""
    module = current()
    return None if module is None else module.free_memory()


def matmul(x1, x2):
    """`x1 @ x2` in the inputs' own precision, on every backend.

    The product every score and weighted sum of the package takes: the
    backend's own `matmul` where `keras.ops.matmul` loses precision (on
    PyTorch, Keras 3.15 multiplies two float64 tensors in float32), else
    `keras.ops.matmul`.
    """
    module = current()
    product = getattr(module, "matmul", None)
    return ops.matmul(x1, x2) if product is None else product(x1, x2)


def additive_projection(hidden, vector):
    """The backend's own `hidden · v` over the last axis for this device, or None.

    None means the generic form (`scores.AdditiveScore.project`) is the one to use.
    """
    module = current()
    project = getattr(module, "additive_projection", None)
    return None if project is None else project(hidden, vector)


def windowed_attention(query, key, value, scale, left, right, causal):
    """The backend's fused attention inside a window, `(B, Tq, H, dv)`, or None.

    `query` `(B, Tq, H, dk)`, `key` `(B, Tv, H, dk)`, `value` `(B, Tv, H, dv)`;
    query `i` sees keys `i - left <= j <= i + right` (`Tq == Tv`), and `j <= i`
    too when `causal`. None means the generic form (a band mask,
    `memory_efficient.fused.windowed_dot_product_attention`) is the one to use.
    """
    module = current()
    attend = getattr(module, "windowed_attention", None)
    return None if attend is None else attend(query, key, value, scale, left, right, causal)


def scan_states(step, initial, sequence):
    """Every state of `state = step(state, x)` for `x` along `sequence`'s first axis.

    `initial` and the states are nests of tensors; returns the nest of states
    stacked on a new first axis. Differentiable, and compiled by XLA and
    `jax.jit` (`keras.ops.scan`, or the backend's own `scan_states`).
    """
    module = current()
    if module is not None and hasattr(module, "scan_states"):
        return module.scan_states(step, initial, sequence)

    def both(state, x):
        state = step(state, x)
        return state, state

    return ops.scan(both, initial, sequence)[1]
