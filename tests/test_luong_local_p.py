"""LuongLocalPAttention against its definition (Luong et al. 2015, section 3.2) in NumPy."""

import os

import keras
import numpy as np
import pytest
import reference
from backend_utils import to_numpy
from backend_utils import value_and_grad

from keras_attention import AttentionRNNCell
from keras_attention import LuongLocalPAttention

DQ, DK, DV = 6, 5, 4

CASES = {
    "general": lambda **kw: LuongLocalPAttention(window_width=2, **kw),
    "dot_scaled": lambda **kw: LuongLocalPAttention(
        window_width=3, score_mode="dot", use_scale=True, position_units=3, **kw
    ),
    "concat": lambda **kw: LuongLocalPAttention(window_width=1, score_mode="concat", units=4, **kw),
}


def _w(variable):
    return to_numpy(variable).astype(np.float64)


def build_randomized(name, rng):
    layer = CASES[name]()
    dk = DQ if layer.score_mode == "dot" else DK
    layer.build((None, None, DQ), (None, None, DV), (None, None, dk))
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.7)
    return layer


def make_inputs(layer, rng, tq=4, tv=9):
    dk = DQ if layer.score_mode == "dot" else DK
    q = rng.normal(size=(2, tq, DQ)).astype("float32")
    k = rng.normal(size=(2, tv, dk)).astype("float32")
    v = rng.normal(size=(2, tv, DV)).astype("float32")
    return q, k, v


def reference_local_p(layer, q, k, v, value_mask=None):
    """(context, weights) of local-p, one query and one position at a time."""
    batch, steps, tv = q.shape[0], q.shape[1], k.shape[1]
    mask = np.ones((batch, tv), bool) if value_mask is None else value_mask
    k, v = np.where(mask[..., None], k, 0.0), np.where(mask[..., None], v, 0.0)
    if layer.score_mode == "dot":
        logits = reference.dot_scores(q, k)
    elif layer.score_mode == "general":
        logits = reference.dot_scores(q, reference.dense(k, _w(layer.key_dense.kernel)))
    else:
        logits = reference.additive_scores(
            reference.dense(q, _w(layer.query_dense.kernel)),
            reference.dense(k, _w(layer.key_dense.kernel)),
            _w(layer.v),
        )
    logits = logits * (_w(layer.g) if layer.use_scale else 1.0)
    width, sigma = layer.window_width, layer.window_width / 2
    weights = np.zeros((batch, steps, tv))
    for n in range(batch):
        length = mask[n].sum()
        for i in range(steps):
            hidden = np.tanh(q[n, i] @ _w(layer.position_dense.kernel))
            centre = length / (1.0 + np.exp(-(hidden @ _w(layer.position_v))))
            keep = mask[n] & (np.abs(np.arange(tv) - centre) <= width)
            if keep.any():
                row = np.exp(logits[n, i][keep] - logits[n, i][keep].max())
                weights[n, i, keep] = row / row.sum()
            weights[n, i] *= np.exp(-((np.arange(tv) - centre) ** 2) / (2 * sigma**2))
    return np.einsum("bqk,bkd->bqd", weights, v), weights


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy_and_steps_match_the_full_call(name, masked, rng):
    layer = build_randomized(name, rng)
    q, k, v = make_inputs(layer, rng)
    value_mask = np.array([[True] * 9, [True] * 4 + [False] * 5]) if masked else None
    context, weights = layer(q, v, key=k, value_mask=value_mask, return_attention_scores=True)
    ref_context, ref_weights = reference_local_p(layer, q, k, v, value_mask)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-5)
    memory = layer.project_memory(k, v, value_mask)
    for t in range(q.shape[1]):
        step = layer.attend(q[:, t], *memory, value_mask=value_mask)
        np.testing.assert_allclose(to_numpy(step), ref_context[:, t], atol=1e-5)
    if masked:  # the second sentence's positions lie in [0, 4]
        np.testing.assert_array_equal(ref_weights[1, :, 4:], 0.0)


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


@pytest.mark.parametrize("name", sorted(CASES))
def test_config_and_keras_file_round_trip(name, rng, tmp_path):
    layer = CASES[name](name="attention")
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config
    query = keras.Input((None, DQ))
    value = keras.Input((None, DV))
    key = keras.Input((None, DQ if layer.score_mode == "dot" else DK))
    model = keras.Model([query, value, key], layer(query, value, key=key))
    for variable in model.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.7)
    q, k, v = make_inputs(layer, rng)
    expected = to_numpy(model([q, v, k]))
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(to_numpy(loaded([q, v, k])), expected, atol=1e-6)


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
