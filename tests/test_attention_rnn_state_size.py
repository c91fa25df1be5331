"""`AttentionRNNCell.state_size` and `compute_output_shape` against the states a step returns.

The expected sizes are worked out by hand from each layer's definition (a
Bahdanau key is `units` wide, a multi-head key `H * dk`, a mask `Tv`), not read
from the cell. A TFA user builds zero states from `state_size`; they must step.
"""

import keras
import numpy as np
import pytest
from backend_utils import to_numpy

from keras_attention import AttentionRNN
from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import GMMAttention
from keras_attention import LuongAttention
from keras_attention import MultiHead

B, TV, DV, D_IN, UNITS = 2, 7, 6, 3, 8

# name -> (attention, size of a_t, [weights, keys, values, mask, *alignment] sizes for
# Tv = 7, dv = 6). a_t is the context: the memory's dv, or the query's size for MultiHead.
CASES = {
    # keys (B, Tv, units=6), values the memory (B, Tv, dv=6)
    "bahdanau": (lambda: BahdanauAttention(6), DV, [TV, TV * 6, TV * DV, TV]),
    # keys W_k k: (B, Tv, query size = 8), values the memory
    "luong_general": (lambda: LuongAttention("general"), DV, [TV, TV * UNITS, TV * DV, TV]),
    # 2 heads of 4: keys and values (B, 2, Tv, 4), weights (B, 2, Tv)
    "multi_head": (lambda: MultiHead(2, 4), UNITS, [2 * TV, 2 * TV * 4, 2 * TV * 4, TV]),
    # keys the memory's first feature (B, Tv, 1); alignment: weights (B, Tv), means (B, K=3)
    "gmm": (lambda: GMMAttention(num_mixtures=3, units=5), DV, [TV, TV, TV * DV, TV, TV, 3]),
}


def _cell(name):
    return AttentionRNNCell(keras.layers.GRUCell(UNITS), CASES[name][0]())


def _memory_sizes(cell):
    """The sizes after the previous output, the GRU state and a_t."""
    return list(cell.state_size[3:])


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_size_is_the_size_of_every_state_a_step_returns(name, rng):
    cell = _cell(name)
    memory = rng.normal(size=(B, TV, DV)).astype("float32")
    states = cell.initial_state(memory)
    assert cell.state_size[:3] == [UNITS + CASES[name][1], UNITS, CASES[name][1]]
    assert _memory_sizes(cell) == CASES[name][2]
    output, new_states = cell(rng.normal(size=(B, D_IN)).astype("float32"), states)
    returned = [tuple(s.shape) for s in new_states]
    assert returned == [(B, size) for size in cell.state_size]
    output_shape, state_shapes = cell.compute_output_shape((B, D_IN))
    assert tuple(output.shape) == output_shape
    assert [tuple(s) for s in state_shapes] == returned


@pytest.mark.parametrize("name", sorted(CASES))
def test_zero_states_built_from_state_size_step(name, rng):
    """TFA's way: zeros of `(B, n)` for each `n` of `state_size`, then a step."""
    cell = _cell(name)
    cell.initial_state(rng.normal(size=(B, TV, DV)).astype("float32"))
    zeros = [np.zeros((B, size), "float32") for size in cell.state_size]
    output, new_states = cell(rng.normal(size=(B, D_IN)).astype("float32"), zeros)
    assert [tuple(s.shape) for s in new_states] == [z.shape for z in zeros]
    assert np.all(np.isfinite(to_numpy(output)))
    # A zero mask hides the whole memory: the weights and the context are zero.
    weights = cell.attention_weights(new_states)
    np.testing.assert_array_equal(to_numpy(weights), 0.0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unknown_memory_length_is_reported_as_none(name):
    """With `Tv` unknown, every size that depends on it is None; the others are known."""
    cell = _cell(name)
    states = cell.initial_state(keras.Input((None, DV)))
    expected = [None if name != "gmm" or index != 5 else 3 for index in range(len(CASES[name][2]))]
    assert _memory_sizes(cell) == expected
    attention_size = CASES[name][1]  # [h_t; a_t], h_t, a_t: known without Tv
    assert cell.state_size[:3] == [UNITS + attention_size, UNITS, attention_size]
    output_shape, state_shapes = cell.compute_output_shape((None, D_IN))
    assert [tuple(s) for s in state_shapes] == [(None, size) for size in cell.state_size]
    # A symbolic step from states of those shapes returns them.
    symbolic = [keras.KerasTensor(shape) for shape in state_shapes]
    output, new_states = cell(keras.KerasTensor((None, D_IN)), symbolic)
    assert tuple(output.shape) == output_shape
    assert [tuple(s.shape) for s in new_states] == [tuple(s) for s in state_shapes]
    for state, size in zip(states, cell.state_size):  # initial_state's, no less specific
        assert state.shape[1] in (None, size)


def test_state_size_before_the_memory_is_known_names_only_the_cells():
    cell = AttentionRNNCell(keras.layers.LSTMCell(UNITS), BahdanauAttention(6))
    assert cell.state_size == [None, UNITS, UNITS, None, None, None, None, None]


def test_two_attentions_over_memories_of_their_own_lengths(rng):
    cell = AttentionRNNCell(
        keras.layers.GRUCell(UNITS), [BahdanauAttention(6), LuongAttention("general")]
    )
    memories = [rng.normal(size=(B, 7, 6)), rng.normal(size=(B, 5, 4))]
    states = cell.initial_state([m.astype("float32") for m in memories])
    # weights 7, 5; Bahdanau keys 7 * 6, values 7 * 6, mask 7;
    # Luong keys 5 * 8 (W_k to the query's size), values 5 * 4, mask 5
    assert _memory_sizes(cell) == [7, 5, 42, 42, 7, 40, 20, 5]
    zeros = [np.zeros((B, size), "float32") for size in cell.state_size]
    _, new_states = cell(rng.normal(size=(B, D_IN)).astype("float32"), zeros)
    assert [tuple(s.shape) for s in new_states] == [tuple(s.shape) for s in states]


def test_keras_rnn_runs_from_zero_states_of_state_size(rng):
    cell = _cell("bahdanau")
    cell.initial_state(rng.normal(size=(B, TV, DV)).astype("float32"))
    zeros = [np.zeros((B, size), "float32") for size in cell.state_size]
    outputs = keras.layers.RNN(cell, return_sequences=True)(
        rng.normal(size=(B, 4, D_IN)).astype("float32"), initial_state=zeros
    )
    assert tuple(outputs.shape) == (B, 4, cell.output_size)


def test_attention_rnn_output_shape_with_an_unknown_memory_length():
    cell = _cell("bahdanau")
    outputs = AttentionRNN(cell)(keras.Input((None, D_IN)), keras.Input((None, DV)))
    assert tuple(outputs.shape) == (None, None, cell.output_size)
