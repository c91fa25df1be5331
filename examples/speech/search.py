"""Decoding the listener: greedy search over its steps, in its decoding window.

``greedy``: ``Listener.initial_state`` encodes once and
``keras_attention.decoding.decode`` drives ``Listener.step`` (greedy search),
keeping each step's attention ``(B, T, Tv)``; the location-sensitive
attention then moves at most ``inference_window`` positions back and forward
from its previous peak (``decoding_window``). Evaluation and the SavedModel
both transcribe with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from examples.speech.data import END
from examples.speech.data import PAD
from examples.speech.data import SAMPLING_RATE
from examples.speech.data import START
from examples.speech.model import Listener
from keras_attention import decoding


@contextlib.contextmanager
def decoding_window(model: Listener) -> Iterator[None]:
    """Meanwhile, the model's location-sensitive attention decodes in its ``inference_window``.

    The window is a decoding setting: training and the validation loss
    (teacher forcing, ``training=False``) attend over the whole memory, as
    the model learned to; only a search moves the attention at most
    ``(back, forward)`` positions from its previous peak (Chorowski et al.,
    2015, windowing). The layer reads the attribute when a search is traced.
    """
    layer, window = model.attention_layer, model.settings["inference_window"]
    if window is None or not hasattr(layer, "inference_window"):
        yield
        return
    layer.inference_window = tuple(window)
    try:
        yield
    finally:
        layer.inference_window = None


def set_decoding_window(model: Listener, window: tuple[int, int] | None) -> None:
    """Decodes ``model`` with another ``inference_window`` (None: none); see ``decoding_window``."""
    model.settings["inference_window"] = None if window is None else tuple(window)


def greedy(model: Listener, waveform: Any, lengths: Any, max_length: Any) -> dict[str, Any]:
    """Greedy search over a batch: ``tokens`` (B, T) int32 (END included, then PAD),
    ``length`` (B,) (END included) and ``attention`` (B, T, Tv) of each emitted token."""
    with decoding_window(model):
        state, memory = model.initial_state(waveform, lengths)
        result = decoding.decode(
            lambda ids, state, memory, index: model.step(ids, state, memory),
            state,
            memory,
            start_id=START,
            end_id=END,
            max_length=max_length,
            pad_id=PAD,
        )
    return {"tokens": result.ids, "length": result.lengths, "attention": result.attention}


def max_decode_length(samples: int) -> int:
    """The most tokens a search emits for ``samples`` of audio: a digit per 0.1 s, and END."""
    return 2 + samples // (SAMPLING_RATE // 10)
