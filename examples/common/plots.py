"""The pictures every example draws: training curves (matplotlib, imported when drawing)."""

from __future__ import annotations

import csv


def pyplot():
    """``matplotlib.pyplot`` on the file-only Agg backend."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def plot_history(path: str, output: str, keys: tuple[str, ...] = ("loss", "masked_accuracy")):
    """Each of ``keys`` per epoch, train and validation, from ``history.csv`` as a PNG."""
    plt = pyplot()
    with open(path, encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    epochs = [int(row["epoch"]) + 1 for row in rows]
    figure, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 3.5), squeeze=False)
    for ax, key in zip(axes[0], keys):
        for prefix in ("", "val_"):
            if rows and prefix + key in rows[0]:
                ax.plot(
                    epochs,
                    [float(row[prefix + key]) for row in rows],
                    marker="o",
                    label=(prefix or "train_").rstrip("_"),
                )
        ax.set_xlabel("epoch")
        ax.set_title(key)
        ax.legend()
    figure.tight_layout()
    figure.savefig(output, dpi=100)
    plt.close(figure)
