"""The content layers over sequences (`layer_cases.CASES`) against NumPy truth.

Every kind of mask, probability functions, a rank-2 query, causal decoding over
a growing history, permutations, fully masked rows and dropout. The checks every
public layer passes (configs, `.keras` files, shapes, float64, mixed precision,
fresh weights, mask invariance, causality, `step`, padding masks against NumPy)
are `test_layer_contract.py`'s.
"""

import keras
import numpy as np
import pytest
import reference
from backend_utils import to_numpy
from backend_utils import value_and_grad
from layer_cases import CASES
from layer_cases import build_randomized
from layer_cases import make_inputs
from layer_cases import reference_call

ALL = sorted(CASES)


def _mask_for(kind, rng, batch, tq, tv):
    """(call kwargs, the (B, Tq, Tv) mask they mean) for one kind of masking."""
    if kind == "none":
        return {}, None
    if kind == "padding":
        value_mask = np.arange(tv)[None] < np.array([[tv], [2]])[:batch]
        return {"value_mask": value_mask}, np.broadcast_to(value_mask[:, None], (batch, tq, tv))
    if kind == "causal":
        return {"use_causal_mask": True}, np.broadcast_to(reference.causal(tq, tv), (batch, tq, tv))
    if kind == "explicit":
        mask = rng.random((batch, tq, tv)) > 0.3
        mask[..., 0] = True
        return {"attention_mask": mask}, mask
    if kind == "fully_masked":  # one sentence with no keys, one masked query
        value_mask = np.ones((batch, tv), bool)
        value_mask[1] = False
        query_mask = np.ones((batch, tq), bool)
        query_mask[0, -1] = False
        full = value_mask[:, None] & query_mask[:, :, None]
        return {"value_mask": value_mask, "query_mask": query_mask}, full
    raise AssertionError(kind)


# "padding" (a value mask) is the contract's step check, against the same reference.
@pytest.mark.parametrize("mask_kind", ["none", "causal", "explicit", "fully_masked"])
@pytest.mark.parametrize("name", ALL)
def test_matches_numpy_reference(name, mask_kind, rng):
    layer = build_randomized(name, rng)
    q, k, v = make_inputs(rng)
    kwargs, mask = _mask_for(mask_kind, rng, 2, 3, 4)
    context, weights = layer(q, v, key=k, return_attention_scores=True, **kwargs)
    ref_context, ref_weights = reference_call(layer, q, k, v, mask)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-5)
    assert np.isfinite(to_numpy(context)).all()


@pytest.mark.parametrize("probability_fn", ["sparsemax", "hardmax", "sigmoid"])
@pytest.mark.parametrize("name", ["bahdanau", "luong_general_scaled", "scaled_dot", "multi_head"])
def test_probability_fns_match_reference(name, probability_fn, rng):
    layer = build_randomized(name, rng, probability_fn=probability_fn)
    q, k, v = make_inputs(rng)
    kwargs, mask = _mask_for("padding", rng, 2, 3, 4)
    context, weights = layer(q, v, key=k, return_attention_scores=True, **kwargs)
    ref_context, ref_weights = reference_call(layer, q, k, v, mask, probability_fn)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-5)


@pytest.mark.parametrize("name", ["bahdanau", "multi_head"])
def test_sigmoid_probability_fn_survives_a_keras_file(name, rng, tmp_path):
    layer = CASES[name](probability_fn="sigmoid")
    clone = type(layer).from_config(layer.get_config())
    assert clone.probability_fn == "sigmoid" and clone.get_config() == layer.get_config()
    q, k, v = make_inputs(rng)
    query, value, key = (keras.Input(x.shape[1:]) for x in (q, v, k))
    model = keras.Model([query, value, key], layer(query, value, key=key))
    path = str(tmp_path / "sigmoid.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.layers[-1].probability_fn == "sigmoid"
    np.testing.assert_allclose(to_numpy(loaded([q, v, k])), to_numpy(model([q, v, k])), atol=1e-6)


@pytest.mark.parametrize("name", ALL)
def test_rank_2_query_is_one_step(name, rng):
    layer = build_randomized(name, rng)
    q, k, v = make_inputs(rng, tq=1)
    value_mask = np.array([[True, True, True, False], [True, False, False, False]])
    context, weights = layer(q[:, 0], v, key=k, value_mask=value_mask, return_attention_scores=True)
    mask = np.broadcast_to(value_mask[:, None], (2, 1, 4))
    ref_context, ref_weights = reference_call(layer, q, k, v, mask)
    np.testing.assert_allclose(to_numpy(context), ref_context[:, 0], atol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), ref_weights[..., 0, :], atol=1e-5)


@pytest.mark.parametrize("name", ["scaled_dot", "multi_head", "bahdanau"])
def test_causal_self_attention_one_query_at_a_time(name, rng):
    """Query t over the history x[:, :t+1] equals row t of the causal pass."""
    layer = CASES[name]()
    x = rng.normal(size=(2, 5, 6)).astype("float32")
    full = to_numpy(layer(x, x, use_causal_mask=True))
    for t in range(5):
        step = layer(x[:, t : t + 1], x[:, : t + 1], use_causal_mask=True)
        np.testing.assert_allclose(to_numpy(step)[:, 0], full[:, t], atol=1e-5)


@pytest.mark.parametrize("name", ALL)
def test_permuting_keys_and_values_together_keeps_the_context(name, rng):
    layer = CASES[name]()
    q, k, v = make_inputs(rng, tv=6)
    order = rng.permutation(6)
    before = to_numpy(layer(q, v, key=k))
    after = to_numpy(layer(q, v[:, order], key=k[:, order]))
    np.testing.assert_allclose(after, before, atol=1e-5)


@pytest.mark.parametrize(
    "dtype", ["float32", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16"]
)
@pytest.mark.parametrize("name", ["bahdanau", "luong_concat", "scaled_dot", "multi_head"])
def test_fully_masked_queries_give_zeros_never_nan(name, dtype, rng):
    layer = CASES[name](dtype=dtype)
    q, k, v = make_inputs(rng)
    value_mask = np.zeros((2, 4), bool)
    value_mask[0, :2] = True
    context, weights = layer(q, v, key=k, value_mask=value_mask, return_attention_scores=True)
    context, weights = to_numpy(context).astype("float32"), to_numpy(weights).astype("float32")
    assert np.isfinite(context).all() and np.isfinite(weights).all()
    np.testing.assert_array_equal(context[1], 0.0)
    np.testing.assert_array_equal(weights[1], 0.0)
    np.testing.assert_allclose(weights[0].sum(-1), 1.0, atol=1e-2)

    def loss(query, value):
        return keras.ops.sum(
            keras.ops.cast(layer(query, value, key=k, value_mask=value_mask), "float32")
        )

    _, grads = value_and_grad(loss, q.astype(layer.compute_dtype), v.astype(layer.compute_dtype))
    for grad in grads:
        assert np.isfinite(grad.astype("float32")).all()


@pytest.mark.parametrize("name", ALL)
def test_dropout_acts_in_training_only_and_weights_are_pre_dropout(name, rng):
    layer = CASES[name](dropout=0.5, seed=3)
    q, k, v = make_inputs(rng, tv=8)
    inference = to_numpy(layer(q, v, key=k, training=False))
    np.testing.assert_allclose(to_numpy(layer(q, v, key=k)), inference, atol=1e-6)
    context, weights = layer(q, v, key=k, training=True, return_attention_scores=True)
    assert not np.allclose(to_numpy(context), inference, atol=1e-4)
    np.testing.assert_allclose(to_numpy(weights).sum(-1), 1.0, atol=1e-5)
