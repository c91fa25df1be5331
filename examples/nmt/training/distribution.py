"""``tf.distribute`` for the NMT example: the ``--strategy`` and multi-worker training.

``make_strategy`` builds the strategy; with ``multiworker``
(``MultiWorkerMirroredStrategy``, workers from ``TF_CONFIG``) it has to run
before any TensorFlow op, which ``train.main`` ensures. ``is_chief`` tells
the process that writes the run; ``describe`` the devices it trains on (the
first line a run prints); ``prepare_multi_worker_fit`` works around two
failures of Keras 3.15's ``fit`` with several workers.
"""

from __future__ import annotations

import os
from typing import Any

import keras
import tensorflow as tf


def make_strategy(name: str) -> tf.distribute.Strategy:
    """The ``--strategy``; ``multiworker`` reads ``TF_CONFIG`` and must come before any TF op.

    ``MultiWorkerMirroredStrategy`` configures collective ops in the eager
    context, which TensorFlow allows only before it is initialized (the first
    op); ``main`` therefore creates the strategy right after parsing.
    """
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multiworker":  # workers from the TF_CONFIG environment variable
        return tf.distribute.MultiWorkerMirroredStrategy()
    return tf.distribute.get_strategy()


def worker_count(strategy: tf.distribute.Strategy) -> int:
    """Processes in the strategy's cluster (``TF_CONFIG``); 1 without one."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None:
        return 1
    return max(sum(len(tasks) for tasks in resolver.cluster_spec().as_dict().values()), 1)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the run: no cluster, the chief, or worker 0 without one."""
    resolver = getattr(strategy, "cluster_resolver", None)
    task_type = getattr(resolver, "task_type", None)
    if not task_type or task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return task_type == "worker" and resolver.task_id == 0 and not has_chief


def describe(strategy: tf.distribute.Strategy) -> str:
    """One line: ``Training on: CPU (2 logical cores)``, the GPUs found, the strategy's replicas."""
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        names = [
            tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name)
            for gpu in gpus
        ]
        devices = f"{len(gpus)} GPU{'s' if len(gpus) > 1 else ''} ({', '.join(names)})"
    else:
        affinity = getattr(os, "sched_getaffinity", None)
        cores = len(affinity(0)) if affinity is not None else os.cpu_count()
        devices = f"CPU ({cores} logical cores)"
    replicas, workers = strategy.num_replicas_in_sync, worker_count(strategy)
    line = f"Training on: {devices}"
    if replicas > 1 or workers > 1:
        line += f"; {type(strategy).__name__}, {replicas} replicas"
        line += f" on {workers} workers" if workers > 1 else ""
    elif len(gpus) > 1:
        line += "; one replica (--strategy mirrored trains on every GPU)"
    return line


def prepare_multi_worker_fit(model: keras.Model, batches: tf.data.Dataset) -> None:
    """Works around two failures of Keras 3.15's ``fit`` with several workers.

    1. Under a strategy, ``fit`` first all-reduces a batch (mean over
       replicas) only to learn its shapes (``_maybe_symbolic_build``); with
       ``MultiWorkerMirroredStrategy`` and ``(inputs, targets)`` batches it
       fails (``Attempt to convert a value (PerReplica...)``), and bucketed
       batches differ in shape between workers anyway. The same build runs
       here from a batch of this worker (``_symbolic_build``), then none in ``fit``.
    2. Across workers ``fit`` averages each step's logs with
       ``strategy.reduce("MEAN", value, axis=0)``, which rejects scalars
       (``Invalid reduction dimension 0``): the steps return ``(1,)`` logs.
    """
    # Keras's private hooks: no public way to give `fit` the shapes.
    model._symbolic_build(data_batch=next(iter(batches)))  # noqa: SLF001
    model._maybe_symbolic_build = lambda iterator=None, data_batch=None: None  # noqa: SLF001

    def with_vector_logs(step: Any) -> Any:
        def wrapped(batch: Any) -> dict[str, tf.Tensor]:
            return {name: tf.reshape(value, [1]) for name, value in step(batch).items()}

        return wrapped

    model.train_step = with_vector_logs(model.train_step)
    model.test_step = with_vector_logs(model.test_step)
