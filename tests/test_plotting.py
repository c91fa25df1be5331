"""Static attention plots: pixels, labels, head reduction, padding, errors, files."""

import sys

import keras
import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure
from matplotlib.image import imread

from keras_attention.plotting import plot_attention
from keras_attention.plotting import plot_heads
from keras_attention.plotting import reduce_heads

SOURCE = ["the", "cat", "sat", "on", "the", "mat", "."]
TARGET = ["le", "chat", "s'est", "assis", "."]


def distinct_weights(*shape, seed=0):
    """Row-stochastic weights whose entries in each matrix are all different."""
    rng = np.random.default_rng(seed)
    n_cells = shape[-2] * shape[-1]
    flat = [rng.permutation(n_cells) + 1.0 for _ in range(int(np.prod(shape[:-2])))]
    w = np.reshape(flat, shape).astype("float32")
    return w / w.sum(axis=-1, keepdims=True)


@pytest.fixture(autouse=True)
def no_open_figures():
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []
    yield
    assert plt.get_fignums() == [], "plotting leaked a pyplot figure"


def tick_texts(ax, axis):
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [label.get_text() for label in labels]


def rendered_gray(ax, tmp_path):
    """Saves the figure as PNG and reads it back as a gray `(rows, cols)` image."""
    path = tmp_path / "attention.png"
    ax.figure.savefig(path, dpi=ax.figure.dpi)
    return imread(path)[..., :3].mean(axis=-1)


def pixel_of(ax, gray, x, y):
    """Gray level at data point (x, y); display y runs up, image rows down."""
    px, py = ax.transData.transform((x, y))
    return gray[gray.shape[0] - 1 - int(py), int(px)]


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------
def test_brightest_pixel_is_the_largest_weight(tmp_path):
    weights = distinct_weights(5, 7)
    ax = plot_attention(weights, SOURCE, TARGET, cmap="gray")
    gray = rendered_gray(ax, tmp_path)

    x0, y0, x1, y1 = ax.get_window_extent().extents  # heat-map area, pixels
    rows = slice(gray.shape[0] - int(y1) + 2, gray.shape[0] - int(y0) - 2)
    cols = slice(int(x0) + 2, int(x1) - 2)
    crop = gray[rows, cols]
    r, c = np.unravel_index(np.argmax(crop), crop.shape)
    x, y = ax.transData.inverted().transform(
        (cols.start + c + 0.5, gray.shape[0] - (rows.start + r + 0.5))
    )
    assert (round(y), round(x)) == np.unravel_index(np.argmax(weights), weights.shape)


def test_cell_brightness_follows_the_weights(tmp_path):
    weights = distinct_weights(5, 7, seed=1)
    ax = plot_attention(weights, SOURCE, TARGET, cmap="gray", colorbar=False)
    gray = rendered_gray(ax, tmp_path)
    levels = np.array([[pixel_of(ax, gray, col, row) for col in range(7)] for row in range(5)])
    scaled = (weights - weights.min()) / (weights.max() - weights.min())
    np.testing.assert_allclose(levels, scaled, atol=1.5 / 255)  # 8-bit gray


def test_tick_labels_are_the_tokens():
    ax = plot_attention(distinct_weights(5, 7), SOURCE, TARGET)
    assert tick_texts(ax, "x") == SOURCE
    assert tick_texts(ax, "y") == TARGET
    assert len(ax.figure.axes) == 2  # the heat-map and its colorbar


def test_annotations_show_each_weight():
    weights = distinct_weights(5, 7)
    ax = plot_attention(weights, SOURCE, TARGET, annotate=True)
    assert [t.get_text() for t in ax.texts] == [f"{w:.2f}" for w in weights.ravel()]


def test_draws_on_a_given_axes():
    ax = Figure().add_subplot()
    assert plot_attention(distinct_weights(5, 7), SOURCE, TARGET, ax=ax) is ax


def test_long_sentences_stay_readable():
    tokens = [f"token{i}" for i in range(64)]
    small = plot_attention(distinct_weights(5, 7), SOURCE, TARGET)
    ax = plot_attention(distinct_weights(64, 64), tokens, tokens)
    assert tick_texts(ax, "x") == tokens
    assert (ax.figure.get_size_inches() > small.figure.get_size_inches()).all()
    assert ax.get_xticklabels()[0].get_rotation() == 90
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    heat_map = ax.get_window_extent(renderer)
    for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
        boxes = [label.get_window_extent(renderer) for label in labels]
        neighbours = zip(boxes[:-1], boxes[1:], strict=True)
        assert not any(a.overlaps(b) for a, b in neighbours)
        assert not any(box.overlaps(heat_map) for box in boxes)


@pytest.mark.parametrize("ext, magic", [("png", b"\x89PNG"), ("svg", b"<svg"), ("pdf", b"%PDF")])
def test_saves_through_the_returned_figure(tmp_path, ext, magic):
    ax = plot_attention(distinct_weights(5, 7), SOURCE, TARGET)
    path = tmp_path / f"attention.{ext}"
    ax.figure.savefig(path)
    content = path.read_bytes()
    assert magic in content[:400]


# ---------------------------------------------------------------------------
# Heads
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "head, expected",
    [
        ("mean", lambda w: w.mean(axis=-3)),
        ("max", lambda w: w.max(axis=-3)),
        (2, lambda w: w[..., 2, :, :]),
        (-1, lambda w: w[..., 3, :, :]),
    ],
)
def test_reduce_heads_matches_numpy(head, expected):
    weights = distinct_weights(2, 4, 5, 7)  # (B, H, Tq, Tv)
    np.testing.assert_allclose(reduce_heads(weights, head), expected(weights))
    np.testing.assert_allclose(reduce_heads(weights[1], head), expected(weights[1]))


@pytest.mark.parametrize("head", ["mean", "max", 1])
def test_plot_attention_reduces_heads(head):
    weights = distinct_weights(2, 4, 5, 7)  # (B, H, Tq, Tv)
    ax = plot_attention(weights, SOURCE, TARGET, index=1, head=head)
    np.testing.assert_allclose(ax.images[0].get_array(), reduce_heads(weights[1], head), atol=1e-6)


def test_plot_heads_shares_one_color_scale():
    weights = distinct_weights(3, 4, 5, 7)  # (B, H, Tq, Tv)
    figure = plot_heads(weights, SOURCE, TARGET, index=2)
    head_axes = figure.axes[:4]
    assert len(figure.axes) == 5  # four heads and one colorbar
    assert [ax.get_title() for ax in head_axes] == [f"head {h}" for h in range(4)]
    for h, ax in enumerate(head_axes):
        image = ax.images[0]
        np.testing.assert_allclose(image.get_array(), weights[2, h])
        assert (image.norm.vmin, image.norm.vmax) == pytest.approx(
            (weights[2].min(), weights[2].max())
        )
    assert tick_texts(head_axes[0], "y") == TARGET
    assert tick_texts(head_axes[-1], "x") == SOURCE


def test_plot_heads_with_an_odd_head_count_and_annotations():
    figure = plot_heads(distinct_weights(3, 5, 7), SOURCE, TARGET, annotate=True)
    assert len(figure.axes) == 4
    assert all(len(ax.texts) == 35 for ax in figure.axes[:3])


# ---------------------------------------------------------------------------
# Padding
# ---------------------------------------------------------------------------
def test_trims_padding_by_length():
    weights = distinct_weights(2, 5, 7)  # (B, Tq, Tv)
    ax = plot_attention(weights, SOURCE, TARGET, index=0, source_length=4, target_length=3)
    np.testing.assert_allclose(ax.images[0].get_array(), weights[0, :3, :4])
    assert tick_texts(ax, "x") == SOURCE[:4]
    assert tick_texts(ax, "y") == TARGET[:3]


def test_trims_padding_by_batched_lengths_and_masks():
    weights = distinct_weights(2, 5, 7)  # (B, Tq, Tv)
    source_mask = np.arange(7)[None, :] < np.array([[7], [5]])  # (B, Tv)
    ax = plot_attention(
        weights,
        SOURCE[:5],
        TARGET,
        index=1,
        target_length=np.array([5, 2]),
        source_mask=source_mask,
    )
    np.testing.assert_allclose(ax.images[0].get_array(), weights[1, :2, :5])
    assert tick_texts(ax, "x") == SOURCE[:5]  # tokens already without padding
    assert tick_texts(ax, "y") == TARGET[:2]


def test_plot_heads_trims_padding():
    weights = distinct_weights(2, 5, 7)  # (H, Tq, Tv)
    target_mask = np.array([False, True, True, False, True])  # left padding too
    figure = plot_heads(weights, SOURCE, TARGET, source_length=6, target_mask=target_mask)
    np.testing.assert_allclose(figure.axes[1].images[0].get_array(), weights[1][target_mask][:, :6])
    assert tick_texts(figure.axes[0], "y") == ["chat", "s'est", "."]


# ---------------------------------------------------------------------------
# Inputs and errors
# ---------------------------------------------------------------------------
def test_accepts_backend_tensors():
    weights = distinct_weights(2, 4, 5, 7)
    tensor = keras.ops.convert_to_tensor(weights)
    ax = plot_attention(
        tensor,
        SOURCE,
        TARGET,
        index=0,
        head="mean",
        source_length=keras.ops.convert_to_tensor([7, 3]),
    )
    np.testing.assert_allclose(ax.images[0].get_array(), weights[0].mean(axis=0), atol=1e-6)
    figure = plot_heads(tensor, SOURCE, TARGET, index=1)
    np.testing.assert_allclose(figure.axes[3].images[0].get_array(), weights[1, 3])
    np.testing.assert_allclose(reduce_heads(tensor, "max"), weights.max(axis=1))


@pytest.mark.parametrize(
    "shape, kwargs, message",
    [
        ((5, 6), {}, "source_tokens has 7 tokens but weights have Tv=6"),
        ((4, 7), {}, "target_tokens has 5 tokens but weights have Tq=4"),
        (
            (5, 8),
            {"source_length": 6},
            r"source_tokens has 7 tokens but weights have Tv=8 \(6 after",
        ),
        ((5, 7), {"source_length": 9}, "source_length=9 but weights have Tv=7"),
        ((5, 7), {"source_length": np.array([3, 4])}, r"received shape \(2,\)"),
        ((5, 7), {"source_length": 3, "source_mask": np.ones(7, bool)}, "not both"),
        ((5, 7), {"target_mask": np.zeros(5, bool)}, "0 target and 7 source tokens"),
        (
            (5, 7),
            {"target_mask": np.ones(4, bool)},
            r"target_mask has shape \(4,\) but weights have Tq=5",
        ),
        ((7,), {}, r"received shape \(7,\)"),
        ((1, 1, 1, 5, 7), {}, r"received shape \(1, 1, 1, 5, 7\)"),
        ((3, 5, 7), {}, "ambiguous"),
        ((2, 3, 5, 7), {"head": 0}, "need index="),
        ((2, 3, 5, 7), {"index": 2, "head": 0}, "index=2 is out of range for B=2"),
        ((3, 5, 7), {"head": 3}, "head=3 is out of range for H=3"),
        ((3, 5, 7), {"head": "median"}, "'median'"),
        ((5, 7), {"head": "mean"}, "no head axis"),
    ],
)
def test_bad_inputs_raise_value_error(shape, kwargs, message):
    weights = np.full(shape, 0.1, "float32")
    with pytest.raises(ValueError, match=message):
        plot_attention(weights, SOURCE, TARGET, **kwargs)


def test_plot_heads_needs_a_head_axis():
    with pytest.raises(ValueError, match="no head axis"):
        plot_heads(distinct_weights(5, 7), SOURCE, TARGET)
    with pytest.raises(ValueError, match="Tv=7"):
        plot_heads(distinct_weights(2, 5, 7), SOURCE[:3], TARGET)


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    weights = distinct_weights(2, 5, 7)
    for plot, kwargs in ((plot_attention, {"head": 0}), (plot_heads, {})):
        with pytest.raises(ImportError, match=r'pip install "keras-attention-layers\[plot\]"'):
            plot(weights, SOURCE, TARGET, **kwargs)
    np.testing.assert_allclose(reduce_heads(weights, 0), weights[0])  # no plot needed


# ---------------------------------------------------------------------------
# Non-finite weights (a broken model): a meaningful map, NaN cells marked
# ---------------------------------------------------------------------------
def test_nan_weights_keep_the_color_scale_and_are_marked():
    weights = np.array([[0.9, 0.1, np.nan], [0.2, 0.8, 0.0]], "float32")
    ax = plot_attention(weights, ["a", "b", "c"], ["x", "y"], annotate=True)
    image = ax.images[0]
    assert (image.norm.vmin, image.norm.vmax) == pytest.approx((0.0, 0.9))
    # 0.9 and 0.1 are told apart (with NaN limits both got one color).
    assert image.cmap(image.norm(0.9)) != image.cmap(image.norm(0.1))
    assert image.get_array().mask[0, 2] and not image.get_array().mask[0, 0]
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert [(p.get_x(), p.get_y()) for p in hatched] == [(1.5, -0.5)]
    texts = {
        (round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in ax.texts
    }
    assert texts[(2, 0)] == "NaN" and texts[(0, 0)] == "0.90"


def test_all_nan_weights_still_draw():
    figure = plot_heads(np.full((2, 2, 3), np.nan, "float32"), ["a", "b", "c"], ["x", "y"])
    panels = [ax for ax in figure.axes if ax.images]
    assert len(panels) == 2
    assert all(np.all(ax.images[0].get_array().mask) for ax in panels)
