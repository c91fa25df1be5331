"""The layers inside real Keras models: masks, training, saving, compilation."""

import os

import keras
import numpy as np
import pytest
from backend_utils import to_numpy
from layer_cases import CASES

import keras_attention

ALL = sorted(CASES)
BACKEND = keras.backend.backend()
VOCAB, DIM = 20, 6


def seq2seq_model(name, **layer_kwargs):
    """Encoder/decoder token ids -> (logits, attention weights), masks from embeddings."""
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    encoded = keras.layers.Embedding(VOCAB, DIM, mask_zero=True)(source)
    decoded = keras.layers.Embedding(VOCAB, DIM, mask_zero=True)(target)
    layer = CASES[name](name="attention", **layer_kwargs)
    context, weights = layer(decoded, encoded, return_attention_scores=True)
    logits = keras.layers.Dense(VOCAB)(keras.layers.Concatenate()([context, decoded]))
    return keras.Model([source, target], [logits, weights])


def token_batch(rng, batch=3, ts=5, tt=4):
    source = rng.integers(1, VOCAB, size=(batch, ts)).astype("int32")
    target = rng.integers(1, VOCAB, size=(batch, tt)).astype("int32")
    source[0, 3:] = 0  # padding
    target[1, 2:] = 0
    return source, target


@pytest.mark.parametrize("name", ALL)
def test_keras_masks_from_embeddings_are_used(name, rng):
    model = seq2seq_model(name)
    source, target = token_batch(rng)
    _, weights = model.predict([source, target], verbose=0)
    if weights.ndim == 4:  # (B, H, Tq, Tv)
        weights = weights.transpose(1, 0, 2, 3)
    np.testing.assert_array_equal(weights[..., 0, :, 3:], 0.0)  # padded keys
    np.testing.assert_array_equal(weights[..., 1, 2:, :], 0.0)  # padded queries
    np.testing.assert_allclose(weights[..., 1, :2, :].sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("name", ["scaled_dot", "multi_head"])
def test_explicit_mask_replaces_the_keras_mask(name, rng):
    x = keras.layers.Embedding(VOCAB, DIM, mask_zero=True)(np.array([[3, 4, 0, 0]]))
    layer = CASES[name]()
    explicit = np.array([[True, False, False, False]])
    _, weights = layer(x, x, value_mask=explicit, return_attention_scores=True)
    weights = to_numpy(weights).reshape(-1, 4, 4)  # (B*H, Tq, Tv)
    np.testing.assert_allclose(weights[:, :2, 0], 1.0, atol=1e-6)  # real queries
    np.testing.assert_array_equal(weights[:, 2:], 0.0)  # padded queries keep their mask


@pytest.mark.parametrize("name", ["bahdanau", "multi_head"])
def test_output_carries_the_query_mask(name):
    embedding = keras.layers.Embedding(VOCAB, DIM, mask_zero=True)
    query = embedding(np.array([[3, 4, 0]]))
    value = embedding(np.array([[5, 0, 0, 0]]))
    context = CASES[name]()(query, value)
    np.testing.assert_array_equal(to_numpy(context._keras_mask), [[True, True, False]])


@pytest.mark.parametrize("name", ALL)
def test_every_trainable_weight_gets_a_gradient_in_fit(name, rng):
    model = seq2seq_model(name)
    model.compile(
        optimizer=keras.optimizers.SGD(0.5),
        loss=[keras.losses.SparseCategoricalCrossentropy(from_logits=True), None],
    )
    source, target = token_batch(rng)
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    model.fit([source, target], [target, np.zeros((3, 4, 5))], epochs=1, verbose=0)
    layer = model.get_layer("attention")
    for weight, old in zip(model.trainable_weights, before):
        if any(weight is w for w in layer.trainable_weights):
            assert np.abs(to_numpy(weight) - old).max() > 0, weight.path


# Every case's `.keras` file: test_layer_contract.py; here, call options kept in a seq2seq file.
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("bahdanau", {"probability_fn": "sparsemax", "dropout": 0.2}),
        ("multi_head", {"probability_fn": "hardmax", "use_bias": False}),
    ],
)
def test_keras_file_round_trip_in_safe_mode(name, kwargs, rng, tmp_path):
    model = seq2seq_model(name, **kwargs)
    source, target = token_batch(rng)
    expected = model.predict([source, target], verbose=0)
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded.get_layer("attention")) is type(model.get_layer("attention"))
    for got, want in zip(loaded.predict([source, target], verbose=0), expected):
        np.testing.assert_array_equal(got, want)


def test_sequential_and_subclassed_models(rng):
    x = rng.integers(1, VOCAB, size=(2, 5))
    sequential = keras.Sequential(
        [keras.layers.Embedding(VOCAB, DIM, mask_zero=True), keras_attention.MultiHead(2, 4)]
    )
    assert sequential(x).shape == (2, 5, DIM)

    class Decoder(keras.Model):
        def __init__(self):
            super().__init__()
            self.embed = keras.layers.Embedding(VOCAB, DIM)
            self.attention = keras_attention.BahdanauAttention(8)

        def call(self, inputs):
            source, target = inputs
            return self.attention(self.embed(target), self.embed(source))

    assert Decoder()((x, x[:, :3])).shape == (2, 3, DIM)


@pytest.mark.parametrize("name", ALL)
def test_compiled_predictions_equal_eager(name, rng):
    """tf.function + XLA on TensorFlow, jax.jit on JAX; torch runs eagerly."""
    model = seq2seq_model(name)
    source, target = token_batch(rng)
    eager = [to_numpy(t) for t in model([source, target])]
    model.compile(jit_compile=BACKEND in ("tensorflow", "jax"))
    compiled = model.predict([source, target], verbose=0)
    for got, want in zip(compiled, eager):
        np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.tf_only
@pytest.mark.parametrize("name", ["bahdanau", "luong_concat", "multi_head_gqa"])
def test_tf_function_and_xla_training_step(name, rng):
    import tensorflow as tf

    model = seq2seq_model(name, probability_fn="sparsemax")
    model.compile(
        optimizer="adam",
        loss=[keras.losses.SparseCategoricalCrossentropy(from_logits=True), None],
        jit_compile=True,
    )
    source, target = token_batch(rng)
    history = model.fit([source, target], [target, np.zeros((3, 4, 5))], epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    step = tf.function(lambda s, t: model([s, t])[1], jit_compile=True)
    np.testing.assert_allclose(
        to_numpy(step(source, target)), to_numpy(model([source, target])[1]), atol=1e-5
    )


@pytest.mark.tf_only
@pytest.mark.parametrize("name", ["bahdanau", "luong_general_scaled", "scaled_dot", "multi_head"])
def test_savedmodel_export_reloads_with_tf_and_tfsmlayer(name, rng, tmp_path):
    import tensorflow as tf

    model = seq2seq_model(name)
    source, target = token_batch(rng)
    expected = model.predict([source, target], verbose=0)
    path = os.path.join(tmp_path, "exported")
    model.export(path, verbose=False)
    restored = tf.saved_model.load(path)  # keep a reference while calling it
    served = restored.serve([tf.constant(source), tf.constant(target)])
    reloaded = keras.layers.TFSMLayer(path, call_endpoint="serve")([source, target])
    for outputs in (served, reloaded):
        outputs = list(outputs.values()) if isinstance(outputs, dict) else outputs
        for got, want in zip(outputs, expected):
            np.testing.assert_allclose(to_numpy(got), want, atol=1e-6)


def test_builtin_cross_checks(rng):
    """Where the math coincides with Keras's own layers, outputs agree."""
    q, v = (
        rng.normal(size=(2, 3, 4)).astype("float32"),
        rng.normal(size=(2, 5, 4)).astype("float32"),
    )
    value_mask = np.array([[True] * 5, [True, True, True, False, False]])
    ours = keras_attention.LuongAttention()(q, v, value_mask=value_mask)
    # (B, 1, Tv): Keras before 3.12 does not broadcast a (B, Tv) mask when Tq != Tv.
    theirs = keras.layers.Attention()([q, v], mask=[None, value_mask[:, None, :]])
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), atol=1e-5)

    qh, kh, vh = (rng.normal(size=(2, 3, 2, 4)).astype("float32") for _ in range(3))
    expected = keras.ops.dot_product_attention(qh, kh, vh, is_causal=True)  # (B, T, H, d)
    ours = keras_attention.ScaledDotProduct()(
        np.swapaxes(qh, 1, 2).reshape(4, 3, 4),
        np.swapaxes(vh, 1, 2).reshape(4, 3, 4),
        key=np.swapaxes(kh, 1, 2).reshape(4, 3, 4),
        use_causal_mask=True,
    )
    np.testing.assert_allclose(
        to_numpy(ours).reshape(2, 2, 3, 4), np.swapaxes(to_numpy(expected), 1, 2), atol=1e-5
    )


def test_multi_head_matches_keras_multi_head_attention(rng):
    keras_layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3)
    ours = keras_attention.MultiHead(num_heads=2, key_dim=3)
    q, v = (
        rng.normal(size=(2, 3, 6)).astype("float32"),
        rng.normal(size=(2, 4, 5)).astype("float32"),
    )
    keras_layer(q, v)
    ours(q, v)
    pairs = [
        (ours.query_dense, keras_layer._query_dense),
        (ours.key_dense, keras_layer._key_dense),
        (ours.value_dense, keras_layer._value_dense),
        (ours.output_dense, keras_layer._output_dense),
    ]
    for dense, einsum_dense in pairs:
        kernel, bias = einsum_dense.get_weights()
        dense.set_weights([kernel.reshape(dense.kernel.shape), bias.reshape(dense.bias.shape)])
    mask = np.array([[True] * 4, [True, True, False, False]])
    want, want_weights = keras_layer(q, v, value_mask=mask, return_attention_scores=True)
    got, got_weights = ours(q, v, value_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(got_weights), to_numpy(want_weights), atol=1e-5)
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-5)
