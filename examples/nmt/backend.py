"""What differs between Keras backends in the example, in one place.

The example runs on TensorFlow, JAX and PyTorch, chosen by ``KERAS_BACKEND``
(unset: TensorFlow, which each command line sets before importing Keras).
Its models, losses, metrics and searches are ``keras.ops``; its input
pipeline and text ops are TensorFlow on the host on every backend (Keras 3
feeds a ``tf.data.Dataset`` to ``fit`` on each). What is left per backend:

* ``devices()``: what the run trains on, for the first line it prints;
* ``compile_search(model, fn)``: a search over NumPy source ids, compiled
  where the backend compiles (``jax.jit`` over the model's variables as
  arguments; ``torch.no_grad`` eagerly on PyTorch; TensorFlow traces the
  whole translator instead, ``examples.nmt.translator.translate_fn``);
* ``keep_tensorflow_on_the_host()``: TensorFlow feeds the data and leaves
  the GPUs to the backend;
* ``compiles_per_shape()``: JAX compiles a program per input shape, so its
  training batches come at a few static shapes (``LENGTH_BUCKET``);
* ``peak_memory_mb()``: a GPU run's peak memory, for ``metrics.json``;
* ``name()``: the backend a run records (``runs``), so a resume on another
  backend fails clearly.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import keras
import numpy as np

from examples.nmt import host

BACKENDS = ("tensorflow", "jax", "torch")
# On a backend that compiles one program per shape (JAX), sequences are padded
# to a multiple of this many tokens (training batches and the searches' sources).
# 4 pads as much (the length buckets' edges are multiples of 8) for more
# compiles; exact lengths, 11% fewer tokens on CMUdict for 4x the compiles
# (docs/backends.md, "Why a multiple of 8").
LENGTH_BUCKET = 8


def name() -> str:
    """The Keras backend of this process: ``"tensorflow"``, ``"jax"`` or ``"torch"``."""
    return keras.backend.backend()


def keep_tensorflow_on_the_host() -> None:
    """On JAX and PyTorch, hides the GPUs from TensorFlow (it only feeds ``tf.data``).

    A CUDA build of TensorFlow would otherwise take most of each GPU's memory
    when it starts. Call before any TensorFlow op; a no-op on TensorFlow.
    """
    if name() == "tensorflow" or host.uses_host():
        return
    import tensorflow as tf  # noqa: PLC0415

    try:
        tf.config.set_visible_devices([], "GPU")
    except RuntimeError:  # TensorFlow started already: too late, and harmless on a CPU
        pass


def compiles_per_shape() -> bool:
    """Whether each new input shape costs a compilation (JAX): then batches get few shapes."""
    return name() == "jax"


def _cpu_cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


# /proc/cpuinfo flags of a CPU that computes bfloat16 itself (Intel AMX or
# AVX512_BF16, AMD Zen 4 and later; Arm's bf16 extension).
_BFLOAT16_CPU_FLAGS = frozenset({"amx_bf16", "avx512_bf16", "bf16"})


def native_bfloat16_cpu(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this machine's CPU has bfloat16 arithmetic (Linux ``flags``/``Features``).

    Elsewhere, or where ``cpuinfo`` cannot be read, False: a CPU without it
    emulates bfloat16 through float32, slower than float32 itself.
    """
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as file:
            text = file.read()
    except OSError:
        return False
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features") and _BFLOAT16_CPU_FLAGS & set(value.split()):
            return True
    return False


def accelerators() -> list[str]:
    """The names of this process's GPUs (or TPUs) on the current backend; empty on a CPU."""
    backend = name()
    if backend == "jax":
        import jax  # noqa: PLC0415  (the JAX backend's own package)

        return [
            getattr(device, "device_kind", str(device))
            for device in jax.local_devices()
            if device.platform != "cpu"
        ]
    if backend == "torch":
        import torch  # noqa: PLC0415

        if not torch.cuda.is_available():
            return []
        return [torch.cuda.get_device_name(index) for index in range(torch.cuda.device_count())]
    import tensorflow as tf  # noqa: PLC0415

    return [
        tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name)
        for gpu in tf.config.list_physical_devices("GPU")
    ]


def devices() -> str:
    """``"TensorFlow, CPU (2 logical cores)"``, ``"JAX, 1 GPU (NVIDIA H200)"``, ...

    On JAX, CPU devices beyond one (``--xla_force_host_platform_device_count``)
    are counted too: data parallelism shards over them.
    """
    label = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}[name()]
    found = accelerators()
    if found:
        kinds = ", ".join(sorted(set(found)))
        return f"{label}, {len(found)} GPU{'s' if len(found) > 1 else ''} ({kinds})"
    text = f"{label}, CPU ({_cpu_cores()} logical cores)"
    if name() == "jax":
        import jax  # noqa: PLC0415

        count = len(jax.local_devices())
        if count > 1:
            text += f", {count} JAX CPU devices"
    return text


def peak_memory_mb() -> float | None:
    """The most GPU memory this process has held, in MiB; None on a CPU (or if unknown)."""
    if not accelerators():
        return None
    if name() == "jax":
        import jax  # noqa: PLC0415

        stats = jax.local_devices()[0].memory_stats() or {}
        peak = stats.get("peak_bytes_in_use")
    elif name() == "torch":
        import torch  # noqa: PLC0415

        peak = torch.cuda.max_memory_allocated()
    else:
        import tensorflow as tf  # noqa: PLC0415

        peak = tf.config.experimental.get_memory_info("GPU:0").get("peak")
    return None if peak is None else round(peak / 2**20, 1)


def compile_search(model: Any, fn: Callable[[Any], Any]) -> Callable[[np.ndarray], Any]:
    """``fn(source_ids) -> pytree of tensors`` as a function of NumPy ids -> NumPy arrays.

    On JAX, ``jax.jit`` of a pure function of the model's variable values
    (``keras.StatelessScope``, as Keras's own ``predict`` does), so the
    weights are arguments, not constants folded into the program; compiled
    once per source shape. On PyTorch, eager under ``torch.no_grad()``. On
    TensorFlow, eager (the translator traces its own ``tf.function``).
    """
    backend = name()
    to_numpy = keras.tree.map_structure  # keeps NamedTuples (SearchResult)
    if backend == "jax":
        import jax  # noqa: PLC0415

        variables = list(model.variables)

        @jax.jit
        def pure(values: list, source_ids: Any) -> Any:
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return fn(source_ids)

        def run(source_ids: np.ndarray) -> Any:
            result = pure([variable.value for variable in variables], source_ids)
            return to_numpy(np.asarray, result)

        return run
    if backend == "torch":
        import torch  # noqa: PLC0415

        def run_torch(source_ids: np.ndarray) -> Any:
            with torch.no_grad():
                result = fn(keras.ops.convert_to_tensor(source_ids, "int32"))
            return to_numpy(keras.ops.convert_to_numpy, result)

        return run_torch

    def run_eagerly(source_ids: np.ndarray) -> Any:
        return to_numpy(keras.ops.convert_to_numpy, fn(keras.ops.convert_to_tensor(source_ids)))

    return run_eagerly
