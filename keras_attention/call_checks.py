"""The call contract's static checks, shared by every layer and function of the package.

Shapes, ranks, dtypes and masks known at trace time, checked before any
backend op runs. Each check raises a `ValueError` (a `TypeError` for a
non-float tensor) naming the owner, the argument, what was expected and what
was received. The constructor arguments' checks are `keras_attention.validation`.
"""

from __future__ import annotations

import keras


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
