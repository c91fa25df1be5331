"""keras_attention.ops and .masks against the NumPy reference, plus properties."""

import numpy as np
import pytest
import reference
from backend_utils import to_numpy
from backend_utils import value_and_grad
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from keras import ops

from keras_attention import decoding
from keras_attention import masks
from keras_attention import ops as attention_ops

FNS = {
    "softmax": attention_ops.masked_softmax,
    "sparsemax": attention_ops.masked_sparsemax,
    "hardmax": attention_ops.masked_hardmax,
    "sigmoid": attention_ops.masked_normalized_sigmoid,
}
PROPERTY = settings(max_examples=25, deadline=None)


def _random_mask(rng, shape, fully_masked_row=True):
    mask = rng.random(shape) > 0.4
    if fully_masked_row:
        mask[0, 0] = False  # one row with nothing to attend to
    mask[-1, -1] = True
    return mask


@pytest.mark.parametrize("name", sorted(FNS))
@pytest.mark.parametrize("with_mask", [False, True])
def test_normalizers_match_reference(name, with_mask, rng):
    logits = rng.normal(size=(3, 4, 7)).astype("float32") * 3
    mask = _random_mask(rng, logits.shape) if with_mask else None
    got = to_numpy(FNS[name](logits, mask))
    np.testing.assert_allclose(got, reference.NORMALIZERS[name](logits, mask), atol=1e-5)
    assert got.dtype == np.float32


@pytest.mark.parametrize("name", sorted(FNS))
def test_fully_masked_rows_are_zero_with_finite_gradients(name):
    logits = np.full((2, 5), 3.0, "float32")
    mask = np.array([[False] * 5, [True, True, False, False, False]])

    def loss(x):
        return ops.sum(FNS[name](x, mask) * ops.arange(5, dtype="float32"))

    _, (grad,) = value_and_grad(loss, logits)
    weights = to_numpy(FNS[name](logits, mask))
    np.testing.assert_array_equal(weights[0], 0.0)
    assert np.isfinite(grad).all()
    np.testing.assert_array_equal(grad[0], 0.0)


@pytest.mark.parametrize("name", sorted(FNS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_normalizers_of_half_precision_logits_run_in_float32(name, dtype, rng):
    logits = rng.normal(size=(3, 4, 7)).astype("float32") * 3
    mask = _random_mask(rng, logits.shape)
    half = ops.cast(logits, dtype)
    got = to_numpy(attention_ops.attention_weights(half, mask, name))
    assert got.dtype == np.float32
    expected = reference.NORMALIZERS[name](to_numpy(ops.cast(half, "float32")), mask)
    np.testing.assert_allclose(got, expected, atol=1e-2)


def test_normalized_sigmoid_is_the_ratio_of_sigmoids_even_when_they_underflow():
    logits = np.array([[0.0, 1.0, -2.0], [-200.0, -201.0, -300.0]], "float32")
    got = to_numpy(attention_ops.attention_weights(logits, None, "sigmoid"))
    gates = 1.0 / (1.0 + np.exp(-logits[0].astype("float64")))
    np.testing.assert_allclose(got[0], gates / gates.sum(), atol=1e-6)
    # sigmoid(-200) is 0 in float32; the ratio is softmax's there (σ(e) ≈ exp(e)).
    np.testing.assert_allclose(got[1], reference.softmax(logits[1:])[0], atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-6)


def test_normalize_rejects_unknown_probability_fn():
    with pytest.raises(ValueError, match="probability_fn.*'entmax'"):
        attention_ops.attention_weights(np.zeros((1, 2), "float32"), None, "entmax")


@pytest.mark.parametrize("tq,tv", [(4, 4), (2, 5), (1, 6)])
def test_causal_mask_is_end_aligned(tq, tv):
    np.testing.assert_array_equal(to_numpy(masks.causal_mask(tq, tv)), reference.causal(tq, tv))


def test_padding_and_combined_masks():
    got = to_numpy(masks.padding_mask(np.array([0, 2, 4]), 4))
    np.testing.assert_array_equal(got, np.arange(4)[None] < np.array([[0], [2], [4]]))
    a = np.array([[True, False, True]])
    b = np.array([[True, True, False]])
    np.testing.assert_array_equal(to_numpy(masks.combine_masks(a, None, b)), a & b)
    assert masks.combine_masks(None, None) is None


def test_masked_fill_is_finite_and_replaces_nan():
    logits = np.array([[np.nan, np.inf, 1.0, -np.inf]], "float32")
    mask = np.array([[False, False, True, False]])
    filled = to_numpy(masks.fill_masked(logits, mask))
    np.testing.assert_array_equal(
        filled, [[masks.MASKED_LOGIT, masks.MASKED_LOGIT, 1.0, masks.MASKED_LOGIT]]
    )
    assert np.isfinite(np.float32(masks.MASKED_LOGIT)) and masks.MASKED_LOGIT <= -1e9
    assert decoding.NEG_INF == masks.MASKED_LOGIT  # the package's one large negative


def test_score_functions_match_reference(rng):
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    k = rng.normal(size=(2, 5, 4)).astype("float32")
    v = rng.normal(size=(4,)).astype("float32")
    b = rng.normal(size=(4,)).astype("float32")
    np.testing.assert_allclose(
        to_numpy(attention_ops.dot_product_scores(q, k, 0.5)),
        0.5 * reference.dot_scores(q, k),
        atol=1e-5,
    )
    np.testing.assert_allclose(
        to_numpy(attention_ops.additive_scores(q, k, v, b)),
        reference.additive_scores(q, k, v, b),
        atol=1e-5,
    )


def test_scaled_dot_product_attention_matches_reference(rng):
    q, k = rng.normal(size=(2, 2, 3, 4)), rng.normal(size=(2, 2, 5, 4))
    value = rng.normal(size=(2, 2, 5, 6))
    mask = _random_mask(rng, (2, 1, 3, 5), fully_masked_row=False)
    context, weights = attention_ops.scaled_dot_product_attention(
        q.astype("float32"), k.astype("float32"), value.astype("float32"), mask
    )
    ref_context, ref_weights = reference.attend(reference.dot_scores(q, k) / 2.0, value, mask)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-5)


# --------------------------------------------------------------- properties
# A few fixed shapes: eager JAX compiles once per shape, and the values are
# what these properties are about.
rows = hnp.arrays(
    np.float32,
    st.sampled_from([(1, 1), (2, 4), (3, 9)]),
    # No subnormals: XLA on CPU flushes them to zero (1e-45 compares equal to 0).
    elements=st.floats(-20, 20, width=32, allow_subnormal=False),
)


@PROPERTY
@given(logits=rows, data=st.data())
def test_weights_sum_to_one_and_are_zero_when_masked(logits, data):
    mask = data.draw(hnp.arrays(bool, logits.shape))
    for name, fn in FNS.items():
        weights = to_numpy(fn(logits, mask))
        assert (weights[~mask] == 0).all(), name
        assert (weights >= 0).all(), name
        sums = weights.sum(-1)
        expected = mask.any(-1).astype("float32")
        np.testing.assert_allclose(sums, expected, atol=1e-5, err_msg=name)


@PROPERTY
@given(logits=rows)
def test_sparsemax_gives_exact_zeros_and_sums_to_one(logits):
    weights = to_numpy(attention_ops.masked_sparsemax(logits))
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(weights, reference.sparsemax(logits), atol=1e-5)
    spread = logits.max(-1) - logits.min(-1)
    clearly_sparse = spread > 1.0 + 1e-3  # then the smallest logit is out of the support
    assert (weights[clearly_sparse].min(-1) == 0).all()


@PROPERTY
@given(logits=rows)
def test_hardmax_is_one_hot_and_passes_gradients(logits):
    weights = to_numpy(attention_ops.masked_hardmax(logits))
    assert set(np.unique(weights)) <= {0.0, 1.0}
    np.testing.assert_array_equal(weights.sum(-1), 1.0)
    chosen = np.take_along_axis(logits, weights.argmax(-1)[:, None], -1)[:, 0]
    np.testing.assert_array_equal(chosen, logits.max(-1))  # ties may pick any
    if logits.shape[-1] > 1:
        target = np.arange(logits.shape[-1], dtype="float32")
        _, (grad,) = value_and_grad(
            lambda x: ops.sum(ops.multiply(attention_ops.masked_hardmax(x), target)), logits
        )
        soft = reference.softmax(logits)  # straight-through: the softmax gradient
        expected = soft * (target - (soft * target).sum(-1, keepdims=True))
        np.testing.assert_allclose(grad, expected, atol=1e-5)
