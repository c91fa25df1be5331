"""The run's pictures: training curves and attention heat-maps (PNG and interactive HTML).

Matplotlib and ``keras_attention``'s plotting are imported inside the
functions, so the rest of the example runs without them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from examples.common.plots import plot_history  # noqa: F401  (plots.plot_history)
from examples.common.plots import pyplot as _pyplot


def save_attention_png(
    attention: np.ndarray, source: Sequence[str], target: Sequence[str], title: str, path: str
) -> str:
    """One ``plot_attention`` heat-map ``(T, Ts)`` saved as ``path``; returns it."""
    import keras_attention  # noqa: PLC0415

    plt = _pyplot()
    ax = keras_attention.plot_attention(np.asarray(attention), source, target, title=title)
    ax.figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(ax.figure)
    return path


def save_heatmaps(samples: list[dict[str, Any]], directory: str) -> list[str]:
    """``attention_K.png`` (plot_attention) and ``attention_K.html`` per sample.

    A sample with ``heads`` (``(H, T, Ts)``, the Transformer) also gets
    ``attention_K_heads.png`` (``plot_heads``), and its HTML page shows every
    head with a head selector.
    """
    import keras_attention  # noqa: PLC0415

    plt = _pyplot()
    paths = []
    for index, sample in enumerate(samples):
        stem = os.path.join(directory, f"attention_{index}")
        title = " ".join(sample["source"])
        save_attention_png(
            sample["attention"], sample["source"], sample["target"], title, stem + ".png"
        )
        if "heads" in sample:
            figure = keras_attention.plot_heads(
                sample["heads"],
                sample["source"],
                sample["target"],
                title=title,
            )
            figure.savefig(stem + "_heads.png", dpi=100, bbox_inches="tight")
            plt.close(figure)
            paths.append(stem + "_heads.png")
        keras_attention.save_attention_html(
            sample.get("heads", sample["attention"]),
            sample["source"],
            sample["target"],
            stem + ".html",
            title=title,
        )
        paths += [stem + ".png", stem + ".html"]
    return paths


def plot_translations(results: Sequence[dict[str, Any]], directory: str) -> list[str]:
    """``translation_K.png`` (``plot_attention``) per translated sentence; returns the paths."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for index, result in enumerate(results):
        if not result["source"] or not result["target"]:
            continue
        path = os.path.join(directory, f"translation_{index}.png")
        paths.append(
            save_attention_png(
                result["attention"], result["source"], result["target"], result["translation"], path
            )
        )
    return paths
