"""Greedy search and sampling: one hypothesis per batch entry, the state never reordered."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import keras
from keras import ops

from keras_attention import validation
from keras_attention.decoding import loop
from keras_attention.decoding.loop import NEG_INF
from keras_attention.decoding.loop import SearchResult
from keras_attention.decoding.loop import StepFn

ChooseFn = Callable[[Any, Any], Any]  # (logits (N, V) float32, index) -> tokens (N,) int32


class _Rows(NamedTuple):
    last_ids: Any  # (N,) fed to the next step
    log_probs: Any  # (N,)
    lengths: Any  # (N,)
    finished: Any  # (N,)
    tokens: Any  # (T, N)
    attention: Any  # (T, N, Tv); Tv = 1 (zeros) when the step returns none


def _advance(rows: _Rows, logits, attention, index, choose: ChooseFn, end_id, pad_id) -> _Rows:
    """Extends every row by one token; a finished row extends with pad at no cost."""
    tokens = ops.cast(choose(logits, index), "int32")  # (N,)
    chosen = ops.take_along_axis(logits, tokens[:, None], axis=1)[:, 0]
    log_prob = ops.maximum(chosen - ops.logsumexp(logits, axis=-1), NEG_INF)
    done = rows.finished
    return _Rows(
        last_ids=ops.where(done, end_id, tokens),
        log_probs=rows.log_probs + ops.where(done, 0.0, log_prob),
        lengths=rows.lengths + ops.cast(ops.logical_not(done), "int32"),
        finished=ops.logical_or(done, ops.equal(tokens, end_id)),
        tokens=loop.write(rows.tokens, index, ops.where(done, pad_id, tokens)),
        attention=loop.write(rows.attention, index, ops.where(done[:, None], 0.0, attention)),
    )


def _search(
    owner: str,
    step: StepFn,
    initial_state: Any,
    start_id,
    end_id,
    max_length,
    pad_id,
    make_choose: Callable[[Any], ChooseFn],
) -> SearchResult:
    step = loop.step_function(owner, step)
    start_id = loop.token(owner, "start_id", start_id)
    end_id = loop.token(owner, "end_id", end_id)
    pad_id = loop.token(owner, "pad_id", pad_id)
    max_length = loop.size(owner, "max_length", max_length)
    first = loop.first_leaf(owner, initial_state)
    rows, n = first.shape[0], ops.shape(first)[0]
    choose = make_choose(n)
    index = ops.zeros((), "int32")
    ids = ops.full((n,), start_id, "int32")
    logits, state, attention = loop.call_step(owner, step, ids, initial_state, index, rows)
    has_attention = attention is not None
    if not has_attention:
        attention = ops.zeros((n, 1))
    empty = _Rows(
        last_ids=ids,
        log_probs=ops.zeros((n,)),
        lengths=ops.zeros((n,), "int32"),
        finished=ops.zeros((n,), "bool"),
        tokens=ops.full((max_length, n), pad_id, "int32"),
        attention=ops.zeros((max_length, n, ops.shape(attention)[1])),
    )
    hyps = _advance(empty, logits, attention, index, choose, end_id, pad_id)

    def cond(index, hyps, state):
        return ops.logical_and(index < max_length, ops.logical_not(ops.all(hyps.finished)))

    def body(index, hyps, state):
        logits, state, attention = loop.call_step(owner, step, hyps.last_ids, state, index, rows)
        if not has_attention:
            attention = ops.zeros((n, 1))
        return index + 1, _advance(hyps, logits, attention, index, choose, end_id, pad_id), state

    _, hyps, _ = ops.while_loop(cond, body, (index + 1, hyps, state))
    return SearchResult(
        ids=loop.time_major_to_result(hyps.tokens, 1),
        lengths=hyps.lengths[:, None],
        scores=hyps.log_probs[:, None],
        log_probs=hyps.log_probs[:, None],
        attention=loop.time_major_to_result(hyps.attention, 1) if has_attention else None,
    )


def greedy_search(
    step: StepFn,
    initial_state: Any,
    start_id: int,
    end_id: int,
    max_length,
    pad_id: int = 0,
) -> SearchResult:
    """Picks the most probable token at each step, until `end_id` or `max_length` tokens.

    Args:
        step: `step(ids, state, index) -> (logits, state[, attention])`, see
            `keras_attention.decoding`; here on `N = B` rows.
        initial_state: nested tensors, leading dimension `B`.
        start_id: the token fed at step 0.
        end_id: the token that ends a hypothesis.
        max_length: the most steps, a positive Python int (or, in a
            TensorFlow graph, an int32 scalar tensor).
        pad_id: written after the end.

    Returns:
        A `SearchResult` with `K = 1`; `scores == log_probs`.
    """

    def make_choose(n):
        return lambda logits, index: ops.argmax(logits, axis=-1)

    return _search(
        "greedy_search", step, initial_state, start_id, end_id, max_length, pad_id, make_choose
    )


def sample(
    step: StepFn,
    initial_state: Any,
    start_id: int,
    end_id: int,
    max_length,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed=None,
    pad_id: int = 0,
) -> SearchResult:
    """Draws each token from the step's distribution: temperature, then top-k, then top-p.

    The logits are divided by `temperature`; `top_k` keeps the `k` most
    probable tokens; `top_p` (nucleus sampling, Holtzman et al., 2020) keeps
    the smallest set of most probable tokens whose probability reaches
    `top_p` (always the most probable one). `top_k=1` and a tiny `top_p` are
    greedy search. The uniform draws for every step are made once, before the
    loop, from `seed`: the same seed gives the same tokens on one backend.

    Args:
        step, initial_state, start_id, end_id, max_length, pad_id: as in
            `greedy_search`.
        temperature: a positive float; below 1 sharpens, above 1 flattens.
        top_k: a positive int or None (all tokens).
        top_p: a float in `(0, 1]` or None (1: all tokens).
        seed: an int, a `keras.random.SeedGenerator`, or None (Keras's global
            generator: not under `jax.jit`, which needs a seed).

    Returns:
        A `SearchResult` with `K = 1`; `log_probs` (and `scores`) sum the
        model's log-probabilities of the drawn tokens, before temperature and
        filtering.
    """
    owner = "sample"
    loop.step_function(owner, step)
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        validation.fail(owner, "temperature", "a positive float", temperature, TypeError)
    if not temperature > 0:
        validation.fail(owner, "temperature", "a positive float", temperature)
    top_k = validation.integer(owner, "top_k", top_k, allow_none=True)
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, numbers.Real) or not 0 < top_p <= 1:
            validation.fail(owner, "top_p", "a float in (0, 1] or None", top_p)
        top_p = None if top_p == 1 else float(top_p)
    size = loop.size(owner, "max_length", max_length)

    def make_choose(n):
        # One uniform per row and step, in (0, 1): inverse-CDF draws need no
        # random op inside the loop (jit-friendly, reproducible).
        uniforms = keras.random.uniform((size, n), minval=1e-6, maxval=1.0, seed=seed)

        def choose(logits, index):
            scaled = logits / float(temperature)
            candidates = None
            if top_k is not None or top_p is not None:
                vocab = logits.shape[-1]
                k = top_k or vocab or ops.shape(logits)[-1]
                k = min(k, vocab) if isinstance(vocab, int) else k
                scaled, candidates = loop.top_k(scaled, k)  # (N, k), sorted
                if k == 1:
                    return candidates[:, 0]
            if top_p is not None:
                probs = ops.softmax(scaled, axis=-1)
                before = ops.cumsum(probs, axis=-1) - probs  # mass of more probable tokens
                scaled = ops.where(before < top_p, scaled, NEG_INF)
            cumulative = ops.cumsum(ops.softmax(scaled, axis=-1), axis=-1)
            target = ops.take(uniforms, index, axis=0) * cumulative[:, -1]  # (N,)
            choice = ops.sum(ops.cast(cumulative < target[:, None], "int32"), axis=-1)
            if candidates is None:
                return choice
            return ops.take_along_axis(candidates, choice[:, None], axis=1)[:, 0]

        return choose

    return _search(owner, step, initial_state, start_id, end_id, max_length, pad_id, make_choose)
