"""Argument checks shared by every layer and function of the package.

Each check raises a `ValueError` (or `TypeError` for a wrong kind of object)
that names the owner (a layer or function), the argument, what was expected
and what was received, and returns the value in its canonical Python type.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import keras


def fail(owner: str, name: str, expected: str, received: Any, error: type = ValueError):
    """Raise `error` with the package's message format."""
    raise error(f"{owner}: `{name}` must be {expected}. Received: {name}={received!r}")


def integer(
    owner: str, name: str, value: Any, *, minimum: int = 1, allow_none: bool = False, when: str = ""
):
    """`value` as a Python `int` >= `minimum` (NumPy integers accepted, `bool` rejected).

    `when` completes the requirement in the message (" when score_mode='concat'").
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        fail(owner, name, kind + (" or None" if allow_none else "") + when, value)
    return int(value)


def number(owner: str, name: str, value: Any, *, allow_none: bool = False):
    """`value` as a Python `float` (any real number but `bool`)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(owner, name, "a number" + (" or None" if allow_none else ""), value)
    return float(value)


def flag(owner: str, name: str, value: Any) -> bool:
    """`value` as a Python `bool` (True or False only: not 0/1, not a tensor)."""
    if not isinstance(value, bool):
        fail(owner, name, "True or False", value, error=TypeError)
    return value


def positive_number(owner: str, name: str, value: Any) -> float:
    """`value` as a Python `float` > 0 (any real number but `bool`)."""
    value = number(owner, name, value)
    if value <= 0:
        fail(owner, name, "a positive number", value)
    return value


def int_or_scalar_tensor(
    owner: str, name: str, value: Any, *, minimum: int = 1, error: type = ValueError
):
    """A Python `int` >= `minimum`, or a scalar integer tensor (known only when run).

    A tensor is returned as int32; its value cannot be checked without running it.
    """
    if isinstance(value, numbers.Integral) or not hasattr(value, "shape"):
        return integer(owner, name, value, minimum=minimum)
    dtype = keras.backend.standardize_dtype(value.dtype)
    if tuple(value.shape) != () or "int" not in dtype:
        received = f"a {dtype} tensor of shape {tuple(value.shape)}"
        fail(owner, name, "a Python int or a scalar integer tensor", received, error)
    return keras.ops.cast(value, "int32")


def rate(owner: str, name: str, value: Any) -> float:
    """A dropout-like fraction in `[0, 1)`, as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value < 1.0:
        fail(owner, name, "a float in [0, 1)", value)
    return float(value)


def window(owner: str, name: str, value: Any):
    """A sliding window: None, a positive int, or a `(left, right)` pair of ints >= 0.

    Returns None, an `int` or a `tuple` of two `int`s (a list, as a `.keras`
    config stores a tuple, is accepted). A wrong kind of object raises a
    TypeError, a wrong value a ValueError. Its meaning is
    `keras_attention.masks.sliding_window_mask`'s.
    """
    expected = "None, a positive int or a (left, right) pair of ints >= 0"
    if value is None:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if value < 1:
            fail(owner, name, expected, value)
        return int(value)
    if not isinstance(value, (tuple, list)):
        fail(owner, name, expected, value, error=TypeError)
    if len(value) != 2:
        fail(owner, name, expected, value)
    for side in value:
        if isinstance(side, bool) or not isinstance(side, numbers.Integral):
            fail(owner, name, expected, value, error=TypeError)
        if side < 0:
            fail(owner, name, expected, value)
    return int(value[0]), int(value[1])


def choice(owner: str, name: str, value: Any, choices: Sequence[str]) -> str:
    """One of the strings in `choices`."""
    if not isinstance(value, str) or value not in choices:
        fail(owner, name, f"one of {tuple(choices)}", value)
    return value


def function(owner: str, name: str, value: Any, signature: str):
    """A callable (a TypeError otherwise); `signature` says what it must be."""
    if not callable(value):
        fail(owner, name, f"a function {signature}", value, error=TypeError)
    return value


def not_given(owner: str, arguments: dict, names: Sequence[str], reason: str):
    """A TypeError for the first of `names` found in `arguments` (a layer's `**kwargs`).

    For a constructor argument the layer's base offers but the layer does not
    take, so that it is refused with its name rather than with Python's
    "got multiple values for keyword argument".
    """
    for name in names:
        if name in arguments:
            fail(owner, name, f"left out ({reason})", arguments[name], error=TypeError)


ROPE_TYPES = ("linear", "dynamic", "yarn")  # keras_attention.rotary's context extensions
# The keys each `rope_type` takes, with their defaults (None: required).
ROPE_KEYS = {
    "linear": {"factor": None},
    "dynamic": {"factor": None},
    "yarn": {"factor": None, "original_max_position_embeddings": None, "beta_fast": 32.0,
             "beta_slow": 1.0, "truncate": False},
}  # fmt: skip


def rope_scaling(owner: str, name: str, value: Any) -> dict | None:
    """A checked `rope_scaling` dict (`keras_attention.rotary`), defaults filled in, or None.

    `{"rope_type": "linear" | "dynamic", "factor": s}` or `{"rope_type":
    "yarn", "factor": s, "original_max_position_embeddings": L[, "beta_fast":
    32.0, "beta_slow": 1.0, "truncate": False]}`; `s >= 1`. A wrong kind of
    object raises a TypeError, a wrong or missing entry a ValueError naming
    `name` and the entry.
    """
    if value is None:
        return None
    expected = f"None or a dict with a 'rope_type' in {ROPE_TYPES} and a 'factor'"
    if not isinstance(value, dict):
        fail(owner, name, expected, value, error=TypeError)
    if "rope_type" not in value:
        fail(owner, name, expected, value)
    rope_type = choice(owner, f"{name}['rope_type']", value["rope_type"], ROPE_TYPES)
    keys = ROPE_KEYS[rope_type]
    unknown = sorted(set(value) - {"rope_type", *keys})
    if unknown:
        only = f"a dict with only the keys {sorted(keys)} for rope_type={rope_type!r}"
        fail(owner, name, f"{only} (unknown: {unknown})", value)
    missing = [key for key, default in keys.items() if default is None and key not in value]
    if missing:
        fail(owner, name, f"a dict with a {missing[0]!r} for rope_type={rope_type!r}", value)
    config = {"rope_type": rope_type, **keys, **value}
    config["factor"] = number(owner, f"{name}['factor']", config["factor"])
    if config["factor"] < 1:
        fail(owner, f"{name}['factor']", "a number >= 1", config["factor"])
    if rope_type == "yarn":
        key = "original_max_position_embeddings"
        config[key] = integer(owner, f"{name}[{key!r}]", config[key])
        for key in ("beta_fast", "beta_slow"):
            config[key] = positive_number(owner, f"{name}[{key!r}]", config[key])
        if config["beta_fast"] <= config["beta_slow"]:
            fail(owner, f"{name}['beta_fast']", "greater than beta_slow", value)
        config["truncate"] = flag(owner, f"{name}['truncate']", config["truncate"])
    return config


# ----------------------------------------------------------------------------
# attention_axes (MultiHead): keras.layers.MultiHeadAttention's meaning.
# ----------------------------------------------------------------------------
def attention_axes(owner: str, name: str, value: Any):
    """None, an int or a sequence of distinct ints, as a tuple (or None).

    Which axes of the inputs attend (negative ones count from the end, the
    features being -1); their range is checked at the call, against the rank.
    """
    expected = "None, an int or a tuple of distinct ints (axes of the inputs)"
    if value is None:
        return None
    axes = (value,) if isinstance(value, numbers.Integral) else value
    if not isinstance(axes, (tuple, list)) or any(
        isinstance(a, bool) or not isinstance(a, numbers.Integral) for a in axes
    ):
        fail(owner, name, expected, value, error=TypeError)
    if not axes or len(set(axes)) != len(axes):
        fail(owner, name, expected, value)
    return tuple(int(a) for a in axes)
