"""The word-by-word overlay of "Show, Attend and Tell": `plot_image_attention`.

matplotlib (the `plot` extra) is imported inside the function, never when this
module loads; the figure lives on an Agg canvas, outside pyplot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from keras_attention.plotting._inputs import HeadSpec
from keras_attention.plotting._inputs import prepare_image
from keras_attention.plotting.figures import _new_figure
from keras_attention.plotting.figures import _require_matplotlib
from keras_attention.plotting.figures import _style

INTERPOLATIONS = ("bilinear", "nearest", "bicubic")


def plot_image_attention(
    image: Any,
    weights: Any,
    tokens: Sequence[Any],
    *,
    index: int | None = None,
    head: HeadSpec | None = None,
    target_length: int | None = None,
    target_mask: Any = None,
    alpha: float = 0.6,
    cmap: Any = "gray",
    vmin: float | None = None,
    vmax: float | None = None,
    interpolation: str = "bilinear",
    ncols: int | None = None,
    colorbar: bool = False,
    title: str | None = None,
):
    """Draws each output token's attention over the image it looked at.

    One panel per token, as in Xu et al.'s figures: the image, and over it
    the token's weights `(H', W')` stretched to the image's `(H, W)` (each
    grid cell covers `H / H'` by `W / W'` pixels; `interpolation` smooths
    them), in `cmap` with opacity `alpha`. With the default gray map the
    picture stays bright where the token attends and darkens elsewhere. One
    color scale serves every panel. As in `plot_attention`, non-finite
    weights (NaN) are left out of the scale and their cells are hatched; a
    fully masked grid (all zeros) is drawn as zero weight everywhere.

    Args:
        image: `(H, W)` or `(H, W, C)` (C in 1, 3, 4), NumPy or a backend
            tensor; integers are read as 0..255, floats outside [0, 1] are
            rescaled to it.
        weights: `(Tq, H', W')` (a layer's weights over a `(B, H', W', C)`
            feature grid, for one example); `(heads, Tq, H', W')` with `head`;
            or a batch `(B, Tq, H', W')` / `(B, heads, Tq, H', W')` with
            `index`.
        tokens: the `Tq` output tokens (or only the unpadded ones), one
            panel title each.
        index: the example to draw from batched weights.
        head: for multi-head weights, a head index, `"mean"` or `"max"`.
        target_length: number of real tokens (an int, or `(B,)` lengths with
            `index`); the rest is padding and gets no panel.
        target_mask: boolean `(Tq,)` (or `(B, Tq)`) mask, True on real tokens.
        alpha: opacity of the weights over the image, in [0, 1].
        cmap: matplotlib colormap of the weights.
        vmin: lower end of the color scale (default: the smallest weight).
        vmax: upper end of the color scale (default: the largest weight).
        interpolation: `"bilinear"` (default, smooth), `"nearest"` (one
            block per grid cell) or `"bicubic"`.
        ncols: panels per row (default: up to 5).
        colorbar: add one colorbar for every panel.
        title: optional figure title.

    Returns:
        The matplotlib Figure, one Axes per token (`figure.axes[:Tq]`, each
        with the image and the weights as its two images), then the colorbar
        if any. Save it with `figure.savefig(path)`.

    Raises:
        ImportError: matplotlib is not installed.
        ValueError: bad shapes, or a token count that does not match the weights.

    Example:
        >>> import numpy as np
        >>> image = np.zeros((32, 32, 3))
        >>> weights = np.full((2, 4, 4), 1 / 16)  # (Tq, H', W')
        >>> figure = plot_image_attention(image, weights, ["a", "cat"])
        >>> [ax.get_title() for ax in figure.axes]
        ['a', 'cat']
    """
    _require_matplotlib("plot_image_attention")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError(f"Expected alpha to be a number in [0, 1]; received {alpha!r}.")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(
            f"Expected interpolation to be one of {INTERPOLATIONS}; received {interpolation!r}."
        )
    data = prepare_image(
        image,
        weights,
        tokens,
        index=index,
        head=head,
        keep_heads=False,
        target_length=target_length,
        target_mask=target_mask,
    )
    weights = data.weights[0]  # (Tq, H', W')
    height, width = data.image.shape[:2]
    count = len(data.tokens)
    ncols = max(1, min(ncols or 5, count))
    nrows = math.ceil(count / ncols)
    panel = 2.4  # inches per panel's width
    figure = _new_figure(
        panel * ncols + (0.8 if colorbar else 0.0), panel * height / width * nrows + 0.5
    )
    style = _style(cmap, vmin, vmax, False, weights)
    extent = (-0.5, width - 0.5, height - 0.5, -0.5)  # the grid spans the whole image
    axes = [figure.add_subplot(nrows, ncols, i + 1) for i in range(count)]
    for ax, token, grid in zip(axes, data.tokens, weights):
        ax.imshow(data.image, cmap="gray" if data.image.ndim == 2 else None, vmin=0, vmax=1)
        overlay = _draw_overlay(ax, grid, extent, style, alpha, interpolation)
        ax.set_title(token, fontsize=10)
        ax.set_axis_off()
    if colorbar:
        figure.colorbar(overlay, ax=axes, label="weight")
    if title is not None:
        figure.suptitle(title)
    return figure


def _draw_overlay(ax, grid: np.ndarray, extent: tuple, style: dict, alpha: float, interpolation):
    """Draws one token's `(H', W')` weights over the image; NaN cells hatched."""
    import matplotlib  # noqa: PLC0415  (lazy, like every matplotlib import here)
    from matplotlib.patches import Rectangle  # noqa: PLC0415

    cmap = matplotlib.colormaps.get_cmap(style["cmap"]).with_extremes(bad=(0, 0, 0, 0))
    overlay = ax.imshow(
        np.ma.masked_invalid(grid),
        cmap=cmap,
        vmin=style["vmin"],
        vmax=style["vmax"],
        alpha=alpha,
        extent=extent,
        interpolation=interpolation,
    )
    left, right, bottom, top = extent
    cell_h, cell_w = (bottom - top) / grid.shape[0], (right - left) / grid.shape[1]
    for row, col in zip(*np.nonzero(~np.isfinite(grid))):
        corner = (left + col * cell_w, top + row * cell_h)
        ax.add_patch(
            Rectangle(corner, cell_w, cell_h, fill=False, hatch="xx", edgecolor="0.55", lw=0)
        )
    return overlay
