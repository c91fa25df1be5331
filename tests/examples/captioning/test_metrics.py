"""The scores in NumPy: attention correctness against a pixel-level reference, captions by hand."""

import numpy as np
import pytest

from examples.captioning import metrics

pytestmark = pytest.mark.backend_independent


def pixel_correctness(grid_weights, box, image_size):
    """Liu et al.'s definition, pixel by pixel: each cell's weight spread over its pixels."""
    rows, cols = grid_weights.shape
    height, width = image_size
    per_pixel = np.kron(grid_weights, np.ones((height // rows, width // cols))) / (
        (height // rows) * (width // cols)
    )
    top, left, bottom, right = box
    return per_pixel[top:bottom, left:right].sum()


def test_attention_correctness_equals_the_pixel_reference():
    rng = np.random.default_rng(0)
    weights = rng.random((3, 4, 6, 16))
    weights /= weights.sum(axis=(2, 3), keepdims=True)
    boxes = np.array(
        [
            [[0, 0, 8, 6], [3, 10, 11, 17], [-1] * 4, [-1] * 4],
            [[16, 58, 24, 64], [5, 21, 13, 26], [1, 30, 9, 37], [9, 40, 17, 44]],
            [[7, 2, 15, 9], [-1] * 4, [-1] * 4, [-1] * 4],
        ]
    )
    counts = np.array([2, 4, 1])
    scores = metrics.attention_scores(weights, boxes, counts, (24, 64))
    reference = [
        pixel_correctness(weights[n, t], boxes[n, t], (24, 64))
        for n in range(3)
        for t in range(counts[n])
    ]
    assert scores["attention_correctness"] == pytest.approx(np.mean(reference), abs=1e-12)
    areas = [
        (b[2] - b[0]) * (b[3] - b[1]) / (24 * 64) for n in range(3) for b in boxes[n, : counts[n]]
    ]
    assert scores["attention_correctness_uniform"] == pytest.approx(np.mean(areas))
    uniform = np.full_like(weights, 1 / 96)
    flat = metrics.attention_scores(uniform, boxes, counts, (24, 64))
    assert flat["attention_correctness"] == pytest.approx(flat["attention_correctness_uniform"])


def test_pointing_by_hand():
    # A 2 x 4 grid over a 4 x 8 image: cells of 2 x 2 pixels, centres at (1, 1), (1, 3), ...
    weights = np.zeros((1, 2, 2, 4))
    weights[0, 0, 1, 2] = 1.0  # peak in the cell centred at (3, 5)
    weights[0, 1, 0, 0] = 0.6  # peak in the cell centred at (1, 1)
    weights[0, 1, 1, 3] = 0.4
    boxes = np.array(
        [[[2, 4, 4, 6], [0, 2, 4, 8]]]
    )  # the first holds (3, 5); the second not (1, 1)
    scores = metrics.attention_scores(weights, boxes, np.array([2]), (4, 8))
    assert scores["pointing_accuracy"] == 0.5
    # All of the first digit's weight is in a cell inside its box (1.0); the second
    # digit's box covers the whole 0.4 cell (columns 6-7), none of the 0.6 one.
    assert scores["attention_correctness"] == pytest.approx((1.0 + 0.4) / 2)
    assert scores["pointing_accuracy_uniform"] == pytest.approx((4 / 32 + 24 / 32) / 2)


def test_a_cell_straddling_the_box_counts_by_its_area():
    weights = np.zeros((1, 1, 1, 2))
    weights[0, 0, 0, 0] = 1.0  # one cell of 4 x 4 pixels, columns 0-3
    boxes = np.array([[[1, 1, 3, 4]]])  # 2 rows x 3 columns of it: 6 of 16 pixels
    scores = metrics.attention_scores(weights, boxes, np.array([1]), (4, 8))
    assert scores["attention_correctness"] == pytest.approx(6 / 16)


def test_caption_scores_by_hand():
    assert metrics.edit_distance("123", "123") == 0
    assert metrics.edit_distance("123", "13") == 1
    assert metrics.edit_distance("", "45") == 2
    assert metrics.edit_distance("4321", "1234") == 4
    scores = metrics.caption_scores(["12", "3", "", "99"], ["12", "34", "5", "98"])
    assert scores["exact_match"] == 0.25
    assert scores["digit_error_rate"] == pytest.approx((0 + 1 + 1 + 1) / 7)
    with pytest.raises(ValueError, match="as many"):
        metrics.caption_scores(["1"], [])
