"""Beam search with GNMT penalties, alignment history and nested-state reordering."""

from __future__ import annotations

import numbers
from typing import Any
from typing import NamedTuple

from keras import ops

from keras_attention import validation
from keras_attention.decoding import loop
from keras_attention.decoding.loop import NEG_INF
from keras_attention.decoding.loop import SearchResult
from keras_attention.decoding.loop import StepFn
from keras_attention.decoding.penalties import coverage_penalty
from keras_attention.decoding.penalties import length_penalty
from keras_attention.decoding.state import reorder_state
from keras_attention.decoding.state import tile_state

_OWNER = "beam_search"


class _Beams(NamedTuple):
    last_ids: Any  # (N,) fed to the next step
    log_probs: Any  # (N,)
    lengths: Any  # (N,)
    finished: Any  # (N,)
    coverage: Any  # (N, Tv)
    tokens: Any  # (T, N) token each slot chose at each step (pad once finished)
    parents: Any  # (T, N) the slot (global row) each slot continued at each step
    attention: Any  # (T, N, Tv) the attention that produced each slot's token


def _select(
    beams: _Beams,
    logits,
    attention,
    index,
    beam_size,
    alpha,
    beta,
    end_id,
    pad_id,
    stop_at,
):
    """The `beam_size` best extensions of each entry's beams; returns them and their parents.

    A row's penalties are the same for all its candidates and `lp > 0`, so a
    row's best candidates by score are its best by logit: each row offers
    only its top `min(K, V)` tokens, and the ranking over `K * min(K, V)`
    candidates per entry equals the one over all `K * V`. With a `stop_at`
    length (early stopping), an entry whose best hypothesis can no longer be
    overtaken ends all its beams (`_settled`).
    """
    vocab = logits.shape[-1]
    width = min(beam_size, vocab) if isinstance(beam_size, int) and vocab else None
    width = width or ops.minimum(beam_size, ops.shape(logits)[-1])
    top_logits, top_tokens = loop.top_k(logits, width)  # (N, k)
    candidates = ops.maximum(top_logits - ops.logsumexp(logits, axis=-1)[:, None], NEG_INF)
    done = beams.finished[:, None]  # (N, 1)
    # A finished hypothesis has one candidate, the end token at no cost.
    first = ops.arange(width) == 0  # (k,)
    candidates = ops.where(done, ops.where(first, 0.0, NEG_INF), candidates)
    top_tokens = ops.where(done, end_id, top_tokens)
    total = beams.log_probs[:, None] + candidates  # (N, k)
    lengths = beams.lengths + ops.cast(ops.logical_not(beams.finished), "int32")
    attention = ops.where(done, 0.0, attention)
    coverage = beams.coverage + attention  # (N, Tv)
    scores = total / length_penalty(lengths, alpha)[:, None]
    scores = scores + coverage_penalty(coverage, beta)[:, None]
    flat = ops.reshape(scores, (-1, beam_size * width))  # (B, K * k)
    best, picked = ops.top_k(flat, beam_size)  # (B, K), best score first
    picked = ops.cast(picked, "int32")
    entry = ops.arange(ops.shape(flat)[0], dtype="int32")[:, None]  # (B, 1)
    parents = ops.reshape(picked // width + entry * beam_size, (-1,))  # (N,)
    choice = ops.reshape(picked + entry * (beam_size * width), (-1,))  # rows of (N * k)
    tokens = ops.take(ops.reshape(top_tokens, (-1,)), choice)
    log_probs = ops.take(ops.reshape(total, (-1,)), choice)
    parent_done = ops.take(beams.finished, parents)
    # Beams past the number of live hypotheses (K > V at the first steps).
    dead = log_probs < NEG_INF / 2
    ended = ops.logical_or(parent_done, dead)
    lengths = ops.take(lengths, parents)
    finished = ops.logical_or(ended, ops.equal(tokens, end_id))
    if stop_at is not None:
        settled = _settled(best, log_probs, lengths, finished, stop_at, beam_size, alpha, beta)
        finished = ops.logical_or(finished, settled)
    new = _Beams(
        last_ids=tokens,
        log_probs=log_probs,
        lengths=lengths,
        finished=finished,
        coverage=ops.take(coverage, parents, axis=0),
        tokens=loop.write(beams.tokens, index, ops.where(ended, pad_id, tokens)),
        parents=loop.write(beams.parents, index, parents),
        attention=loop.write(beams.attention, index, ops.take(attention, parents, axis=0)),
    )
    return new, parents


def _settled(best, log_probs, lengths, finished, stop_at, beam_size, alpha, beta):
    """`(N,)`: True on every beam of an entry whose best hypothesis has ended for good.

    The kept beams of an entry are sorted, so its best hypothesis is beam 0,
    and a finished hypothesis keeps its score. A live one only loses
    log-probability `L < 0` as it grows; `lp` is monotonic in the length, so
    its score can at most reach `L / lp` at its current length or at
    `stop_at` (whichever is larger), and `cp <= 0` for `beta >= 0`. When that
    bound of every live beam is at most the finished best score, no
    continuation can take the lead: the entry's best is final.
    """
    shape = (-1, beam_size)
    log_probs = ops.reshape(log_probs, shape)  # (B, K)
    lengths = ops.reshape(lengths, shape)
    finished = ops.reshape(finished, shape)
    reach = ops.maximum(
        log_probs / length_penalty(lengths, alpha),
        log_probs / length_penalty(stop_at, alpha),
    )
    reach = ops.max(ops.where(finished, NEG_INF, reach), axis=1)  # (B,)
    # A negative beta makes cp positive and unbounded in practice: never settle early.
    bounded = ops.greater_equal(ops.cast(beta, "float32"), 0.0)
    settled = ops.logical_and(finished[:, 0], best[:, 0] >= reach)
    settled = ops.logical_and(settled, bounded)
    return ops.repeat(settled, beam_size, axis=0)  # (N,), batch-major as the beams


def _backtrack(beams: _Beams, max_length):
    """`(T, N)` rows: where each final hypothesis sat at every step, from its parents."""

    def body(step, slots, rows):
        rows = loop.write(rows, step, slots)
        return step - 1, ops.take(ops.take(beams.parents, step, axis=0), slots), rows

    n = ops.shape(beams.parents)[1]
    slots = ops.arange(n, dtype="int32")
    rows = ops.zeros((max_length, n), "int32")
    last = ops.cast(max_length, "int32") - 1
    _, _, rows = ops.while_loop(lambda step, *_: step >= 0, body, (last, slots, rows))
    return rows


def _penalty(name: str, value):
    if isinstance(value, bool) or (
        not isinstance(value, numbers.Real) and not hasattr(value, "shape")
    ):
        validation.fail(_OWNER, name, "a float or a float32 scalar tensor", value, TypeError)
    return value


def beam_search(
    step: StepFn,
    initial_state: Any,
    start_id: int,
    end_id: int,
    max_length,
    beam_size=4,
    length_penalty_alpha=0.0,
    coverage_penalty_beta=0.0,
    pad_id: int = 0,
    early_stopping: bool = False,
) -> SearchResult:
    """Keeps the `beam_size` best hypotheses by GNMT score at each step.

    The initial state is tiled to `N = B * beam_size` rows (batch-major, row
    `b * K + k`, `tile_state`) and, after every step, reordered by parent
    beam (`reorder_state`, one gather per leaf). What never changes and is the
    same for all beams of an entry, such as an encoder's memory, needs no
    reordering: tile it once with `tile_state` and let `step` close over it,
    and pass only what changes (RNN states, key/value caches) as
    `initial_state`. A finished hypothesis extends with `pad_id` at no cost
    and keeps its score; the search stops when every beam has ended or
    after `max_length` steps. Each hypothesis's attention history is kept
    (its parents' steps, gathered once at the end).

    Args:
        step: `step(ids, state, index) -> (logits, state[, attention])` on
            `N = B * beam_size` rows, see `keras_attention.decoding`.
        initial_state: nested tensors, leading dimension `B`.
        start_id, end_id, max_length, pad_id: as in `greedy_search`.
        beam_size: hypotheses kept per batch entry: a positive Python int (or,
            in a TensorFlow graph, an int32 scalar tensor: one traced graph
            then serves every beam size). With 1 it picks the greedy search's
            tokens, scored with the penalties.
        length_penalty_alpha: `alpha` of `length_penalty`; 0 ranks by
            log-probability.
        coverage_penalty_beta: `beta` of `coverage_penalty`; 0 disables it.
            Needs a step that returns attention.
        early_stopping: False (default) runs until all `K` kept hypotheses
            of every entry have ended, so all `K` are the search's finished
            best. True ends an entry as soon as its best hypothesis has
            ended and no live one can still overtake it (a live score is
            bounded by its log-probability over the length penalty at its
            length or at `max_length`, and `cp <= 0` for `beta >= 0`): the
            best hypothesis is the same as without it, found in fewer steps
            where some beams would otherwise run on (for instance to
            `max_length`); the other `K - 1` are those kept at that step,
            possibly unfinished (their `lengths` say how far they got). For
            callers that keep only the best, such as a translator.

    Returns:
        A `SearchResult` with `K = beam_size`, best score first. With more
        beams than hypotheses exist, the surplus ones score about -1e9.
    """
    step = loop.step_function(_OWNER, step)
    start_id = loop.token(_OWNER, "start_id", start_id)
    end_id = loop.token(_OWNER, "end_id", end_id)
    pad_id = loop.token(_OWNER, "pad_id", pad_id)
    max_length = loop.size(_OWNER, "max_length", max_length)
    beam_size = loop.size(_OWNER, "beam_size", beam_size)
    alpha = _penalty("length_penalty_alpha", length_penalty_alpha)
    beta = _penalty("coverage_penalty_beta", coverage_penalty_beta)
    early_stopping = validation.flag(_OWNER, "early_stopping", early_stopping)
    first = loop.first_leaf(_OWNER, initial_state)
    rows = first.shape[0] * beam_size if isinstance(first.shape[0], int) else None
    rows = rows if isinstance(beam_size, int) else None
    # Every call of `step` sees N rows (a step may close over tiled memory),
    # step 0 too, though an entry's beams are copies until it has run.
    state = tile_state(initial_state, beam_size)
    n = ops.shape(loop.first_leaf(_OWNER, state))[0]
    index = ops.zeros((), "int32")
    ids = ops.full((n,), start_id, "int32")
    logits, state, attention = loop.call_step(_OWNER, step, ids, state, index, rows)
    has_attention = attention is not None
    if not has_attention and not (isinstance(beta, numbers.Real) and beta == 0):
        validation.fail(
            _OWNER, "coverage_penalty_beta", "0 for a step that returns no attention", beta
        )
    if not has_attention:
        attention = ops.zeros((n, 1))
    slots = ops.arange(n, dtype="int32")
    empty = _Beams(
        last_ids=ids,
        log_probs=ops.where(slots % beam_size == 0, 0.0, NEG_INF),  # one live beam per entry
        lengths=ops.zeros((n,), "int32"),
        finished=ops.zeros((n,), "bool"),
        coverage=ops.zeros_like(attention),
        tokens=ops.full((max_length, n), pad_id, "int32"),
        parents=ops.tile(slots[None], (max_length, 1)),  # identity after the last step
        attention=ops.zeros((max_length, *ops.shape(attention))),
    )
    settings = (beam_size, alpha, beta, end_id, pad_id, max_length if early_stopping else None)
    # The beams of an entry are still copies: no state to reorder after step 0.
    beams, _ = _select(empty, logits, attention, index, *settings)

    def cond(index, beams, state):
        return ops.logical_and(index < max_length, ops.logical_not(ops.all(beams.finished)))

    def body(index, beams, state):
        logits, state, attention = loop.call_step(_OWNER, step, beams.last_ids, state, index, rows)
        if not has_attention:
            attention = ops.zeros((n, 1))
        beams, parents = _select(beams, logits, attention, index, *settings)
        if isinstance(beam_size, int) and beam_size == 1:  # one beam per entry: never moves
            return index + 1, beams, state
        return index + 1, beams, reorder_state(state, parents)

    _, beams, _ = ops.while_loop(cond, body, (index + 1, beams, state))
    rows = _backtrack(beams, max_length)  # (T, N)
    ids = ops.take_along_axis(beams.tokens, rows, axis=1)
    scores = beams.log_probs / length_penalty(beams.lengths, alpha)
    scores = scores + coverage_penalty(beams.coverage, beta)
    history = None
    if has_attention:
        history = ops.take_along_axis(beams.attention, rows[..., None], axis=1)
        history = loop.time_major_to_result(history, beam_size)
    return SearchResult(
        ids=loop.time_major_to_result(ids, beam_size),
        lengths=loop.split(beams.lengths, beam_size),
        scores=loop.split(scores, beam_size),
        log_probs=loop.split(beams.log_probs, beam_size),
        attention=history,
    )
