"""The interactive attention page: its file, then its behaviour in headless Chromium."""

import os
import re
import sys

import keras
import numpy as np
import pytest

from keras_attention.plotting import reduce_heads
from keras_attention.plotting import save_attention_html

SOURCE = ["the", "<b>cat</b>", "sat", "on", "the", "mat", "<pad>"]
TARGET = ["le", "chat", "s'est", "assis", "&amp;"]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def separated_weights(*shape, seed=0):
    """Row-stochastic weights; each row is a permutation of well-spaced values."""
    rng = np.random.default_rng(seed)
    base = np.arange(1, shape[-1] + 1, dtype="float64") ** 2
    rows = [rng.permutation(base) for _ in range(int(np.prod(shape[:-1])))]
    w = np.reshape(rows, shape)
    return (w / w.sum(axis=-1, keepdims=True)).astype("float32")


@pytest.fixture
def page(tmp_path):
    """Writes a page and returns `(path, text)`."""

    def write(weights, source=SOURCE, target=TARGET, **kwargs):
        path = save_attention_html(weights, source, target, tmp_path / "attention.html", **kwargs)
        return path, path.read_text(encoding="utf-8")

    return write


# ---------------------------------------------------------------------------
# File contents (no browser needed)
# ---------------------------------------------------------------------------
def _payload(text):
    """The page's JSON, parsed as strictly as a browser's `JSON.parse`."""
    import json

    def reject(constant):
        raise ValueError(f"not JSON: {constant}")

    raw = re.search(r'id="ka-data"[^>]*>(.*?)</script>', text, re.S).group(1)
    return json.loads(raw, parse_constant=reject)


def test_nan_weights_give_strict_json_with_null_cells(page):
    weights = separated_weights(2, 5, 7)
    weights[0, 1, 3] = np.nan
    _, text = page(weights)
    heads = _payload(text)["heads"]
    assert heads[0]["weights"][1][3] is None
    assert heads[0]["weights"][1][2] == pytest.approx(float(weights[0, 1, 2]), abs=1e-6)
    assert heads[1]["weights"][0][0] is not None  # head 1 is untouched


def test_page_is_self_contained(page):
    path, text = page(separated_weights(3, 5, 7))
    assert path.name == "attention.html"
    assert not re.search(r"https?://", text, flags=re.IGNORECASE)
    assert not re.search(r"<script[^>]*\ssrc=|<link\b|@import|url\(", text)
    assert text.count("<script") == 2  # the JSON payload and the inline script


def test_tokens_are_escaped(page):
    _, text = page(separated_weights(5, 7))
    assert "<b>cat</b>" not in text
    assert "&lt;b&gt;cat&lt;/b&gt;" in text
    assert "&amp;amp;" in text


def test_stable_hooks(page):
    _, text = page(separated_weights(3, 5, 7))
    assert (
        len(
            re.findall(
                r'class="ka-cell" id="ka-cell-\d+-\d+" '
                r'data-row="\d+" data-col="\d+"',
                text,
            )
        )
        == 35
    )
    assert len(re.findall(r'class="ka-token ka-source"[^>]*data-weight=""', text)) == 7
    assert len(re.findall(r'class="ka-token ka-target"[^>]*data-row=', text)) == 5
    options = re.findall(r"<option [^>]*>([^<]*)</option>", text)
    assert options == ["head 0", "head 1", "head 2", "mean", "max"]


def test_single_head_has_no_selector(page):
    _, text = page(separated_weights(2, 5, 7), index=1)  # (B, Tq, Tv)
    assert 'id="ka-head"' not in text


def test_page_needs_no_matplotlib(page, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    _, text = page(keras.ops.convert_to_tensor(separated_weights(5, 7)))
    assert "ka-matrix" in text


@pytest.mark.parametrize(
    "weights, kwargs, message",
    [
        (np.zeros((5, 6)), {}, "source_tokens has 7 tokens but weights have Tv=6"),
        (np.zeros((4, 7)), {}, "target_tokens has 5 tokens but weights have Tq=4"),
        (np.zeros((2, 2, 5, 7)), {}, "need index="),
        (np.zeros((5, 7)), {"target_length": 6}, "target_length=6 but weights have Tq=5"),
    ],
)
def test_bad_inputs_raise_value_error(page, weights, kwargs, message):
    with pytest.raises(ValueError, match=message):
        page(weights, **kwargs)


# ---------------------------------------------------------------------------
# Behaviour in a real browser
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not found: apt-get install -y chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium')}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_window_size(1200, 900)
    yield driver
    driver.quit()


def open_page(browser, path):
    from selenium.webdriver.common.by import By

    browser.get(path.resolve().as_uri())
    hover(browser, browser.find_element(By.TAG_NAME, "h1"))  # pointer off the tokens


def by_id(browser, element_id):
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, element_id)


def hover(browser, element):
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).move_to_element(element).perform()


def choose_head(browser, label):
    from selenium.webdriver.support.ui import Select

    Select(by_id(browser, "ka-head")).select_by_visible_text(label)


def alpha(element):
    """Alpha of the computed background color: the shading intensity."""
    color = element.value_of_css_property("background-color")
    values = [float(v) for v in re.findall(r"[\d.]+", color)]
    return values[3] if len(values) == 4 else 1.0


def source_state(browser, n_source):
    """The data-weight and shading of each source token span."""
    spans = [by_id(browser, f"ka-source-{j}") for j in range(n_source)]
    return (
        np.array([float(s.get_attribute("data-weight")) for s in spans]),
        np.array([alpha(s) for s in spans]),
    )


def assert_nothing_highlighted(browser, n_source):
    spans = [by_id(browser, f"ka-source-{j}") for j in range(n_source)]
    assert [s.get_attribute("data-weight") for s in spans] == [""] * n_source
    assert [alpha(s) for s in spans] == [0.0] * n_source


def assert_highlight_follows(weights_row, observed, shading, matrix):
    np.testing.assert_allclose(observed, weights_row, atol=1e-6)
    np.testing.assert_array_equal(np.argsort(shading), np.argsort(weights_row))
    np.testing.assert_allclose(shading, weights_row / matrix.max(), atol=2 / 255)


@pytest.mark.browser
def test_hovering_a_target_highlights_its_sources(browser, page):
    weights = separated_weights(5, 7)
    path, _ = page(weights)
    open_page(browser, path)
    assert_nothing_highlighted(browser, 7)
    for row in (0, 3):
        hover(browser, by_id(browser, f"ka-target-{row}"))
        assert_highlight_follows(weights[row], *source_state(browser, 7), weights)
    hover(browser, by_id(browser, "ka-matrix"))  # leaving clears the highlight
    assert_nothing_highlighted(browser, 7)


@pytest.mark.browser
def test_head_selector_changes_the_highlight(browser, page):
    weights = separated_weights(3, 5, 7, seed=1)  # (H, Tq, Tv)
    path, _ = page(weights)
    open_page(browser, path)
    by_id(browser, "ka-target-2").click()  # pin row 2
    for label, matrix in [
        ("head 1", weights[1]),
        ("head 2", weights[2]),
        ("mean", reduce_heads(weights, "mean")),
        ("max", reduce_heads(weights, "max")),
    ]:
        choose_head(browser, label)
        assert_highlight_follows(matrix[2], *source_state(browser, 7), matrix)
        cell = by_id(browser, "ka-cell-4-6")
        assert float(cell.get_attribute("data-weight")) == pytest.approx(matrix[4, 6], abs=1e-6)


@pytest.mark.browser
def test_matrix_cells_are_shaded_by_weight(browser, page):
    weights = separated_weights(5, 7, seed=2)
    path, _ = page(weights)
    open_page(browser, path)
    shading = np.array(
        [[alpha(by_id(browser, f"ka-cell-{i}-{j}")) for j in range(7)] for i in range(5)]
    )
    np.testing.assert_allclose(shading, weights / weights.max(), atol=2 / 255)


@pytest.mark.browser
def test_pinned_target_survives_hovering_another(browser, page):
    weights = separated_weights(5, 7, seed=3)
    path, _ = page(weights)
    open_page(browser, path)
    by_id(browser, "ka-target-1").click()
    hover(browser, by_id(browser, "ka-target-4"))
    assert_highlight_follows(weights[4], *source_state(browser, 7), weights)
    hover(browser, by_id(browser, "ka-matrix"))
    assert_highlight_follows(weights[1], *source_state(browser, 7), weights)
    assert "ka-active" in by_id(browser, "ka-target-1").get_attribute("class")


@pytest.mark.browser
def test_page_shows_raw_tokens_and_trims_padding(browser, page):
    weights = separated_weights(2, 5, 7)  # (B, Tq, Tv)
    path, _ = page(weights, index=1, source_length=np.array([7, 6]), target_length=4)
    open_page(browser, path)
    spans = browser.find_elements("css selector", ".ka-source")
    assert [s.text for s in spans] == SOURCE[:6]
    assert [t.text for t in browser.find_elements("css selector", ".ka-target")] == TARGET[:4]
    assert len(browser.find_elements("css selector", ".ka-cell")) == 24
    hover(browser, by_id(browser, "ka-target-3"))
    trimmed = weights[1, :4, :6]
    assert_highlight_follows(trimmed[3], *source_state(browser, 6), trimmed)


@pytest.mark.browser
def test_nan_cells_are_drawn_as_marked_empty_cells(browser, page):
    from selenium.webdriver.common.by import By

    weights = separated_weights(5, 7)
    weights[2, 4] = np.nan
    path, _ = page(weights)
    open_page(browser, path)
    cells = {
        (int(c.get_attribute("data-row")), int(c.get_attribute("data-col"))): c
        for c in browser.find_elements(By.CSS_SELECTOR, ".ka-cell")
    }
    nan_cell = cells[(2, 4)]
    assert "ka-nan" in nan_cell.get_attribute("class")
    assert nan_cell.get_attribute("data-weight") == "NaN"
    assert alpha(nan_cell) == 0.0
    assert alpha(cells[(2, 3)]) > 0.0  # the rest of the page still works
    hover(browser, by_id(browser, "ka-target-2"))
    assert by_id(browser, "ka-source-4").get_attribute("data-weight") == "NaN"
    assert float(by_id(browser, "ka-source-3").get_attribute("data-weight")) > 0
