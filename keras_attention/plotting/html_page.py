"""The self-contained interactive HTML pages: `save_attention_html`, `save_image_attention_html`.

The page is `assets/page.html` with `assets/attention.css` and
`assets/attention.js` inlined and the weights as a JSON payload, so it opens
offline; the image page is `assets/image_page.html` with `image_attention.css`
and `image_attention.js`, and the image inlined as a PNG `data:` URL. Needs only
NumPy (and the standard library's zlib): no matplotlib.
"""

from __future__ import annotations

import base64
import functools
import html
import importlib.resources
import json
import pathlib
import string
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from keras_attention.plotting._inputs import REDUCTIONS
from keras_attention.plotting._inputs import Alignment
from keras_attention.plotting._inputs import Padding
from keras_attention.plotting._inputs import prepare
from keras_attention.plotting._inputs import prepare_image
from keras_attention.plotting._inputs import reduce_heads
from keras_attention.plotting._inputs import to_numpy


@functools.cache
def _asset(name: str) -> str:
    """The text of a file shipped in `keras_attention/plotting/assets/`."""
    files = importlib.resources.files("keras_attention.plotting") / "assets"
    return (files / name).read_text(encoding="utf-8")


def _head_options(weights: np.ndarray) -> list:
    """The page's head choices: each head, then their mean and max if H > 1."""
    options = [(f"head {h}", weights[h]) for h in range(weights.shape[0])]
    if weights.shape[0] > 1:
        options += [(name, reduce_heads(weights, name)) for name in REDUCTIONS]
    return options


def _finite_or_null(matrix: np.ndarray) -> list:
    """Rows of weights rounded to 6 digits, with None (JSON null) for non-finite ones."""
    rounded = np.round(matrix.astype("float64"), 6)
    return [[float(w) if np.isfinite(w) else None for w in row] for row in rounded]


def _json_for_script(value: Any) -> str:
    """Strict JSON (no NaN or Infinity) that cannot close its <script> element."""
    text = json.dumps(value, allow_nan=False)
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
    items = "".join(
        f'<option value="{i}">{html.escape(name)}</option>' for i, (name, _) in enumerate(options)
    )
    return f'<p><label for="ka-head">Head </label><select id="ka-head">{items}</select></p>'


def _matrix_table(source: list, target: list) -> str:
    """The full-matrix table; the script shades cells and fills data-weight."""
    head = "".join(
        f'<th class="ka-col-head" data-col="{j}">{html.escape(t)}</th>'
        for j, t in enumerate(source)
    )
    rows = []
    for i, token in enumerate(target):
        cells = "".join(
            f'<td class="ka-cell" id="ka-cell-{i}-{j}" data-row="{i}" '
            f'data-col="{j}" title="{html.escape(token)} &#8594; '
            f'{html.escape(s)}"></td>'
            for j, s in enumerate(source)
        )
        rows.append(
            f'<tr data-row="{i}"><th class="ka-row-head">{html.escape(token)}</th>{cells}</tr>'
        )
    return (
        f'<div class="ka-matrix-wrap"><table id="ka-matrix"><thead><tr><th></th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _page(data: Alignment, title: str) -> str:
    options = _head_options(data.weights)
    # Non-finite weights (NaN) become JSON null, drawn as marked empty cells:
    # `json.dumps` would write `NaN`, which `JSON.parse` rejects.
    heads = [{"name": name, "weights": _finite_or_null(m)} for name, m in options]
    payload = {"source": data.source_tokens, "target": data.target_tokens, "heads": heads}
    return string.Template(_asset("page.html")).substitute(
        title=html.escape(title),
        css=_asset("attention.css"),
        js=_asset("attention.js"),
        head_select=_head_select(options),
        target_tokens=_token_spans(data.target_tokens, "target", "row"),
        source_tokens=_token_spans(data.source_tokens, "source", "col"),
        matrix=_matrix_table(data.source_tokens, data.target_tokens),
        payload=_json_for_script(payload),
    )


def save_attention_html(
    weights: Any,
    source_tokens: Sequence[Any],
    target_tokens: Sequence[Any],
    path: str | pathlib.Path,
    *,
    index: int | None = None,
    source_length: int | None = None,
    target_length: int | None = None,
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
    weights = to_numpy(weights)
    has_heads = weights.ndim == (4 if index is not None else 3)
    padding = Padding(source_length, target_length, source_mask, target_mask)
    data = prepare(
        weights,
        source_tokens,
        target_tokens,
        index=index,
        head=None,
        keep_heads=has_heads,
        padding=padding,
    )
    path = pathlib.Path(path)
    path.write_text(_page(data, title), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------
# Attention over an image
# ----------------------------------------------------------------------------
VIEW_PIXELS, PANEL_PIXELS, HATCH_CELL = 320, 128, 16  # longest sides; pixels per hatched cell


def _png_data_url(image: np.ndarray) -> str:
    """A `data:` URL of an `(H, W[, C])` image in [0, 1], as an 8-bit PNG (zlib only)."""
    pixels = np.round(np.clip(image, 0.0, 1.0) * 255).astype("uint8")
    color_type = 0 if pixels.ndim == 2 else {3: 2, 4: 6}[pixels.shape[-1]]  # gray, RGB, RGBA
    height, width = pixels.shape[:2]
    raw = b"".join(b"\x00" + row.tobytes() for row in pixels.reshape(height, -1))

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _fit(height: int, width: int, longest: int) -> tuple:
    """`(width, height)` in CSS pixels with the longest side `longest`."""
    factor = longest / max(height, width)
    return max(1, round(width * factor)), max(1, round(height * factor))


def _image_panels(tokens: list, height: int, width: int, grid: tuple) -> str:
    """One figure per token: the image (its `src` set by the script), overlay, hatch."""
    panel_width, panel_height = _fit(height, width, PANEL_PIXELS)
    rows, cols = grid
    return "".join(
        f'<figure class="ka-panel" id="ka-panel-{i}" data-row="{i}">'
        f'<div class="ka-panel-view" style="width: {panel_width}px; height: {panel_height}px">'
        '<img class="ka-image" alt="">'
        f'<canvas class="ka-overlay" id="ka-overlay-{i}" width="{cols}" height="{rows}"></canvas>'
        f'<canvas class="ka-hatch" width="{cols * HATCH_CELL}" height="{rows * HATCH_CELL}">'
        f"</canvas></div><figcaption>{html.escape(token)}</figcaption></figure>"
        for i, token in enumerate(tokens)
    )


def save_image_attention_html(
    image: Any,
    weights: Any,
    tokens: Sequence[Any],
    path: str | pathlib.Path,
    *,
    index: int | None = None,
    target_length: int | None = None,
    target_mask: Any = None,
    alpha: float = 0.6,
    title: str = "Attention over the image",
) -> pathlib.Path:
    """Writes a self-contained HTML page of each token's attention over an image.

    The overlay of `plot_image_attention`: every token gets a panel, its
    `(H', W')` weights stretched (and smoothed by the browser) over the image,
    gray (bright where it attends) with opacity `alpha`; hovering or focusing
    a token shows it large, clicking pins it. Multi-head weights get a head
    selector (each head, then "mean" and "max"). NaN cells are left clear and
    hatched; a fully masked grid draws as zeros. The image is inlined as a
    PNG, so no network access is needed.

    Stable hooks: tokens are `span.ka-target#ka-target-{i}[data-row]`, panels
    `figure.ka-panel#ka-panel-{i}` with the canvas `#ka-overlay-{i}` (one
    pixel per grid cell, its `data-top` the weight drawn white), the large
    view `#ka-overlay`.

    Args:
        image: `(H, W)` or `(H, W, C)`, as in `plot_image_attention`.
        weights: `(Tq, H', W')`, `(heads, Tq, H', W')`, or `(B, Tq, H', W')` /
            `(B, heads, Tq, H', W')` with `index`; NumPy or any backend tensor.
        tokens: the `Tq` output tokens (or only the unpadded ones).
        path: the `.html` file to write.
        index: the example to show from batched weights.
        target_length: number of real tokens (int, or `(B,)`).
        target_mask: boolean `(Tq,)` or `(B, Tq)` mask, True on real tokens.
        alpha: opacity of the weights over the image, in [0, 1].
        title: page title and heading.

    Returns:
        The path written.

    Raises:
        ValueError: bad shapes, or a token count that does not match the weights.

    Example:
        >>> import numpy as np, tempfile, os
        >>> weights = np.full((2, 4, 4), 1 / 16)  # (Tq, H', W')
        >>> path = os.path.join(tempfile.mkdtemp(), "image.html")
        >>> save_image_attention_html(np.zeros((32, 32)), weights, ["a", "cat"], path).name
        'image.html'
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError(f"Expected alpha to be a number in [0, 1]; received {alpha!r}.")
    weights = to_numpy(weights)
    data = prepare_image(
        image,
        weights,
        tokens,
        index=index,
        head=None,
        keep_heads=weights.ndim == (5 if index is not None else 4),
        target_length=target_length,
        target_mask=target_mask,
    )
    heads, count, rows, cols = data.weights.shape
    options = _head_options(data.weights.reshape(heads, count, rows * cols))
    payload = {
        "alpha": float(alpha),
        "hatch_cell": HATCH_CELL,
        "heads": [
            {"name": name, "weights": [_finite_or_null(g) for g in m.reshape(count, rows, cols)]}
            for name, m in options
        ],
    }
    height, width = data.image.shape[:2]
    view_width, view_height = _fit(height, width, VIEW_PIXELS)
    page = string.Template(_asset("image_page.html")).substitute(
        title=html.escape(title),
        css=_asset("attention.css") + _asset("image_attention.css"),
        js=_asset("image_attention.js"),
        head_select=_head_select(options),
        target_tokens=_token_spans(data.tokens, "target", "row"),
        view_width=view_width,
        view_height=view_height,
        image=_png_data_url(data.image),
        grid_width=cols,
        grid_height=rows,
        hatch_width=cols * HATCH_CELL,
        hatch_height=rows * HATCH_CELL,
        panels=_image_panels(data.tokens, height, width, (rows, cols)),
        payload=_json_for_script(payload),
    )
    path = pathlib.Path(path)
    path.write_text(page, encoding="utf-8")
    return path
