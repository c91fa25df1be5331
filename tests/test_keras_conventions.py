"""Keras conventions a user relies on without thinking: shapes known before any
data, decoder masks in the RNN layers, outputs in the layer's dtype.

Each test here failed on 0.1.0 (issue 18): no layer implemented
`compute_output_shape` (Keras's default raised); `AttentionRNN` ignored the
decoder's Keras mask; a mask crashed `keras.layers.RNN(AttentionRNNCell(...))`
on JAX; a float64 layer gave a float32 context on PyTorch.
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
    "luong_general": lambda: LuongAttention("general"),
    "luong_concat": lambda: LuongAttention("concat", units=8),
    "scaled_dot": lambda: ScaledDotProduct(),
    "multi_head": lambda: MultiHead(2, 4),
    "multi_head_out": lambda: MultiHead(2, 4, output_dim=7),
}
HEADS = {"multi_head": 2, "multi_head_out": 2}
# (query shape, value shape): sequences, one decoding step, unknown lengths.
SHAPES = [((2, 5, 6), (2, 9, 4)), ((2, 6), (2, 9, 4)), ((None, None, 6), (None, None, 4))]


def _context_features(name, query_features, value_features):
    return {"multi_head": query_features, "multi_head_out": 7}.get(name, value_features)


@pytest.mark.parametrize("shapes", SHAPES, ids=["sequence", "step", "unknown"])
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_compute_output_shape_without_data(name, shapes):
    query_shape, value_shape = shapes
    layer = LAYERS[name]()
    shape = layer.compute_output_shape(query_shape, value_shape)
    assert shape == (*query_shape[:-1], _context_features(name, 6, 4))
    assert not layer.built  # no call, no weights needed


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_symbolic_outputs_match_the_eager_ones(name, rng):
    layer = LAYERS[name]()
    query, value = keras.Input((5, 6)), keras.Input((9, 6))
    context, weights = layer(query, value, return_attention_scores=True)
    heads = (HEADS[name],) if name in HEADS else ()
    assert tuple(context.shape) == (None, 5, _context_features(name, 6, 6))
    assert tuple(weights.shape) == (None, *heads, 5, 9)
    eager_context, eager_weights = layer(
        rng.normal(size=(3, 5, 6)).astype("float32"),
        rng.normal(size=(3, 9, 6)).astype("float32"),
        return_attention_scores=True,
    )
    assert tuple(eager_context.shape)[1:] == tuple(context.shape)[1:]
    assert tuple(eager_weights.shape)[1:] == tuple(weights.shape)[1:]
    step_context, step_weights = layer(keras.Input((6,)), value, return_attention_scores=True)
    assert tuple(step_context.shape) == (None, _context_features(name, 6, 6))
    assert tuple(step_weights.shape) == (None, *heads, 9)


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


# ---------------------------------------------------------------------------
# Output dtypes
# ---------------------------------------------------------------------------
def _backend_float64():
    """What the backend makes of float64 (JAX without x64: float32)."""
    return keras.backend.standardize_dtype(keras.ops.ones((), "float64").dtype)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_a_float64_layer_computes_and_returns_float64(name, rng):
    layer = {
        "bahdanau": lambda: BahdanauAttention(8, dtype="float64"),
        "luong_general": lambda: LuongAttention("general", dtype="float64"),
        "luong_concat": lambda: LuongAttention("concat", units=8, dtype="float64"),
        "scaled_dot": lambda: ScaledDotProduct(dtype="float64"),
        "multi_head": lambda: MultiHead(2, 4, dtype="float64"),
        "multi_head_out": lambda: MultiHead(2, 4, output_dim=7, dtype="float64"),
    }[name]()
    query, value = rng.normal(size=(2, 5, 6)), rng.normal(size=(2, 9, 6))
    expected = _backend_float64()
    for q in (query, query[:, 0]):
        context, weights = layer(q, value, return_attention_scores=True)
        assert keras.backend.standardize_dtype(context.dtype) == expected
        assert keras.backend.standardize_dtype(weights.dtype) == expected
    if expected == "float64":  # float64 precision, not float32 cast up
        plain = ScaledDotProduct(dtype="float64")
        got = to_numpy(plain(query, value))
        logits = query @ value.transpose(0, 2, 1) / np.sqrt(6)
        w = np.exp(logits - logits.max(-1, keepdims=True))
        want = (w / w.sum(-1, keepdims=True)) @ value
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
