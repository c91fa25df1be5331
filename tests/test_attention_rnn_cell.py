"""AttentionRNNCell: inside keras.layers.RNN, step by step, saved and reloaded."""

import os

import keras
import numpy as np
import pytest
from backend_utils import compile_and_fit
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
# Only in the XLA training test (its Tensordot regression): not a cell case.
EXTRA_ATTENTIONS = {"luong_concat": lambda: LuongAttention("concat", units=8)}
# The attentions whose step XLA once refused to compile with its gradient in the
# RNN's loop (a rank-3 Dense or matmul is a Tensordot there): the additive score
# with its bias (Bahdanau) and with Luong's projections (concat), and the dot
# product over heads (multi-head). Their fit stays under XLA; the single-head
# dot product's (scaled_dot, luong_general) skips it: its step runs under XLA
# in multi-head's (the same `DotScore`, one rank up) and in LuongLocalPAttention's
# (score_mode "general", test_alignment_attention.py), and an XLA fit costs
# ~1.6x a plain graph fit (10 s against 6 s).
XLA_ATTENTIONS = {"bahdanau", "luong_concat", "multi_head"}


def make_cell(name, **kwargs):
    attention = {**ATTENTIONS, **EXTRA_ATTENTIONS}[name]()
    return AttentionRNNCell(keras.layers.GRUCell(12), attention, **kwargs)


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
    np.testing.assert_allclose(
        to_numpy(cell.attention_weights(states)).reshape(2, heads, 6), weights[:, -1], atol=1e-6
    )


@pytest.mark.parametrize("rnn", ["gru", "lstm"])
def test_state_by_name_round_trip(rnn, rng):
    units = 12
    inner = keras.layers.GRUCell(units) if rnn == "gru" else keras.layers.LSTMCell(units)
    cell = AttentionRNNCell(inner, MultiHead(2, 4), attention_layer_size=5)
    encoder, mask = memory(rng)
    count = 2 if rnn == "lstm" else 1
    first = [rng.normal(size=(2, units)).astype("float32") for _ in range(count)]
    states = cell.initial_state(encoder, value_mask=mask, cell_state=first)
    state = cell.unpack_state(states)
    assert len(state.cell_states) == len(first)
    for got, expected in zip(state.cell_states, first):
        np.testing.assert_array_equal(to_numpy(got), expected)
    np.testing.assert_array_equal(to_numpy(state.mask), mask)
    assert tuple(state.attention.shape) == (2, 5)
    np.testing.assert_array_equal(to_numpy(state.attention), 0.0)
    assert tuple(state.weights.shape) == (2, 2, 6)
    keys, values = cell.attention.project_memory(encoder, encoder, mask)  # masked rows zeroed
    np.testing.assert_allclose(to_numpy(state.keys), to_numpy(keys), atol=1e-6)
    np.testing.assert_allclose(to_numpy(state.values), to_numpy(values), atol=1e-6)
    packed = cell.pack_state(state)
    for got, expected in zip(packed, states):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(expected))
    x = rng.normal(size=(2, 3)).astype("float32")
    output, new_states = cell(x, packed)
    new = cell.unpack_state(new_states)
    np.testing.assert_allclose(to_numpy(output)[:, -5:], to_numpy(new.attention), atol=1e-6)
    np.testing.assert_allclose(to_numpy(new.weights).sum(-1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(to_numpy(new.weights)[1, :, 3:], 0.0)
    expected = len(states)
    with pytest.raises(ValueError, match=f"expected {expected} states.*Received: {expected - 1}"):
        cell.unpack_state(states[:-1])
    with pytest.raises(TypeError, match="AttentionRNNState"):
        cell.pack_state(list(states))


def test_input_feeding_uses_the_previous_attention(rng):
    cell = make_cell("bahdanau")
    encoder, mask = memory(rng)
    states = cell.initial_state(encoder, value_mask=mask)
    x = rng.normal(size=(2, 3)).astype("float32")
    _, after_one = cell(x, states)
    # only a_{t-1} differs
    fed = cell.pack_state(
        cell.unpack_state(states)._replace(attention=cell.unpack_state(after_one).attention)
    )
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


@pytest.mark.parametrize(
    "name", sorted(ATTENTIONS) + [pytest.param("luong_concat", marks=pytest.mark.tf_only)]
)
def test_functional_model_trains_saves_and_reloads(name, rng, tmp_path):
    """fit (unknown batch and lengths on TensorFlow, XLA for `XLA_ATTENTIONS`), then
    a .keras round trip."""
    model = seq2seq(name, attention_layer_size=6)
    source = rng.integers(1, 20, size=(8, 6)).astype("int32")
    source[0, 4:] = 0
    target = rng.integers(1, 20, size=(8, 5)).astype("int32")
    target[1, 3:] = 0
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    history = compile_and_fit(model, [source, target], target, xla=name in XLA_ATTENTIONS)
    assert np.isfinite(history.history["loss"][0])
    for weight, old in zip(model.trainable_weights, before):
        assert np.abs(to_numpy(weight) - old).max() > 0, weight.path
    expected = model.predict([source, target], verbose=0)
    path = os.path.join(tmp_path, "seq2seq.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(loaded.predict([source, target], verbose=0), expected, atol=1e-5)


def test_memory_mask_comes_from_the_keras_mask(rng):
    cell = make_cell("bahdanau", return_attention_weights=True)
    source = np.array([[3, 4, 0, 0, 0, 0]])
    encoded = keras.layers.Embedding(20, 12, mask_zero=True)(source)
    outputs = AttentionRNN(cell)(rng.normal(size=(1, 2, 3)).astype("float32"), encoded)
    weights = to_numpy(outputs)[..., -6:]
    np.testing.assert_array_equal(weights[..., 2:], 0.0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)


def test_bad_arguments():
    with pytest.raises(TypeError, match="`attention` must be an attention layer"):
        AttentionRNNCell(keras.layers.GRUCell(4), "bahdanau")
    with pytest.raises(TypeError, match="BaseAttention.*Received: <Dense"):
        AttentionRNNCell(keras.layers.GRUCell(4), keras.layers.Dense(4))
    with pytest.raises(TypeError, match="`cell` must be a Keras layer"):
        AttentionRNNCell("gru", ScaledDotProduct())
    with pytest.raises(ValueError, match="attention_layer_size=True"):
        AttentionRNNCell(keras.layers.GRUCell(4), ScaledDotProduct(), attention_layer_size=True)
    with pytest.raises(ValueError, match="attention_layer_size=4.0"):
        AttentionRNNCell(keras.layers.GRUCell(4), ScaledDotProduct(), attention_layer_size=4.0)
    numpy_size = AttentionRNNCell(
        keras.layers.GRUCell(4), ScaledDotProduct(), attention_layer_size=np.int64(4)
    )
    assert numpy_size.attention_layer_size == 4
    assert type(numpy_size.attention_layer_size) is int  # JSON-serializable config
    assert numpy_size.get_config()["attention_layer_size"] == 4
    with pytest.raises(ValueError, match="attention_layer_size"):
        AttentionRNNCell(keras.layers.GRUCell(4), ScaledDotProduct(), attention_layer_size=0)
    cell = AttentionRNNCell(keras.layers.GRUCell(4), ScaledDotProduct())
    with pytest.raises(ValueError, match="initial_state"):
        keras.layers.RNN(cell)(np.zeros((1, 2, 3), "float32"))
    with pytest.raises(TypeError, match="AttentionRNNCell"):
        AttentionRNN(keras.layers.GRUCell(4))
    with pytest.raises(TypeError, match="`return_state` must be True or False"):
        AttentionRNN(cell, return_state="yes")


@pytest.mark.parametrize(
    "name",
    ["bahdanau", "luong_general", "scaled_dot", "multi_head"],
)
def test_initial_state_of_a_symbolic_memory_in_a_functional_model(name, rng):
    """The two-call form `RNN(cell)(x, initial_state=cell.initial_state(memory))` in a
    Functional model runs as eagerly (its flattened states took the batch as None)."""
    cell = make_cell(name)
    memory_in, target_in = keras.Input((None, 12)), keras.Input((None, 3))
    rnn = keras.layers.RNN(cell, return_sequences=True)
    outputs = rnn(target_in, initial_state=cell.initial_state(memory_in))
    model = keras.Model([memory_in, target_in], outputs)
    encoder, _ = memory(rng)
    inputs = rng.normal(size=(2, 4, 3)).astype("float32")
    expected = to_numpy(rnn(inputs, initial_state=cell.initial_state(encoder)))
    np.testing.assert_allclose(model.predict([encoder, inputs], verbose=0), expected, atol=1e-5)


def test_summary_of_a_model_stepping_the_cell_itself():
    """``Model.summary`` calls ``compute_output_shape`` with the names ``build`` recorded
    (``input_shape``); a subclassed model that runs the cell in ``keras.layers.RNN``
    once failed there with "unexpected keyword argument 'input_shape'"."""
    cell = AttentionRNNCell(keras.layers.GRUCell(8), BahdanauAttention(units=8))

    class Decoder(keras.Model):
        def __init__(self):
            super().__init__()
            self.cell = cell
            self.rnn = keras.layers.RNN(cell, return_sequences=True)

        def call(self, inputs):
            targets, memory = inputs
            return self.rnn(targets, initial_state=self.cell.initial_state(memory))

    model = Decoder()
    outputs = model([np.zeros((2, 5, 4), "float32"), np.zeros((2, 7, 6), "float32")])
    assert tuple(outputs.shape) == (2, 5, cell.output_size)
    lines = []
    model.summary(print_fn=lambda line, **_: lines.append(line))
    assert "rnn" in "".join(lines).lower()
    output_shape, _ = cell.compute_output_shape(input_shape=(2, 4))
    assert output_shape == (2, cell.output_size)


def dropout_cell(stacked=False):
    gru = keras.layers.GRUCell(12, dropout=0.5, recurrent_dropout=0.5, seed=3)
    if not stacked:
        return [gru], AttentionRNNCell(gru, BahdanauAttention(8))
    grus = [gru, keras.layers.GRUCell(12, recurrent_dropout=0.5, seed=4)]
    return grus, AttentionRNNCell(keras.layers.StackedRNNCells(grus), BahdanauAttention(8))


@pytest.mark.parametrize("stacked", [False, True])
def test_the_wrapped_cells_dropout_masks_are_new_for_every_call(stacked, rng):
    """Keras's convention (keras.layers.RNN resets a DropoutRNNCell after each call): a mask
    kept from the last batch would drop the same units forever (TensorFlow, PyTorch) or leak
    a traced value out of the loop (JAX)."""
    grus, cell = dropout_cell(stacked)
    layer = AttentionRNN(cell)
    encoder, mask = memory(rng)
    targets = rng.normal(size=(2, 4, 3)).astype("float32")
    first = to_numpy(layer(targets, encoder, memory_mask=mask, training=True))
    for gru in grus:
        assert gru._dropout_mask is None and gru._recurrent_dropout_mask is None
    second = to_numpy(layer(targets, encoder, memory_mask=mask, training=True))
    assert np.abs(first - second).max() > 1e-3
    inference = [to_numpy(layer(targets, encoder, memory_mask=mask)) for _ in range(2)]
    np.testing.assert_array_equal(inference[0], inference[1])


def test_a_model_with_a_dropout_cell_trains(rng):
    source = keras.Input((None,), dtype="int32")
    target = keras.Input((None,), dtype="int32")
    encoded = keras.layers.Embedding(20, 12)(source)
    _, cell = dropout_cell()
    decoded = AttentionRNN(cell)(keras.layers.Embedding(20, 3)(target), encoded)
    model = keras.Model([source, target], keras.layers.Dense(20)(decoded))
    source_ids = rng.integers(1, 20, size=(8, 6)).astype("int32")
    target_ids = rng.integers(1, 20, size=(8, 5)).astype("int32")
    history = compile_and_fit(model, [source_ids, target_ids], target_ids, xla=False)
    assert np.isfinite(history.history["loss"][0])
