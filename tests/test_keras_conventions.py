"""Keras conventions a user relies on without thinking: models built before any
data, errors from symbolic calls, decoder masks in the RNN layers.

Each test here failed on 0.1.0 (issue 18): no layer implemented
`compute_output_shape` (Keras's default raised); `AttentionRNN` ignored the
decoder's Keras mask; a mask crashed `keras.layers.RNN(AttentionRNNCell(...))`
on JAX; a float64 layer gave a float32 context on PyTorch. Shapes without data,
symbolic against eager calls and float64 are checked for every public layer by
`test_layer_contract.py`; here: `Sequential`, symbolic errors and decoder masks.
"""

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

LAYERS = {
    "bahdanau": lambda: BahdanauAttention(8),
    "scaled_dot": lambda: ScaledDotProduct(),
    "multi_head": lambda: MultiHead(2, 4),
}


@pytest.mark.parametrize("name", ["bahdanau", "scaled_dot", "multi_head"])
def test_sequential_builds_without_data(name, rng):
    model = keras.Sequential([keras.Input((5, 6)), LAYERS[name](), keras.layers.Dense(3)])
    assert model.output_shape == (None, 5, 3)
    assert model.count_params() > 0
    out = model(rng.normal(size=(2, 5, 6)).astype("float32"))
    assert tuple(out.shape) == (2, 5, 3)


def test_symbolic_calls_still_check_their_inputs():
    with pytest.raises(ValueError, match="LuongAttention.*`key`.*score_mode='dot'"):
        LuongAttention()(keras.Input((5, 6)), keras.Input((9, 4)))
    with pytest.raises(TypeError, match="`query`.*floating-point"):
        BahdanauAttention(4)(keras.Input((5,), dtype="int32"), keras.Input((9, 4)))


# ---------------------------------------------------------------------------
# Decoder masks
# ---------------------------------------------------------------------------
def _seq2seq(return_sequences, attention="luong"):
    layers = {"luong": lambda: LuongAttention("general"), "multi_head": lambda: MultiHead(2, 4)}
    cell = AttentionRNNCell(keras.layers.GRUCell(8), layers[attention](), attention_layer_size=6)
    source = keras.Input((None,), dtype="int32")
    target = keras.Input((None,), dtype="int32")
    memory = keras.layers.Embedding(20, 5, mask_zero=True)(source)
    decoded = keras.layers.Embedding(20, 4, mask_zero=True)(target)
    outputs = AttentionRNN(cell, return_sequences=return_sequences)(decoded, memory)
    return keras.Model([source, target], outputs)


@pytest.mark.parametrize("attention", ["luong", "multi_head"])
def test_attention_rnn_skips_padded_decoder_steps(attention):
    model = _seq2seq(return_sequences=False, attention=attention)
    source = np.array([[3, 4, 5, 0], [6, 7, 0, 0]], "int32")
    padded = np.array([[1, 2, 0, 0], [3, 4, 0, 0]], "int32")
    short = padded[:, :2]
    np.testing.assert_allclose(
        to_numpy(model([source, padded])), to_numpy(model([source, short])), atol=1e-6
    )


def test_attention_rnn_sequences_repeat_state_over_padding():
    model = _seq2seq(return_sequences=True)
    source = np.array([[3, 4, 5, 0]], "int32")
    padded = to_numpy(model([source, np.array([[1, 2, 0, 0]], "int32")]))
    short = to_numpy(model([source, np.array([[1, 2]], "int32")]))
    np.testing.assert_allclose(padded[:, :2], short, atol=1e-6)


@pytest.mark.parametrize("attention", ["bahdanau", "multi_head"])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_keras_rnn_over_the_cell_takes_a_mask(attention, return_sequences, rng):
    # Crashed on JAX ("Incompatible shapes for broadcasting"): Keras's JAX RNN
    # masks each state with a (B, 1) `where` and reads the previous output
    # from the first state.
    layer = BahdanauAttention(4) if attention == "bahdanau" else MultiHead(2, 4)
    cell = AttentionRNNCell(keras.layers.GRUCell(8), layer)
    memory = rng.normal(size=(2, 5, 6)).astype("float32")
    inputs = rng.normal(size=(2, 4, 3)).astype("float32")
    mask = np.array([[True, True, False, False], [True, True, True, True]])
    rnn = keras.layers.RNN(cell, return_sequences=return_sequences)
    masked = to_numpy(rnn(inputs, initial_state=cell.initial_state(memory), mask=mask))
    short = to_numpy(rnn(inputs[:, :2], initial_state=cell.initial_state(memory)))
    full = to_numpy(rnn(inputs, initial_state=cell.initial_state(memory)))
    if return_sequences:
        np.testing.assert_allclose(masked[0, :2], short[0], atol=1e-6)
        np.testing.assert_allclose(masked[0, 2], masked[0, 1], atol=1e-6)  # repeated
        np.testing.assert_allclose(masked[1], full[1], atol=1e-6)
    else:
        np.testing.assert_allclose(masked[0], short[0], atol=1e-6)
        np.testing.assert_allclose(masked[1], full[1], atol=1e-6)
