"""Monotonic attention (Raffel et al., 2017) as pure `keras.ops` functions.

At each output step, the attention scans the memory from where it stopped the
step before and, at position `j`, stops there with probability `p_j`
(`p_choose_i`, a sigmoid of the score). The expected alignment `α_i` given the
previous one `α_{i-1}` is

```
q_i[j] = (1 - p_i[j-1]) · q_i[j-1] + α_{i-1}[j]        (q_i[-1] = 0)
α_i[j] = p_i[j] · q_i[j]
```

`monotonic_attention` computes it three ways (TensorFlow Addons'
`tfa.seq2seq.monotonic_attention`): `"recursive"` (the recurrence over `j`, a
sequential scan), `"parallel"` (the same recurrence as a parallel prefix scan
of its affine steps, `ceil(log2 Tv)` rounds) and `"hard"` (for `p` in
{0, 1}: the first stop at or after the previous one).
Mass that reaches the end without stopping leaves: an alignment may sum to
less than 1.

`stepwise_monotonic_attention` is the stricter recurrence of stepwise
monotonic attention (He, Deng & He, 2019): at each step the attention stays
where it is, or moves forward by exactly one position.

Shape letters: `B` batch, `Tv` memory positions.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_attention import backends
from keras_attention import validation

__all__ = [
    "MODES",
    "STEPWISE_MODES",
    "monotonic_attention",
    "safe_cumprod",
    "stepwise_monotonic_attention",
]

MODES = ("parallel", "recursive", "hard")
# Stepwise monotonic attention: "soft" (the expectation), "hard" (p in {0, 1}),
# "auto" (soft in training, hard otherwise: the paper's recipe).
STEPWISE_MODES = ("auto", "soft", "hard")

# The smallest positive normal number of each float dtype (`np.finfo(dtype).tiny`;
# NumPy alone has no bfloat16).
_TINY = {
    "float16": 6.103515625e-05,
    "bfloat16": 1.1754943508222875e-38,
    "float32": 1.1754943508222875e-38,
    "float64": 2.2250738585072014e-308,
}


def _exclusive(cumulative, first):
    """`[first, c_0, ..., c_{T-2}]` along the last axis: an inclusive scan made exclusive."""
    start = ops.full_like(cumulative[..., :1], first)
    return ops.concatenate([start, cumulative[..., :-1]], axis=-1)


def safe_cumprod(x, exclusive: bool = False):
    """Cumulative product over the last axis, in log space.

    `exp(cumsum(log(clip(x, tiny, 1))))`, `tiny` the smallest normal of `x`'s
    dtype, so a long product of factors in `(0, 1]` underflows to `tiny`-sized
    numbers instead of producing `log(0)`. With `exclusive=True`, entry `j` is
    the product of the entries before `j` (entry 0 is 1).
    """
    x = ops.convert_to_tensor(x)
    tiny = _TINY[keras.backend.standardize_dtype(x.dtype)]
    log_cumulative = ops.cumsum(ops.log(ops.clip(x, tiny, 1.0)), axis=-1)
    if exclusive:
        log_cumulative = _exclusive(log_cumulative, 0.0)
    return ops.exp(log_cumulative)


def _recursive(p_choose_i, previous_attention):
    stay = _exclusive(1.0 - p_choose_i, 1.0)  # (B, Tv): 1, 1 - p_0, ..., 1 - p_{Tv-2}

    def step(carry, inputs):
        factor, previous = inputs  # (B,), (B,)
        return factor * carry + previous

    xs = (ops.transpose(stay), ops.transpose(previous_attention))  # (Tv, B) each
    q = backends.scan_states(step, ops.zeros_like(stay[:, 0]), xs)  # (Tv, B)
    return p_choose_i * ops.transpose(q)


def _shift(x, distance, fill):
    """`x` moved `distance` places along the last axis; the first `distance` are `fill`."""
    return ops.concatenate([ops.full_like(x[..., :distance], fill), x[..., :-distance]], axis=-1)


def _parallel(p_choose_i, previous_attention):
    """The recurrence `q[j] = a[j] · q[j-1] + b[j]` as a prefix scan (Hillis & Steele).

    Each position is the affine map `x -> a x + b`, with `a[j] = 1 - p[j-1]`
    and `b[j] = α_{i-1}[j]`. Round `r` composes every map with the one
    `d = 2^r` places before it (the identity `(1, 0)` before the start):
    after `ceil(log2 Tv)` rounds, `b[j]` is `q[j]`. Only products of factors
    in [0, 1] and sums of the previous alignment's mass: nothing divides, so
    mass behind near-certain stops is kept exactly (the closed form
    `Π · cumsum(α / Π)` of TensorFlow Addons clips `Π` at 1e-10 and loses it).
    """
    a = _exclusive(1.0 - p_choose_i, 1.0)
    b = previous_attention

    def compose(a, b, distance):
        return a * _shift(a, distance, 1.0), b + a * _shift(b, distance, 0.0)

    length = p_choose_i.shape[-1]
    if length is not None:  # a static length: the rounds unroll
        distance = 1
        while distance < length:
            a, b = compose(a, b, distance)
            distance *= 2
    else:  # a TensorFlow graph of unknown length
        length = ops.shape(p_choose_i)[-1]
        _, b, _ = ops.while_loop(
            lambda a, b, distance: distance < length,
            lambda a, b, distance: (*compose(a, b, distance), distance * 2),
            (a, b, ops.convert_to_tensor(1, "int32")),
        )
    return p_choose_i * b


def monotonic_attention(p_choose_i, previous_attention, mode: str = "parallel"):
    """The expected monotonic alignment `(B, Tv)` given the previous one.

    Args:
        p_choose_i: `(B, Tv)` probabilities of stopping at each position
            (in {0, 1} for `mode="hard"`).
        previous_attention: `(B, Tv)` the previous step's alignment; a
            one-hot on position 0 before the first step.
        mode: `"parallel"` (default; the recurrence as a parallel prefix
            scan in `ceil(log2 Tv)` rounds, exact: it divides by nothing),
            `"recursive"` (the recurrence itself, a scan over `Tv`: exact but
            sequential) or `"hard"` (`p_choose_i` in {0, 1}: a one-hot at the
            first position at or after the previous one with `p = 1`, or all
            zeros when there is none).

    Returns:
        `(B, Tv)` alignment in the dtype of `p_choose_i`; it sums to at most
        `sum(previous_attention)`.

    References:
        Raffel, Luong, Liu, Weiss & Eck, "Online and Linear-Time Attention by
        Enforcing Monotonic Alignments", ICML 2017.
    """
    validation.choice("monotonic_attention", "mode", mode, MODES)
    p_choose_i = ops.convert_to_tensor(p_choose_i)
    previous_attention = ops.cast(previous_attention, p_choose_i.dtype)
    if mode == "recursive":
        return _recursive(p_choose_i, previous_attention)
    if mode == "parallel":
        return _parallel(p_choose_i, previous_attention)
    # hard: no stop before the previous one, then only the first stop.
    p_choose_i = p_choose_i * ops.cumsum(previous_attention, axis=-1)
    return p_choose_i * _exclusive(ops.cumprod(1.0 - p_choose_i, axis=-1), 1.0)


def stepwise_monotonic_attention(p_stay, previous_attention):
    """The expected stepwise monotonic alignment `(B, Tv)` given the previous one.

    At each output step the attention either stays at its position `j` (with
    probability `p_stay[j]`) or moves to `j + 1`, never further:

    ```
    α_i[j] = α_{i-1}[j] · p_i[j] + α_{i-1}[j-1] · (1 - p_i[j-1])      (α_{i-1}[-1] = 0)
    ```

    The mass that moves on from the last position leaves the memory, so the
    alignment may sum to less than 1. With `p_stay` in {0, 1} and a one-hot
    `previous_attention`, the result is one-hot (stay or move by one) or zero
    (it moved past the end): the hard form needs no other code.

    Args:
        p_stay: `(B, Tv)` probabilities of staying at each position.
        previous_attention: `(B, Tv)` the previous step's alignment; a one-hot
            on position 0 before the first step.

    Returns:
        `(B, Tv)` alignment in the dtype of `p_stay`. Zeroing masked
        positions is the caller's: mass that moves into one then leaves.

    References:
        He, Deng & He, "Robust Sequence-to-Sequence Acoustic Modeling with
        Stepwise Monotonic Attention for Neural TTS", Interspeech 2019.
    """
    p_stay = ops.convert_to_tensor(p_stay)
    previous_attention = ops.cast(previous_attention, p_stay.dtype)
    moving = previous_attention * (1.0 - p_stay)  # (B, Tv): what leaves position j
    return previous_attention * p_stay + _exclusive(moving, 0.0)  # arrives at j + 1
