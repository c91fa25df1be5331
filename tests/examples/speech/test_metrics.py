"""Digit error rate, exact match and alignment accuracy against hand counts and a plain loop."""

import numpy as np
import pytest

from examples.speech import metrics

pytestmark = pytest.mark.backend_independent


def test_digits_stop_at_end():
    assert metrics.digits([7, 3, 12, 2, 5, 0]) == [4, 0, 9]
    assert metrics.digits([2, 5]) == []


@pytest.mark.parametrize(
    ("hypothesis", "reference", "distance"),
    [
        ([], [1, 2], 2),
        ([1, 2], [], 2),
        ([1, 2, 3], [1, 2, 3], 0),
        ([1, 9, 3], [1, 2, 3], 1),  # a substitution
        ([1, 3], [1, 2, 3], 1),  # a deletion
        ([1, 2, 2, 3], [1, 2, 3], 1),  # an insertion
        ([3, 2, 1], [1, 2, 3], 2),
        ([5, 5, 1, 2], [1, 2, 5, 5], 4),
    ],
)
def test_edit_distance(hypothesis, reference, distance):
    assert metrics.edit_distance(hypothesis, reference) == distance


def test_digit_error_rate_and_exact_match():
    hypotheses = [[1, 2, 3], [4], [7, 7]]
    references = [[1, 2, 3], [4, 5], [7, 8, 9]]
    assert metrics.digit_error_rate(hypotheses, references) == pytest.approx((0 + 1 + 2) / 8)
    assert metrics.exact_match(hypotheses, references) == pytest.approx(1 / 3)


def reference_accuracy(attention, emitted, spans, counts, samples_per_step):
    """A plain loop over each reference digit, written apart from the code under test."""
    hits = total = 0
    for row in range(len(counts)):
        for i in range(counts[row]):
            total += 1
            if i >= emitted[row]:
                continue
            peak = int(np.argmax(attention[row, i])) * samples_per_step
            start, end = spans[row, i]
            hits += int(start <= peak < end)
    return hits / total


def test_alignment_accuracy_by_hand():
    attention = np.zeros((1, 3, 10))
    attention[0, 0, 1] = attention[0, 1, 5] = attention[0, 2, 9] = 1.0  # peaks at 10, 50, 90
    spans = np.array([[[0, 20], [40, 50], [80, 100]]])  # 50 lies outside [40, 50)
    assert metrics.alignment_accuracy(attention, [3], spans, np.array([3]), 10) == 2 / 3
    # A digit not emitted is missed, whatever its attention.
    assert metrics.alignment_accuracy(attention, [1], spans, np.array([3]), 10) == 1 / 3


def test_alignment_accuracy_matches_a_loop_on_random_cases():
    rng = np.random.default_rng(0)
    rows, most, steps = 50, 6, 40
    attention = rng.random((rows, most + 3, steps))
    counts = rng.integers(1, most + 1, rows)
    emitted = rng.integers(0, most + 3, rows)
    spans = np.full((rows, most, 2), -1)
    for row in range(rows):
        edges = np.sort(rng.choice(steps * 10, 2 * counts[row], replace=False))
        spans[row, : counts[row]] = edges.reshape(-1, 2)
    found = metrics.alignment_accuracy(attention, emitted, spans, counts, 10)
    assert found == pytest.approx(reference_accuracy(attention, emitted, spans, counts, 10))
    assert 0 < found < 1


def test_evaluate_reads_an_inference_window():
    from examples.common.runs import RunError
    from examples.speech import evaluate

    assert evaluate.parse_window("2,16") == (2, 16)
    assert evaluate.parse_window("None") is None
    with pytest.raises(RunError, match="expected BACK,FORWARD"):
        evaluate.parse_window("2")
