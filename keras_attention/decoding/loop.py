"""What every search shares: its result, argument checks, the step call and buffers.

Histories live in fixed time-major buffers `(T, N, ...)` with `T =
max_length`, written one step at a time with `ops.slice_update`, so that
shapes never change inside the loop (`jax.jit`, `tf.function(jit_compile=True)`)
and no step concatenates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import keras
from keras import ops

from keras_attention import validation
from keras_attention.masks import MASKED_LOGIT

# The log-probability of what cannot happen: the package's one large negative,
# `masks.MASKED_LOGIT` (finite, so sums, products and divisions never give NaN).
NEG_INF = MASKED_LOGIT

StepFn = Callable[..., tuple]


class SearchResult(NamedTuple):
    """What a search returns, best hypothesis first (`K = 1` for greedy and sampling).

    Attributes:
        ids: `(B, K, T)` int32 tokens, `pad_id` after each hypothesis ends;
            `T = max_length`.
        lengths: `(B, K)` int32 tokens generated, the end token included.
        scores: `(B, K)` float32 ranking scores (with the penalties);
            `log_probs` for greedy search and sampling.
        log_probs: `(B, K)` float32 sums of the tokens' log-probabilities
            under the step's logits.
        attention: `(B, K, T, Tv)` float32 attention of every step of each
            hypothesis, zeros after its end; None when the step returns none.
    """

    ids: Any
    lengths: Any
    scores: Any
    log_probs: Any
    attention: Any


def size(owner: str, name: str, value, minimum: int = 1):
    """A Python int >= `minimum`, or (TensorFlow graphs only) a scalar integer tensor."""
    value = validation.int_or_scalar_tensor(owner, name, value, minimum=minimum, error=TypeError)
    if isinstance(value, int):
        return value
    dtype = keras.backend.standardize_dtype(value.dtype)
    try:
        concrete = int(value)
    except Exception:  # a symbolic tensor: a graph input of a tf.function
        concrete = None
    if not isinstance(concrete, int):  # (autograph turns `int` into a cast)
        if keras.backend.backend() != "tensorflow":
            validation.fail(
                owner,
                name,
                "a Python int under jit (it sets shapes)",
                f"a traced {dtype} scalar",
                TypeError,
            )
        return ops.cast(value, "int32")
    return validation.integer(owner, name, concrete, minimum=minimum)


def step_function(owner: str, step) -> StepFn:
    """`step`, checked to be callable (a TypeError naming the search and `step`)."""
    return validation.function(
        owner, "step", step, "step(ids, state, index) -> (logits, state[, attention])"
    )


def token(owner: str, name: str, value) -> int:
    return validation.integer(owner, name, value, minimum=0)


def first_leaf(owner: str, state: Any):
    leaves = keras.tree.flatten(state)
    if not leaves:
        validation.fail(owner, "initial_state", "a nest with at least one tensor", state)
    return ops.convert_to_tensor(leaves[0])


def call_step(owner: str, step: StepFn, ids, state: Any, index, rows: int | None) -> tuple:
    """`step(ids, state, index)` checked: float32 logits, the state's structure, attention.

    Returns `(logits (N, V) float32, new_state, attention (N, Tv) float32 or
    None)`. The new state is packed into the structure, dtypes and (on
    TensorFlow) static shapes of `state`, as loops need.
    """
    outputs = step(ids, state, index)
    if not isinstance(outputs, (tuple, list)) or len(outputs) not in (2, 3):
        validation.fail(
            owner, "step", "a function returning (logits, state[, attention])", outputs, TypeError
        )
    logits, new_state = outputs[0], outputs[1]
    attention = outputs[2] if len(outputs) == 3 else None
    logits = ops.convert_to_tensor(logits)
    shape = tuple(logits.shape)
    if len(shape) != 2 or None not in (rows, shape[0]) and shape[0] != rows:
        validation.fail(
            owner, "step", f"logits of shape ({rows}, V) (one row per hypothesis)", shape
        )
    if attention is not None:
        attention = ops.convert_to_tensor(attention)
        got = tuple(attention.shape)
        if len(got) != 2 or None not in (rows, got[0]) and got[0] != rows:
            validation.fail(
                owner,
                "step",
                f"attention of shape ({rows}, Tv) (reduce heads first, e.g. "
                "`ops.mean(weights, axis=1)`)",
                got,
            )
        attention = ops.cast(attention, "float32")
    old_leaves, new_leaves = keras.tree.flatten(state), keras.tree.flatten(new_state)
    if len(old_leaves) != len(new_leaves):
        validation.fail(
            owner,
            "step",
            f"a new state with the structure of the state ({len(old_leaves)} tensors)",
            f"{len(new_leaves)} tensors",
        )
    on_tf = keras.backend.backend() == "tensorflow"
    kept = []
    for old, new in zip(old_leaves, new_leaves):
        old = ops.convert_to_tensor(old)
        if keras.backend.standardize_dtype(new.dtype) != keras.backend.standardize_dtype(old.dtype):
            new = ops.cast(new, old.dtype)
        if on_tf and hasattr(new, "set_shape"):
            new.set_shape(old.shape)  # tf.while_loop needs the loop's static shapes
        kept.append(new)
    return ops.cast(logits, "float32"), keras.tree.pack_sequence_as(state, kept), attention


def _chunk(vocab) -> int | None:
    """A divisor of `vocab` near its square root, or None (small or unknown `vocab`)."""
    if not isinstance(vocab, int) or vocab < 1024:
        return None
    divisors = [c for c in range(16, 257) if vocab % c == 0]
    return min(divisors, key=lambda c: abs(c * c - vocab), default=None)


def top_k(x, k):
    """`ops.top_k(x, k)` along the last axis of `(N, V)`, int32 indices, exact.

    For a large static `V` it runs in two stages: the `k` chunks with the
    largest maxima hold the `k` largest values (a chunk holding one of them
    has a maximum at least as large, and at most `k` chunks have one), so
    one full-width max and two small top-k's replace a full-width top-k,
    which TensorFlow's CPU kernel makes about 8x slower at V = 8000. Chunks
    are taken in index order, so equal values come lowest index first where
    the backend's top-k does so (TensorFlow, JAX; not torch.topk).
    `k` may be a scalar tensor (TensorFlow graphs).
    """
    chunk = _chunk(x.shape[-1])
    if chunk is None:
        values, indices = ops.top_k(x, k)
        return values, ops.cast(indices, "int32")
    n, vocab = ops.shape(x)[0], x.shape[-1]
    count = vocab // chunk
    kept = min(k, count) if isinstance(k, int) else ops.minimum(k, count)  # chunks kept
    chunks = ops.reshape(x, (-1, chunk))  # (N * C, c)
    _, best = ops.top_k(ops.max(ops.reshape(chunks, (n, count, chunk)), axis=-1), kept)
    best = ops.sort(ops.cast(best, "int32"), axis=-1)  # (N, kept), in index order
    rows = ops.arange(n, dtype="int32")[:, None] * count + best  # rows of `chunks`
    picked = ops.reshape(ops.take(chunks, ops.reshape(rows, (-1,)), axis=0), (n, kept * chunk))
    values, inner = ops.top_k(picked, k)  # (N, k)
    inner = ops.cast(inner, "int32")
    indices = ops.take_along_axis(best, inner // chunk, axis=1) * chunk + inner % chunk
    return values, indices


def write(buffer, index, values):
    """`buffer[index] = values` for a `(T, N, ...)` buffer and `(N, ...)` values."""
    zero = ops.zeros((), "int32")
    start = ops.stack([ops.cast(index, "int32")] + [zero] * (len(buffer.shape) - 1))
    return ops.slice_update(buffer, start, ops.expand_dims(ops.cast(values, buffer.dtype), 0))


def split(x, beam_size):
    """`(N, ...)` batch-major rows -> `(B, K, ...)`."""
    rest = tuple(ops.shape(x)[1:])
    return ops.reshape(x, (-1, beam_size, *rest))


def time_major_to_result(buffer, beam_size):
    """`(T, N, ...)` -> `(B, K, T, ...)`."""
    axes = (1, 0, *range(2, len(buffer.shape)))
    return split(ops.transpose(buffer, axes), beam_size)
