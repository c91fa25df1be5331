"""GNMT's length and coverage penalties (Wu et al., 2016), as pure functions.

A beam search ranks a hypothesis ``Y`` of a source ``X`` by::

    score = log P(Y|X) / lp(Y) + cp(X; Y)
    lp(Y) = ((5 + |Y|) / 6) ** alpha
    cp(X; Y) = beta * sum_i log(min(sum_j a_ij, 1))

where ``|Y|`` counts the end token and ``a_ij`` is the attention of output
step ``j`` on source position ``i``.
"""

from __future__ import annotations

from keras import ops


def length_penalty(lengths, alpha):
    """GNMT's length normalization ``lp = ((5 + lengths) / 6) ** alpha``, in float32.

    Args:
        lengths: integer tensor of any shape: tokens of each hypothesis, the
            end token included.
        alpha: a Python float or a float32 scalar tensor; 0 gives 1
            (rank by log-probability).

    Returns:
        A float32 tensor shaped like `lengths`.

    Example:

    >>> from keras import ops
    >>> from keras_attention.decoding import length_penalty
    >>> [round(float(x), 4) for x in ops.convert_to_numpy(length_penalty([1, 7], 0.5))]
    [1.0, 1.4142]
    """
    lengths = ops.cast(lengths, "float32")
    return ops.power((5.0 + lengths) / 6.0, ops.cast(alpha, "float32"))


def coverage_penalty(coverage, beta):
    """GNMT's ``cp = beta * sum_i log(min(coverage_i, 1))`` over the last axis, in float32.

    Args:
        coverage: `(..., Tv)` attention summed over the output steps.
        beta: a Python float or a float32 scalar tensor; 0 disables it.

    Returns:
        `(...)` float32, at most 0 for `beta >= 0`. Positions with zero
        coverage (no step attended to them: padding, masked out) count as
        covered, so padding never penalizes a hypothesis.

    Example:

    >>> from keras import ops
    >>> from keras_attention.decoding import coverage_penalty
    >>> x = coverage_penalty([[0.5, 2.0, 0.0]], 1.0)  # log(0.5) + log(1) + 0
    >>> round(float(ops.convert_to_numpy(x)[0]), 4)
    -0.6931
    """
    coverage = ops.cast(coverage, "float32")
    covered = ops.minimum(coverage, 1.0)
    logs = ops.where(coverage > 0.0, ops.log(ops.maximum(covered, 1e-30)), 0.0)
    return ops.cast(beta, "float32") * ops.sum(logs, axis=-1)
