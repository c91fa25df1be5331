"""`AttentionRNNCell` and `AttentionRNN` over a grid memory `(B, H, W, C)`.

The cell flattens the grid once, row-major, to `H*W` positions. The reference
is the same cell over the memory reshaped by NumPy to `(B, H*W, C)` (a
sequence memory, checked against NumPy elsewhere): outputs, states and the
alignment history must agree, the history shaped like the grid. Attentions
that do not attend over grids refuse one up front, naming the argument.
"""

import os

import keras
import numpy as np
import pytest
from backend_utils import to_numpy

from keras_attention import AttentionRNN
from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import LocationSensitiveAttention
from keras_attention import LuongAttention
from keras_attention import MultiHead
from keras_attention import ScaledDotProduct

B, T, H, W, C, D_IN = 2, 4, 3, 5, 6, 3

ATTENTIONS = {
    "bahdanau": lambda: BahdanauAttention(5),
    "luong_general": lambda: LuongAttention("general"),
    "scaled_dot_product": lambda: ScaledDotProduct(),  # the cell's output size is C
}


def _cell(kind, **kwargs):
    cell = AttentionRNNCell(
        keras.layers.GRUCell(C), ATTENTIONS[kind](), return_attention_weights=True, **kwargs
    )
    return cell


def _data(rng, masked=True):
    memory = rng.normal(size=(B, H, W, C)).astype("float32")
    targets = rng.normal(size=(B, T, D_IN)).astype("float32")
    mask = np.ones((B, H, W), bool)
    if masked:
        mask[0, 2:, :] = False  # the last row of the first image is padding
        mask[1, :, 3:] = False
    return memory, targets, mask


def _randomize(cell, rng):
    for variable in cell.weights:
        variable.assign(rng.normal(scale=0.5, size=variable.shape).astype("float32"))


def _run(cell, memory, targets, mask):
    states = cell.initial_state(memory, value_mask=mask)
    outputs = keras.layers.RNN(cell, return_sequences=True)(targets, initial_state=states)
    return outputs


@pytest.mark.parametrize("kind", sorted(ATTENTIONS))
def test_grid_memory_equals_the_memory_flattened_by_numpy(kind):
    rng = np.random.default_rng(0)
    memory, targets, mask = _data(rng)
    cell = _cell(kind)
    flat_memory, flat_mask = memory.reshape(B, H * W, C), mask.reshape(B, H * W)
    expected = to_numpy(_run(cell, flat_memory, targets, flat_mask))  # builds the cell
    _randomize(cell, rng)
    expected = to_numpy(_run(cell, flat_memory, targets, flat_mask))
    outputs = _run(cell, memory, targets, mask)
    np.testing.assert_allclose(to_numpy(outputs), expected, rtol=1e-5, atol=1e-5)

    history = to_numpy(cell.alignment_history(outputs))
    assert history.shape == (B, T, H, W)  # shaped like the grid
    flat_history = expected[..., -H * W :].reshape(B, T, H, W)  # NumPy's row-major split
    np.testing.assert_allclose(history, flat_history, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(history.sum(axis=(2, 3)), 1.0, rtol=1e-5)
    assert np.all(history[~np.broadcast_to(mask[:, None], history.shape)] == 0.0)

    # The state holds the flattened memory: the last weights are (B, H*W).
    states = cell.initial_state(memory, value_mask=mask)
    state = cell.unpack_state(states)
    assert tuple(state.values.shape)[:2] == (B, H * W)
    assert tuple(state.mask.shape) == (B, H * W)


def test_attention_rnn_over_a_grid_saves_and_reloads(tmp_path):
    rng = np.random.default_rng(1)
    memory, targets, mask = _data(rng)
    cell = _cell("bahdanau", attention_layer_size=4)
    targets_in = keras.Input((T, D_IN), name="targets")
    memory_in = keras.Input((H, W, C), name="memory")
    mask_in = keras.Input((H, W), dtype="bool", name="mask")
    outputs = AttentionRNN(cell)(targets_in, memory_in, memory_mask=mask_in)
    model = keras.Model([targets_in, memory_in, mask_in], outputs)
    _randomize(model, rng)
    got = to_numpy(model([targets, memory, mask]))
    expected = to_numpy(
        AttentionRNN(cell)(targets, memory.reshape(B, H * W, C), memory_mask=mask.reshape(B, -1))
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)

    path = os.path.join(tmp_path, "grid.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(to_numpy(loaded([targets, memory, mask])), got, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "attention",
    [lambda: MultiHead(2, 3), lambda: LocationSensitiveAttention(4, filters=2, kernel_size=3)],
    ids=["multi_head", "location_sensitive"],
)
def test_attentions_without_grids_refuse_a_grid_memory_by_name(attention):
    rng = np.random.default_rng(2)
    memory, targets, _ = _data(rng, masked=False)
    layer = attention()
    cell = AttentionRNNCell(keras.layers.GRUCell(C), layer)
    name = type(layer).__name__
    with pytest.raises(ValueError, match=r"`value` expected a tensor of rank 3") as error:
        cell.initial_state(memory)
    assert f"Received: shape {memory.shape}" in str(error.value)
    assert name in str(error.value)
    cell = AttentionRNNCell(keras.layers.GRUCell(C), attention())
    with pytest.raises(ValueError, match=r"`memory` expected a tensor of rank 3"):
        AttentionRNN(cell)(targets, memory)


def test_a_rank_2_memory_is_refused_by_name():
    cell = _cell("bahdanau")
    with pytest.raises(ValueError, match=r"`value` expected a tensor of rank 3.*shape \(2, 6\)"):
        cell.initial_state(np.zeros((2, C), "float32"))


def test_one_grid_among_several_attentions_is_named_by_index():
    rng = np.random.default_rng(3)
    memory, targets, mask = _data(rng)
    sequence = rng.normal(size=(B, 7, C)).astype("float32")
    cell = AttentionRNNCell(
        keras.layers.GRUCell(C),
        [BahdanauAttention(4), MultiHead(2, 3)],
        return_attention_weights=True,
    )
    with pytest.raises(ValueError, match=r"`value\[1\]` expected a tensor of rank 3"):
        cell.initial_state([memory, memory])
    outputs = _run(cell, [memory, sequence], targets, [mask, None])
    grid_history, heads_history = cell.alignment_history(outputs)
    assert tuple(grid_history.shape) == (B, T, H, W)
    assert tuple(heads_history.shape) == (B, T, 2, 7)
    expected = _run(
        cell, [memory.reshape(B, H * W, C), sequence], targets, [mask.reshape(B, -1), None]
    )
    np.testing.assert_allclose(to_numpy(outputs), to_numpy(expected), rtol=1e-5, atol=1e-5)
