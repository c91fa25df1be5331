"""Several translation models decoding as one: ``Ensemble``, a ``Decoder`` over its members."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from keras_attention import decoding


class Ensemble:
    """Translation models sharing their vocabularies, decoding as one.

    A ``Decoder`` itself (``examples.nmt.models.decoding``), so the
    translator, the evaluation and the SavedModel take it where they take
    one model: ``initial_state`` encodes the source once per member (the
    state and the memory are tuples of the members'), ``step`` runs the
    members' steps as ``keras_attention.decoding.ensemble_step`` does: the
    mean of their log-probabilities and of their attention, each member's
    own state, which beam search tiles and reorders with the rest.
    ``variables`` are all the members', for ``backend.compile_search`` and
    the SavedModel.

    Args:
        members: the models, at least one.
    """

    def __init__(self, members: Sequence[Any]):
        self.members = tuple(members)
        if not self.members:
            raise ValueError("Expected at least one model in an ensemble. Received: members=()")

    @property
    def variables(self) -> list:
        return [variable for member in self.members for variable in member.variables]

    def initial_state(self, source_ids: Any, max_length: Any = 64) -> tuple[tuple, tuple]:
        starts = [member.initial_state(source_ids, max_length) for member in self.members]
        return tuple(state for state, _ in starts), tuple(memory for _, memory in starts)

    def step(self, inputs: Any, state: tuple, memory: tuple, index: Any) -> tuple:
        steps = [
            lambda ids, own, index, member=member, read=read: member.step(ids, own, read, index)
            for member, read in zip(self.members, memory)
        ]
        return decoding.ensemble_step(steps)(inputs, state, index)
