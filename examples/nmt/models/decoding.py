"""The decoding interface both translation models implement, and its adapter to the searches.

As OpenNMT-tf's ``Decoder``, a model decodes in two calls:

* ``initial_state(source_ids, max_length) -> (state, memory)`` encodes the
  ``(B, Ts)`` source once (and projects the memory once);
* ``step(ids, state, memory, index) -> (logits, state, attention)``: the
  ``(N,)`` previous ids at output position ``index`` give ``(N, V)`` float32
  logits, the new state and the ``(N, Ts)`` attention weights of this step.

``Seq2Seq`` (``examples.nmt.models.rnn``) and ``Transformer``
(``examples.nmt.models.transformer``) implement it; ``step_fn(model)`` turns it
into the ``step_fn`` that the searches of ``examples.nmt.models.search`` drive.
"""

from __future__ import annotations

from typing import Any
from typing import NamedTuple
from typing import Protocol

import tensorflow as tf


class Memory(NamedTuple):
    """The encoded source as a decoding step reads it; first dimension ``N``.

    Attributes:
        keys, values: the attention's projections of the memory
            (``project_memory``), computed once per sentence.
        mask: boolean ``(N, Ts)``, True on real source tokens.
    """

    keys: tf.Tensor
    values: tf.Tensor
    mask: tf.Tensor


class Decoder(Protocol):
    """What a translation model offers the searches; see the module doc."""

    def initial_state(
        self, source_ids: tf.Tensor, max_length: int | tf.Tensor = ...
    ) -> tuple[dict[str, Any], Memory]: ...

    def step(
        self, inputs: tf.Tensor, state: dict[str, Any], memory: Memory, index: tf.Tensor | int
    ) -> tuple[tf.Tensor, dict[str, Any], tf.Tensor]: ...


def step_fn(model: Decoder):
    """``model.step`` as a search ``step_fn`` over the search state ``(state, memory)``.

    Start a search from ``model.initial_state(source_ids, max_length)``.
    """

    def step(ids: tf.Tensor, search_state: tuple, step: tf.Tensor) -> tuple:
        state, memory = search_state
        logits, state, attention = model.step(ids, state, memory, step)
        return tf.nn.log_softmax(logits), (state, memory), attention

    return step
