"""Positional encodings: sinusoids, a learned table and rotary embeddings, against NumPy."""

import math

import keras
import numpy as np
import pytest
import reference
from backend_utils import to_numpy
from backend_utils import value_and_grad

from keras_attention import LearnedPositionalEmbedding
from keras_attention import MultiHead
from keras_attention import SinusoidalPositionalEncoding
from keras_attention.rotary import rotary_embedding


# ----------------------------------------------------------------- sinusoidal
@pytest.mark.parametrize("features", [6, 7])
def test_sinusoid_matches_the_paper(features, rng):
    x = rng.normal(size=(2, 5, features)).astype("float32")
    layer = SinusoidalPositionalEncoding()
    expected = reference.sinusoid(range(5), features)
    np.testing.assert_allclose(to_numpy(layer(x)), x + expected, atol=1e-5)
    encoding = SinusoidalPositionalEncoding(mode="encoding", max_wavelength=100.0)(x)
    np.testing.assert_allclose(
        to_numpy(encoding),
        np.broadcast_to(reference.sinusoid(range(5), features, 100.0), x.shape),
        atol=1e-5,
    )


def test_sinusoid_start_index_and_positions_pick_rows(rng):
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    layer = SinusoidalPositionalEncoding()
    full = to_numpy(layer(x))
    for t in (0, 3, 5):  # a decoding step at position t gets row t, int or tensor start
        step = layer(x[:, t : t + 1], start_index=t)
        np.testing.assert_allclose(to_numpy(step), full[:, t : t + 1], atol=1e-6)
        start = keras.ops.convert_to_tensor(t, "int32")
        np.testing.assert_allclose(
            to_numpy(layer(x[:, t : t + 1], start_index=start)), full[:, t : t + 1], atol=1e-6
        )
    positions = np.array([[4, 0, 9], [1, 1, 2]])  # (B, T) per example
    out = to_numpy(layer(x[:, :3], positions=positions))
    for b in range(2):
        expected = x[b, :3] + reference.sinusoid(positions[b], 8)
        np.testing.assert_allclose(out[b], expected, atol=1e-5)


def test_sinusoid_in_float16_is_cast_once(rng):
    x = rng.normal(size=(1, 40, 8)).astype("float16")
    out = SinusoidalPositionalEncoding(dtype="float16")(x)
    assert keras.backend.standardize_dtype(out.dtype) == "float16"
    np.testing.assert_allclose(
        to_numpy(out).astype("float32"),
        x.astype("float64") + reference.sinusoid(range(40), 8),
        atol=1e-2,
    )


# -------------------------------------------------------------------- learned
def test_learned_table_rows_are_added(rng):
    layer = LearnedPositionalEmbedding(max_length=8)
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    layer.build(x.shape)
    table = rng.normal(size=(8, 4)).astype("float32")
    layer.embeddings.assign(table)
    np.testing.assert_allclose(to_numpy(layer(x)), x + table[:3], atol=1e-6)
    np.testing.assert_allclose(to_numpy(layer(x, start_index=5)), x + table[5:8], atol=1e-6)
    encoding = LearnedPositionalEmbedding(8, mode="encoding")
    encoding.build(x.shape)
    encoding.embeddings.assign(table)
    np.testing.assert_allclose(
        to_numpy(encoding(x, positions=np.array([7, 0, 2]))),
        np.broadcast_to(table[[7, 0, 2]], x.shape),
        atol=1e-6,
    )


def test_learned_too_long_is_a_value_error_and_dynamic_positions_clip(rng):
    layer = LearnedPositionalEmbedding(max_length=4)
    with pytest.raises(ValueError, match="max_length=4"):
        layer(np.zeros((1, 5, 3), "float32"))
    with pytest.raises(ValueError, match="start_index=2"):
        layer(np.zeros((1, 3, 3), "float32"), start_index=2)
    table = to_numpy(layer.embeddings)
    # A tensor start is only known at run time: rows past the table reuse the last one.
    out = layer(np.zeros((1, 3, 3), "float32"), start_index=keras.ops.convert_to_tensor(2))
    np.testing.assert_allclose(to_numpy(out)[0], table[[2, 3, 3]], atol=1e-6)
    out = layer(np.zeros((1, 3, 3), "float32"), positions=np.array([0, 9, 3]))
    np.testing.assert_allclose(to_numpy(out)[0], table[[0, 3, 3]], atol=1e-6)


def test_learned_embedding_trains(rng):
    layer = LearnedPositionalEmbedding(max_length=6)
    model = keras.Sequential([keras.Input((6, 2)), layer])
    model.compile("sgd", "mse")
    before = to_numpy(layer.embeddings).copy()
    model.fit(np.zeros((4, 6, 2)), np.ones((4, 6, 2)), epochs=1, verbose=0)
    assert not np.allclose(to_numpy(layer.embeddings), before)


# ----------------------------------------------------- masks, config, saving
@pytest.mark.parametrize("encoding", [SinusoidalPositionalEncoding, LearnedPositionalEmbedding])
def test_mask_passes_through_to_attention(encoding, rng):
    tokens = np.array([[4, 9, 2, 0, 0], [3, 5, 0, 0, 0]])
    layer = encoding(max_length=5) if encoding is LearnedPositionalEmbedding else encoding()
    inputs = keras.Input((5,), dtype="int32")
    embedded = keras.layers.Embedding(12, 8, mask_zero=True)(inputs)
    attention = MultiHead(num_heads=2, key_dim=4)
    encoded = layer(embedded)
    model = keras.Model(inputs, [encoded, attention(encoded, encoded)])
    encoded, context = (to_numpy(t) for t in model(tokens))
    keep = tokens != 0
    expected = to_numpy(attention(encoded, encoded, query_mask=keep, value_mask=keep))
    np.testing.assert_allclose(context, expected, atol=1e-5)
    unmasked = to_numpy(attention(encoded, encoded))
    assert not np.allclose(context[keep], unmasked[keep], atol=1e-4)  # the mask mattered


@pytest.mark.parametrize(
    "make",
    [
        lambda: SinusoidalPositionalEncoding(max_wavelength=500.0, mode="encoding", name="pe"),
        lambda: LearnedPositionalEmbedding(
            12, mode="encoding", embeddings_regularizer="l2", name="pe"
        ),
    ],
)
def test_config_round_trip(make):
    layer = make()
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    for argument in ("max_wavelength", "max_length", "mode"):
        if argument in config:
            assert getattr(clone, argument) == config[argument]


def test_saved_model_file_round_trip(tmp_path, rng):
    inputs = keras.Input((None, 8))
    h = SinusoidalPositionalEncoding(max_wavelength=1000.0)(inputs)
    h = LearnedPositionalEmbedding(max_length=10)(h)
    outputs = MultiHead(num_heads=2, key_dim=4, rotary=True, rotary_base=500.0)(
        h, h, use_causal_mask=True
    )
    model = keras.Model(inputs, outputs)
    x = rng.normal(size=(2, 7, 8)).astype("float32")
    path = tmp_path / "positional.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-6)
    attention = loaded.layers[-1]
    assert attention.rotary and attention.rotary_base == 500.0


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: SinusoidalPositionalEncoding(max_wavelength=0), "max_wavelength"),
        (lambda: SinusoidalPositionalEncoding(mode="concat"), "mode"),
        (lambda: LearnedPositionalEmbedding(0), "max_length"),
        (lambda: LearnedPositionalEmbedding(4.0), "max_length"),
        (lambda: MultiHead(2, 3, rotary=True), "key_dim"),
        (lambda: MultiHead(2, 4, rotary=True, rotary_base=-1.0), "rotary_base"),
    ],
)
def test_bad_arguments_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()
    with pytest.raises(TypeError, match="rotary"):
        MultiHead(2, 4, rotary="yes")


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda layer: layer(np.zeros((2, 4), "float32")), "rank-3"),
        (lambda layer: layer(np.zeros((1, 2, 4), "float32"), start_index=-1), "start_index"),
        (lambda layer: layer(np.zeros((1, 2, 4), "float32"), start_index=1.5), "start_index"),
        (
            lambda layer: layer(np.zeros((1, 2, 4), "float32"), positions=np.zeros((1, 1, 2))),
            "positions",
        ),
    ],
)
def test_bad_calls_raise(call, match):
    for layer in (SinusoidalPositionalEncoding(), LearnedPositionalEmbedding(4)):
        with pytest.raises(ValueError, match=match):
            call(layer)


# --------------------------------------------------------------------- rotary
def test_rotary_matches_a_rotation_per_pair(rng):
    x = rng.normal(size=(2, 3, 5, 8)).astype("float32")  # (B, H, T, d)
    np.testing.assert_allclose(
        to_numpy(rotary_embedding(x, np.arange(5))),
        reference.rotate_half(x, np.arange(5)),
        atol=1e-5,
    )
    positions = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]])[:, None]  # (B, 1, T)
    np.testing.assert_allclose(
        to_numpy(rotary_embedding(x, positions, base=100.0)),
        reference.rotate_half(x, positions, 100.0),
        atol=1e-5,
    )


def test_rotary_logits_depend_on_relative_positions_only(rng):
    q, k = rng.normal(size=(2, 1, 16)).astype("float32")
    logit = []
    for shift in (0, 7, 300):
        rotated_q = to_numpy(rotary_embedding(q, np.array([5 + shift])))
        rotated_k = to_numpy(rotary_embedding(k, np.array([2 + shift])))
        logit.append(float((rotated_q @ rotated_k.T)[0, 0]))
    np.testing.assert_allclose(logit, logit[0], rtol=1e-4)
    assert not np.isclose(logit[0], float((q @ k.T)[0, 0]))  # the rotation does something


def test_rotary_keeps_the_dtype_and_rejects_odd_features():
    x = np.ones((1, 3, 4), "float16")
    assert keras.backend.standardize_dtype(rotary_embedding(x, np.arange(3)).dtype) == "float16"
    with pytest.raises(ValueError, match="even"):
        rotary_embedding(np.ones((1, 3, 5), "float32"), np.arange(3))
    with pytest.raises(ValueError, match="base"):
        rotary_embedding(x, np.arange(3), base=0)


def _rotary_multi_head_reference(layer, q, kv, mask):
    """MultiHead with RoPE in NumPy: keys at j, queries at Tv - Tq + i."""

    def dense(sub, x):
        return reference.dense(x, to_numpy(sub.kernel), to_numpy(sub.bias))

    def heads(x, count):
        return x.reshape(*x.shape[:2], count, -1).transpose(0, 2, 1, 3)  # (B, count, T, d)

    h, hkv, tq, tv = layer.num_heads, layer.num_key_value_heads, q.shape[1], kv.shape[1]
    qh = reference.rotate_half(heads(dense(layer.query_dense, q), h), np.arange(tq) + tv - tq)
    kh = reference.rotate_half(heads(dense(layer.key_dense, kv), hkv), np.arange(tv))
    vh = heads(dense(layer.value_dense, kv), hkv)
    kh, vh = np.repeat(kh, h // hkv, axis=1), np.repeat(vh, h // hkv, axis=1)
    logits = reference.dot_scores(qh, kh) / math.sqrt(layer.key_dim)
    context, _ = reference.attend(logits, vh, mask)
    merged = context.transpose(0, 2, 1, 3).reshape(q.shape[0], tq, -1)
    return dense(layer.output_dense, merged)


@pytest.mark.parametrize("tq, causal", [(5, True), (5, False), (2, True)])
def test_multi_head_rotary_matches_numpy(tq, causal, rng):
    layer = MultiHead(num_heads=4, key_dim=6, num_key_value_heads=2, rotary=True)
    kv = rng.normal(size=(2, 5, 8)).astype("float32")
    q = kv[:, 5 - tq :]
    out = layer(q, kv, use_causal_mask=causal)
    mask = reference.causal(tq, 5)[None, None] if causal else None
    np.testing.assert_allclose(
        to_numpy(out), _rotary_multi_head_reference(layer, q, kv, mask), atol=1e-5
    )
    # A rank-2 query is the last position, and the end-aligned rule is what rows use.
    step = layer(kv[:, -1], kv)
    np.testing.assert_allclose(to_numpy(step), to_numpy(layer(kv, kv))[:, -1], atol=1e-5)


def test_multi_head_rotary_chunked_path_matches_exact_with_gradients(rng):
    exact = MultiHead(num_heads=2, key_dim=4, rotary=True, implementation="exact")
    chunked = MultiHead(num_heads=2, key_dim=4, rotary=True, implementation="chunked", block_size=2)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    exact.build(x.shape)
    chunked.build(x.shape)
    chunked.set_weights(exact.get_weights())

    def loss(layer):
        return lambda t: keras.ops.sum(layer(t, t, use_causal_mask=True) ** 2)

    results = [value_and_grad(loss(layer), x) for layer in (exact, chunked)]
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    np.testing.assert_allclose(results[1][1][0], results[0][1][0], atol=1e-4)


def test_figure_script_draws_the_committed_figures(tmp_path):
    """docs/scripts/positional_figures.py, behind docs/img/positional_*.png, still runs."""
    import importlib.util
    import pathlib

    pytest.importorskip("matplotlib")
    root = pathlib.Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location(
        "positional_figures", root / "docs" / "scripts" / "positional_figures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    paths = module.main(["--output", str(tmp_path)])
    committed = {path.name for path in (root / "docs" / "img").glob("positional_*.png")}
    assert {path.name for path in paths} == committed
    assert all(path.stat().st_size > 10_000 for path in paths)
