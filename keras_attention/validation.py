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
# The call contract's static checks (shapes and dtypes known at trace time).
# ----------------------------------------------------------------------------
def static(dim) -> int | None:
    """A dimension as a Python int, or None when unknown or symbolic."""
    return dim if isinstance(dim, int) else None


def call_fail(owner: str, argument: str, expected: str, received: str):
    """Raise the call contract's ValueError: `owner: argument `x` expected ... Received: ...`."""
    raise ValueError(f"{owner}: argument `{argument}` expected {expected}. Received: {received}")


def step_query(owner: str, query, method: str = "step", hint: str = ""):
    """The query of one decoding step: a rank-2 `(B, dq)` tensor."""
    if len(query.shape) != 2:
        expected = f"one decoding step of shape (B, dq) in `{method}`{hint}"
        call_fail(owner, "query", expected, f"shape {tuple(query.shape)}")


def check_call(
    owner: str, query, value, key, query_mask, value_mask, attention_mask, grids: bool = False
):
    """Ranks, dtypes, batch sizes, lengths and mask shapes of one layer call.

    With `grids`, the memory may be a grid: `value` and `key` `(B, *grid, d)`
    with one or more grid axes, `value_mask` `(B, *grid)` and
    `attention_mask` `(B, [Tq,] *grid)`. Raises a ValueError (TypeError for a
    non-float tensor) naming `owner`, the argument, what was expected and
    what was received, before any backend op runs.
    """
    memory = "rank 3 (batch, time, features)"
    if grids:
        memory += " or higher (batch, *grid, features)"
    for name, tensor, ranks in (
        ("query", query, "rank 2 or 3 (batch, [time,] features)"),
        ("value", value, memory),
        ("key", key, memory),
    ):
        rank = len(tensor.shape)
        if not (rank in (2, 3) if name == "query" else rank == 3 or (grids and rank > 3)):
            call_fail(owner, name, f"a tensor of {ranks}", f"shape {tuple(tensor.shape)}")
        _check_float(owner, name, tensor)
    batch = static(query.shape[0])
    for name, tensor in (("value", value), ("key", key)):
        size = static(tensor.shape[0])
        if batch is not None and size is not None and size != batch:
            call_fail(
                owner,
                name,
                f"the batch size of `query` ({batch})",
                f"{name} shape {tuple(tensor.shape)}, query shape {tuple(query.shape)}",
            )
        batch = size if batch is None else batch
    grid = _same_positions(owner, key, value)
    single = len(query.shape) == 2
    tq = None if single else static(query.shape[1])
    expected_shapes = {
        "query_mask": (batch,) if single else (batch, tq),
        "value_mask": (batch, *grid),
        "attention_mask": (batch, *grid) if single else (batch, tq, *grid),
    }
    for name, mask in zip(expected_shapes, (query_mask, value_mask, attention_mask)):
        if mask is not None:
            _check_mask(owner, name, mask, expected_shapes[name])


def _same_positions(owner: str, key, value) -> tuple:
    """The memory's positions `(Tv,)` or `grid`, the same for `key` and `value`."""
    keys, values = tuple(key.shape[1:-1]), tuple(value.shape[1:-1])
    if len(keys) != len(values) or any(
        static(k) is not None and static(v) is not None and k != v for k, v in zip(keys, values)
    ):
        wanted = "length" if len(values) == 1 else "grid"
        call_fail(
            owner,
            "key",
            f"the same {wanted} as `value` ({_positions(values)})",
            f"key shape {tuple(key.shape)}, value shape {tuple(value.shape)}",
        )
    return tuple(static(v) if static(v) is not None else static(k) for k, v in zip(keys, values))


def _positions(dims: tuple) -> str:
    text = ", ".join(str(static(d)) for d in dims)
    return text if len(dims) == 1 else f"({text})"


def _check_float(owner: str, name: str, tensor):
    dtype = _dtype(tensor)
    if not dtype.startswith(("float", "bfloat")):
        raise TypeError(
            f"{owner}: argument `{name}` expected a floating-point tensor (embed or "
            f"cast integer ids first). Received: dtype {dtype}"
        )


def _dtype(tensor) -> str:
    return keras.backend.standardize_dtype(tensor.dtype)


def _check_mask(owner: str, name: str, mask, expected: tuple):
    dtype = _dtype(mask)
    if dtype != "bool" and "int" not in dtype:
        call_fail(
            owner, name, "a boolean mask (True = may attend) or 0/1 integers", f"dtype {dtype}"
        )
    mask_shape(owner, name, mask, expected)


def mask_shape(owner: str, name: str, mask, expected: tuple):
    """A mask of `expected` shape (None: any size; 1 broadcasts), or the call's ValueError."""
    shape = tuple(mask.shape)
    if len(shape) != len(expected) or any(
        static(got) is not None and want is not None and got not in (want, 1)
        for got, want in zip(shape, expected)
    ):
        call_fail(owner, name, f"shape {expected}", f"shape {shape}")


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


def check_attention_axes_call(
    owner: str, axes, query, value, key, query_mask, value_mask, attention_mask
) -> tuple:
    """The call checks of attention over `axes` of same-rank tensors; the axes, positive.

    `query` `(B, *axes, dq)`, `value` and `key` of its rank, with the same
    sizes on the axes that do not attend (they act as batch axes) and the
    same positions as each other; `query_mask` `(B, *query axes)`,
    `value_mask` `(B, *value axes)`, `attention_mask` Keras's `(B, *other,
    *query attended, *value attended)`. `axes=None` means every axis but the
    batch and the features.
    """
    rank = len(query.shape)
    if rank < 3:
        call_fail(
            owner,
            "query",
            "a tensor of rank 3 or higher (batch, *axes, features) with `attention_axes`",
            f"shape {tuple(query.shape)}",
        )
    for name, tensor in (("query", query), ("value", value), ("key", key)):
        if len(tensor.shape) != rank:
            call_fail(
                owner,
                name,
                f"rank {rank}, the rank of `query` (attention over axes: query, key and "
                "value of one rank; a sequence query over a grid memory: "
                "BahdanauAttention, LuongAttention or ScaledDotProduct)",
                f"{name} shape {tuple(tensor.shape)}, query shape {tuple(query.shape)}",
            )
        _check_float(owner, name, tensor)
    if axes is None:
        axes = tuple(range(1, rank - 1))
    positive = tuple(a + rank if a < 0 else a for a in axes)
    if any(not 1 <= a <= rank - 2 for a in positive) or len(set(positive)) != len(positive):
        call_fail(
            owner,
            "attention_axes",
            f"distinct axes in [1, {rank - 2}] or [{1 - rank}, -2] (neither the batch nor "
            f"the features of rank-{rank} inputs)",
            f"attention_axes={axes}, query shape {tuple(query.shape)}",
        )
    other = [a for a in range(rank - 1) if a not in positive]  # the batch and batch-like axes
    for name, tensor in (("value", value), ("key", key)):
        if any(_differ(query.shape[a], tensor.shape[a]) for a in other):
            call_fail(
                owner,
                name,
                f"the sizes of `query` on the axes that do not attend ({_axes_text(other)})",
                f"{name} shape {tuple(tensor.shape)}, query shape {tuple(query.shape)}",
            )
    _same_positions(owner, key, value)
    query_axes, value_axes = tuple(query.shape[:-1]), tuple(value.shape[:-1])
    expected_shapes = {
        "query_mask": query_axes,
        "value_mask": value_axes,
        "attention_mask": (
            *(query.shape[a] for a in other),
            *(query.shape[a] for a in positive),
            *(value.shape[a] for a in positive),
        ),
    }
    for name, mask in zip(expected_shapes, (query_mask, value_mask, attention_mask)):
        if mask is not None:
            _check_mask(owner, name, mask, tuple(static(d) for d in expected_shapes[name]))
    return positive


def _differ(a, b) -> bool:
    return static(a) is not None and static(b) is not None and a != b


def _axes_text(axes) -> str:
    return "axis 0" if len(axes) == 1 else "axes " + ", ".join(str(a) for a in axes)
