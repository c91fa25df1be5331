"""AttentionRNNCell: inside keras.layers.RNN, step by step, saved and reloaded."""

import os

import keras
import numpy as np
import pytest
from backend_utils import to_numpy

from keras_attention import AttentionRNN
from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import LuongAttention
from keras_attention import MultiHead
from keras_attention import ScaledDotProduct

ATTENTIONS = {
    "bahdanau": lambda: BahdanauAttention(8),
    "luong_general": lambda: LuongAttention("general"),
    "scaled_dot": lambda: ScaledDotProduct(),
    "multi_head": lambda: MultiHead(2, 4),
}


def make_cell(name, **kwargs):
    return AttentionRNNCell(keras.layers.GRUCell(12), ATTENTIONS[name](), **kwargs)


def memory(rng):
    encoder = rng.normal(size=(2, 6, 12)).astype("float32")
    mask = np.ones((2, 6), bool)
    mask[1, 3:] = False
    return encoder, mask


@pytest.mark.parametrize("layer_size", [None, 5])
@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_rnn_pass_equals_step_by_step(name, layer_size, rng):
    cell = make_cell(name, attention_layer_size=layer_size, return_attention_weights=True)
    encoder, mask = memory(rng)
    inputs = rng.normal(size=(2, 4, 3)).astype("float32")
    states = cell.initial_state(encoder, value_mask=mask)
    full = to_numpy(keras.layers.RNN(cell, return_sequences=True)(inputs, initial_state=states))
    heads = 2 if name == "multi_head" else 1
    weights = full[..., -heads * 6 :].reshape(2, 4, heads, 6)
    np.testing.assert_array_equal(weights[1, ..., 3:], 0.0)  # padded memory
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    for t in range(4):
        output, states = cell(inputs[:, t], states)
        np.testing.assert_allclose(to_numpy(output), full[:, t], atol=1e-5)
    np.testing.assert_allclose(to_numpy(states[-4]).reshape(2, heads, 6), weights[:, -1], atol=1e-6)


def test_input_feeding_uses_the_previous_attention(rng):
    cell = make_cell("bahdanau")
    encoder, mask = memory(rng)
    states = cell.initial_state(encoder, value_mask=mask)
    x = rng.normal(size=(2, 3)).astype("float32")
    _, after_one = cell(x, states)
    fed = list(states)
    fed[1] = after_one[1]  # only a_{t-1} differs
    out_zero, _ = cell(x, states)
    out_fed, _ = cell(x, fed)
    assert not np.allclose(to_numpy(out_zero), to_numpy(out_fed))


def seq2seq(name, **cell_kwargs):
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    encoded = keras.layers.Embedding(20, 12, mask_zero=True)(source)
    encoded = keras.layers.GRU(12, return_sequences=True)(encoded)
    decoded = keras.layers.Embedding(20, 3, mask_zero=True)(target)
    decoded = AttentionRNN(make_cell(name, **cell_kwargs), name="decoder")(decoded, encoded)
    return keras.Model([source, target], keras.layers.Dense(20)(decoded))


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_functional_model_trains_saves_and_reloads(name, rng, tmp_path):
    model = seq2seq(name, attention_layer_size=6)
    source = rng.integers(1, 20, size=(4, 6)).astype("int32")
    source[0, 4:] = 0
    target = rng.integers(1, 20, size=(4, 5)).astype("int32")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    model.fit([source, target], target, epochs=1, verbose=0)
    for weight, old in zip(model.trainable_weights, before):
        assert np.abs(to_numpy(weight) - old).max() > 0, weight.path
    expected = model.predict([source, target], verbose=0)
    path = os.path.join(tmp_path, "seq2seq.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(loaded.predict([source, target], verbose=0), expected, atol=1e-6)


@pytest.mark.tf_only
@pytest.mark.parametrize("name", sorted(ATTENTIONS) + ["luong_concat"])
def test_xla_training_with_unknown_batch_and_lengths(name, rng):
    """jit_compile=True fit on a tf.data pipeline whose batch and lengths are None.

    Regression: a rank-3 Dense or matmul inside the RNN's loop is a TensorFlow
    Tensordot, whose gradient XLA refused to compile ("must be a compile-time
    constant") for the Bahdanau, Luong concat and multi-head attentions.
    """
    import tensorflow as tf

    factories = dict(ATTENTIONS, luong_concat=lambda: LuongAttention("concat", units=8))
    cell = AttentionRNNCell(keras.layers.GRUCell(12), factories[name](), attention_layer_size=6)
    source_in = keras.Input((None,), dtype="int32")
    target_in = keras.Input((None,), dtype="int32")
    encoded = keras.layers.Embedding(20, 12, mask_zero=True)(source_in)
    embedded = keras.layers.Embedding(20, 7, mask_zero=True)(target_in)
    logits = keras.layers.Dense(20)(AttentionRNN(cell)(embedded, encoded))
    model = keras.Model([source_in, target_in], logits)
    model.compile(
        "adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True
    )
    source = rng.integers(1, 20, size=(8, 6)).astype("int32")
    target = rng.integers(1, 20, size=(8, 5)).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices(((source, target), target)).batch(4)
    dataset = dataset.map(  # forget the static shapes, as a bucketed pipeline does
        lambda x, y: ((tf.ensure_shape(x[0][:, : tf.shape(x[0])[1]], (None, None)), x[1]), y)
    )
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    history = model.fit(dataset, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    for weight, old in zip(model.trainable_weights, before):
        assert np.abs(to_numpy(weight) - old).max() > 0, weight.path


def test_memory_mask_comes_from_the_keras_mask(rng):
    cell = make_cell("bahdanau", return_attention_weights=True)
    source = np.array([[3, 4, 0, 0, 0, 0]])
    encoded = keras.layers.Embedding(20, 12, mask_zero=True)(source)
    outputs = AttentionRNN(cell)(rng.normal(size=(1, 2, 3)).astype("float32"), encoded)
    weights = to_numpy(outputs)[..., -6:]
    np.testing.assert_array_equal(weights[..., 2:], 0.0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)


def test_bad_arguments():
    with pytest.raises(TypeError, match="`attention` must be a Keras layer"):
        AttentionRNNCell(keras.layers.GRUCell(4), "bahdanau")
    with pytest.raises(ValueError, match="attention_layer_size"):
        AttentionRNNCell(keras.layers.GRUCell(4), ScaledDotProduct(), attention_layer_size=0)
    cell = AttentionRNNCell(keras.layers.GRUCell(4), ScaledDotProduct())
    with pytest.raises(ValueError, match="initial_state"):
        keras.layers.RNN(cell)(np.zeros((1, 2, 3), "float32"))
    with pytest.raises(TypeError, match="AttentionRNNCell"):
        AttentionRNN(keras.layers.GRUCell(4))
    with pytest.raises(ValueError, match="return_state"):
        AttentionRNN(cell, return_state=True)
