"""Attention over an image: `plot_image_attention` and `save_image_attention_html`."""

import base64
import json
import re
import struct
import sys
import zlib

import keras
import numpy as np
import pytest
from test_plotting_html import browser  # noqa: F401  (the module's Chromium fixture)
from test_plotting_html import by_id
from test_plotting_html import hover
from test_plotting_html import open_page

from keras_attention import plot_image_attention
from keras_attention import save_image_attention_html
from keras_attention.plotting import reduce_heads

pytestmark = pytest.mark.backend_independent

TOKENS = ["a", "red", "<square>"]


def grid_weights(*shape, seed=0):
    """Weights `(..., Tq, H', W')` summing to 1 over each grid."""
    w = np.random.default_rng(seed).random(shape) + 0.05
    return (w / w.sum(axis=(-2, -1), keepdims=True)).astype("float32")


def rendered(figure):
    figure.canvas.draw()
    return np.asarray(figure.canvas.buffer_rgba())[..., :3].astype(float)


# ---------------------------------------------------------------------------
# The matplotlib overlay
# ---------------------------------------------------------------------------
def test_one_panel_per_token_with_the_weights_over_the_whole_image():
    image = np.random.default_rng(1).random((24, 32, 3))
    weights = grid_weights(3, 3, 4)
    figure = plot_image_attention(image, weights, TOKENS, colorbar=True)
    panels = figure.axes[:3]
    assert [ax.get_title() for ax in panels] == TOKENS and len(figure.axes) == 4
    for ax, grid in zip(panels, weights):
        picture, overlay = ax.get_images()
        np.testing.assert_allclose(picture.get_array(), image)
        np.testing.assert_allclose(overlay.get_array(), grid)
        assert overlay.get_extent() == [-0.5, 31.5, 23.5, -0.5]  # H', W' stretched to H, W
        assert overlay.get_alpha() == 0.6
        assert overlay.norm.vmin == pytest.approx(weights.min())  # one scale for all panels
        assert overlay.norm.vmax == pytest.approx(weights.max())


def test_the_image_is_brightest_where_the_token_attends():
    weights = np.zeros((2, 4, 4), "float32")  # (Tq, H', W')
    weights[0, 1, 2] = weights[1, 3, 0] = 1.0
    figure = plot_image_attention(
        np.zeros((40, 40)), weights, ["x", "y"], interpolation="nearest", ncols=1
    )
    pixels = rendered(figure).mean(-1)
    for ax, (row, col) in zip(figure.axes, [(1, 2), (3, 0)]):
        box = ax.get_window_extent()  # the panel's pixels, y from the bottom
        top = pixels.shape[0] - int(box.y1)
        panel = pixels[top : top + int(box.height), int(box.x0) : int(box.x0 + box.width)]
        cells = panel[: panel.shape[0] // 4 * 4, : panel.shape[1] // 4 * 4]
        cells = cells.reshape(4, cells.shape[0] // 4, 4, -1).mean((1, 3))  # (4, 4)
        assert np.unravel_index(cells.argmax(), cells.shape) == (row, col)


def test_nan_cells_are_hatched_and_left_out_of_the_scale_and_masked_grids_draw():
    weights = grid_weights(3, 3, 4)
    weights[0, 2, 1] = np.nan
    weights[1] = 0.0  # a fully masked grid: zero weight everywhere
    figure = plot_image_attention(np.ones((12, 16, 3), "uint8") * 200, weights, TOKENS)
    (hatched,) = figure.axes[0].patches
    assert hatched.get_hatch() == "xx" and hatched.get_xy() == (-0.5 + 4, -0.5 + 8)
    assert (hatched.get_width(), hatched.get_height()) == (4, 4)  # one cell: 16/4 by 12/3
    assert not figure.axes[1].patches
    overlay = figure.axes[0].get_images()[1]
    assert overlay.norm.vmin == 0.0 and overlay.norm.vmax == pytest.approx(np.nanmax(weights))
    assert figure.axes[0].get_images()[0].get_array().max() == pytest.approx(200 / 255)
    rendered(figure)
    nan_only = plot_image_attention(np.zeros((8, 8)), np.full((1, 2, 2), np.nan), ["z"])
    assert len(nan_only.axes[0].patches) == 4
    rendered(nan_only)


def test_picks_the_example_reduces_heads_and_trims_padded_tokens():
    weights = grid_weights(2, 3, 4, 2, 3)  # (B, heads, Tq, H', W')
    tokens = [*TOKENS, "<pad>"]
    figure = plot_image_attention(
        np.zeros((6, 9)), weights, tokens, index=1, head="mean", target_length=[3, 2]
    )
    assert [ax.get_title() for ax in figure.axes] == TOKENS[:2]
    expected = reduce_heads(weights[1].reshape(3, 4, 6), "mean").reshape(4, 2, 3)
    np.testing.assert_allclose(figure.axes[1].get_images()[1].get_array(), expected[1])
    single = plot_image_attention(np.zeros((6, 9)), weights[0], ["a", "b", "c", "d"], head=2)
    np.testing.assert_allclose(single.axes[3].get_images()[1].get_array(), weights[0, 2, 3])


def test_accepts_backend_tensors():
    image = keras.ops.convert_to_tensor(np.zeros((8, 8, 3), "float32"))
    weights = keras.ops.convert_to_tensor(grid_weights(3, 2, 2))
    figure = plot_image_attention(image, weights, TOKENS)
    np.testing.assert_allclose(figure.axes[2].get_images()[1].get_array(), grid_weights(3, 2, 2)[2])


SQUARE = np.zeros((8, 8))
BAD_INPUTS = [  # (image, weights, arguments, message, also refused by the HTML page)
    (
        np.zeros((8, 8, 2)),
        grid_weights(3, 2, 2),
        {},
        r"image of shape \(H, W\) or \(H, W, C\)",
        True,
    ),
    (SQUARE, grid_weights(3, 4), {}, r"weights of shape \(Tq, H', W'\).*\(3, 4\)", True),
    (SQUARE, grid_weights(2, 2, 2), {}, "target_tokens has 3 tokens but weights have Tq=2", True),
    (SQUARE, grid_weights(2, 3, 2, 2), {}, r"need head=", False),  # the page shows heads
    (SQUARE, grid_weights(3, 2, 2), {"head": 0}, "no heads axis", False),
    (SQUARE, grid_weights(3, 2, 2), {"alpha": 1.5}, r"alpha .*\[0, 1\]", True),
    (SQUARE, grid_weights(3, 2, 2), {"interpolation": "sinc"}, "interpolation", False),
]


@pytest.mark.parametrize("image,weights,kwargs,message,html", BAD_INPUTS)
def test_bad_inputs_raise_value_error(image, weights, kwargs, message, html, tmp_path):
    with pytest.raises(ValueError, match=message):
        plot_image_attention(image, weights, TOKENS, **kwargs)
    if html:
        with pytest.raises(ValueError, match=message):
            save_image_attention_html(image, weights, TOKENS, tmp_path / "page.html", **kwargs)


# ---------------------------------------------------------------------------
# The HTML page
# ---------------------------------------------------------------------------
def _payload(text):
    def reject(constant):
        raise ValueError(f"not JSON: {constant}")

    raw = re.search(r'id="ka-data"[^>]*>(.*?)</script>', text, re.S).group(1)
    return json.loads(raw, parse_constant=reject)


def _decode_png(text):
    """The pixels of the page's inlined PNG (8-bit, filter 0 on every row)."""
    data = base64.b64decode(re.search(r'src="data:image/png;base64,([^"]+)"', text).group(1))
    width, height, depth, color_type = struct.unpack(">IIBB", data[16:26])
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and depth == 8
    channels = {0: 1, 2: 3, 6: 4}[color_type]
    idat = data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8]
    raw = np.frombuffer(zlib.decompress(idat), "uint8").reshape(height, -1)
    assert np.all(raw[:, 0] == 0)
    return raw[:, 1:].reshape(height, width, channels)


def test_page_inlines_the_image_and_strict_json(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # the page needs none
    image = (np.random.default_rng(2).random((10, 14, 3)) * 255).astype("uint8")
    weights = grid_weights(2, 3, 2, 5)  # (heads, Tq, H', W')
    weights[1, 0, 1, 4] = np.nan
    path = save_image_attention_html(image, weights, TOKENS, tmp_path / "image.html")
    text = path.read_text(encoding="utf-8")
    np.testing.assert_array_equal(_decode_png(text), image)
    assert not re.search(r"https?://|<script[^>]*\ssrc=|<link\b|url\(", text)
    heads = _payload(text)["heads"]
    assert [h["name"] for h in heads] == ["head 0", "head 1", "mean", "max"]
    assert heads[1]["weights"][0][1][4] is None
    assert heads[0]["weights"][2][1][3] == pytest.approx(float(weights[0, 2, 1, 3]), abs=1e-6)
    assert "&lt;square&gt;" in text and "<square>" not in text
    assert (
        len(re.findall(r'<canvas class="ka-overlay" id="ka-overlay-\d" width="5" height="2"', text))
        == 3
    )


@pytest.mark.browser
def test_page_draws_each_overlay_and_the_hovered_token_large(browser, tmp_path):  # noqa: F811
    weights = grid_weights(3, 2, 3)
    weights[2, 0, 0] = np.nan
    path = save_image_attention_html(
        np.zeros((20, 30)), weights, TOKENS, tmp_path / "i.html", alpha=0.5
    )
    open_page(browser, path)
    read = (
        "var c = document.getElementById(arguments[0]); "
        "return Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data);"
    )
    top = np.nanmax(weights)
    for i in range(3):
        pixels = np.reshape(browser.execute_script(read, f"ka-overlay-{i}"), (2, 3, 4))
        finite = np.isfinite(weights[i])
        np.testing.assert_allclose(
            pixels[..., 0][finite], np.round(255 * weights[i] / top)[finite], atol=1
        )
        np.testing.assert_array_equal(pixels[..., 3], np.where(finite, 128, 0))
    assert browser.execute_script(read, "ka-overlay") == [0] * 24  # nothing hovered yet
    hover(browser, by_id(browser, "ka-target-1"))
    pixels = np.reshape(browser.execute_script(read, "ka-overlay"), (2, 3, 4))
    np.testing.assert_allclose(pixels[..., 0], np.round(255 * weights[1] / top), atol=1)
    assert "ka-active" in by_id(browser, "ka-panel-1").get_attribute("class")


@pytest.mark.slow
def test_figure_script_draws_the_page_figure(tmp_path):
    """docs/scripts/image_figures.py runs docs/image-attention.md and draws its figure."""
    import importlib.util
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location(
        "image_figures", root / "docs" / "scripts" / "image_figures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (path,) = module.main(["--output", str(tmp_path)])
    assert path.name == "image_attention.png" and path.stat().st_size > 0
    assert (root / "docs" / "img" / path.name).exists()
