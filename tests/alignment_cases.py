"""The alignment-state layers every alignment test runs over, with NumPy truth.

Each case builds a layer (location-sensitive, monotonic, stepwise, GMM,
dynamic convolution); `reference_run` computes its recurrence one step after
the other in NumPy (`reference.py`), from the layer's own (randomized) weights.
"""

import numpy as np
import reference
from backend_utils import to_numpy

from keras_attention import BahdanauMonotonicAttention
from keras_attention import DynamicConvolutionAttention
from keras_attention import GMMAttention
from keras_attention import LocationSensitiveAttention
from keras_attention import LuongMonotonicAttention
from keras_attention import StepwiseMonotonicAttention

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
