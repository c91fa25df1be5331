"""Heat-maps and an interactive HTML page for attention weights.

Static plots need matplotlib (the `plot` extra), imported lazily inside the
functions; the HTML page and `reduce_heads` need only NumPy. Figures are built
from `matplotlib.figure.Figure` with an Agg canvas, never through pyplot: they
work headless, never call `show()` and leave no open pyplot figures. Save them
with `ax.figure.savefig("attention.png")` (or `.svg`, `.pdf`).

Weights may be NumPy arrays or tensors of any Keras backend. Shape letters:
`B` batch, `H` heads, `Tq` target (query) tokens, `Tv` source (value) tokens.
Accepted shapes are `(Tq, Tv)`, `(H, Tq, Tv)` and, with `index=` picking one
example, `(B, Tq, Tv)` or `(B, H, Tq, Tv)`.
"""

from __future__ import annotations

import html
import json
import math
import numbers
import pathlib
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import keras
import numpy as np

HeadSpec = Union[int, str]
_REDUCTIONS = ("mean", "max")
_INSTALL_HINT = 'pip install "keras-attention[plot]"'

__all__ = ["plot_attention", "plot_heads", "reduce_heads", "save_attention_html"]


# ----------------------------------------------------------------------------
# Head reduction
# ----------------------------------------------------------------------------
def reduce_heads(weights: Any, head: HeadSpec = "mean") -> np.ndarray:
    """Reduces multi-head weights `(..., H, Tq, Tv)` to one alignment matrix.

    Args:
        weights: array or backend tensor with the head axis third from last,
            e.g. `(H, Tq, Tv)` or `(B, H, Tq, Tv)`.
        head: a head index (negative counts from the end), `"mean"` (the
            average over heads) or `"max"` (the elementwise maximum).

    Returns:
        A float32 NumPy array `(..., Tq, Tv)`.

    Example:
        >>> import numpy as np
        >>> w = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])  # (H=2, Tq=1, Tv=2)
        >>> reduce_heads(w, "mean").tolist()
        [[0.5, 0.5]]
        >>> reduce_heads(w, 1).tolist()
        [[0.0, 1.0]]
    """
    weights = _to_numpy(weights)
    if weights.ndim < 3:
        raise ValueError(
            "reduce_heads expects weights with a head axis, (..., H, Tq, Tv); "
            f"received shape {weights.shape}."
        )
    if isinstance(head, str):
        if head not in _REDUCTIONS:
            raise ValueError(
                f'Expected head to be an index, "mean" or "max"; received {head!r}.'
            )
        return weights.mean(axis=-3) if head == "mean" else weights.max(axis=-3)
    position = _check_index(head, weights.shape[-3], "head", "H")
    return weights[..., position, :, :]


# ----------------------------------------------------------------------------
# Input preparation (shared by every entry point)
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Padding:
    """Where the real tokens are: lengths or boolean masks, per side (or None)."""

    source_length: Any = None
    target_length: Any = None
    source_mask: Any = None
    target_mask: Any = None


@dataclass(frozen=True)
class _Alignment:
    """Weights `(H, Tq, Tv)` of one example, padding removed, with its tokens."""

    weights: np.ndarray  # (H, Tq, Tv)
    source_tokens: list
    target_tokens: list


def _to_numpy(x: Any, dtype: str = "float32") -> np.ndarray:
    if not isinstance(x, np.ndarray):
        x = keras.ops.convert_to_numpy(x)
    return np.asarray(x).astype(dtype)


def _check_index(index: Any, size: int, name: str, letter: str) -> int:
    if isinstance(index, bool) or not isinstance(index, numbers.Integral):
        raise ValueError(f"Expected {name} to be an integer; received {index!r}.")
    if not -size <= index < size:
        raise ValueError(f"{name}={index} is out of range for {letter}={size}.")
    return int(index) % size


def _split_axes(w: np.ndarray, index: Optional[int], head: Optional[HeadSpec],
                keep_heads: bool) -> np.ndarray:
    """Selects the example and heads; returns `(H, Tq, Tv)` (H=1 unless kept)."""
    shape = w.shape
    if w.ndim not in (2, 3, 4):
        raise ValueError(
            "Expected weights of shape (Tq, Tv), (H, Tq, Tv), (B, Tq, Tv) or "
            f"(B, H, Tq, Tv); received shape {shape}."
        )
    if index is None and w.ndim == 4:
        raise ValueError(f"weights of shape (B, H, Tq, Tv)={shape} need index=.")
    if index is not None:
        if w.ndim == 2:
            raise ValueError(f"index= given but weights {shape} have no batch axis.")
        w = w[_check_index(index, shape[0], "index", "B")]
    if w.ndim == 2:
        if head is not None or keep_heads:
            raise ValueError(
                f"weights of shape {shape} have no head axis; expected (H, Tq, Tv) "
                "or (B, H, Tq, Tv) with index=."
            )
        return w[None]  # (1, Tq, Tv)
    if keep_heads:
        return w  # (H, Tq, Tv)
    if head is None:
        raise ValueError(
            f"3-D weights {shape} are ambiguous: pass head= (an index, 'mean' or "
            "'max') for (H, Tq, Tv), or index= for (B, Tq, Tv)."
        )
    return reduce_heads(w, head)[None]  # (1, Tq, Tv)


def _keep_positions(size: int, length: Any, mask: Any, index: Optional[int],
                    name: str, letter: str) -> np.ndarray:
    """Indices of the real (non-padding) positions along an axis of `size`."""
    if length is not None and mask is not None:
        raise ValueError(f"Pass {name}_length or {name}_mask, not both.")
    if length is not None:
        length = _to_numpy(length, dtype="int64")
        if length.ndim == 1 and index is not None:
            length = length[index]
        if length.ndim != 0:
            raise ValueError(f"Expected {name}_length to be an int, or (B,) lengths "
                             f"with index=; received shape {length.shape}.")
        length = int(length)
        if not 0 <= length <= size:
            raise ValueError(
                f"{name}_length={length} but weights have {letter}={size}.")
        return np.arange(length)
    if mask is None:
        return np.arange(size)
    mask = _to_numpy(mask, dtype="bool")
    if mask.ndim == 2 and index is not None:
        mask = mask[index]
    if mask.shape != (size,):
        raise ValueError(
            f"{name}_mask has shape {mask.shape} but weights have {letter}={size}.")
    return np.flatnonzero(mask)


def _match_tokens(tokens: Sequence[Any], keep: np.ndarray, size: int,
                  name: str, letter: str) -> list:
    """Labels for the kept positions: `tokens` may be padded or already trimmed."""
    if isinstance(tokens, str):
        raise ValueError(f"{name}_tokens must be a sequence of tokens, not a string.")
    tokens = [_token_text(t) for t in tokens]
    if len(tokens) == size:
        return [tokens[i] for i in keep]
    if len(tokens) == len(keep):
        return tokens
    trimmed = f" ({len(keep)} after trimming padding)" if len(keep) != size else ""
    raise ValueError(
        f"{name}_tokens has {len(tokens)} tokens but weights have "
        f"{letter}={size}{trimmed}."
    )


def _token_text(token: Any) -> str:
    if isinstance(token, bytes):
        return token.decode("utf-8", errors="replace")
    if isinstance(token, np.ndarray) and token.ndim == 0:
        return _token_text(token.item())
    return str(token)


def _prepare(weights: Any, source_tokens: Sequence[Any], target_tokens: Sequence[Any],
             *, index: Optional[int], head: Optional[HeadSpec], keep_heads: bool,
             padding: _Padding) -> _Alignment:
    """Validates and trims the inputs of every public entry point."""
    w = _split_axes(_to_numpy(weights), index, head, keep_heads)  # (H, Tq, Tv)
    _, tq, tv = w.shape
    rows = _keep_positions(tq, padding.target_length, padding.target_mask,
                           index, "target", "Tq")
    cols = _keep_positions(tv, padding.source_length, padding.source_mask,
                           index, "source", "Tv")
    if not (len(rows) and len(cols)):
        raise ValueError(f"No tokens left after trimming padding: {len(rows)} "
                         f"target and {len(cols)} source tokens.")
    return _Alignment(
        weights=w[:, rows][:, :, cols],  # (H, Tq', Tv')
        source_tokens=_match_tokens(source_tokens, cols, tv, "source", "Tv"),
        target_tokens=_match_tokens(target_tokens, rows, tq, "target", "Tq"),
    )




# ----------------------------------------------------------------------------
# Matplotlib drawing
# ----------------------------------------------------------------------------
def _require_matplotlib(caller: str):
    """Imports matplotlib lazily; returns `(Figure, FigureCanvasAgg)`."""
    try:
        import matplotlib  # noqa: F401  (imported first: fails if it is blocked)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
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
    figure = figure_cls(figsize=(min(max(width, 3.0), 40.0),
                                 min(max(height, 2.5), 40.0)),
                        layout="constrained")
    canvas_cls(figure)
    return figure


def _draw_heatmap(ax, matrix: np.ndarray, source: list, target: list,
                  sizing: _Sizing, style: dict):
    """Draws one `(Tq, Tv)` heat-map with token tick labels; returns the image."""
    image = ax.imshow(matrix, cmap=style["cmap"], vmin=style["vmin"],
                      vmax=style["vmax"], aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(source)), source, fontsize=sizing.fontsize,
                  rotation=sizing.rotation)
    ax.set_yticks(range(len(target)), target, fontsize=sizing.fontsize)
    ax.tick_params(length=0)
    ax.set_xlabel("source", fontsize=sizing.fontsize + 1)
    ax.set_ylabel("target", fontsize=sizing.fontsize + 1)
    if style["annotate"]:
        _annotate(ax, image, matrix, sizing)
    return image


def _annotate(ax, image, matrix: np.ndarray, sizing: _Sizing) -> None:
    """Writes each weight in its cell, dark on bright cells and light on dark."""
    fontsize = max(3.0, min(sizing.fontsize, sizing.cell * 72 / 2.6))
    for (row, col), value in np.ndenumerate(matrix):
        red, green, blue, _ = image.cmap(image.norm(value))
        luminance = 0.299 * red + 0.587 * green + 0.114 * blue
        ax.text(col, row, f"{value:.2f}", ha="center", va="center",
                fontsize=fontsize, color="black" if luminance > 0.5 else "white")


def _style(cmap: Any, vmin: Optional[float], vmax: Optional[float],
           annotate: bool, data: np.ndarray) -> dict:
    """Drawing options with the color scale fixed over all of `data`."""
    return dict(cmap=cmap, annotate=annotate,
                vmin=float(data.min()) if vmin is None else vmin,
                vmax=float(data.max()) if vmax is None else vmax)


def plot_attention(
    weights: Any,
    source_tokens: Sequence[Any],
    target_tokens: Sequence[Any],
    ax: Any = None,
    *,
    head: Optional[HeadSpec] = None,
    index: Optional[int] = None,
    source_length: Optional[int] = None,
    target_length: Optional[int] = None,
    source_mask: Any = None,
    target_mask: Any = None,
    annotate: bool = False,
    cmap: Any = "viridis",
    vmin: Optional[float] = None,
    vmax: Optional[float] = None,
    colorbar: bool = True,
    title: Optional[str] = None,
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
    padding = _Padding(source_length, target_length, source_mask, target_mask)
    data = _prepare(weights, source_tokens, target_tokens, index=index, head=head,
                    keep_heads=False, padding=padding)
    sizing = _Sizing.for_tokens(data.source_tokens, data.target_tokens)
    if ax is None:
        width, height = sizing.panel_inches(data.source_tokens, data.target_tokens)
        ax = _new_figure(width + (1.0 if colorbar else 0.0), height).add_subplot()
    style = _style(cmap, vmin, vmax, annotate, data.weights)
    image = _draw_heatmap(ax, data.weights[0], data.source_tokens,
                          data.target_tokens, sizing, style)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="weight")
    if title is not None:
        ax.set_title(title)
    return ax


def _grid(n_panels: int, ncols: Optional[int]) -> tuple:
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
    index: Optional[int] = None,
    source_length: Optional[int] = None,
    target_length: Optional[int] = None,
    source_mask: Any = None,
    target_mask: Any = None,
    ncols: Optional[int] = None,
    annotate: bool = False,
    cmap: Any = "viridis",
    vmin: Optional[float] = None,
    vmax: Optional[float] = None,
    title: Optional[str] = None,
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
    padding = _Padding(source_length, target_length, source_mask, target_mask)
    data = _prepare(weights, source_tokens, target_tokens, index=index, head=None,
                    keep_heads=True, padding=padding)
    n_heads = data.weights.shape[0]
    nrows, ncols = _grid(n_heads, ncols)
    sizing = _Sizing.for_tokens(data.source_tokens, data.target_tokens,
                                budget=max(3.0, 14.0 / ncols))
    width, height = sizing.panel_inches(data.source_tokens, data.target_tokens)
    figure = _new_figure(width * ncols + 1.0, height * nrows + 0.4)
    style = _style(cmap, vmin, vmax, annotate, data.weights)
    axes = [figure.add_subplot(nrows, ncols, h + 1) for h in range(n_heads)]
    for h, ax in enumerate(axes):
        image = _draw_heatmap(ax, data.weights[h], data.source_tokens,
                              data.target_tokens, sizing, style)
        ax.set_title(f"head {h}", fontsize=sizing.fontsize + 1)
    _hide_inner_labels(axes, ncols)
    figure.colorbar(image, ax=axes, label="weight")
    if title is not None:
        figure.suptitle(title)
    return figure


# ----------------------------------------------------------------------------
# Interactive HTML page
# ----------------------------------------------------------------------------
_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; }
h2 { font-size: 1.05em; margin-top: 1.5em; }
.ka-hint { color: #666; font-size: 0.9em; }
.ka-line { display: flex; flex-wrap: wrap; gap: 4px; align-items: baseline;
           margin: 0.6em 0; }
.ka-line-label { width: 5em; font-weight: 600; }
.ka-token { padding: 2px 5px; border-radius: 3px; border: 1px solid #ddd;
            white-space: pre; }
.ka-target { cursor: pointer; }
.ka-target:hover, .ka-target:focus { border-color: #333; outline: none; }
.ka-target.ka-active { border-color: #c00; box-shadow: 0 0 0 1px #c00; }
.ka-matrix-wrap { overflow: auto; max-width: 100%; max-height: 80vh; }
#ka-matrix { border-collapse: collapse; font-size: 11px; }
#ka-matrix th { font-weight: normal; padding: 2px 4px; white-space: pre; }
#ka-matrix thead th { writing-mode: vertical-rl; transform: rotate(180deg);
                      text-align: left; }
#ka-matrix tbody th { text-align: right; }
#ka-matrix tr.ka-active th { color: #c00; font-weight: 600; }
.ka-cell { width: 18px; height: 18px; min-width: 18px; border: 1px solid #eee; }
"""

# Shading: alpha = weight / largest weight of the selected matrix, in blue.
_JS = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ka-data").textContent);
  var select = document.getElementById("ka-head");
  var targets = document.querySelectorAll(".ka-target");
  var sources = document.querySelectorAll(".ka-source");
  var cells = document.querySelectorAll(".ka-cell");
  var pinned = null;

  function matrix() { return data.heads[select ? select.selectedIndex : 0].weights; }
  function scale(m) {
    var top = 0;
    m.forEach(function (r) { r.forEach(function (w) { top = Math.max(top, w); }); });
    return top > 0 ? top : 1;
  }
  function shade(el, w, top) {
    var a = Math.max(0, Math.min(1, w / top));
    el.style.backgroundColor = "rgba(31, 119, 180, " + a.toFixed(4) + ")";
    el.style.color = a > 0.6 ? "#fff" : "";
    el.setAttribute("data-weight", String(w));
  }
  function highlight(row) {
    var m = matrix(), top = scale(m);
    sources.forEach(function (el, col) {
      if (row === null) {
        el.style.backgroundColor = ""; el.style.color = "";
        el.setAttribute("data-weight", "");
      } else { shade(el, m[row][col], top); }
    });
    targets.forEach(function (el, i) { el.classList.toggle("ka-active", i === row); });
    document.querySelectorAll("#ka-matrix tbody tr").forEach(function (tr, i) {
      tr.classList.toggle("ka-active", i === row);
    });
    document.body.setAttribute("data-active-row", row === null ? "" : String(row));
  }
  function drawMatrix() {
    var m = matrix(), top = scale(m);
    cells.forEach(function (el) {
      shade(el, m[+el.dataset.row][+el.dataset.col], top);
    });
  }
  targets.forEach(function (el) {
    var row = +el.dataset.row;
    el.addEventListener("mouseenter", function () { highlight(row); });
    el.addEventListener("focus", function () { highlight(row); });
    el.addEventListener("mouseleave", function () { highlight(pinned); });
    el.addEventListener("blur", function () { highlight(pinned); });
    el.addEventListener("click", function () {
      pinned = pinned === row ? null : row; highlight(pinned);
    });
  });
  if (select) {
    select.addEventListener("change", function () {
      drawMatrix();
      highlight(pinned);
    });
  }
  drawMatrix();
  highlight(null);
})();
"""


def _head_options(weights: np.ndarray) -> list:
    """The page's head choices: each head, then their mean and max if H > 1."""
    options = [(f"head {h}", weights[h]) for h in range(weights.shape[0])]
    if weights.shape[0] > 1:
        options += [(name, reduce_heads(weights, name)) for name in _REDUCTIONS]
    return options


def _json_for_script(value: Any) -> str:
    """JSON that cannot close its <script> element."""
    text = json.dumps(value)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _token_spans(tokens: list, kind: str, axis: str) -> str:
    return "".join(
        f'<span class="ka-token ka-{kind}" id="ka-{kind}-{i}" data-{axis}="{i}"'
        + (' tabindex="0"' if kind == "target" else ' data-weight=""')
        + f">{html.escape(token)}</span>"
        for i, token in enumerate(tokens)
    )


def _head_select(options: list) -> str:
    if len(options) == 1:
        return ""
    items = "".join(f'<option value="{i}">{html.escape(name)}</option>'
                    for i, (name, _) in enumerate(options))
    return (f'<p><label for="ka-head">Head </label>'
            f'<select id="ka-head">{items}</select></p>')


def _matrix_table(source: list, target: list) -> str:
    """The full-matrix table; the script shades cells and fills data-weight."""
    head = "".join(f'<th class="ka-col-head" data-col="{j}">{html.escape(t)}</th>'
                   for j, t in enumerate(source))
    rows = []
    for i, token in enumerate(target):
        cells = "".join(
            f'<td class="ka-cell" id="ka-cell-{i}-{j}" data-row="{i}" '
            f'data-col="{j}" title="{html.escape(token)} &#8594; '
            f'{html.escape(s)}"></td>' for j, s in enumerate(source))
        rows.append(f'<tr data-row="{i}"><th class="ka-row-head">'
                    f"{html.escape(token)}</th>{cells}</tr>")
    return (f'<div class="ka-matrix-wrap"><table id="ka-matrix"><thead><tr><th></th>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _page(data: _Alignment, title: str) -> str:
    options = _head_options(data.weights)
    heads = [{"name": name, "weights": np.round(m.astype("float64"), 6).tolist()}
             for name, m in options]
    payload = {"source": data.source_tokens, "target": data.target_tokens,
               "heads": heads}
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title)}</title><style>{_CSS}</style></head>
<body data-active-row="">
<h1>{html.escape(title)}</h1>
{_head_select(options)}
<p class="ka-hint">Hover a target token to see the source tokens it attends to;
click to pin it.</p>
<div class="ka-line" id="ka-targets"><span class="ka-line-label">Target</span>
{_token_spans(data.target_tokens, "target", "row")}</div>
<div class="ka-line" id="ka-sources"><span class="ka-line-label">Source</span>
{_token_spans(data.source_tokens, "source", "col")}</div>
<h2>Attention matrix (rows: target, columns: source)</h2>
{_matrix_table(data.source_tokens, data.target_tokens)}
<script type="application/json" id="ka-data">{_json_for_script(payload)}</script>
<script>{_JS}</script>
</body></html>
"""


def save_attention_html(
    weights: Any,
    source_tokens: Sequence[Any],
    target_tokens: Sequence[Any],
    path: Union[str, pathlib.Path],
    *,
    index: Optional[int] = None,
    source_length: Optional[int] = None,
    target_length: Optional[int] = None,
    source_mask: Any = None,
    target_mask: Any = None,
    title: str = "Attention weights",
) -> pathlib.Path:
    """Writes a self-contained interactive HTML page of attention weights.

    Hovering (or focusing) a target token shades the source tokens by the
    weight it gives them; clicking pins the selection. Multi-head weights get a
    head selector (`<select id="ka-head">`: each head, then "mean" and "max").
    Below is the full matrix as a table whose cells are shaded by weight. The
    file has inline CSS and JavaScript only: no network access is needed.

    Stable hooks for tests and tooling: target tokens are
    `span.ka-target#ka-target-{i}[data-row]`, source tokens are
    `span.ka-source#ka-source-{j}[data-col][data-weight]` (data-weight is
    empty when no target is selected), matrix cells are
    `td.ka-cell#ka-cell-{i}-{j}[data-row][data-col][data-weight]`.

    Args:
        weights: `(Tq, Tv)`, `(H, Tq, Tv)`, or `(B, Tq, Tv)` / `(B, H, Tq, Tv)`
            with `index`; NumPy or any backend tensor.
        source_tokens: `Tv` source tokens (or only the unpadded ones).
        target_tokens: `Tq` target tokens (or only the unpadded ones).
        path: the `.html` file to write.
        index: the example to show from batched weights.
        source_length: number of real source tokens (int, or `(B,)`).
        target_length: number of real target tokens (int, or `(B,)`).
        source_mask: boolean `(Tv,)` or `(B, Tv)` mask, True on real tokens.
        target_mask: boolean `(Tq,)` or `(B, Tq)` mask, True on real tokens.
        title: page title and heading.

    Returns:
        The path written.

    Raises:
        ValueError: bad shapes, or token counts that do not match the weights.

    Example:
        >>> import numpy as np, tempfile, os
        >>> weights = np.array([[0.9, 0.1], [0.2, 0.8]])
        >>> path = os.path.join(tempfile.mkdtemp(), "attention.html")
        >>> save_attention_html(weights, ["le", "chat"], ["the", "cat"], path).name
        'attention.html'
    """
    weights = _to_numpy(weights)
    has_heads = weights.ndim == (4 if index is not None else 3)
    padding = _Padding(source_length, target_length, source_mask, target_mask)
    data = _prepare(weights, source_tokens, target_tokens, index=index, head=None,
                    keep_heads=has_heads, padding=padding)
    path = pathlib.Path(path)
    path.write_text(_page(data, title), encoding="utf-8")
    return path
