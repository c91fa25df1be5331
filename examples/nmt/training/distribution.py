"""Training past one device: ``--strategy``, on the engine each backend supports.

* ``default``: the backend's one device (TensorFlow places ops itself; JAX
  and PyTorch take their first device).
* ``mirrored`` (TensorFlow): ``tf.distribute.MirroredStrategy`` over this
  machine's GPUs.
* ``data`` (JAX): ``keras.distribution.DataParallel`` over every device of
  every process. With several processes (one per host), each starts with
  ``--coordinator HOST:PORT --num-processes N --process-id I``, or with the
  environment variables ``keras.distribution.initialize`` reads
  (``KERAS_DISTRIBUTION_JOB_ADDRESSES``, ``KERAS_DISTRIBUTION_NUM_PROCESSES``,
  ``KERAS_DISTRIBUTION_PROCESS_ID``); process 0, the chief, writes the run.

The global batch is the recipe's ``--batch-size`` on every strategy, split
across devices (``shard_batches``). ``multiworker``
(``tf.distribute.MultiWorkerMirroredStrategy``) is refused: Keras 3 does not
support it (keras-team/keras#20585, open; it ran here only through two
private workarounds), and JAX with ``keras.distribution`` is Keras's own
engine across machines.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from examples.nmt import backend
from examples.nmt.cli import RunError

STRATEGIES = ("default", "mirrored", "data")
# Which backend runs each strategy beyond the default.
STRATEGY_BACKENDS = {"mirrored": "tensorflow", "data": "jax"}
MULTIWORKER_REFUSAL = (
    "--strategy multiworker (tf.distribute.MultiWorkerMirroredStrategy) is not supported: "
    "Keras 3 does not support it (keras-team/keras#20585). Across machines, train with "
    "KERAS_BACKEND=jax --strategy data --coordinator HOST:PORT --num-processes N --process-id I"
)


@dataclass
class Distribution:
    """How this process trains: the strategy, its devices and whether it writes the run.

    Attributes:
        strategy: the ``--strategy`` name.
        replicas: devices a global batch is split over (all processes).
        processes: processes training together; ``process_id`` this one's.
        tf_strategy: the ``tf.distribute.Strategy`` on TensorFlow, else None.
    """

    strategy: str = "default"
    replicas: int = 1
    processes: int = 1
    process_id: int = 0
    tf_strategy: Any = None

    @property
    def is_chief(self) -> bool:
        """Whether this process writes the run folder (process 0)."""
        return self.process_id == 0

    def scope(self) -> contextlib.AbstractContextManager:
        """Where the model and optimizer are built: the TF strategy's scope, else nothing."""
        if self.tf_strategy is not None:
            return self.tf_strategy.scope()
        return contextlib.nullcontext()

    def describe(self) -> str:
        """The first line of a run: ``Training on: JAX, CPU (2 logical cores)`` and the strategy."""
        line = f"Training on: {backend.devices()}"
        if self.replicas > 1 or self.processes > 1:
            line += f"; --strategy {self.strategy}, {self.replicas} replicas"
            line += f" in {self.processes} processes" if self.processes > 1 else ""
        elif len(backend.accelerators()) > 1:
            flag = {"tensorflow": "mirrored", "jax": "data"}.get(backend.name())
            line += f"; one replica (--strategy {flag} trains on every GPU)" if flag else ""
        return line


def _initialize_processes(
    coordinator: str | None, num_processes: int | None, process_id: int | None
) -> None:
    """``keras.distribution.initialize`` for several JAX processes (flags or environment)."""
    import jax  # noqa: PLC0415  (the JAX backend's package)

    # Collectives between CPU processes (GPUs use their own); set before JAX
    # starts, as keras.distribution.initialize must be.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    keras.distribution.initialize(coordinator, num_processes, process_id)


def setup(
    strategy: str = "default",
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
) -> Distribution:
    """Sets up ``strategy`` on this backend; call once, before any model is built.

    Raises:
        RunError: a strategy of another backend, or process flags without ``data``.
    """
    current = backend.name()
    needed = STRATEGY_BACKENDS.get(strategy)
    if needed is not None and needed != current:
        raise RunError(
            f"--strategy {strategy} needs KERAS_BACKEND={needed}; this process runs "
            f"KERAS_BACKEND={current}"
        )
    several = coordinator is not None or "KERAS_DISTRIBUTION_JOB_ADDRESSES" in os.environ
    if several and strategy != "data":
        raise RunError(
            "--coordinator, --num-processes and --process-id (or KERAS_DISTRIBUTION_* "
            "variables) need --strategy data"
        )
    if strategy == "mirrored":
        import tensorflow as tf  # noqa: PLC0415

        tf_strategy = tf.distribute.MirroredStrategy()
        return Distribution(strategy, tf_strategy.num_replicas_in_sync, tf_strategy=tf_strategy)
    if strategy == "data":
        import jax  # noqa: PLC0415

        if several:
            _initialize_processes(coordinator, num_processes, process_id)
        keras.distribution.set_distribution(
            keras.distribution.DataParallel(auto_shard_dataset=False)
        )
        return Distribution(strategy, len(jax.devices()), jax.process_count(), jax.process_index())
    return Distribution()


def shard_batches(batches: Any, distribution: Distribution) -> Any:
    """The global batches as this process feeds them to ``fit`` under ``distribution``.

    With ``data``, the batches come at the recipe's full batch size, rounded
    up to a multiple of the replicas (``host.batches.pad_batches``: padding rows
    weigh nothing), so that they split evenly over the devices; with several
    processes each keeps its own contiguous rows. Every process builds the
    same batches from the same seed, so the rows of one step share one
    padded length, and together they are the recipe's batch.
    """
    if distribution.processes == 1:
        return batches
    return batches.shard(distribution.process_id, distribution.processes)


def wait_for_all(distributed: Distribution, name: str) -> None:
    """With several processes, returns once every one has reached this ``name``.

    The other processes wait here for the chief to finish its evaluation and
    export: a process that left earlier would stop sending the coordinator
    its heartbeats, which ends the chief too.
    """
    if distributed.processes > 1:
        from jax.experimental import multihost_utils  # noqa: PLC0415

        multihost_utils.sync_global_devices(name)


def bytes_from_the_chief(distributed: Distribution, data: bytes) -> bytes:
    """The chief's ``data`` in every process (what the others pass is ignored)."""
    if distributed.processes == 1:
        return data
    from jax.experimental import multihost_utils  # noqa: PLC0415

    sent = np.frombuffer(data, np.uint8)
    size = int(multihost_utils.broadcast_one_to_all(np.int32(sent.size)))
    sent = sent if distributed.is_chief else np.zeros(size, np.uint8)
    return np.asarray(multihost_utils.broadcast_one_to_all(sent)).tobytes()


def from_the_chief(distributed: Distribution, value: Any) -> Any:
    """``value`` (JSON-able) as the chief has it, in every process.

    The run folder is the chief's (the others write to temporary folders):
    whether its training is done and how far a killed run got are its
    answers, which the others need to train in step with it.
    """
    data = json.dumps(value).encode() if distributed.is_chief else b""
    return json.loads(bytes_from_the_chief(distributed, data).decode())
