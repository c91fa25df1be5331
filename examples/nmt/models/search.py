"""Greedy and beam search over a step function, independent of any model.

As in OpenNMT-tf, a search drives a ``step_fn``::

    log_probs, new_state, attention = step_fn(ids, state, step)

with ``ids`` the ``(N,)`` int32 tokens chosen at the previous step
(``start_id`` at step 0), ``state`` a nested structure of tensors whose first
dimension is ``N``, and ``step`` an int32 scalar. It returns ``(N, V)``
log-probabilities of the next token, the new state (same structure and shapes)
and the ``(N, Tv)`` attention weights of this step. ``N = B`` for greedy
search and ``B * beam_size`` for beam search, whose state is tiled with
``tile_batch`` and reordered by parent beam at every step.

Both searches run in a ``tf.while_loop`` that stops when every hypothesis has
emitted ``end_id`` or after ``max_length`` steps, eagerly or in
``tf.function``. A finished hypothesis only extends with ``pad_id`` at no
cost. Scores follow GNMT (Wu et al., 2016, https://arxiv.org/abs/1609.08144)::

    score = log P(Y|X) / lp(Y) + cp(X; Y)
    lp(Y) = ((5 + |Y|) / 6) ** alpha
    cp(X; Y) = beta * sum_i log(min(sum_j a_ij, 1))

where ``|Y|`` counts the end token and ``a_ij`` is the attention of output
step ``j`` on source position ``i``. Source positions that no step attends to
at all (padding, masked out) are left out of ``cp``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import tensorflow as tf

StepFn = Callable[[tf.Tensor, Any, tf.Tensor], "tuple[tf.Tensor, Any, tf.Tensor]"]
SelectFn = Callable[[tf.Tensor, tf.Tensor, tf.Tensor], "tuple[tf.Tensor, tf.Tensor]"]

# A beam size or penalty may be a Python number or a scalar tensor (a graph input).
BeamSize = int | tf.Tensor
Real = float | tf.Tensor

NEG_INF = -1e9  # Finite, so that sums and divisions never give NaN.


class SearchResult(NamedTuple):
    """What a search returns, best hypothesis first (``K = 1`` for greedy).

    Attributes:
        ids: ``(B, K, T)`` int32 tokens, ``pad_id`` after each hypothesis ends;
            ``T = max_length``.
        lengths: ``(B, K)`` int32 tokens generated, the end token included.
        scores: ``(B, K)`` float32 ranking scores (with the penalties).
        log_probs: ``(B, K)`` float32 sums of the tokens' log-probabilities.
        attention: ``(B, K, T, Tv)`` float32 attention of every step, zeros
            after the end.
    """

    ids: tf.Tensor
    lengths: tf.Tensor
    scores: tf.Tensor
    log_probs: tf.Tensor
    attention: tf.Tensor


class _Hypotheses(NamedTuple):
    last_ids: tf.Tensor  # (N,)
    ids: tf.Tensor  # (N, T)
    attention: tf.Tensor  # (N, T, Tv)
    coverage: tf.Tensor  # (N, Tv)
    log_probs: tf.Tensor  # (N,)
    lengths: tf.Tensor  # (N,)
    finished: tf.Tensor  # (N,)


def length_penalty(lengths: tf.Tensor, alpha: Real) -> tf.Tensor:
    """GNMT length normalization ``((5 + lengths) / 6) ** alpha``."""
    return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, alpha)


def coverage_penalty(coverage: tf.Tensor, beta: Real) -> tf.Tensor:
    """GNMT ``beta * sum_i log(min(coverage_i, 1))`` over ``(..., Tv)``.

    Positions with zero coverage (never attended: padding) count as covered.
    """
    covered = tf.minimum(coverage, 1.0)
    logs = tf.where(coverage > 0.0, tf.math.log(tf.maximum(covered, 1e-30)), 0.0)
    return beta * tf.reduce_sum(logs, axis=-1)


def tile_batch(structure: Any, beam_size: BeamSize) -> Any:
    """Repeats each batch entry ``beam_size`` times: ``(B, ...) -> (B * K, ...)``."""
    return tf.nest.map_structure(lambda x: tf.repeat(x, beam_size, axis=0), structure)


def _scores(hyps: _Hypotheses, alpha: Real, beta: Real) -> tf.Tensor:
    return hyps.log_probs / length_penalty(hyps.lengths, alpha) + coverage_penalty(
        hyps.coverage, beta
    )


def _keep_shapes(new: Any, old: Any) -> Any:
    """Gives ``new`` the static shapes of ``old``, as ``tf.while_loop`` needs."""

    def keep(new_tensor: tf.Tensor, old_tensor: tf.Tensor) -> tf.Tensor:
        new_tensor.set_shape(old_tensor.shape)
        return new_tensor

    return tf.nest.map_structure(keep, new, old)


def _write(history: tf.Tensor, step: tf.Tensor, values: tf.Tensor) -> tf.Tensor:
    """Sets ``history[:, step] = values`` for ``(N, T, ...)`` history."""
    at_step = tf.equal(tf.range(tf.shape(history)[1]), step)  # (T,)
    at_step = tf.reshape(at_step, [1, -1] + [1] * (values.shape.rank - 1))
    return tf.where(at_step, tf.expand_dims(values, 1), history)


def _initial(
    n: tf.Tensor, beam_size: BeamSize, max_length: int, attention: tf.Tensor, pad_id: int
) -> _Hypotheses:
    """Empty hypotheses; only the first beam of each batch entry is alive."""
    source_length = tf.shape(attention)[-1]
    return _Hypotheses(
        last_ids=tf.zeros([n], tf.int32),
        ids=tf.fill([n, max_length], tf.constant(pad_id, tf.int32)),
        attention=tf.zeros([n, max_length, source_length]),
        coverage=tf.zeros([n, source_length]),
        log_probs=tf.where(tf.range(n) % beam_size == 0, 0.0, NEG_INF),
        lengths=tf.zeros([n], tf.int32),
        finished=tf.zeros([n], tf.bool),
    )


def _advance(
    hyps: _Hypotheses,
    log_probs: tf.Tensor,
    attention: tf.Tensor,
    step: tf.Tensor,
    select: SelectFn,
    end_id: int,
    pad_id: int,
) -> tuple[_Hypotheses, tf.Tensor]:
    """Extends every hypothesis by one token; returns them and their parents."""
    vocab_size = tf.shape(log_probs)[-1]
    only_end = tf.where(tf.range(vocab_size) == end_id, 0.0, NEG_INF)  # (V,)
    log_probs = tf.where(hyps.finished[:, None], only_end, tf.cast(log_probs, tf.float32))
    attention = tf.where(hyps.finished[:, None], 0.0, tf.cast(attention, tf.float32))
    total = hyps.log_probs[:, None] + log_probs  # (N, V)
    lengths = hyps.lengths + tf.cast(tf.logical_not(hyps.finished), tf.int32)
    coverage = hyps.coverage + attention  # (N, Tv)
    parents, tokens = select(total, lengths, coverage)  # (N,), (N,)
    was_finished = tf.gather(hyps.finished, parents)
    new = _Hypotheses(
        last_ids=tokens,
        ids=_write(tf.gather(hyps.ids, parents), step, tf.where(was_finished, pad_id, tokens)),
        attention=_write(tf.gather(hyps.attention, parents), step, tf.gather(attention, parents)),
        coverage=tf.gather(coverage, parents),
        log_probs=tf.gather_nd(total, tf.stack([parents, tokens], axis=1)),
        lengths=tf.gather(lengths, parents),
        finished=tf.logical_or(was_finished, tf.equal(tokens, end_id)),
    )
    return new, parents


def _greedy_select(
    total: tf.Tensor, lengths: tf.Tensor, coverage: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    del lengths, coverage  # Penalties do not change a per-row argmax.
    return tf.range(tf.shape(total)[0]), tf.argmax(total, axis=-1, output_type=tf.int32)


def _beam_select(beam_size: BeamSize, alpha: Real, beta: Real) -> SelectFn:
    """Top ``beam_size`` of the ``beam_size * V`` penalized candidates per batch entry."""

    def select(
        total: tf.Tensor, lengths: tf.Tensor, coverage: tf.Tensor
    ) -> tuple[tf.Tensor, tf.Tensor]:
        scores = (
            total / length_penalty(lengths, alpha)[:, None]
            + coverage_penalty(coverage, beta)[:, None]
        )
        vocab_size = tf.shape(total)[-1]
        flat = tf.reshape(scores, [-1, beam_size * vocab_size])  # (B, K * V)
        _, indices = tf.math.top_k(flat, k=beam_size)  # (B, K)
        first_beam = tf.range(tf.shape(flat)[0])[:, None] * beam_size  # (B, 1)
        parents = tf.reshape(indices // vocab_size + first_beam, [-1])  # (B * K,)
        return parents, tf.reshape(indices % vocab_size, [-1])

    return select


def _search(
    step_fn: StepFn,
    initial_state: Any,
    start_id: int,
    end_id: int,
    max_length: int,
    beam_size: BeamSize,
    select: SelectFn,
    pad_id: int,
) -> _Hypotheses:
    """Runs the loop; returns the final ``(B * K, ...)`` hypotheses."""
    state = tile_batch(initial_state, beam_size)
    n = tf.shape(tf.nest.flatten(state)[0])[0]  # B * K
    step = tf.constant(0)

    def update(hyps: _Hypotheses, state: Any, outputs: tuple, step: tf.Tensor) -> tuple:
        log_probs, new_state, attention = outputs
        new_hyps, parents = _advance(hyps, log_probs, attention, step, select, end_id, pad_id)
        new_state = tf.nest.map_structure(lambda x: tf.gather(x, parents), new_state)
        return _keep_shapes(new_hyps, hyps), _keep_shapes(new_state, state)

    # Step 0 runs outside the loop: its attention tells the source length Tv.
    outputs = step_fn(tf.fill([n], start_id), state, step)
    hyps, state = update(
        _initial(n, beam_size, max_length, outputs[2], pad_id), state, outputs, step
    )

    def cond(step: tf.Tensor, hyps: _Hypotheses, state: Any) -> tf.Tensor:
        return tf.logical_and(step < max_length, tf.logical_not(tf.reduce_all(hyps.finished)))

    def body(step: tf.Tensor, hyps: _Hypotheses, state: Any) -> tuple:
        return (step + 1, *update(hyps, state, step_fn(hyps.last_ids, state, step), step))

    _, hyps, _ = tf.while_loop(cond, body, (step + 1, hyps, state))
    return hyps


def _result(hyps: _Hypotheses, beam_size: BeamSize, alpha: Real, beta: Real) -> SearchResult:
    static_beam_size = tf.get_static_value(beam_size)  # None for a graph input

    def split(x: tf.Tensor) -> tf.Tensor:  # (B * K, ...) -> (B, K, ...)
        y = tf.reshape(x, tf.concat([[-1, beam_size], tf.shape(x)[1:]], axis=0))
        y.set_shape([None, static_beam_size] + x.shape[1:].as_list())
        return y

    return SearchResult(
        ids=split(hyps.ids),
        lengths=split(hyps.lengths),
        scores=split(_scores(hyps, alpha, beta)),
        log_probs=split(hyps.log_probs),
        attention=split(hyps.attention),
    )


def greedy_search(
    step_fn: StepFn,
    initial_state: Any,
    start_id: int,
    end_id: int,
    max_length: int,
    pad_id: int = 0,
) -> SearchResult:
    """Picks the most probable token at each step.

    Args:
        step_fn: ``(ids, state, step) -> (log_probs, state, attention)``, see
            the module doc.
        initial_state: nested tensors, first dimension ``B`` (at least one).
        start_id: the token fed at step 0.
        end_id: the token that ends a hypothesis.
        max_length: the most steps (a Python int or an int32 scalar tensor).
        pad_id: the id written after the end.

    Returns:
        A ``SearchResult`` with ``K = 1``; ``scores == log_probs``.
    """
    hyps = _search(step_fn, initial_state, start_id, end_id, max_length, 1, _greedy_select, pad_id)
    return _result(hyps, 1, 0.0, 0.0)


def beam_search(
    step_fn: StepFn,
    initial_state: Any,
    start_id: int,
    end_id: int,
    max_length: int,
    beam_size: BeamSize = 4,
    length_penalty_alpha: Real = 0.0,
    coverage_penalty_beta: Real = 0.0,
    pad_id: int = 0,
) -> SearchResult:
    """Keeps the ``beam_size`` best hypotheses by GNMT score at each step.

    Args:
        step_fn: ``(ids, state, step) -> (log_probs, state, attention)`` on
            ``N = B * beam_size`` rows, see the module doc.
        initial_state: nested tensors, first dimension ``B`` (at least one);
            tiled to ``B * beam_size`` here.
        start_id, end_id, max_length, pad_id: as in ``greedy_search``.
        beam_size: hypotheses kept per batch entry, at least 1; a Python int
            or an int32 scalar tensor (then ``K`` is unknown when tracing, and
            one traced graph serves every beam size). With 1 it picks the
            greedy search's tokens (the penalties are the same for every
            candidate of a row), scored with the penalties.
        length_penalty_alpha: ``alpha`` of ``lp``; 0 ranks by log-probability.
        coverage_penalty_beta: ``beta`` of ``cp``; 0 disables it.

    Returns:
        A ``SearchResult`` with ``K = beam_size``, sorted by ``scores``.

    Raises:
        ValueError: a Python ``beam_size`` below 1 (a tensor below 1 fails
            with ``tf.errors.InvalidArgumentError`` when run).
    """
    static_beam_size = tf.get_static_value(beam_size)
    if static_beam_size is not None and static_beam_size < 1:
        raise ValueError(f"Expected beam_size >= 1. Received: beam_size={static_beam_size}")
    if static_beam_size is None:
        check = tf.debugging.assert_positive(beam_size, message="Expected beam_size >= 1.")
        with tf.control_dependencies([check]):
            beam_size = tf.identity(beam_size)
    select = _beam_select(beam_size, length_penalty_alpha, coverage_penalty_beta)
    hyps = _search(step_fn, initial_state, start_id, end_id, max_length, beam_size, select, pad_id)
    return _result(hyps, beam_size, length_penalty_alpha, coverage_penalty_beta)
