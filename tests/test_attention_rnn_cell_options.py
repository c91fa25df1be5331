"""AttentionRNNCell's TFA AttentionWrapper options, against a NumPy reference.

A list of attentions (contexts concatenated, one attention size each, one
alignment history each), `cell_input_fn`, `output_attention`, a custom
`attention_layer`, `attention_activation`, the state by name with several
attentions, `step`, `compute_output_shape`, the `.keras` round trip, and the
errors of bad arguments. The cells are fresh (Keras's own initializers):
the reference reads their weights. TFA itself: test_tfa_attention_wrapper.py.
"""

import os

import keras
import layer_cases
import numpy as np
import pytest
from backend_utils import to_numpy
from keras import ops

from keras_attention import AttentionRNN
from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import LuongAttention
from keras_attention import LuongMonotonicAttention
from keras_attention import ScaledDotProduct
from keras_attention.layers.recurrent.attention_rnn_state import AttentionRNNState

UNITS, D_IN, B, T = 6, 3, 2, 3


@keras.saving.register_keras_serializable(package="test_cell_options")
def half_feed(inputs, attention):
    """A `cell_input_fn`: the inputs and half the previous attention."""
    return ops.concatenate([inputs, 0.5 * attention], -1)


@keras.saving.register_keras_serializable(package="test_cell_options")
class ScaledFeed(keras.layers.Layer):
    """A `cell_input_fn` layer with a weight: `[x_t; s * a_{t-1}]`."""

    def build(self, inputs_shape, attention_shape=None):
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale")

    def call(self, inputs, attention):
        return ops.concatenate([inputs, self.scale * attention], -1)


def _memories(rng):
    first = rng.normal(size=(B, 5, 4)).astype("float32")
    second = rng.normal(size=(B, 4, UNITS)).astype("float32")
    masks = [np.array([[True] * 5, [True] * 3 + [False] * 2]), np.array([[True] * 4] * 2)]
    masks[1][0, 2:] = False
    return [first, second], masks


CASES = {
    "two_attentions_tfa_linear_a_t": lambda: AttentionRNNCell(
        keras.layers.SimpleRNNCell(UNITS), [BahdanauAttention(5), LuongAttention("general")],
        attention_layer_size=[4, 3], attention_activation=None, output_attention=True,
        return_attention_weights=True,
    ),
    "one_attention_tanh_h_t": lambda: AttentionRNNCell(
        keras.layers.SimpleRNNCell(UNITS), LuongAttention("general"), attention_layer_size=4,
        output_attention=False, return_attention_weights=True,
    ),
    "two_contexts_inputs_only": lambda: AttentionRNNCell(
        keras.layers.SimpleRNNCell(UNITS), [BahdanauAttention(3), ScaledDotProduct()],
        cell_input_fn="inputs",
    ),
    "custom_layer_and_function": lambda: AttentionRNNCell(
        keras.layers.SimpleRNNCell(UNITS), BahdanauAttention(5),
        attention_layer=keras.layers.Dense(3, activation="relu"), cell_input_fn=half_feed,
    ),
}  # fmt: skip


ACTIVATIONS = {"tanh": np.tanh, "linear": lambda x: x, "relu": lambda x: np.maximum(x, 0.0)}


def _dense(layer, x, activation):
    out = x @ to_numpy(layer.kernel) + (to_numpy(layer.bias) if layer.use_bias else 0.0)
    return ACTIVATIONS[activation](out)


FEEDS = {
    "concat": lambda x, a: np.concatenate([x, a], -1),
    "inputs": lambda x, a: x,
    half_feed: lambda x, a: np.concatenate([x, 0.5 * a], -1),
}


def reference_run(cell, inputs, memories, masks):
    """The outputs `(B, T, output_size)` of `cell` in NumPy (a SimpleRNNCell inside)."""
    multiple = isinstance(cell.attention, list)
    attentions = cell.attention if multiple else [cell.attention]
    layers = cell.attention_layer if cell.attention_layer is not None else cell.attention_dense
    layers = (layers if multiple else [layers]) if layers is not None else [None] * len(attentions)
    # The made layers' activation is the cell's argument; a custom layer's its own.
    activation = keras.activations.serialize(cell.attention_activation)
    if cell.attention_layer is not None:
        activation = keras.activations.serialize(layers[0].activation)
    kernel, recurrent, bias = (to_numpy(w) for w in cell.cell.weights)
    size = sum(
        layer.units if layer is not None else m.shape[-1] for layer, m in zip(layers, memories)
    )
    h, a, outputs = np.zeros((B, UNITS)), np.zeros((B, size)), []
    for t in range(inputs.shape[1]):
        h = np.tanh(FEEDS[cell.cell_input_fn](inputs[:, t], a) @ kernel + h @ recurrent + bias)
        parts, weights = [], []
        for attention, layer, memory, mask in zip(attentions, layers, memories, masks):
            context, w = layer_cases.reference_call(
                attention, h[:, None], memory, memory, mask[:, None]
            )  # (B, 1, dv), (B, 1, Tv)
            hc = np.concatenate([h, context[:, 0]], -1)
            parts.append(context[:, 0] if layer is None else _dense(layer, hc, activation))
            weights.append(w[:, 0])
        a = np.concatenate(parts, -1)
        output = {None: [h, a], True: [a], False: [h]}[cell.output_attention]
        outputs.append(np.concatenate(output + weights * cell.return_attention_weights, -1))
    return np.stack(outputs, 1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_options_match_the_numpy_reference(name, rng):
    cell = CASES[name]()
    memories, masks = _memories(rng)
    if not isinstance(cell.attention, list):
        memories, masks = memories[1:], masks[1:]
    inputs = rng.normal(size=(B, T, D_IN)).astype("float32")
    value, value_mask = (memories, masks) if len(memories) > 1 else (memories[0], masks[0])
    states = cell.initial_state(value, value_mask=value_mask)
    outputs = to_numpy(keras.layers.RNN(cell, return_sequences=True)(inputs, initial_state=states))
    expected = reference_run(cell, inputs, memories, masks)
    assert outputs.shape == expected.shape == (B, T, cell.output_size)
    np.testing.assert_allclose(outputs, expected, atol=1e-5)
    if cell.return_attention_weights:  # one alignment history per attention, (B, T, Tv)
        histories = cell.alignment_history(outputs)
        histories = histories if isinstance(histories, tuple) else (histories,)
        assert [tuple(h.shape) for h in histories] == [(B, T, m.shape[1]) for m in memories]
        for history, mask in zip(histories, masks):
            padded = ~np.broadcast_to(mask[:, None], history.shape)
            np.testing.assert_array_equal(to_numpy(history)[padded], 0.0)


def test_two_attentions_state_by_name(rng):
    """An attention with an alignment state and a content one: a tuple entry per attention."""
    monotonic = LuongMonotonicAttention(use_scale=True)
    cell = AttentionRNNCell(
        keras.layers.GRUCell(UNITS), [monotonic, BahdanauAttention(4)], attention_layer_size=[3, 2]
    )
    memories, masks = _memories(rng)
    states = cell.initial_state(memories, value_mask=masks)
    state = cell.unpack_state(states)
    assert isinstance(state, AttentionRNNState)
    assert [tuple(w.shape) for w in state.weights] == [(B, 5), (B, 4)]
    for got, expected in zip(state.mask, masks):
        np.testing.assert_array_equal(to_numpy(got), expected)
    assert sorted(state.alignment[0]) == sorted(monotonic.alignment_state_keys)
    assert state.alignment[1] is None  # content attention keeps none
    assert tuple(state.attention.shape) == (B, 3 + 2)
    for got, expected in zip(cell.pack_state(state), states):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(expected))
    x = rng.normal(size=(B, D_IN)).astype("float32")
    flat_output, flat_states = cell(x, states)
    output, new = cell.step(x, state)  # the same step, by name
    np.testing.assert_allclose(to_numpy(output), to_numpy(flat_output), atol=1e-6)
    for got, expected in zip(cell.pack_state(new), flat_states):
        np.testing.assert_allclose(to_numpy(got), to_numpy(expected), atol=1e-6)
    np.testing.assert_allclose(to_numpy(new.weights[1]).sum(-1), 1.0, atol=1e-5)
    # alignment=None: every attention's initial alignment state.
    fresh = cell.pack_state(state._replace(alignment=None, output=None))
    for got, expected in zip(fresh, states):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(expected))
    with pytest.raises(ValueError, match=r"AttentionRNNState.weights. must hold one entry per"):
        cell.pack_state(state._replace(weights=state.weights[:1]))
    count = len(states)
    message = rf"expected {count} states.*each of the 2 attentions.*Received: {count - 1}"
    with pytest.raises(ValueError, match=message):
        cell.unpack_state(states[:-1])
    with pytest.raises(TypeError, match=r"`state` must be an AttentionRNNState"):
        cell.step(x, states)


def test_keras_round_trip_with_the_new_options(rng, tmp_path):
    first, second = keras.Input((5, 4)), keras.Input((4, UNITS))
    target = keras.Input((None, D_IN))
    cell = AttentionRNNCell(
        keras.layers.GRUCell(UNITS), [BahdanauAttention(5), LuongAttention("general")],
        cell_input_fn=ScaledFeed(), output_attention=False, return_attention_weights=True,
        attention_layer=[keras.layers.Dense(4), keras.layers.Dense(3, activation="tanh")],
    )  # fmt: skip
    model = keras.Model([first, second, target], AttentionRNN(cell)(target, [first, second]))
    cell.cell_input_fn.scale.assign(0.7)  # away from its initial value
    memories, _ = _memories(rng)
    inputs = [*memories, rng.normal(size=(B, T, D_IN)).astype("float32")]
    expected = model.predict(inputs, verbose=0)
    assert expected.shape == (B, T, UNITS + 5 + 4)  # h_t, then each attention's weights
    path = os.path.join(tmp_path, "cell.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(loaded.predict(inputs, verbose=0), expected, atol=1e-5)
    assert len(loaded.weights) == len(model.weights)
    # A registered function, a list of sizes and TFA's linear layer, in a config.
    other = AttentionRNNCell(
        keras.layers.GRUCell(UNITS), [BahdanauAttention(5), ScaledDotProduct()],
        attention_layer_size=[4, 3], attention_activation="linear", cell_input_fn=half_feed,
        output_attention=True,
    )  # fmt: skip
    config = other.get_config()
    restored = AttentionRNNCell.from_config(config)
    assert restored.get_config() == config and restored.cell_input_fn is half_feed
    assert [d.activation for d in restored.attention_dense] == [keras.activations.linear] * 2


def test_a_config_of_today_loads_with_the_defaults():
    cell = AttentionRNNCell(keras.layers.GRUCell(4), BahdanauAttention(4), attention_layer_size=3)
    config = cell.get_config()
    new = {"cell_input_fn", "output_attention", "attention_layer", "attention_activation"}
    restored = AttentionRNNCell.from_config({k: v for k, v in config.items() if k not in new})
    assert restored.get_config() == config
    assert (config["cell_input_fn"], config["output_attention"]) == ("concat", None)
    assert config["attention_activation"] == "tanh"  # Luong's a_t = tanh(W_a [h_t; c_t])


def test_compute_output_shape_and_a_symbolic_step(rng):
    cell = CASES["two_attentions_tfa_linear_a_t"]()
    memories, masks = _memories(rng)
    states = cell.initial_state(memories, value_mask=masks)
    output_shape, state_shapes = cell.compute_output_shape((None, D_IN))
    assert output_shape == (None, 4 + 3 + 5 + 4)  # a_t, then the weights of each
    assert state_shapes == [(None, size) for size in cell.state_size]
    symbolic = [keras.KerasTensor((None, s.shape[1]), dtype=s.dtype) for s in states]
    output, new = cell(keras.KerasTensor((None, D_IN)), symbolic)
    assert tuple(output.shape) == output_shape
    assert [tuple(s.shape) for s in new] == [tuple(s.shape) for s in symbolic]
    eager, _ = cell(rng.normal(size=(B, D_IN)).astype("float32"), states)
    assert tuple(eager.shape) == (B, output_shape[1])
    rnn_shape = AttentionRNN(cell).compute_output_shape(
        (None, T, D_IN), [(None, 5, 4), (None, 4, 6)]
    )
    assert tuple(rnn_shape) == (None, T, output_shape[1])


def test_fresh_attention_layers_differ(rng):
    cell = AttentionRNNCell(
        keras.layers.GRUCell(UNITS), [ScaledDotProduct(), ScaledDotProduct()],
        attention_layer_size=[4, 4],
    )  # fmt: skip
    cell.initial_state(rng.normal(size=(B, 5, UNITS)).astype("float32"))
    cell.build((None, D_IN))
    first, second = (to_numpy(dense.kernel) for dense in cell.attention_dense)
    assert first.shape == second.shape and not np.allclose(first, second)
    assert [d.activation for d in cell.attention_dense] == [keras.activations.tanh] * 2


def _gru():
    return keras.layers.GRUCell(4)


PAIR = [BahdanauAttention(4), LuongAttention("general")]
BAD_ARGUMENTS = [
    (lambda: AttentionRNNCell(_gru(), []), ValueError, r"`attention` must be"),
    (
        lambda: AttentionRNNCell(_gru(), [BahdanauAttention(4), keras.layers.Dense(3)]),
        TypeError, r"`attention\[1\]` must be an attention layer.*Received: <Dense",
    ),
    (
        lambda: AttentionRNNCell(_gru(), PAIR, attention_layer_size=4),
        ValueError, r"`attention_layer_size` must be a list of one size per attention \(2\)",
    ),
    (
        lambda: AttentionRNNCell(_gru(), PAIR, attention_layer_size=[4]),
        ValueError, r"`attention_layer_size` must be one size per attention \(2\).*\[4\]",
    ),
    (
        lambda: AttentionRNNCell(_gru(), PAIR, attention_layer_size=[4, 0]),
        ValueError, r"`attention_layer_size`.*Received: attention_layer_size=0",
    ),
    (
        lambda: AttentionRNNCell(
            _gru(), BahdanauAttention(4), attention_layer_size=3,
            attention_layer=keras.layers.Dense(3),
        ),
        ValueError, r"`attention_layer` must be None when attention_layer_size is given",
    ),
    (
        lambda: AttentionRNNCell(_gru(), PAIR, attention_layer=keras.layers.Dense(3)),
        ValueError, r"`attention_layer` must be one layer per attention \(2\)",
    ),
    (
        lambda: AttentionRNNCell(_gru(), BahdanauAttention(4), attention_layer="dense"),
        TypeError, r"`attention_layer` must be a Keras layer.*'dense'",
    ),
    (
        lambda: AttentionRNNCell(_gru(), BahdanauAttention(4), cell_input_fn="sum"),
        ValueError, r"`cell_input_fn` must be one of \('concat', 'inputs'\).*'sum'",
    ),
    (
        lambda: AttentionRNNCell(_gru(), BahdanauAttention(4), cell_input_fn=3),
        TypeError, r"`cell_input_fn` must be one of.*a callable.*cell_input_fn=3",
    ),
    (
        lambda: AttentionRNNCell(_gru(), BahdanauAttention(4), output_attention="yes"),
        TypeError, r"`output_attention` must be None.*'yes'",
    ),
    (
        lambda: AttentionRNNCell(_gru(), BahdanauAttention(4), attention_activation="nope"),
        ValueError, r"`attention_activation` must be a Keras activation.*'nope'",
    ),
]  # fmt: skip


@pytest.mark.parametrize("make,error,message", BAD_ARGUMENTS)
def test_bad_arguments_name_the_argument(make, error, message):
    with pytest.raises(error, match=rf"AttentionRNNCell: {message}"):
        make()


def test_bad_calls_name_the_argument(rng):
    cell = AttentionRNNCell(_gru(), [BahdanauAttention(4), LuongAttention("general")])
    memories, _ = _memories(rng)
    with pytest.raises(ValueError, match=r"`pack_state` needs the memory's shapes"):
        cell.pack_state(AttentionRNNState([], None, None, None, None, None))
    with pytest.raises(ValueError, match=r"`value` must be one entry per attention \(2\)"):
        cell.initial_state([memories[0]])
    with pytest.raises(ValueError, match=r"`value_mask` must be one entry per attention"):
        cell.initial_state(memories, value_mask=[None, None, None])
    cell.initial_state(memories)
    with pytest.raises(ValueError, match=r"`return_attention_weights` must be True for"):
        cell.alignment_history(np.zeros((B, T, 20), "float32"))
