"""LuongLocalPAttention against its definition (Luong et al. 2015, section 3.2) in NumPy.

The NumPy reference is `layer_cases.reference_local_p`; the full call and the
step against it, configs and `.keras` files are `test_layer_contract.py`'s
(cases `local_p_*` of `layer_cases.REGISTRY`). Here: what only local-p does.
"""

import keras
import layer_cases
import numpy as np
import pytest
from backend_utils import to_numpy
from backend_utils import value_and_grad
from layer_cases import ALIGNMENT_DIMS
from layer_cases import LOCAL_P
from layer_cases import reference_local_p

from keras_attention import AttentionRNNCell

DQ, DK, DV = ALIGNMENT_DIMS
CASES = {name.removeprefix("local_p_"): make for name, make in LOCAL_P.items()}


def build_randomized(name, rng):
    return layer_cases.build_randomized(f"local_p_{name}", rng)


def make_inputs(layer, rng, tq=4, tv=9):
    dk = DQ if layer.score_mode == "dot" else DK
    q = rng.normal(size=(2, tq, DQ)).astype("float32")
    k = rng.normal(size=(2, tv, dk)).astype("float32")
    v = rng.normal(size=(2, tv, DV)).astype("float32")
    return q, k, v


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "mixed_float16", "mixed_bfloat16"])
def test_fully_masked_memory_gives_zeros_never_nan(dtype, rng):
    layer = CASES["general"](dtype=dtype)
    q, k, v = make_inputs(layer, rng)
    value_mask = np.zeros((2, 9), bool)
    value_mask[0, :3] = True
    context, weights = layer(q, v, key=k, value_mask=value_mask, return_attention_scores=True)
    context, weights = to_numpy(context).astype("float32"), to_numpy(weights).astype("float32")
    assert np.isfinite(context).all() and np.isfinite(weights).all()
    np.testing.assert_array_equal(context[1], 0.0)
    np.testing.assert_array_equal(weights[0, :, 3:], 0.0)

    def loss(query, value):
        return keras.ops.sum(
            keras.ops.cast(layer(query, value, key=k, value_mask=value_mask), "float32")
        )

    _, grads = value_and_grad(loss, q.astype(layer.compute_dtype), v.astype(layer.compute_dtype))
    for grad in grads:
        assert np.isfinite(grad.astype("float32")).all()


def test_the_predicted_position_moves_the_window(rng):
    layer = build_randomized("general", rng)
    q, k, v = make_inputs(layer, rng)
    centre = to_numpy(layer.positions(q, value_length=9))
    assert centre.shape == (2, 4) and np.all((centre >= 0) & (centre <= 9))
    before = to_numpy(layer(q, v, key=k))
    layer.position_v.assign(to_numpy(layer.position_v) + 2.0)
    assert not np.allclose(to_numpy(layer.positions(q, value_length=9)), centre)
    assert not np.allclose(to_numpy(layer(q, v, key=k)), before)


def test_compiles_under_xla_or_jax_jit(rng):
    layer = build_randomized("general", rng)
    q, k, v = make_inputs(layer, rng)
    value_mask = np.array([[True] * 9, [True] * 4 + [False] * 5])
    expected = reference_local_p(layer, q, k, v, value_mask)[0]
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        compiled = tf.function(
            lambda query: layer(query, v, key=k, value_mask=value_mask), jit_compile=True
        )
        context = compiled(tf.constant(q))
    elif backend == "jax":
        import jax

        context = jax.jit(lambda query: layer(query, v, key=k, value_mask=value_mask))(q)
    else:
        pytest.skip("no compiler test on this backend")
    np.testing.assert_allclose(to_numpy(context), expected, atol=1e-5)


def test_inside_attention_rnn_cell_with_a_decoder_mask(rng):
    cell = AttentionRNNCell(
        keras.layers.GRUCell(DQ), CASES["general"](), attention_layer_size=5,
        return_attention_weights=True,
    )  # fmt: skip
    encoder = rng.normal(size=(2, 9, DV)).astype("float32")
    memory_mask = np.array([[True] * 9, [True] * 4 + [False] * 5])
    inputs = rng.normal(size=(2, 4, 3)).astype("float32")
    decoder_mask = np.array([[True] * 4, [True, True, False, False]])
    states = cell.initial_state(encoder, value_mask=memory_mask)
    full = to_numpy(
        keras.layers.RNN(cell, return_sequences=True)(
            inputs, initial_state=states, mask=decoder_mask
        )
    )
    np.testing.assert_array_equal(full[1, :, -5:], 0.0)  # memory padding
    previous = np.zeros_like(full[:, 0])
    for t in range(4):
        output, new_states = cell(inputs[:, t], states)
        keep = decoder_mask[:, t, None]
        previous = np.where(keep, to_numpy(output), previous)
        np.testing.assert_allclose(previous, full[:, t], atol=1e-5)
        states = [np.where(keep, to_numpy(n), to_numpy(o)) for n, o in zip(new_states, states)]
