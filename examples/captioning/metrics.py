"""What the captioner is scored on, in NumPy: its captions, and where its attention lands.

* **exact match**: the share of scenes whose caption is exactly right;
* **digit error rate**: Levenshtein distance between written and gold digits,
  summed over scenes, over the gold digits' count;
* **attention correctness** (Liu et al., AAAI 2017): the attention mass that
  falls inside the gold box of the digit being written, averaged over
  digits. A grid cell covers ``H / H'`` by ``W / W'`` pixels and spreads its
  weight evenly over them, so a cell counts with the share of its area
  inside the box. As Liu et al. do, the weights are those of the gold
  caption fed to the decoder (teacher forcing), so every gold digit has one;
* **pointing accuracy**: the share of digits whose highest-weighted cell has
  its centre inside the digit's box.

Each attention figure comes with its uniform-attention baseline: the box's
area over the image's, what weights spread evenly over the grid would score
(and, near enough, the chance that a random cell's centre is in the box).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance (insertions, deletions, substitutions cost 1)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def caption_scores(written: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    """``exact_match`` and ``digit_error_rate`` of captions (strings of digits)."""
    if len(written) != len(gold):
        raise ValueError(
            f"Expected as many written captions as gold ones. Received: {len(written)} and "
            f"{len(gold)}"
        )
    errors = sum(edit_distance(w, g) for w, g in zip(written, gold))
    digits = sum(len(g) for g in gold)
    return {
        "exact_match": float(np.mean([w == g for w, g in zip(written, gold)])),
        "digit_error_rate": errors / max(digits, 1),
    }


def cell_coverage(box: Sequence[int], image_size: tuple[int, int], grid: tuple[int, int]):
    """``(H', W')``: the share of each cell's area inside ``box`` (top, left, bottom, right)."""
    top, left, bottom, right = box

    def along(start: int, end: int, pixels: int, cells: int) -> np.ndarray:
        size = pixels / cells
        edges = np.arange(cells + 1) * size
        return np.clip(np.minimum(edges[1:], end) - np.maximum(edges[:-1], start), 0, None) / size

    (height, width), (rows, cols) = image_size, grid
    return np.outer(along(top, bottom, height, rows), along(left, right, width, cols))


def attention_scores(
    weights: np.ndarray, boxes: np.ndarray, counts: np.ndarray, image_size: tuple[int, int]
) -> dict[str, float]:
    """Attention correctness and pointing accuracy, each with its uniform baseline.

    Args:
        weights: ``(N, T, H', W')``: step ``t`` writes digit ``t`` of scene ``n``.
        boxes: ``(N, D, 4)`` gold boxes (top, left, bottom, right), ``D <= T``.
        counts: ``(N,)`` digits per scene.
        image_size: ``(H, W)`` in pixels.
    """
    weights = np.asarray(weights, "float64")
    if weights.ndim != 4:
        raise ValueError(f"Expected weights (N, T, H', W'). Received: shape {weights.shape}")
    grid = weights.shape[2:]
    height, width = image_size
    rows, cols = grid
    centres_y = (np.arange(rows) + 0.5) * height / rows
    centres_x = (np.arange(cols) + 0.5) * width / cols
    correctness, pointing, area = [], [], []
    for n, count in enumerate(np.asarray(counts)):
        for t in range(int(count)):
            box = boxes[n, t]
            top, left, bottom, right = (int(v) for v in box)
            correctness.append(float(np.sum(weights[n, t] * cell_coverage(box, image_size, grid))))
            row, col = np.unravel_index(np.argmax(weights[n, t]), grid)
            inside = top <= centres_y[row] < bottom and left <= centres_x[col] < right
            pointing.append(float(inside))
            area.append((bottom - top) * (right - left) / (height * width))
    baseline = float(np.mean(area))
    return {
        "attention_correctness": float(np.mean(correctness)),
        "attention_correctness_uniform": baseline,
        "pointing_accuracy": float(np.mean(pointing)),
        "pointing_accuracy_uniform": baseline,
    }
