"""Parity with TensorFlow Addons 0.23's `AttentionWrapper`, on its own outputs.

`fixtures/tfa_attention_wrapper.npz` holds inputs, weights, every step's output,
each mechanism's alignment history and the final state of
`tfa.seq2seq.AttentionWrapper`, written by TFA itself
(`fixtures/make_tfa_attention_wrapper.py`, run where TFA installs: TensorFlow
2.15, Keras 2): two mechanisms over two memories with an `attention_layer_size`
list, `output_attention` both ways, no attention layer with a `cell_input_fn`
passing the inputs alone, custom `attention_layer`s, and one monotonic
mechanism. `AttentionRNNCell` gets the same weights, TFA's linear attention
layer (`attention_activation=None`), and must give the same numbers.
"""

import importlib.util
import os

import keras
import numpy as np
import pytest
from backend_utils import to_numpy

from keras_attention import AttentionRNN
from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import BahdanauMonotonicAttention
from keras_attention import LuongAttention
from keras_attention import masks

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
DATA = np.load(os.path.join(FIXTURES, "tfa_attention_wrapper.npz"))
_spec = importlib.util.spec_from_file_location(
    "make_tfa_attention_wrapper", os.path.join(FIXTURES, "make_tfa_attention_wrapper.py")
)
GENERATOR = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(GENERATOR)  # its cases; it imports TensorFlow Addons only in main()
TAGS = sorted(GENERATOR.CASES)


def _attention(kind):
    if kind == "bahdanau":
        return BahdanauAttention(6, use_bias=False)  # TFA's score: no bias in the tanh
    if kind == "bahdanau_monotonic":
        return BahdanauMonotonicAttention(6)
    return LuongAttention("general", use_scale=kind == "luong_scale")


def _weight(tag, name):
    return DATA[f"{tag}/{name}"]


def _cell(tag, return_attention_weights=True):
    """The cell of case `tag` with TFA's weights, and its memory and masks."""
    case = GENERATOR.CASES[tag]
    attentions = [_attention(kind) for kind in case["mechanisms"]]
    single = len(attentions) == 1
    layers = None
    if "attention_layer" in case:
        layers = [keras.layers.Dense(**spec) for spec in case["attention_layer"]]
    rnn = {"gru": keras.layers.GRUCell, "lstm": keras.layers.LSTMCell}[case["rnn"]]
    cell = AttentionRNNCell(
        rnn(GENERATOR.UNITS), attentions[0] if single else attentions,
        attention_layer_size=case.get("attention_layer_size"),
        return_attention_weights=return_attention_weights,
        cell_input_fn=case.get("cell_input_fn", "concat"),
        output_attention=case.get("output_attention", True), attention_layer=layers,
        attention_activation=None,  # TFA's attention layer is linear
    )  # fmt: skip
    memory = [DATA[f"memory_{i}"] for i in range(len(attentions))]
    mask = [
        masks.padding_mask(DATA[f"lengths_{i}"], memory[i].shape[1]) for i in range(len(attentions))
    ]
    memory, mask = (memory[0], mask[0]) if single else (memory, mask)
    cell.initial_state(memory, value_mask=mask)  # builds the attentions
    cell.build((None, GENERATOR.INPUT_DIM))
    for index, variable in enumerate(cell.cell.weights):
        variable.assign(_weight(tag, f"cell/{index}"))
    for index, attention in enumerate(attentions):
        prefix = f"mechanism_{index}/"
        names = {k.split("/")[-1] for k in DATA.files if k.startswith(f"{tag}/{prefix}")}
        attention.key_dense.kernel.assign(_weight(tag, prefix + "memory_kernel"))
        targets = {
            "query_kernel": ("query_dense", "kernel"),
            "attention_v": ("v",),
            "attention_g": ("g",),
            "attention_score_bias": ("score_bias",),
        }
        for name in names - {"memory_kernel"}:
            variable = attention
            for attribute in targets[name]:
                variable = getattr(variable, attribute)
            variable.assign(_weight(tag, prefix + name))
    made = layers or cell.attention_dense or []
    for index, layer in enumerate(made if isinstance(made, list) else [made]):
        for j, variable in enumerate(layer.weights):
            variable.assign(_weight(tag, f"layer_{index}/{j}"))
    return cell, memory, mask


def test_fixture_is_complete():
    assert str(DATA["tfa_version"]) == "0.23.0"
    assert sorted({key.split("/")[0] for key in DATA.files if "/" in key}) == TAGS
    assert len(TAGS) == 5


@pytest.mark.parametrize("tag", TAGS)
def test_steps_match_tfa_outputs_alignment_histories_and_final_state(tag):
    cell, memory, mask = _cell(tag)
    expected = _weight(tag, "outputs")  # (B, T, output_size)
    state = cell.unpack_state(cell.initial_state(memory, value_mask=mask))
    outputs = []
    for step in range(DATA["inputs"].shape[1]):  # one step at a time, as TFA ran
        output, state = cell.step(DATA["inputs"][:, step], state)
        outputs.append(to_numpy(output))
    outputs = np.stack(outputs, axis=1)
    np.testing.assert_allclose(outputs[..., : expected.shape[-1]], expected, atol=1e-5)
    histories = cell.alignment_history(outputs)  # TFA's alignment_history, one per mechanism
    histories = histories if isinstance(histories, tuple) else (histories,)
    assert len(histories) == len(GENERATOR.CASES[tag]["mechanisms"])
    for index, history in enumerate(histories):
        expected_history = _weight(tag, f"alignments_{index}")  # (B, T, Tv)
        np.testing.assert_allclose(to_numpy(history), expected_history, atol=1e-5)
    np.testing.assert_allclose(to_numpy(state.attention), _weight(tag, "attention"), atol=1e-5)
    for index, cell_state in enumerate(state.cell_states):
        expected_state = _weight(tag, f"cell_state/{index}")
        np.testing.assert_allclose(to_numpy(cell_state), expected_state, atol=1e-5)


def test_attention_rnn_over_two_memories_matches_tfa():
    """The whole sequence in one layer, with a list of memories and of masks."""
    tag = "two_linear_output_attention"
    cell, memory, mask = _cell(tag)
    outputs = AttentionRNN(cell)(DATA["inputs"], memory, memory_mask=mask)
    expected = _weight(tag, "outputs")
    np.testing.assert_allclose(to_numpy(outputs)[..., : expected.shape[-1]], expected, atol=1e-5)
    history = to_numpy(cell.alignment_history(outputs)[1])
    np.testing.assert_allclose(history, _weight(tag, "alignments_1"), atol=1e-5)


def _assert_tfa_final_state(tag, cell, states):
    """`states` (a flat list) against TFA's final `AttentionWrapperState`."""
    final = cell.unpack_state(states)
    np.testing.assert_allclose(to_numpy(final.attention), _weight(tag, "attention"), atol=1e-5)
    for index, cell_state in enumerate(final.cell_states):
        expected_state = _weight(tag, f"cell_state/{index}")
        np.testing.assert_allclose(to_numpy(cell_state), expected_state, atol=1e-5)
    weights = final.weights if isinstance(final.weights, tuple) else (final.weights,)
    for index, weights_i in enumerate(weights):  # TFA's state.alignments: the last step's
        expected_weights = _weight(tag, f"alignments_{index}")[:, -1]
        np.testing.assert_allclose(to_numpy(weights_i), expected_weights, atol=1e-5)


@pytest.mark.parametrize("tag", ["two_linear_cell_output", "one_monotonic"])
def test_attention_rnn_return_state_is_tfas_final_state(tag):
    """`return_state=True`: the outputs, then the final state TFA's wrapper ended with."""
    cell, memory, mask = _cell(tag)
    outputs, *states = AttentionRNN(cell, return_state=True)(
        DATA["inputs"], memory, memory_mask=mask
    )
    expected = _weight(tag, "outputs")
    np.testing.assert_allclose(to_numpy(outputs)[..., : expected.shape[-1]], expected, atol=1e-5)
    _assert_tfa_final_state(tag, cell, states)
    assert [tuple(s.shape) for s in states] == [(3, size) for size in cell.state_size]


def test_keras_rnn_return_state_is_tfas_final_state():
    """The same final state through a plain `keras.layers.RNN` over `initial_state`."""
    tag = "two_linear_output_attention"
    cell, memory, mask = _cell(tag)
    rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    outputs, *states = rnn(
        DATA["inputs"], initial_state=cell.initial_state(memory, value_mask=mask)
    )
    _assert_tfa_final_state(tag, cell, states)


@pytest.mark.parametrize("length", [7, None])
def test_attention_rnn_return_state_in_a_functional_model(length):
    """Symbolic shapes are the cell's `state_size` (None for an unknown length); numbers TFA's."""
    tag = "one_monotonic"
    cell, memory, mask = _cell(tag, return_attention_weights=False)  # any memory length
    inputs = keras.Input((None, DATA["inputs"].shape[-1]))
    memory_in = keras.Input((length, memory.shape[-1]))
    mask_in = keras.Input((length,), dtype="bool")
    outputs, *states = AttentionRNN(cell, return_sequences=False, return_state=True)(
        inputs, memory_in, memory_mask=mask_in
    )
    sizes = cell.state_size  # LSTM: output, h, c, a_t, w, keys, values, mask, alignment
    assert sizes[:4] == [6, 8, 8, 6]
    tv = length  # the weights, the mask and the alignment state are Tv; keys Tv * 6, values Tv * 6
    assert sizes[4:] == [tv, tv and tv * 6, tv and tv * 6, tv, tv]
    assert [tuple(s.shape) for s in states] == [(None, size) for size in sizes]
    model = keras.Model([inputs, memory_in, mask_in], [outputs, *states])
    last, *final = model([DATA["inputs"], memory, to_numpy(mask)])
    np.testing.assert_allclose(to_numpy(last), _weight(tag, "outputs")[:, -1], atol=1e-5)
    cell.initial_state(memory, value_mask=mask)  # the eager call's layout, for unpacking
    _assert_tfa_final_state(tag, cell, final)
