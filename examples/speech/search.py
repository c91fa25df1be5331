"""Decoding the listener: greedy search over its steps, in its decoding window.

``greedy``: ``Listener.initial_state`` encodes once and
``keras_attention.decoding.decode`` drives ``Listener.step`` (greedy search),
keeping each step's attention ``(B, T, Tv)``; the location-sensitive
attention then moves at most ``inference_window`` positions back and forward
from its previous peak (``decoding_window``), and END is allowed only once
the attention has reached the end of the audio (``end_guard``, within
``end_window`` positions of it). Evaluation and the SavedModel both
transcribe with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from keras import ops

from examples.speech.data import END
from examples.speech.data import PAD
from examples.speech.data import SAMPLING_RATE
from examples.speech.data import START
from examples.speech.model import CONTENT_ONLY
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


def set_end_window(model: Listener, window: int | None) -> None:
    """Decodes ``model`` with another ``end_window`` (None: none); see ``end_guard``."""
    model.settings["end_window"] = window


def end_guard(logits: Any, weights: Any, previous: Any, mask: Any, window: int) -> Any:
    """``logits`` (N, 13) with END only where the attention has reached the end of the audio.

    A token's attention ``weights`` (N, Tv) peak at one memory position; the
    last valid one (``mask`` (N, Tv)) is the end-of-audio position (the end
    sentinel, else the last frame). END is allowed only when the peak lies at
    most ``window`` positions before it, and is the only token allowed there
    once the peak has not moved forward from the previous token's
    (``previous`` (N, Tv), its weights). So a decoder that has listened to
    part of the audio cannot stop (a long pause read as the end), and one
    that has listened to all of it cannot go on (a digit repeated at the end;
    the first token there may be a digit: some models attend the last digit
    at the end position). Training never sees the guard, and content-only
    attention (``model.CONTENT_ONLY``) decodes without it.
    """
    peak = ops.argmax(weights, axis=-1)  # (N,)
    last = ops.sum(ops.cast(mask, "int32"), axis=-1) - 1
    near_end = peak >= last - window
    must_end = ops.logical_and(near_end, peak <= ops.argmax(previous, axis=-1))  # stalled
    is_end = ops.arange(ops.shape(logits)[-1]) == END  # (13,)
    blocked = ops.logical_or(
        ops.logical_and(is_end[None, :], ops.logical_not(near_end)[:, None]),
        ops.logical_and(ops.logical_not(is_end)[None, :], must_end[:, None]),
    )
    return ops.where(blocked, ops.full_like(logits, -1e9), logits)


def greedy(model: Listener, waveform: Any, lengths: Any, max_length: Any) -> dict[str, Any]:
    """Greedy search over a batch: ``tokens`` (B, T) int32 (END included, then PAD),
    ``length`` (B,) (END included) and ``attention`` (B, T, Tv) of each emitted token."""
    window = model.settings.get("end_window")
    if model.settings["attention"] in CONTENT_ONLY:
        window = None  # its peak says nothing of how far the decoder has listened

    def step(ids, state, memory, index):
        logits, new, weights = model.step(ids, state, memory)
        if window is not None:
            logits = end_guard(logits, weights, state["weights"], memory[2], window)
        return logits, new, weights

    with decoding_window(model):
        state, memory = model.initial_state(waveform, lengths)
        result = decoding.decode(
            step,
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
