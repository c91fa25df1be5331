"""Matplotlib heat-maps of attention weights: `plot_attention` and `plot_heads`.

matplotlib (the `plot` extra) is imported inside the functions, never when this
module loads. Figures are `matplotlib.figure.Figure` objects on an Agg canvas,
outside pyplot: headless, never shown, and never left open in pyplot's registry.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from keras_attention.plotting._inputs import HeadSpec
from keras_attention.plotting._inputs import Padding
from keras_attention.plotting._inputs import prepare

_INSTALL_HINT = 'pip install "keras-attention-layers[plot]"'


def _require_matplotlib(caller: str):
    """Imports matplotlib lazily; returns `(Figure, FigureCanvasAgg)`."""
    try:
        import matplotlib  # noqa: F401, PLC0415  (lazy; first, so a blocked import fails here)
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
        from matplotlib.figure import Figure  # noqa: PLC0415
    except ImportError as err:
        raise ImportError(
            f"{caller} needs matplotlib. Install the plotting extra: {_INSTALL_HINT}"
        ) from err
    return Figure, FigureCanvasAgg


@dataclass(frozen=True)
class _Sizing:
    """Cell size (inches), tick font size (points) and x-label rotation."""

    cell: float
    fontsize: float
    rotation: int

    @classmethod
    def for_tokens(cls, source: list, target: list, budget: float = 12.0):
        longest = max(len(source), len(target), 1)
        cell = min(0.45, max(0.12, budget / longest))
        fontsize = min(10.0, max(4.0, 0.6 * cell * 72))
        widest = max((len(t) for t in source), default=1)
        fits = widest * 0.6 * fontsize <= 0.9 * cell * 72
        return cls(cell=cell, fontsize=fontsize, rotation=0 if fits else 90)

    def label_inches(self, tokens: list) -> float:
        return max((len(t) for t in tokens), default=1) * 0.6 * self.fontsize / 72

    def panel_inches(self, source: list, target: list) -> tuple:
        """(width, height) of one heat-map with its tick labels."""
        x_labels = self.label_inches(source) if self.rotation else self.fontsize / 72
        width = len(source) * self.cell + self.label_inches(target) + 0.4
        height = len(target) * self.cell + x_labels + 0.5
        return width, height


def _new_figure(width: float, height: float):
    """A pyplot-free figure on an Agg canvas (headless, never registered)."""
    figure_cls, canvas_cls = _require_matplotlib("plotting")
    figure = figure_cls(
        figsize=(min(max(width, 3.0), 40.0), min(max(height, 2.5), 40.0)), layout="constrained"
    )
    canvas_cls(figure)
    return figure


def _draw_heatmap(ax, matrix: np.ndarray, source: list, target: list, sizing: _Sizing, style: dict):
    """Draws one `(Tq, Tv)` heat-map with token tick labels; returns the image.

    Non-finite weights (NaN, a sign of a broken model) are drawn as empty,
    hatched cells, outside the color scale.
    """
    import matplotlib  # noqa: PLC0415  (lazy, like every matplotlib import here)
    from matplotlib.patches import Rectangle  # noqa: PLC0415

    cmap = matplotlib.colormaps.get_cmap(style["cmap"]).with_extremes(bad="white")
    image = ax.imshow(
        np.ma.masked_invalid(matrix),
        cmap=cmap,
        vmin=style["vmin"],
        vmax=style["vmax"],
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_xticks(range(len(source)), source, fontsize=sizing.fontsize, rotation=sizing.rotation)
    ax.set_yticks(range(len(target)), target, fontsize=sizing.fontsize)
    ax.tick_params(length=0)
    ax.set_xlabel("source", fontsize=sizing.fontsize + 1)
    ax.set_ylabel("target", fontsize=sizing.fontsize + 1)
    for row, col in zip(*np.nonzero(~np.isfinite(matrix))):
        ax.add_patch(
            Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, hatch="xx", edgecolor="0.55", lw=0)
        )
    if style["annotate"]:
        _annotate(ax, image, matrix, sizing)
    return image


def _annotate(ax, image, matrix: np.ndarray, sizing: _Sizing) -> None:
    """Writes each weight in its cell, dark on bright cells and light on dark."""
    fontsize = max(3.0, min(sizing.fontsize, sizing.cell * 72 / 2.6))
    for (row, col), value in np.ndenumerate(matrix):
        if not np.isfinite(value):
            ax.text(col, row, "NaN", ha="center", va="center", fontsize=fontsize, color="0.3")
            continue
        red, green, blue, _ = image.cmap(image.norm(value))
        luminance = 0.299 * red + 0.587 * green + 0.114 * blue
        ax.text(
            col,
            row,
            f"{value:.2f}",
            ha="center",
            va="center",
            fontsize=fontsize,
            color="black" if luminance > 0.5 else "white",
        )


def _style(
    cmap: Any, vmin: float | None, vmax: float | None, annotate: bool, data: np.ndarray
) -> dict:
    """Drawing options with the color scale fixed over the finite weights of `data`."""
    finite = data[np.isfinite(data)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    return dict(
        cmap=cmap,
        annotate=annotate,
        vmin=low if vmin is None else vmin,
        vmax=high if vmax is None else vmax,
    )


def plot_attention(
    weights: Any,
    source_tokens: Sequence[Any],
    target_tokens: Sequence[Any],
    ax: Any = None,
    *,
    head: HeadSpec | None = None,
    index: int | None = None,
    source_length: int | None = None,
    target_length: int | None = None,
    source_mask: Any = None,
    target_mask: Any = None,
    annotate: bool = False,
    cmap: Any = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
    title: str | None = None,
):
    """Draws attention weights as a heat-map: source along x, target along y.

    Args:
        weights: array or backend tensor `(Tq, Tv)`; `(H, Tq, Tv)` with
            `head`; or a batch `(B, Tq, Tv)` / `(B, H, Tq, Tv)` with `index`.
        source_tokens: `Tv` labels for the x axis (or only the unpadded ones).
        target_tokens: `Tq` labels for the y axis (or only the unpadded ones).
        ax: matplotlib Axes to draw on; by default a new figure sized from the
            token counts (on an Agg canvas, outside pyplot).
        head: for multi-head weights, a head index, `"mean"` or `"max"`.
        index: the example to plot from batched weights.
        source_length: number of real source tokens; the rest is padding.
            An int, or `(B,)` lengths when `index` is given.
        target_length: same for the target tokens.
        source_mask: boolean `(Tv,)` (or `(B, Tv)`) mask, True on real tokens;
            an alternative to `source_length`.
        target_mask: same for the target tokens, `(Tq,)` or `(B, Tq)`.
        annotate: write each weight inside its cell.
        cmap: matplotlib colormap; brightness grows with weight in the default.
        vmin: lower end of the color scale (default: the smallest weight).
        vmax: upper end of the color scale (default: the largest weight).
            Non-finite weights (NaN) are left out of the scale and drawn as
            hatched empty cells (marked "NaN" with `annotate`).
        colorbar: add a colorbar next to the heat-map.
        title: optional Axes title.

    Returns:
        The matplotlib Axes; save with `ax.figure.savefig(path)`.

    Raises:
        ImportError: matplotlib is not installed.
        ValueError: bad shapes, or token counts that do not match the weights.

    Example:
        >>> import numpy as np
        >>> weights = np.array([[0.9, 0.1], [0.2, 0.8]])
        >>> ax = plot_attention(weights, ["le", "chat"], ["the", "cat"])
        >>> [t.get_text() for t in ax.get_xticklabels()]
        ['le', 'chat']
    """
    _require_matplotlib("plot_attention")
    padding = Padding(source_length, target_length, source_mask, target_mask)
    data = prepare(
        weights,
        source_tokens,
        target_tokens,
        index=index,
        head=head,
        keep_heads=False,
        padding=padding,
    )
    sizing = _Sizing.for_tokens(data.source_tokens, data.target_tokens)
    if ax is None:
        width, height = sizing.panel_inches(data.source_tokens, data.target_tokens)
        ax = _new_figure(width + (1.0 if colorbar else 0.0), height).add_subplot()
    style = _style(cmap, vmin, vmax, annotate, data.weights)
    image = _draw_heatmap(
        ax, data.weights[0], data.source_tokens, data.target_tokens, sizing, style
    )
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="weight")
    if title is not None:
        ax.set_title(title)
    return ax


def _grid(n_panels: int, ncols: int | None) -> tuple:
    ncols = ncols or math.ceil(math.sqrt(n_panels))
    ncols = max(1, min(ncols, n_panels))
    return math.ceil(n_panels / ncols), ncols


def _hide_inner_labels(axes: list, ncols: int) -> None:
    """Keeps y labels on the first column and x labels on each column's last panel."""
    for position, ax in enumerate(axes):
        if position % ncols != 0:
            ax.tick_params(labelleft=False)
            ax.set_ylabel("")
        if position + ncols < len(axes):
            ax.tick_params(labelbottom=False)
            ax.set_xlabel("")


def plot_heads(
    weights: Any,
    source_tokens: Sequence[Any],
    target_tokens: Sequence[Any],
    *,
    index: int | None = None,
    source_length: int | None = None,
    target_length: int | None = None,
    source_mask: Any = None,
    target_mask: Any = None,
    ncols: int | None = None,
    annotate: bool = False,
    cmap: Any = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    title: str | None = None,
):
    """Draws every head of multi-head weights on one figure, one color scale.

    Args:
        weights: `(H, Tq, Tv)`, or `(B, H, Tq, Tv)` with `index`.
        source_tokens: `Tv` labels for the x axes (or only the unpadded ones).
        target_tokens: `Tq` labels for the y axes (or only the unpadded ones).
        index: the example to plot from batched weights.
        source_length: number of real source tokens (int, or `(B,)`).
        target_length: number of real target tokens (int, or `(B,)`).
        source_mask: boolean `(Tv,)` or `(B, Tv)` mask, True on real tokens.
        target_mask: boolean `(Tq,)` or `(B, Tq)` mask, True on real tokens.
        ncols: panels per row (default: about the square root of `H`).
        annotate: write each weight inside its cell.
        cmap: matplotlib colormap.
        vmin: lower end of the shared color scale (default: smallest weight).
        vmax: upper end of the shared color scale (default: largest weight).
        title: optional figure title.

    Returns:
        The matplotlib Figure, with one Axes per head (`figure.axes[:H]`)
        followed by the shared colorbar.

    Raises:
        ImportError: matplotlib is not installed.
        ValueError: bad shapes, or token counts that do not match the weights.

    Example:
        >>> import numpy as np
        >>> weights = np.full((4, 2, 3), 1 / 3)  # (H, Tq, Tv)
        >>> figure = plot_heads(weights, ["a", "b", "c"], ["x", "y"])
        >>> len(figure.axes)  # four heads and a colorbar
        5
    """
    _require_matplotlib("plot_heads")
    padding = Padding(source_length, target_length, source_mask, target_mask)
    data = prepare(
        weights,
        source_tokens,
        target_tokens,
        index=index,
        head=None,
        keep_heads=True,
        padding=padding,
    )
    n_heads = data.weights.shape[0]
    nrows, ncols = _grid(n_heads, ncols)
    sizing = _Sizing.for_tokens(
        data.source_tokens, data.target_tokens, budget=max(3.0, 14.0 / ncols)
    )
    width, height = sizing.panel_inches(data.source_tokens, data.target_tokens)
    figure = _new_figure(width * ncols + 1.0, height * nrows + 0.4)
    style = _style(cmap, vmin, vmax, annotate, data.weights)
    axes = [figure.add_subplot(nrows, ncols, h + 1) for h in range(n_heads)]
    for h, ax in enumerate(axes):
        image = _draw_heatmap(
            ax, data.weights[h], data.source_tokens, data.target_tokens, sizing, style
        )
        ax.set_title(f"head {h}", fontsize=sizing.fontsize + 1)
    _hide_inner_labels(axes, ncols)
    figure.colorbar(image, ax=axes, label="weight")
    if title is not None:
        figure.suptitle(title)
    return figure
