"""The scores of a transcription, in NumPy: digit error rate, exact match, alignment accuracy.

``digits(tokens)`` reads a search's tokens up to END. Alignment accuracy asks,
for reference digit ``i`` of each utterance, whether the hypothesis has an
``i``-th token and the peak of that token's attention (memory position
``j``, centred on sample ``j * samples_per_step``) lies inside the digit's
gold span ``[start, end)``: a digit the search did not emit counts as
missed. No training step ever sees a span: the score measures where the
attention went by itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from examples.speech.data import END
from examples.speech.data import PAD


def digits(tokens: Sequence[int]) -> list[int]:
    """The digits of one hypothesis's tokens, up to END (tokens 3..12 are digits 0..9)."""
    found = []
    for token in tokens:
        if token in (END, PAD):
            break
        if token >= 3:
            found.append(int(token) - 3)
    return found


def edit_distance(hypothesis: Sequence[int], reference: Sequence[int]) -> int:
    """Levenshtein distance: the fewest insertions, deletions and substitutions."""
    previous = list(range(len(reference) + 1))
    for i, item in enumerate(hypothesis, 1):
        current = [i]
        for j, wanted in enumerate(reference, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (item != wanted))
            )
        previous = current
    return previous[-1]


def digit_error_rate(
    hypotheses: Sequence[Sequence[int]], references: Sequence[Sequence[int]]
) -> float:
    """The edit distances summed over the reference digits summed."""
    errors = sum(edit_distance(h, r) for h, r in zip(hypotheses, references))
    return errors / max(1, sum(len(r) for r in references))


def exact_match(hypotheses: Sequence[Sequence[int]], references: Sequence[Sequence[int]]) -> float:
    """The share of utterances transcribed without an error."""
    return float(np.mean([list(h) == list(r) for h, r in zip(hypotheses, references)]))


def alignment_hits(
    attention: np.ndarray,
    emitted: np.ndarray,
    spans: np.ndarray,
    digit_count: np.ndarray,
    samples_per_step: int,
) -> np.ndarray:
    """Boolean ``(N, T)``: reference digit ``i`` emitted, its token's attention peak in its span.

    Args:
        attention: ``(N, Tq, Tv)`` weights of each emitted token (``Tq >= T``).
        emitted: ``(N,)`` digits each hypothesis emitted (before END).
        spans: ``(N, T, 2)`` gold ``[start, end)`` in samples (-1 pads).
        digit_count: ``(N,)`` reference digits.
        samples_per_step: the samples between memory positions (position ``j``
            is centred on sample ``j * samples_per_step``).
    """
    steps = spans.shape[1]
    peaks = np.argmax(attention[:, :steps], axis=-1) * samples_per_step  # (N, T) samples
    inside = (spans[..., 0] <= peaks) & (peaks < spans[..., 1])
    index = np.arange(steps)[None, :]
    return inside & (index < np.asarray(emitted)[:, None]) & (index < digit_count[:, None])


def alignment_accuracy(
    attention: np.ndarray,
    emitted: np.ndarray,
    spans: np.ndarray,
    digit_count: np.ndarray,
    samples_per_step: int,
) -> float:
    """The share of reference digits whose token's attention peak lies in their span."""
    hits = alignment_hits(attention, emitted, spans, digit_count, samples_per_step)
    return float(hits.sum() / max(1, int(np.sum(digit_count))))
