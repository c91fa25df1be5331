"""The alignment figure: the log-mel spectrogram over the attention, gold digit boundaries drawn.

Top, the utterance's log-mel frames (10 ms each) with each digit's gold
span marked and labelled; below, ``keras_attention.plotting.plot_attention``
of each emitted token's weights over the memory (80 ms a position) with the
same boundaries. matplotlib is imported here only (``Figure``, no pyplot).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from examples.speech.model import SAMPLES_PER_STEP
from examples.speech.model import STRIDE
from keras_attention.plotting import plot_attention


def plot_alignment(
    log_mel: np.ndarray,
    attention: np.ndarray,
    hypothesis: Sequence[int],
    reference: Sequence[int],
    spans: np.ndarray,
    path: str,
    title: str = "",
) -> str:
    """Draws and saves the figure; returns ``path``.

    Args:
        log_mel: ``(F, M)`` features of the utterance's real frames.
        attention: ``(Tq, Tv)`` weights of each emitted token (END included)
            over the utterance's real memory positions.
        hypothesis: the emitted digits (``Tq - 1`` of them, or ``Tq`` without END).
        reference: the gold digits; ``spans`` their ``(n, 2)`` ``[start, end)`` samples.
    """
    from matplotlib.figure import Figure  # noqa: PLC0415  (only the figure needs it)

    steps = attention.shape[1]
    width = min(40.0, max(6.0, steps * 0.09))
    figure = Figure(figsize=(width, 2.2 + 0.22 * attention.shape[0]), layout="constrained")
    top, bottom = figure.subplots(2, 1, height_ratios=(1, max(1.0, attention.shape[0] / 8)))
    top.imshow(log_mel.T, origin="lower", aspect="auto", cmap="magma", interpolation="nearest")
    top.set_ylabel("mel bin")
    top.set_xlabel("frame (10 ms)")
    for digit, (start, end) in zip(reference, spans):
        for sample in (start, end):
            top.axvline(sample / STRIDE, color="white", lw=0.8)
        top.text((start + end) / 2 / STRIDE, log_mel.shape[1] * 0.85, str(digit), color="white",
                 ha="center", fontsize=11, weight="bold")  # fmt: skip
    targets = [str(d) for d in hypothesis] + ["end"] * (attention.shape[0] - len(hypothesis))
    seconds = [f"{j * SAMPLES_PER_STEP / 8000:.1f}s" if j % 10 == 0 else "" for j in range(steps)]
    plot_attention(attention, seconds, targets, ax=bottom, colorbar=False)
    bottom.set_xlabel("memory position (80 ms; gold digit spans between the lines)")
    bottom.set_ylabel("emitted")
    for start, end in spans:
        for sample in (start, end):
            bottom.axvline(sample / SAMPLES_PER_STEP, color="white", lw=0.8)
    if title:
        top.set_title(title)
    figure.savefig(path, dpi=90)
    return path
