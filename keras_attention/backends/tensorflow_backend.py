"""TensorFlow-only helpers; imported only under `KERAS_BACKEND=tensorflow`."""

from __future__ import annotations

import tensorflow as tf


def _kind(device_name: str) -> str | None:
    name = device_name.upper()
    for kind in ("GPU", "TPU", "CPU"):
        if f"DEVICE:{kind}" in name or name.startswith(kind) or f":{kind}:" in name:
            return kind.lower()
    return None


def device_kind(tensor=None) -> str:
    """ "cpu", "gpu" or "tpu": the tensor's device, else TensorFlow's default placement."""
    kind = _kind(getattr(tensor, "device", "") or "")
    if kind is not None:
        return kind
    if tf.config.list_logical_devices("TPU"):
        return "tpu"
    return "gpu" if tf.config.list_logical_devices("GPU") else "cpu"


def free_memory() -> int | None:
    """TensorFlow reports memory in use, not the limit: unknown (None)."""
    return None


def scan_states(step, initial, sequence):
    """`tf.scan`: every state of `state = step(state, x)` over `sequence`'s first axis.

    Keras's TensorFlow `ops.scan` collects its outputs in TensorArrays of a
    `while_loop` without `maximum_iterations`, which XLA refuses to compile
    ("requires a fixed tensor list size"); `tf.scan` bounds the loop.
    """
    return tf.scan(step, sequence, initializer=initial)
