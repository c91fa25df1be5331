"""The decoding interface both translation models implement, and its adapter to the searches.

As OpenNMT-tf's ``Decoder``, a model decodes in two calls:

* ``initial_state(source_ids, max_length) -> (state, memory)`` encodes the
  ``(B, Ts)`` source once (and projects the memory once);
* ``step(ids, state, memory, index) -> (logits, state, attention)``: the
  ``(N,)`` previous ids at output position ``index`` give ``(N, V)`` float32
  logits, the new state and the ``(N, Ts)`` attention weights of this step.

``Seq2Seq`` (``examples.nmt.models.rnn``) and ``Transformer``
(``examples.nmt.models.transformer``) implement it; ``search_start(model, ...)``
turns it into the step function and state that the package's searches
(``keras_attention.decoding``) drive.
"""

from __future__ import annotations

from typing import Any
from typing import NamedTuple
from typing import Protocol

from examples.nmt.text import special
from keras_attention import decoding


class Memory(NamedTuple):
    """The encoded source as a decoding step reads it; first dimension ``N``.

    Attributes:
        keys, values: the attention's projections of the memory
            (``project_memory``), computed once per sentence.
        mask: boolean ``(N, Ts)``, True on real source tokens.
    """

    keys: Any
    values: Any
    mask: Any


class Decoder(Protocol):
    """What a translation model offers the searches; see the module doc."""

    def initial_state(
        self, source_ids: Any, max_length: Any = ...
    ) -> tuple[dict[str, Any], Memory]: ...

    def step(
        self, inputs: Any, state: dict[str, Any], memory: Memory, index: Any | int
    ) -> tuple[Any, dict[str, Any], Any]: ...


def search_start(
    model: Decoder,
    source_ids: Any,
    max_length: Any | None = None,
    beam_size: Any = 1,
):
    """``(step, state)`` for a search of ``keras_attention.decoding`` over ``(B, Ts)`` ids.

    The source is encoded once; the step closes over the memory, tiled to
    ``beam_size`` hypotheses per sentence (row ``b * K + k``, as the search
    lays out its rows), so the search carries and reorders only the decoder
    state (RNN states, or the Transformer's key/value caches), never the
    memory, which is the same for every hypothesis of a sentence.
    """
    state, memory = model.initial_state(source_ids, max_length)
    if not isinstance(beam_size, int) or beam_size != 1:  # a tensor: a graph input
        memory = decoding.tile_state(memory, beam_size)

    def step(ids: Any, state: Any, index: Any) -> tuple:
        return model.step(ids, state, memory, index)  # float32 logits, state, (N, Ts)

    return step, state


# A beam size, length or penalty may be a Python number or a scalar tensor (a graph input).
Int = Any
Real = Any


def search(
    model: Decoder,
    source_ids: Any,
    *,
    max_length: Int = 64,
    beam_size: Int = 1,
    alpha: Real = 0.0,
    beta: Real = 0.0,
) -> decoding.SearchResult:
    """The best hypothesis of a search over ``(B, Ts)`` source ids; fields ``(B, ...)``.

    ``keras_attention.decoding.decode`` over the model's step and memory: a
    ``beam_size`` of 1 (a Python int, or a tensor that holds 1 when the graph
    runs) takes the greedy search (``scores == log_probs``); anything else
    the beam search, with the GNMT length penalty ``alpha`` and coverage
    penalty ``beta``. Backend tensors in and out (``keras.ops``); a tensor
    ``beam_size`` (the SavedModel's graph input) needs TensorFlow.
    """
    if not isinstance(beam_size, int):  # a graph input (the SavedModel): checked when it runs
        import tensorflow as tf  # noqa: PLC0415  (only a SavedModel's graph takes a tensor)

        tf.debugging.assert_greater_equal(
            beam_size, 1, message="Expected beam_size >= 1 (a SavedModel input)"
        )
    state, memory = model.initial_state(source_ids, max_length)
    return decoding.decode(
        model.step,
        state,
        memory,
        start_id=special.START_ID,
        end_id=special.END_ID,
        max_length=max_length,
        beam_size=beam_size,
        pad_id=special.PAD_ID,
        length_penalty_alpha=alpha,
        coverage_penalty_beta=beta,
    )
