"""The self-contained interactive HTML page: `save_attention_html`.

The page is `assets/page.html` with `assets/attention.css` and
`assets/attention.js` inlined and the weights as a JSON payload, so it opens
offline. Needs only NumPy: no matplotlib.
"""

from __future__ import annotations

import functools
import html
import importlib.resources
import json
import pathlib
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from keras_attention.plotting._inputs import REDUCTIONS
from keras_attention.plotting._inputs import Alignment
from keras_attention.plotting._inputs import Padding
from keras_attention.plotting._inputs import prepare
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
