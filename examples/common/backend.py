"""What differs between Keras backends for every example, in one place.

* ``name()``: the backend this process runs (``KERAS_BACKEND``);
* ``devices()``: what a run trains on, for the first line it prints;
* ``accelerators()`` and ``peak_memory_mb()``: its GPUs, and the most GPU
  memory it held, for ``metrics.json``;
* ``set_seed(seed)``: every generator a run draws from, without importing
  TensorFlow on JAX or PyTorch;
* ``compile_search(model, fn)``: a search over NumPy inputs, compiled where
  the backend compiles (``jax.jit`` over the model's variables as arguments;
  ``torch.no_grad`` eagerly on PyTorch; eagerly on TensorFlow).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import keras
import numpy as np


def name() -> str:
    """The Keras backend of this process: ``"tensorflow"``, ``"jax"`` or ``"torch"``."""
    return keras.backend.backend()


def set_seed(seed: int) -> None:
    """Seeds Python's, NumPy's and the backend's generators, as ``keras.utils.set_random_seed``.

    That function also imports TensorFlow wherever it is installed, to seed
    it, which a JAX or PyTorch run must not (the examples need TensorFlow
    only for the export). On TensorFlow it is called as it is. Elsewhere it
    does the rest of what that function does: Keras's global seed (which
    ``keras.distribution`` hands every process) and a fresh global seed
    generator (unseeded random ops, dropout), Python's ``random`` (unseeded
    initializers draw their seeds from it), NumPy's, and on PyTorch torch's.
    """
    if name() == "tensorflow":
        keras.utils.set_random_seed(seed)
        return
    try:  # Keras's own state, as set_random_seed sets it (not public: checked by a test)
        from keras.src.backend.common import global_state  # noqa: PLC0415
        from keras.src.random import seed_generator  # noqa: PLC0415
        from keras.src.utils import rng_utils  # noqa: PLC0415

        global_state.set_global_attribute(rng_utils.GLOBAL_RANDOM_SEED, seed)
        global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)
    except (ImportError, AttributeError):  # another Keras: its function, TensorFlow and all
        keras.utils.set_random_seed(seed)
        return
    random.seed(seed)
    np.random.seed(seed)
    if name() == "torch":
        import torch  # noqa: PLC0415  (the PyTorch backend's own package)

        torch.manual_seed(seed)


def _cpu_cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


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


def _tensors(inputs: Any) -> Any:
    """NumPy inputs (a structure of arrays) as tensors; integer arrays as int32 (token ids)."""

    def convert(array: Any) -> Any:
        integer = np.issubdtype(np.asarray(array).dtype, np.integer)
        return keras.ops.convert_to_tensor(array, "int32" if integer else None)

    return keras.tree.map_structure(convert, inputs)


def compile_search(model: Any, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn(inputs) -> pytree of tensors`` as a function of NumPy inputs -> NumPy arrays.

    ``inputs`` is an array (source ids, images, waveforms) or a structure of
    them. On JAX, ``jax.jit`` of a pure function of the model's variable values
    (``keras.StatelessScope``, as Keras's own ``predict`` does), so the
    weights are arguments, not constants folded into the program; compiled
    once per input shape. On PyTorch, eager under ``torch.no_grad()``. On
    TensorFlow, eager (a caller that wants a graph traces its own ``tf.function``).
    """
    backend = name()
    to_numpy = keras.tree.map_structure  # keeps NamedTuples (SearchResult)
    if backend == "jax":
        import jax  # noqa: PLC0415

        variables = list(model.variables)

        @jax.jit
        def pure(values: list, inputs: Any) -> Any:
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return fn(inputs)

        def run(inputs: Any) -> Any:
            result = pure([variable.value for variable in variables], inputs)
            return to_numpy(np.asarray, result)

        return run
    if backend == "torch":
        import torch  # noqa: PLC0415

        def run_torch(inputs: Any) -> Any:
            with torch.no_grad():
                result = fn(_tensors(inputs))
            return to_numpy(keras.ops.convert_to_numpy, result)

        return run_torch

    def run_eagerly(inputs: Any) -> Any:
        return to_numpy(keras.ops.convert_to_numpy, fn(_tensors(inputs)))

    return run_eagerly
