"""The best hypothesis of an encoder-decoder: greedy or beam search over a step and its memory."""

from __future__ import annotations

from typing import Any

from keras import ops

from keras_attention import validation
from keras_attention.decoding.beam import beam_search
from keras_attention.decoding.greedy import greedy_search
from keras_attention.decoding.loop import SearchResult
from keras_attention.decoding.loop import size
from keras_attention.decoding.state import tile_state

OWNER = "decode"


def decode(
    step,
    state: Any,
    memory: Any = None,
    *,
    start_id: int,
    end_id: int,
    max_length,
    beam_size=1,
    pad_id: int = 0,
    length_penalty_alpha=0.0,
    coverage_penalty_beta=0.0,
) -> SearchResult:
    """Each sequence's best hypothesis: greedy search for `beam_size` 1, else beam search.

    What every encoder-decoder does after encoding once (OpenNMT-tf's
    `Decoder`, the captioner's, the speech recognizer's): `memory` is what
    every hypothesis of a sequence reads and no step changes (an encoder's
    output, its projections, its mask). It is tiled to `beam_size` rows a
    sequence once (`tile_state`, row `b * K + k`) and handed to each step,
    so that the search carries and reorders only `state` (RNN states,
    key/value caches). Beam search runs with `early_stopping=True`: it ends a
    sequence once its best hypothesis has ended for good (the same best
    hypothesis, found in fewer steps).

    Args:
        step: `step(ids, state, memory, index) -> (logits, state[, attention])`
            on `N` rows (`B` greedy, `B * beam_size` beam), as the searches'
            step with `memory` added (see `keras_attention.decoding`).
        state: nested tensors, leading dimension `B`: what the steps change.
        memory: nested tensors, leading dimension `B`, or None.
        start_id, end_id, max_length, pad_id: as in `greedy_search`.
        beam_size: a positive Python int, or on TensorFlow a scalar int
            tensor (a SavedModel's input): both searches are then traced into
            one graph and the tensor picks one when it runs (a beam of 1
            would gather every state at every step for nothing).
        length_penalty_alpha, coverage_penalty_beta: the beam search's GNMT
            penalties (`beam_search`); the greedy search ignores them.

    Returns:
        A `SearchResult` of the best hypothesis, fields `(B, ...)`: `ids`
        `(B, max_length)`, `lengths`, `scores`, `log_probs` `(B,)` and
        `attention` `(B, max_length, Tv)` (None without attention).

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention import decoding
    >>> table = np.log([[0.25] * 4, [0.25] * 4, [0.01, 0.5, 0.09, 0.4], [0.01, 0.8, 0.09, 0.1]])
    >>> def step(ids, state, memory, index):  # a bigram "model": memory scales the logits
    ...     return ops.take(ops.convert_to_tensor(table, "float32"), ids, axis=0) * memory, state
    >>> state, memory = {"h": np.zeros((1, 1))}, np.ones((1, 1), "float32")
    >>> best = decoding.decode(step, state, memory, start_id=2, end_id=1, max_length=4, beam_size=2)
    >>> ops.convert_to_numpy(best.ids).tolist()
    [[1, 0, 0, 0]]
    """
    step = validation.function(
        OWNER, "step", step, "step(ids, state, memory, index) -> (logits, state[, attention])"
    )
    beam_size = size(OWNER, "beam_size", beam_size)
    common = dict(start_id=start_id, end_id=end_id, max_length=max_length, pad_id=pad_id)

    def over(tiled: Any):
        return lambda ids, state, index: step(ids, state, tiled, index)

    def greedy() -> SearchResult:
        return greedy_search(over(memory), state, **common)

    def beam() -> SearchResult:
        tiled = None if memory is None else tile_state(memory, beam_size)
        return beam_search(
            over(tiled),
            state,
            beam_size=beam_size,
            length_penalty_alpha=length_penalty_alpha,
            coverage_penalty_beta=coverage_penalty_beta,
            early_stopping=True,
            **common,
        )

    if isinstance(beam_size, int):
        result = greedy() if beam_size == 1 else beam()
    else:  # a TensorFlow graph input (`size` refuses one elsewhere)
        result = ops.cond(ops.equal(beam_size, 1), greedy, beam)
    return SearchResult(*(None if field is None else field[:, 0] for field in result))
