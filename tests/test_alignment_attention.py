"""Attention with an alignment state: location-sensitive, monotonic and location-relative layers.

Every layer is checked against its recurrence written out in NumPy
(`reference.py`), one step after the other, through the full-sequence call,
through `attend`, and inside `AttentionRNNCell`.
"""

import os

import keras
import numpy as np
import pytest
import reference
from backend_utils import compile_and_fit
from backend_utils import outputs_and_grads
from backend_utils import to_numpy
from backend_utils import value_and_grad

from keras_attention import AttentionRNN
from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import BahdanauMonotonicAttention
from keras_attention import DynamicConvolutionAttention
from keras_attention import GMMAttention
from keras_attention import LocationSensitiveAttention
from keras_attention import LuongLocalPAttention
from keras_attention import LuongMonotonicAttention
from keras_attention import StepwiseMonotonicAttention
from keras_attention import monotonic

DQ, DK, DV = 6, 5, 4

CASES = {
    "location": lambda **kw: LocationSensitiveAttention(units=7, filters=3, kernel_size=5, **kw),
    "location_cumulative_window": lambda **kw: LocationSensitiveAttention(
        units=5, filters=2, kernel_size=3, location_features="cumulative",
        inference_window=(1, 1), **kw,
    ),
    "location_previous_no_bias": lambda **kw: LocationSensitiveAttention(
        units=4, filters=2, kernel_size=4, location_features="previous", use_bias=False, **kw
    ),
    "bahdanau_monotonic": lambda **kw: BahdanauMonotonicAttention(7, **kw),
    "bahdanau_monotonic_normalized_recursive": lambda **kw: BahdanauMonotonicAttention(
        5, normalize=True, mode="recursive", **kw
    ),
    "bahdanau_monotonic_hard": lambda **kw: BahdanauMonotonicAttention(6, mode="hard", **kw),
    "luong_monotonic": lambda **kw: LuongMonotonicAttention(**kw),
    "luong_monotonic_scaled_recursive": lambda **kw: LuongMonotonicAttention(
        use_scale=True, mode="recursive", **kw
    ),
    "luong_monotonic_hard": lambda **kw: LuongMonotonicAttention(use_scale=True, mode="hard", **kw),
    # mode="auto": hard outside training (these tests' default), soft in training.
    "stepwise": lambda **kw: StepwiseMonotonicAttention(7, **kw),
    "stepwise_soft_normalized": lambda **kw: StepwiseMonotonicAttention(
        5, normalize=True, mode="soft", **kw
    ),
    "stepwise_hard": lambda **kw: StepwiseMonotonicAttention(6, mode="hard", **kw),
    "gmm": lambda **kw: GMMAttention(num_mixtures=3, units=5, **kw),
    "gmm_one_component": lambda **kw: GMMAttention(
        num_mixtures=1, units=4, delta_bias_init=0.5, sigma_bias_init=2.0, **kw
    ),
    "dca": lambda **kw: DynamicConvolutionAttention(
        units=6, static_filters=3, static_kernel_size=5, dynamic_filters=2,
        dynamic_kernel_size=3, dynamic_units=4, **kw,
    ),
    "dca_even_widths_prior": lambda **kw: DynamicConvolutionAttention(
        units=4, static_filters=2, static_kernel_size=4, dynamic_filters=3,
        dynamic_kernel_size=2, dynamic_units=5, prior_length=4, prior_alpha=0.5,
        prior_beta=2.0, **kw,
    ),
}  # fmt: skip
ALL = sorted(CASES)


def _w(variable):
    return to_numpy(variable).astype(np.float64)


def build_randomized(name, rng, **kwargs):
    layer = CASES[name](**kwargs)
    layer.build((None, None, DQ), (None, None, DV), (None, None, DK))
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.7)
    return layer


def make_inputs(rng, batch=2, tq=4, tv=6):
    q = rng.normal(size=(batch, tq, DQ)).astype("float32")
    k = rng.normal(size=(batch, tv, DK)).astype("float32")
    v = rng.normal(size=(batch, tv, DV)).astype("float32")
    return q, k, v


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _location_step(layer, query, keys, mask, state, training):
    prev, cumulative = state["weights"], state["cumulative"]
    channels = {"both": [prev, cumulative], "previous": [prev], "cumulative": [cumulative]}
    features = np.stack(channels[layer.location_features], axis=-1)  # (B, Tv, C)
    filtered = reference.conv1d_same(features, _w(layer.location_conv.kernel))
    location = reference.dense(filtered, _w(layer.location_dense.kernel))
    query = reference.dense(query[:, None], _w(layer.query_dense.kernel))
    bias = None if layer.b is None else _w(layer.b)
    logits = reference.additive_scores(query, keys + location, _w(layer.v), bias)[:, 0]
    if layer.inference_window is not None and not training:
        back, forward = layer.inference_window
        peak = np.argmax(prev, axis=-1)[:, None]
        positions = np.arange(prev.shape[1])[None]
        mask = mask & (positions >= peak - back) & (positions <= peak + forward)
    weights = reference.softmax(logits, mask)
    return weights, {"weights": weights, "cumulative": cumulative + weights}


def _monotonic_step(layer, query, keys, mask, state, training):
    if isinstance(layer, BahdanauMonotonicAttention):
        query = reference.dense(query[:, None], _w(layer.query_dense.kernel))
        v, bias = _w(layer.v), None
        if layer.normalize:
            v, bias = _w(layer.g) * v / np.linalg.norm(v), _w(layer.b)
        energy = reference.additive_scores(query, keys, v, bias)[:, 0]
    else:
        energy = reference.dot_scores(query[:, None], keys)[:, 0]
        energy = energy * (_w(layer.g) if layer.use_scale else 1.0)
    energy = energy + _w(layer.score_bias)
    mode = layer.mode
    if mode == "auto":  # stepwise: the expectation in training, hard decisions otherwise
        mode = "soft" if training else "hard"
    p_choose = (energy > 0).astype(np.float64) if mode == "hard" else _sigmoid(energy)
    if isinstance(layer, StepwiseMonotonicAttention):  # p is the probability of staying
        weights = np.where(mask, reference.stepwise_monotonic(p_choose, state["weights"]), 0.0)
        return weights, {"weights": weights}
    p_choose = np.where(mask, p_choose, 0.0)
    if mode == "hard":
        weights = reference.monotonic_hard(p_choose, state["weights"])
    else:
        weights = reference.monotonic_recurrence(p_choose, state["weights"])
    return weights, {"weights": weights}


def _softplus(x):
    return np.log1p(np.exp(x))


def _gmm_step(layer, query, mask, state):
    """Battenberg et al.'s GMMv2: w = softmax(ŵ), Δ = softplus(Δ̂), σ = softplus(σ̂), μ += Δ."""
    hidden = np.tanh(
        reference.dense(query, _w(layer.hidden_dense.kernel), _w(layer.hidden_dense.bias))
    )
    parameters = reference.dense(hidden, _w(layer.parameter_dense.kernel))
    k = layer.num_mixtures
    w_hat = parameters[:, :k] + _w(layer.mixture_bias)
    delta = _softplus(parameters[:, k : 2 * k] + _w(layer.delta_bias))
    sigma = np.maximum(_softplus(parameters[:, 2 * k :] + _w(layer.sigma_bias)), 1e-5)
    mixture = np.exp(w_hat - w_hat.max(-1, keepdims=True))
    mixture = mixture / mixture.sum(-1, keepdims=True)
    means = state["means"] + delta
    weights = reference.gmm_density(mixture, means, sigma, mask.shape[1])
    weights = np.where(mask, weights, 0.0)
    return weights, {"weights": weights, "means": means}


def _dca_step(layer, query, mask, state):
    """Battenberg et al.'s DCA: static, dynamic (per example) and prior filters of α_{i-1}."""
    previous = state["weights"]  # (B, Tv)
    static = reference.conv1d_same(previous[..., None], _w(layer.static_kernel)[:, None, :])
    hidden = np.tanh(
        reference.dense(
            query, _w(layer.filter_hidden_dense.kernel), _w(layer.filter_hidden_dense.bias)
        )
    )
    filters = reference.dense(hidden, _w(layer.filter_dense.kernel))
    filters = filters.reshape(len(query), layer.dynamic_filters, layer.dynamic_kernel_size)
    dynamic = np.stack(  # each example convolved with its own filters, (W, 1, C_d)
        [
            reference.conv1d_same(previous[n : n + 1, :, None], filters[n].T[:, None, :])[0]
            for n in range(len(query))
        ]
    )
    energy = np.tanh(
        reference.dense(static, _w(layer.static_dense.kernel))
        + reference.dense(dynamic, _w(layer.dynamic_dense.kernel))
        + _w(layer.b)
    ) @ _w(layer.v)
    taps = reference.beta_binomial(layer.prior_length, layer.prior_alpha, layer.prior_beta)
    prior = reference.causal_filter(previous, taps)
    weights = reference.softmax(energy + np.log(np.maximum(prior, 1e-6)), mask)
    return weights, {"weights": weights}


def reference_run(layer, q, k, v, value_mask=None, query_mask=None, training=False):
    """(context (B, Tq, dv), weights (B, Tq, Tv)) of the recurrence, step by step in NumPy."""
    batch, steps, tv = q.shape[0], q.shape[1], k.shape[1]
    mask = np.ones((batch, tv), bool) if value_mask is None else value_mask
    k, v = np.where(mask[..., None], k, 0.0), np.where(mask[..., None], v, 0.0)
    keys = reference.dense(k, _w(layer.key_dense.kernel)) if hasattr(layer, "key_dense") else None
    if isinstance(layer, LocationSensitiveAttention):
        state = {"weights": np.zeros((batch, tv)), "cumulative": np.zeros((batch, tv))}
    elif isinstance(layer, GMMAttention):
        state = {"weights": np.zeros((batch, tv)), "means": np.zeros((batch, layer.num_mixtures))}
    else:
        first = np.zeros((batch, tv))
        first[:, 0] = 1.0
        state = {"weights": np.where(mask, first, 0.0)}
    contexts, all_weights = np.zeros((batch, steps, v.shape[-1])), np.zeros((batch, steps, tv))
    for t in range(steps):
        if isinstance(layer, LocationSensitiveAttention):
            weights, new = _location_step(layer, q[:, t], keys, mask, state, training)
        elif isinstance(layer, GMMAttention):
            weights, new = _gmm_step(layer, q[:, t], mask, state)
        elif isinstance(layer, DynamicConvolutionAttention):
            weights, new = _dca_step(layer, q[:, t], mask, state)
        else:
            weights, new = _monotonic_step(layer, q[:, t], keys, mask, state, training)
        if query_mask is not None:
            keep = query_mask[:, t, None]
            weights = np.where(keep, weights, 0.0)
            new = {name: np.where(keep, new[name], state[name]) for name in new}
        state = new
        all_weights[:, t] = weights
        contexts[:, t] = np.einsum("bk,bkd->bd", weights, v)
    return contexts, all_weights


# ------------------------------------------------------------------ the math
@pytest.mark.parametrize("mode", ["parallel", "recursive"])
def test_monotonic_attention_is_the_recurrence(mode, rng):
    p_choose = rng.uniform(size=(3, 9)).astype("float32")
    previous = rng.dirichlet(np.ones(9), size=3).astype("float32")
    previous[2] = 0.0
    previous[2, 4] = 1.0
    got = to_numpy(monotonic.monotonic_attention(p_choose, previous, mode))
    np.testing.assert_allclose(got, reference.monotonic_recurrence(p_choose, previous), atol=1e-5)
    assert np.all(got.sum(-1) <= previous.sum(-1) + 1e-5)  # mass only leaves


def test_hard_monotonic_attention_stops_at_the_first_choice_at_or_after_the_last(rng):
    p_choose = (rng.uniform(size=(4, 8)) > 0.6).astype("float32")
    p_choose[3] = 0.0  # never stops: the attention leaves the memory
    previous = np.zeros((4, 8), "float32")
    previous[[0, 1, 2, 3], [0, 3, 7, 2]] = 1.0
    got = to_numpy(monotonic.monotonic_attention(p_choose, previous, "hard"))
    np.testing.assert_array_equal(got, reference.monotonic_hard(p_choose, previous))
    np.testing.assert_array_equal(got[3], 0.0)


def test_parallel_mode_survives_certain_stops_and_underflowing_products():
    """p = 1 makes log(1 - p) = -inf without the clip; 40 factors of 1e-3 underflow float32."""
    p_choose = np.full((2, 40), 0.999, "float32")
    p_choose[1, 3] = 1.0
    previous = np.zeros((2, 40), "float32")
    previous[:, 0] = 1.0
    got = to_numpy(monotonic.monotonic_attention(p_choose, previous, "parallel"))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, reference.monotonic_recurrence(p_choose, previous), atol=1e-5)
    cumprod = to_numpy(monotonic.safe_cumprod(1.0 - p_choose, exclusive=True))
    assert cumprod[0, 0] == 1.0 and np.isfinite(cumprod).all()

    def loss(p):
        return keras.ops.sum(monotonic.monotonic_attention(p, previous, "parallel") ** 2)

    _, (grad,) = value_and_grad(loss, p_choose)
    assert np.isfinite(grad).all()


def test_bad_mode():
    with pytest.raises(ValueError, match="monotonic_attention: `mode` must be one of"):
        monotonic.monotonic_attention(np.ones((1, 2)), np.ones((1, 2)), "soft")


# ------------------------------------------------------------------ the layers
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("name", ALL)
def test_full_call_and_steps_match_the_numpy_recurrence(name, masked, rng):
    layer = build_randomized(name, rng)
    q, k, v = make_inputs(rng)
    value_mask = np.array([[True] * 6, [True] * 3 + [False] * 3]) if masked else None
    ref_context, ref_weights = reference_run(layer, q, k, v, value_mask)
    context, weights = layer(q, v, key=k, value_mask=value_mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-5)
    key_features, value_features = layer.project_memory(k, v, value_mask)
    state = layer.initial_alignment_state(key_features, value_mask)
    assert sorted(state) == sorted(layer.alignment_state_keys)
    for t in range(q.shape[1]):
        context, weights, state = layer.attend(
            q[:, t], key_features, value_features, value_mask=value_mask,
            alignment_state=state, return_attention_scores=True,
        )  # fmt: skip
        np.testing.assert_allclose(to_numpy(weights), ref_weights[:, t], atol=1e-5)
        np.testing.assert_allclose(to_numpy(context), ref_context[:, t], atol=1e-5)
        np.testing.assert_allclose(to_numpy(state["weights"]), ref_weights[:, t], atol=1e-5)
    if masked:
        np.testing.assert_array_equal(ref_weights[1, :, 3:], 0.0)


@pytest.mark.parametrize(
    "name", ["location", "bahdanau_monotonic", "luong_monotonic_hard", "stepwise", "gmm", "dca"]
)
def test_masked_queries_get_zeros_and_keep_the_state(name, rng):
    layer = build_randomized(name, rng)
    q, k, v = make_inputs(rng)
    query_mask = np.array([[True, False, True, True], [True, True, False, False]])
    ref_context, ref_weights = reference_run(layer, q, k, v, query_mask=query_mask)
    context, weights = layer(q, v, key=k, query_mask=query_mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-5)
    np.testing.assert_array_equal(to_numpy(context)[~query_mask], 0.0)


def test_monotonic_attention_starts_at_the_first_position_and_only_moves_forward(rng):
    layer = build_randomized("bahdanau_monotonic_hard", rng)
    q, k, v = make_inputs(rng, tq=8)
    weights = to_numpy(layer(q, v, key=k, return_attention_scores=True)[1])
    assert set(np.unique(weights)) <= {0.0, 1.0}
    for row in weights:  # (Tq, Tv): one-hot rows, then zeros once it left
        positions = [np.argmax(step) for step in row if step.sum() > 0]
        assert positions == sorted(positions)
    state = layer.initial_alignment_state(v)
    np.testing.assert_array_equal(to_numpy(state["weights"]), np.eye(6)[[0, 0]])


def test_monotonic_mass_can_leave_past_the_end(rng):
    layer = LuongMonotonicAttention(score_bias_init=-3.0)
    q, k, v = make_inputs(rng, tq=5, tv=3)
    weights = to_numpy(layer(q, v, key=k, return_attention_scores=True)[1])
    totals = weights.sum(-1)
    assert np.all(totals <= 1.0 + 1e-6) and totals[:, -1].max() < 0.9
    assert np.all(np.diff(totals, axis=-1) <= 1e-6)


def test_inference_window_restricts_only_outside_training(rng):
    layer = build_randomized("location_cumulative_window", rng)
    q, k, v = make_inputs(rng, tq=3, tv=8)
    _, inference = layer(q, v, key=k, return_attention_scores=True)
    _, training = layer(q, v, key=k, return_attention_scores=True, training=True)
    inference, training = to_numpy(inference), to_numpy(training)
    np.testing.assert_array_equal(inference[:, 0, 2:], 0.0)  # first step: positions 0..1
    np.testing.assert_allclose(inference.sum(-1), 1.0, atol=1e-5)
    assert np.all(training[:, 0, 2:] > 0)
    _, ref = reference_run(layer, q, k, v, training=True)
    np.testing.assert_allclose(training, ref, atol=1e-5)


@pytest.mark.parametrize("features", ["both", "previous"])
def test_inference_window_step_scores_only_the_window_as_the_numpy_recurrence(features, rng):
    # A window that meets both ends of the memory, a filter wider than the
    # window, a short and a long example: the windowed step (only its
    # positions scored, then placed) against the whole-memory NumPy step
    # with the window as a mask.
    layer = LocationSensitiveAttention(
        units=6, filters=3, kernel_size=7, location_features=features, inference_window=(2, 3)
    )
    layer.build((None, None, DQ), (None, None, DV), (None, None, DK))
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.7)
    q, k, v = make_inputs(rng, batch=3, tq=9, tv=7)
    value_mask = np.arange(7)[None] < np.array([[7], [4], [6]])
    ref_context, ref_weights = reference_run(layer, q, k, v, value_mask)
    # The window passed the memory's end (peak + 3 >= Tv) and started before it.
    # Each first step's window starts before the memory (around position 0);
    # some later window passes its end (a peak >= 4: positions up to 7 = Tv).
    assert np.any(np.argmax(ref_weights, -1) >= 4)
    context, weights = layer(q, v, key=k, value_mask=value_mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-5)
    assert np.all((to_numpy(weights) > 0).sum(-1) <= 6)


def test_fresh_windowed_layer_steps_as_the_numpy_recurrence(rng):
    # Its own initial weights (no randomizing), the Tacotron 2 filter width.
    layer = LocationSensitiveAttention(units=8, filters=4, inference_window=(2, 3))
    q, k, v = make_inputs(rng, batch=2, tq=6, tv=40)
    value_mask = np.arange(40)[None] < np.array([[40], [17]])
    context, weights = layer(q, v, key=k, value_mask=value_mask, return_attention_scores=True)
    ref_context, ref_weights = reference_run(layer, q, k, v, value_mask)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-5)
    np.testing.assert_array_equal(to_numpy(weights)[:, 0, 4:], 0.0)  # first window: 0..3


@pytest.mark.parametrize("name", ["bahdanau_monotonic", "luong_monotonic"])
def test_sigmoid_noise_acts_in_training_only_and_is_seeded(name, rng):
    q, k, v = make_inputs(rng)
    layer = build_randomized(name, rng, sigmoid_noise=1.0, seed=5)
    inference = to_numpy(layer(q, v, key=k))
    np.testing.assert_allclose(to_numpy(layer(q, v, key=k, training=False)), inference)
    noisy = to_numpy(layer(q, v, key=k, training=True))
    assert not np.allclose(noisy, inference, atol=1e-4)
    twin = CASES[name](sigmoid_noise=1.0, seed=5)
    twin.build((None, None, DQ), (None, None, DV), (None, None, DK))
    twin.set_weights(layer.get_weights())
    np.testing.assert_allclose(to_numpy(twin(q, v, key=k, training=True)), noisy, atol=1e-6)


@pytest.mark.parametrize("name", ["bahdanau_monotonic", "stepwise_soft_normalized"])
def test_noise_given_to_attend_is_added_to_the_energy(name, rng):
    """`attend(noise=...)`: a constant draw c is the score bias r + c; None draws nothing here."""
    layer = build_randomized(name, rng, sigmoid_noise=1.0, seed=2)
    q, k, v = make_inputs(rng)
    key_features, value_features = layer.project_memory(k, v)
    state = {key: rng.uniform(size=(2, 6)).astype("float32") for key in layer.alignment_state_keys}
    shifted = build_randomized(name, rng, sigmoid_noise=1.0, seed=2)
    shifted.set_weights(layer.get_weights())
    shifted.score_bias.assign(to_numpy(layer.score_bias.value) + 0.75)
    noise = np.full((2, 6), 0.75, "float32")
    given = layer.attend(
        q[:, 0], key_features, value_features, alignment_state=state, noise=noise,
        training=True, return_attention_scores=True,
    )  # fmt: skip
    expected = shifted.attend(
        q[:, 0], key_features, value_features, alignment_state=state,
        return_attention_scores=True,
    )  # fmt: skip
    for got, want in zip(given[:2], expected[:2]):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-6)
    drawn = layer.attend(
        q[:, 0], key_features, value_features, alignment_state=state, training=True,
        return_attention_scores=True,
    )  # fmt: skip
    assert not np.allclose(to_numpy(drawn[1]), to_numpy(given[1]), atol=1e-4)


def test_sigmoid_noise_trains_through_attention_rnn_on_every_backend(rng):
    """fit with noise: drawn before the RNN's loop (JAX refused a draw inside it:
    UnexpectedTracerError), new at every batch, seeded, and absent in evaluation."""
    source = rng.integers(1, 20, size=(8, 6)).astype("int32")
    target = rng.integers(1, 20, size=(8, 5)).astype("int32")

    def losses():
        keras.utils.set_random_seed(7)  # fresh weights, the same for both models
        source_in = keras.Input((None,), dtype="int32")
        target_in = keras.Input((None,), dtype="int32")
        encoded = keras.layers.Embedding(20, 8, mask_zero=True)(source_in)
        embedded = keras.layers.Embedding(20, 3, mask_zero=True)(target_in)
        attention = BahdanauMonotonicAttention(5, sigmoid_noise=1.0, seed=3)
        cell = AttentionRNNCell(keras.layers.GRUCell(DQ), attention, attention_layer_size=5)
        logits = keras.layers.Dense(20)(AttentionRNN(cell)(embedded, encoded))
        model = keras.Model([source_in, target_in], logits)
        model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
        trained = [model.train_on_batch([source, target], target) for _ in range(3)]
        evaluated = [model.evaluate([source, target], target, verbose=0) for _ in range(2)]
        return np.array(trained), np.array(evaluated)

    trained, evaluated = losses()
    assert np.isfinite(trained).all()
    assert len(np.unique(trained)) == 3  # learning rate 0: only the noise differs
    assert evaluated[0] == evaluated[1] and evaluated[0] not in trained
    again, _ = losses()
    np.testing.assert_allclose(again, trained, rtol=1e-6)  # the same seed, the same draws


@pytest.mark.parametrize(
    "dtype", ["float32", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16"]
)
@pytest.mark.parametrize(
    "name",
    [
        "location",
        "bahdanau_monotonic",
        "luong_monotonic_scaled_recursive",
        "stepwise_soft_normalized",
        "gmm",
        "dca",
    ],
)
def test_fully_masked_memory_gives_zeros_never_nan(name, dtype, rng):
    layer = CASES[name](dtype=dtype)
    layer.build((None, None, DQ), (None, None, DV), (None, None, DK))
    q, k, v = make_inputs(rng)
    value_mask = np.zeros((2, 6), bool)
    value_mask[0, :2] = True

    def loss(query, value):
        context, weights = layer(
            query, value, key=k, value_mask=value_mask, return_attention_scores=True
        )
        return keras.ops.sum(keras.ops.cast(context, "float32")), (context, weights)

    (context, weights), grads = outputs_and_grads(
        loss, q.astype(layer.compute_dtype), v.astype(layer.compute_dtype)
    )
    context, weights = context.astype("float32"), weights.astype("float32")
    assert np.isfinite(context).all() and np.isfinite(weights).all()
    np.testing.assert_array_equal(context[1], 0.0)
    np.testing.assert_array_equal(weights[1], 0.0)
    np.testing.assert_array_equal(weights[0, :, 2:], 0.0)
    for grad in grads:
        assert np.isfinite(grad.astype("float32")).all()


@pytest.mark.parametrize("name", ALL)
def test_config_round_trip(name):
    layer = CASES[name](name="attention")
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    for argument, value in config.items():
        if argument not in ("name", "trainable", "dtype", "kernel_initializer", "bias_initializer"):
            assert getattr(clone, argument) == value, argument


@pytest.mark.parametrize(
    "name",
    [
        "location_cumulative_window",
        "bahdanau_monotonic_normalized_recursive",
        "luong_monotonic_hard",
        "stepwise",
        "gmm",
        "dca_even_widths_prior",
    ],
)
def test_keras_file_round_trip(name, rng, tmp_path):
    query = keras.Input((None, DQ), name="query")
    value = keras.Input((None, DV), name="value")
    key = keras.Input((None, DK), name="key")
    outputs = CASES[name]()(query, value, key=key, return_attention_scores=True)
    model = keras.Model([query, value, key], list(outputs))
    for variable in model.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.7)
    q, k, v = make_inputs(rng)
    expected = [to_numpy(x) for x in model([q, v, k])]
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    for got, want in zip(loaded([q, v, k]), expected):
        np.testing.assert_allclose(to_numpy(got), want, atol=1e-6)


@pytest.mark.tf_only
@pytest.mark.parametrize(
    "name",
    [
        "location_cumulative_window",
        "bahdanau_monotonic_normalized_recursive",
        "luong_monotonic_hard",
        "stepwise",
        "stepwise_soft_normalized",
        "gmm",
        "dca",
    ],
)
def test_xla_compiles_the_full_call_and_its_gradient(name, rng):
    import tensorflow as tf

    layer = build_randomized(name, rng)
    q, k, v = make_inputs(rng)
    value_mask = np.array([[True] * 6, [True] * 3 + [False] * 3])

    @tf.function(jit_compile=True)
    def run(query, value):
        with tf.GradientTape() as tape:
            tape.watch([query, value])
            context = layer(query, value, key=k, value_mask=value_mask)
            loss = tf.reduce_sum(context**2)
        return context, tape.gradient(loss, [query, value])

    context, grads = run(tf.constant(q), tf.constant(v))
    np.testing.assert_allclose(
        context.numpy(), reference_run(layer, q, k, v, value_mask)[0], atol=1e-5
    )
    # A hard choice ("auto" outside training too): no gradient to the query.
    if getattr(layer, "mode", None) in ("hard", "auto"):
        assert grads[0] is None or np.all(grads[0].numpy() == 0)
        grads = grads[1:]
    for grad in grads:
        assert np.isfinite(grad.numpy()).all() and np.abs(grad.numpy()).max() > 0


def test_jax_jit_compiles_the_full_call(rng):
    if keras.backend.backend() != "jax":
        pytest.skip("jax.jit needs KERAS_BACKEND=jax")
    import jax

    q, k, v = make_inputs(rng)
    value_mask = np.array([[True] * 6, [True] * 3 + [False] * 3])
    for name in [
        "location_cumulative_window", "bahdanau_monotonic", "luong_monotonic_hard",
        "stepwise", "stepwise_soft_normalized", "gmm", "dca",
    ]:  # fmt: skip
        layer = build_randomized(name, rng)

        def run(query, layer=layer):
            return layer(query, v, key=k, value_mask=value_mask)

        np.testing.assert_allclose(
            np.asarray(jax.jit(run)(q)), reference_run(layer, q, k, v, value_mask)[0], atol=1e-5
        )


def test_contract_errors(rng):
    layer = build_randomized("bahdanau_monotonic", rng)
    q, k, v = make_inputs(rng)
    memory = layer.project_memory(k, v)
    with pytest.raises(ValueError, match=r"`query` expected one decoding step of shape \(B, dq\)"):
        layer.attend(q, *memory)
    with pytest.raises(ValueError, match="`use_causal_mask` expected False"):
        layer(q, v, key=k, use_causal_mask=True)
    with pytest.raises(ValueError, match="`mode` must be one of"):
        BahdanauMonotonicAttention(4, mode="soft")
    with pytest.raises(ValueError, match="`sigmoid_noise` must be a number >= 0"):
        LuongMonotonicAttention(sigmoid_noise=-1.0)
    with pytest.raises(ValueError, match="`inference_window` must be None or a pair"):
        LocationSensitiveAttention(inference_window=3)
    with pytest.raises(ValueError, match="`location_features` must be one of"):
        LocationSensitiveAttention(location_features="all")
    assert layer.has_alignment_state and not BahdanauAttention(3).has_alignment_state
    context, state = layer.attend(q[:, 0], *memory)  # alignment_state=None: the initial one
    assert tuple(context.shape) == (2, DV) and tuple(state["weights"].shape) == (2, 6)


# ------------------------------------------------------------------ in the cell
CELL_CASES = [
    "location",
    "bahdanau_monotonic_normalized_recursive",
    "luong_monotonic_hard",
    "stepwise",
    "gmm",
    "dca",
]


@pytest.mark.parametrize("name", CELL_CASES)
def test_cell_rnn_pass_with_a_decoder_mask_equals_step_by_step(name, rng):
    cell = AttentionRNNCell(
        keras.layers.GRUCell(DQ), CASES[name](), attention_layer_size=5,
        return_attention_weights=True,
    )  # fmt: skip
    encoder = rng.normal(size=(2, 6, DV)).astype("float32")
    memory_mask = np.array([[True] * 6, [True] * 3 + [False] * 3])
    inputs = rng.normal(size=(2, 4, 3)).astype("float32")
    decoder_mask = np.array([[True] * 4, [True, True, False, False]])
    states = cell.initial_state(encoder, value_mask=memory_mask)
    state = cell.unpack_state(states)
    assert sorted(state.alignment) == sorted(cell.attention.alignment_state_keys)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    full = to_numpy(rnn(inputs, initial_state=states, mask=decoder_mask))
    weights = full[..., -6:]
    np.testing.assert_array_equal(weights[1, :, 3:], 0.0)
    previous = np.zeros_like(full[:, 0])
    for t in range(4):  # a masked step keeps the state and repeats the previous output
        output, new_states = cell(inputs[:, t], states)
        keep = decoder_mask[:, t, None]
        previous = np.where(keep, to_numpy(output), previous)
        np.testing.assert_allclose(previous, full[:, t], atol=1e-5)
        states = [
            np.where(keep, to_numpy(new), to_numpy(old)) for new, old in zip(new_states, states)
        ]
    alignment = cell.unpack_state(states).alignment
    np.testing.assert_allclose(to_numpy(alignment["weights"])[0], weights[0, -1], atol=1e-5)
    np.testing.assert_allclose(to_numpy(alignment["weights"])[1], weights[1, 1], atol=1e-5)
    packed = cell.pack_state(cell.unpack_state(states))
    for got, expected in zip(packed, states):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(expected))
    fresh = cell.pack_state(cell.unpack_state(states)._replace(alignment=None))
    initial = cell.attention.initial_alignment_state(encoder, memory_mask)
    for got, name_ in zip(fresh[-len(initial) :], cell.attention.alignment_state_keys):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(initial[name_]))
    with pytest.raises(ValueError, match="then the alignment state"):
        cell.unpack_state(states[:-1])


# The cell cases whose step test_xla_compiles_the_full_call_and_its_gradient
# compiles with its gradient in a loop: their fit here skips XLA. XLA still
# runs the cell's state plumbing with a (B, Tv) state (location), a (B, K) one
# (gmm), and local-p, which has no full-call XLA test.
XLA_IN_THE_FULL_CALL_TEST = {"bahdanau_monotonic_normalized_recursive", "luong_monotonic_hard",
                             "stepwise", "dca"}  # fmt: skip


@pytest.mark.parametrize("name", CELL_CASES + ["local_p"])
def test_cell_in_a_functional_model_trains_saves_and_reloads(name, rng, tmp_path):
    """fit (unknown batch and lengths on TensorFlow, XLA but for the cases compiled
    elsewhere), then a .keras round trip."""
    attention = LuongLocalPAttention(window_width=2) if name == "local_p" else CASES[name]()
    source_in = keras.Input((None,), dtype="int32")
    target_in = keras.Input((None,), dtype="int32")
    encoded = keras.layers.Embedding(20, 8, mask_zero=True)(source_in)
    embedded = keras.layers.Embedding(20, 3, mask_zero=True)(target_in)
    cell = AttentionRNNCell(keras.layers.GRUCell(DQ), attention, attention_layer_size=5)
    logits = keras.layers.Dense(20)(AttentionRNN(cell)(embedded, encoded))
    model = keras.Model([source_in, target_in], logits)
    source = rng.integers(1, 20, size=(8, 6)).astype("int32")
    source[0, 4:] = 0
    target = rng.integers(1, 20, size=(8, 5)).astype("int32")
    target[1, 3:] = 0
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    xla = name not in XLA_IN_THE_FULL_CALL_TEST
    history = compile_and_fit(model, [source, target], target, xla=xla)
    assert np.isfinite(history.history["loss"][0])
    # Hard monotonic attention's 0/1 choices pass no gradient to its own weights.
    frozen = {id(w) for w in attention.weights} if name.endswith("_hard") else set()
    for weight, old in zip(model.trainable_weights, before):
        if id(weight) not in frozen:
            assert np.abs(to_numpy(weight) - old).max() > 0, weight.path
    expected = model.predict([source, target], verbose=0)
    path = os.path.join(tmp_path, "decoder.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(loaded.predict([source, target], verbose=0), expected, atol=1e-5)


@pytest.mark.tf_only
@pytest.mark.parametrize("name", ["location", "bahdanau"])
def test_cell_returns_weights_with_an_unknown_batch(name, rng):
    """Regression: with return_attention_weights=True and a symbolic batch, the step's
    output came back (None, None) from a (None, n) state, which tf.while_loop refused."""
    import tensorflow as tf

    attention = BahdanauAttention(8) if name == "bahdanau" else CASES[name]()
    cell = AttentionRNNCell(
        keras.layers.GRUCell(DQ), attention, attention_layer_size=5, return_attention_weights=True
    )
    source_in = keras.Input((6,), dtype="int32")
    target_in = keras.Input((None,), dtype="int32")
    encoded = keras.layers.Embedding(20, 8)(source_in)
    outputs = AttentionRNN(cell)(keras.layers.Embedding(20, 3)(target_in), encoded)
    model = keras.Model([source_in, target_in], keras.layers.Dense(20)(outputs[..., :-6]))
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    source = rng.integers(1, 20, size=(6, 6)).astype("int32")
    target = rng.integers(1, 20, size=(6, 5)).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices(((source, target), target)).batch(4)
    history = model.fit(dataset, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_noisy_monotonic_attention_trains_through_the_full_call(rng):
    """sigmoid_noise in model.fit on every backend: the noise of all steps is drawn
    once, outside the loop (a draw inside JAX's scan would leak a tracer)."""
    source_in = keras.Input((None,), dtype="int32")
    target_in = keras.Input((None,), dtype="int32")
    encoded = keras.layers.Embedding(20, 8, mask_zero=True)(source_in)
    decoded = keras.layers.GRU(DQ, return_sequences=True)(keras.layers.Embedding(20, 3)(target_in))
    attention = BahdanauMonotonicAttention(7, sigmoid_noise=1.0, seed=3)
    context = attention(decoded, encoded)
    logits = keras.layers.Dense(20)(keras.ops.concatenate([decoded, context], -1))
    model = keras.Model([source_in, target_in], logits)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    source = rng.integers(1, 20, size=(4, 6)).astype("int32")
    source[0, 4:] = 0
    target = rng.integers(1, 20, size=(4, 5)).astype("int32")
    before = to_numpy(attention.v).copy()
    history = model.fit([source, target], target, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert np.abs(to_numpy(attention.v) - before).max() > 0
