"""What differs between Keras backends in the example, in one place.

The example runs on TensorFlow, JAX and PyTorch, chosen by ``KERAS_BACKEND``
(unset: TensorFlow, which each command line sets before importing Keras).
Its models, losses, metrics and searches are ``keras.ops``; its input
pipeline is NumPy and ``keras.utils.PyDataset`` on every backend
(``examples.nmt.host``). What is left per backend (the shared part in
``examples.common.backend``):

* ``devices()``: what the run trains on, for the first line it prints;
* ``compile_search(model, fn)``: a search over NumPy source ids, compiled
  where the backend compiles (``jax.jit`` over the model's variables as
  arguments; ``torch.no_grad`` eagerly on PyTorch; TensorFlow traces the
  whole translator instead, ``examples.nmt.translator.translate_fn``);
* ``keep_tensorflow_on_the_host()``: TensorFlow, where it reads a TFDS
  dataset or loads a SavedModel, leaves the GPUs to the backend;
* ``compiles_per_shape(jit_compile)``: JAX, and TensorFlow with XLA
  (``--jit-compile``), compile a program per input shape, so their training
  batches come at a few static shapes (``LENGTH_BUCKET``);
* ``peak_memory_mb()``: a GPU run's peak memory, for ``metrics.json``;
* ``name()``: the backend a run records (``runs``), so a resume on another
  backend fails clearly.
"""

from __future__ import annotations

from examples.common.backend import accelerators  # noqa: F401  (backend.accelerators)
from examples.common.backend import compile_search  # noqa: F401  (backend.compile_search)
from examples.common.backend import devices  # noqa: F401  (backend.devices)
from examples.common.backend import name
from examples.common.backend import peak_memory_mb  # noqa: F401  (backend.peak_memory_mb)
from examples.common.backend import set_seed  # noqa: F401  (backend.set_seed)

BACKENDS = ("tensorflow", "jax", "torch")
# On a backend that compiles one program per shape (JAX), sequences are padded
# to a multiple of this many tokens (training batches and the searches' sources).
# 4 pads as much (the length buckets' edges are multiples of 8) for more
# compiles; exact lengths, 11% fewer tokens on CMUdict for 4x the compiles
# (docs/backends.md, "Why a multiple of 8").
LENGTH_BUCKET = 8


def keep_tensorflow_on_the_host() -> None:
    """On JAX and PyTorch, hides the GPUs from TensorFlow before it reads data or a SavedModel.

    A process of another backend imports TensorFlow only for that (TFDS
    catalogue datasets, ``translate.py`` with a SavedModel); a CUDA build of
    TensorFlow would otherwise take most of each GPU's memory when it starts.
    Call before any TensorFlow op; a no-op on TensorFlow.
    """
    if name() == "tensorflow":
        return
    import tensorflow as tf  # noqa: PLC0415

    try:
        tf.config.set_visible_devices([], "GPU")
    except RuntimeError:  # TensorFlow started already: too late, and harmless on a CPU
        pass


def compiles_per_shape(jit_compile: bool = False) -> bool:
    """Whether each new input shape costs a compilation: then batches get few shapes.

    JAX compiles every step; TensorFlow with ``jit_compile`` compiles each new
    shape with XLA (a retrace would cost only a trace). PyTorch runs eagerly.
    """
    return name() == "jax" or (jit_compile and name() == "tensorflow")


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
