"""Stepwise monotonic, GMM and dynamic convolution attention: what the shared
alignment-state suite (`test_alignment_attention.py`, where their NumPy
recurrences live) does not cover: the pure functions against `reference.py`,
the modes of stepwise attention, GMM's initial biases and `(B, K)` state in
`AttentionRNNCell` and the search helpers, DCA's prior, fresh-layer kernels
and constructor errors.
"""

import itertools

import keras
import numpy as np
import pytest
import reference
from backend_utils import to_numpy

from keras_attention import AttentionRNNCell
from keras_attention import DynamicConvolutionAttention
from keras_attention import GMMAttention
from keras_attention import StepwiseMonotonicAttention
from keras_attention import location_relative
from keras_attention import monotonic
from keras_attention.decoding import reorder_state
from keras_attention.decoding import tile_state

DQ, DV = 6, 4


def _inputs(rng, batch=2, tq=5, tv=8):
    return (
        rng.normal(size=(batch, tq, DQ)).astype("float32"),
        rng.normal(size=(batch, tv, DV)).astype("float32"),
    )


def _randomized(layer, rng):
    layer.build((None, None, DQ), (None, None, DV))
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.7)
    return layer


# ------------------------------------------------------------------ pure functions
def test_stepwise_monotonic_attention_is_the_recurrence(rng):
    p_stay = rng.uniform(size=(3, 7)).astype("float32")
    previous = rng.dirichlet(np.ones(7), size=3).astype("float32")
    got = to_numpy(monotonic.stepwise_monotonic_attention(p_stay, previous))
    np.testing.assert_allclose(got, reference.stepwise_monotonic(p_stay, previous), atol=1e-6)
    leaving = previous[:, -1] * (1.0 - p_stay[:, -1])  # only the last position's mass leaves
    np.testing.assert_allclose(got.sum(-1), previous.sum(-1) - leaving, atol=1e-6)


def test_hard_stepwise_attention_stays_or_moves_by_exactly_one(rng):
    previous = np.eye(6, dtype="float32")[[0, 2, 5, 5]]
    p_stay = np.array([[0, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1] * 6, [0] * 6], "float32")
    got = to_numpy(monotonic.stepwise_monotonic_attention(p_stay, previous))
    np.testing.assert_array_equal(got[:3], np.eye(6)[[1, 2, 5]])  # move, stay, stay
    np.testing.assert_array_equal(got[3], 0.0)  # moved past the end: it left


def test_gmm_alignment_is_the_mixture_density(rng):
    mixture = rng.dirichlet(np.ones(3), size=2)
    means = rng.uniform(0, 9, size=(2, 3))
    scales = rng.uniform(0.3, 3, size=(2, 3))
    got = to_numpy(location_relative.gmm_alignment(mixture, means, scales, 10))
    np.testing.assert_allclose(got, reference.gmm_density(mixture, means, scales, 10), atol=1e-6)
    wide_inside = to_numpy(location_relative.gmm_alignment([[1.0]], [[50.0]], [[4.0]], 101))
    np.testing.assert_allclose(wide_inside.sum(), 1.0, atol=1e-5)  # a density over positions


def test_gmm_parameters_are_softmax_and_softplus():
    parameters = np.array([[0.0, 1.0, -200.0, 2.0, 0.5, -300.0]], "float32")  # K = 2
    mixture, delta, scales = (to_numpy(x) for x in location_relative.gmm_parameters(parameters))
    np.testing.assert_allclose(mixture, [[1 / (1 + np.e), np.e / (1 + np.e)]], atol=1e-6)
    np.testing.assert_allclose(delta[0, 1], np.log1p(np.exp(2.0)), atol=1e-6)
    assert delta[0, 0] >= 0 and scales[0, 1] == np.float32(location_relative.MIN_SCALE)


def test_beta_binomial_prior_matches_the_polya_urn_and_scipy():
    prior = location_relative.beta_binomial_prior(11, 0.1, 0.9)
    np.testing.assert_allclose(prior, reference.beta_binomial(11, 0.1, 0.9), rtol=1e-12)
    np.testing.assert_allclose(prior.sum(), 1.0, rtol=1e-12)
    assert prior[0] > 0.7 and np.all(prior[1:] < 0.08)  # staying is by far the likeliest
    stats = pytest.importorskip("scipy.stats")
    np.testing.assert_allclose(prior, stats.betabinom.pmf(range(11), 10, 0.1, 0.9), rtol=1e-10)


def test_prior_and_convolutions_match_explicit_loops(rng):
    alignment = rng.dirichlet(np.ones(9), size=3).astype("float32")
    taps = location_relative.beta_binomial_prior(4, 0.5, 2.0)
    got = to_numpy(location_relative.prior_logits(alignment, taps))
    want = np.log(np.maximum(reference.causal_filter(alignment, taps), 1e-6))
    np.testing.assert_allclose(got, want, atol=1e-5)
    kernel = rng.normal(size=(5, 2)).astype("float32")
    np.testing.assert_allclose(
        to_numpy(location_relative.convolve(alignment, kernel)),
        reference.conv1d_same(alignment[..., None], kernel[:, None, :]),
        atol=1e-5,
    )
    filters = rng.normal(size=(3, 2, 4)).astype("float32")  # (B, C, W): each example its own
    want = [reference.conv1d_same(alignment[n : n + 1, :, None], filters[n].T[:, None])[0]
            for n in range(3)]  # fmt: skip
    np.testing.assert_allclose(
        to_numpy(location_relative.dynamic_convolution(alignment, filters)), want, atol=1e-5
    )


@pytest.mark.parametrize("width", [1, 4, 7, 12])
def test_windows_and_the_channel_convolution_match_explicit_loops(width, rng):
    # LocationSensitiveAttention's filters: Conv1D kernels (W, C_in, C) over two channels,
    # even widths included (one more position after than before, as Keras pads them).
    alignment = rng.dirichlet(np.ones(9), size=(3, 2)).transpose(0, 2, 1).astype("float32")
    before = (width - 1) // 2
    got = to_numpy(location_relative.windows(alignment, width))  # (B, Tv, W, C_in)
    assert got.shape == (3, 9, width, 2)
    for j in range(9):
        for k in range(width):
            source = j + k - before
            want = alignment[:, source] if 0 <= source < 9 else np.zeros((3, 2))
            np.testing.assert_array_equal(got[:, j, k], want)
    kernel = rng.normal(size=(width, 2, 5)).astype("float32")
    np.testing.assert_allclose(
        to_numpy(location_relative.convolve(alignment, kernel)),
        reference.conv1d_same(alignment, kernel),
        atol=1e-5,
    )
    # Only at each example's own positions, some outside the memory (an inference window).
    positions = np.array([[-3, 0, 4], [8, 9, 11], [2, -1, 5]], "int32")
    at = to_numpy(location_relative.windows_at(alignment, positions, width))  # (B, 3, W, C_in)
    for b in range(3):
        for i, j in enumerate(positions[b]):
            for k in range(width):
                source = j + k - before
                want = alignment[b, source] if 0 <= source < 9 else np.zeros(2)
                np.testing.assert_array_equal(at[b, i, k], want)
    full = reference.conv1d_same(alignment, kernel)
    inside = np.clip(positions, 0, 8)
    np.testing.assert_allclose(
        to_numpy(location_relative.convolve(alignment, kernel, positions))[positions == inside],
        np.take_along_axis(full, inside[..., None], axis=1)[positions == inside],
        atol=1e-5,
    )
    # the product runs in the kernel's dtype: float64 stays float64 (JAX without x64: float32)
    float64 = keras.backend.standardize_dtype(keras.ops.ones((), "float64").dtype)
    filtered = location_relative.convolve(alignment, kernel.astype("float64"))
    assert keras.backend.standardize_dtype(filtered.dtype) == float64
    np.testing.assert_allclose(
        to_numpy(filtered),
        reference.conv1d_same(alignment, kernel),
        atol=1e-12 if float64 == "float64" else 1e-5,
    )


# ------------------------------------------------------------------ stepwise modes
def test_stepwise_auto_mode_is_soft_in_training_and_hard_otherwise(rng):
    q, v = _inputs(rng)
    auto = _randomized(StepwiseMonotonicAttention(5), rng)
    twins = {}
    for mode in ("soft", "hard"):
        twins[mode] = StepwiseMonotonicAttention(5, mode=mode)
        twins[mode].build((None, None, DQ), (None, None, DV))
        twins[mode].set_weights(auto.get_weights())
    for training, mode in ((True, "soft"), (False, "hard"), (None, "hard")):
        _, weights = auto(q, v, return_attention_scores=True, training=training)
        _, expected = twins[mode](q, v, return_attention_scores=True, training=training)
        np.testing.assert_allclose(to_numpy(weights), to_numpy(expected), atol=1e-6)
    hard = to_numpy(auto(q, v, return_attention_scores=True)[1])
    assert set(np.unique(hard)) <= {0.0, 1.0}
    for row in hard:  # (Tq, Tv): from position 0, each step stays or moves by one
        positions = [0] + [int(np.argmax(step)) for step in row if step.sum() > 0]
        assert set(np.diff(positions)) <= {0, 1}


def test_stepwise_noise_acts_in_training_only(rng):
    q, v = _inputs(rng)
    layer = _randomized(StepwiseMonotonicAttention(5, sigmoid_noise=1.0, seed=2), rng)
    quiet = to_numpy(layer(q, v, training=False))
    np.testing.assert_allclose(to_numpy(layer(q, v)), quiet)
    assert not np.allclose(to_numpy(layer(q, v, training=True)), quiet, atol=1e-4)


# ------------------------------------------------------------------ GMM
def test_gmm_starts_from_its_initial_biases_and_only_moves_forward(rng):
    layer = GMMAttention(num_mixtures=4, units=8)
    q, v = _inputs(rng, tv=40)
    layer(q, v)
    np.testing.assert_allclose(to_numpy(layer.delta_bias), 1.0)
    np.testing.assert_allclose(to_numpy(layer.sigma_bias), 10.0)
    np.testing.assert_allclose(to_numpy(layer.mixture_bias), 0.0)
    key_features, value_features = layer.project_memory(v, v)
    state = layer.initial_alignment_state(key_features)
    assert tuple(state["means"].shape) == (2, 4) and tuple(state["weights"].shape) == (2, 40)
    means = [to_numpy(state["means"])]
    for t in range(q.shape[1]):
        _, state = layer.attend(q[:, t], key_features, value_features, alignment_state=state)
        means.append(to_numpy(state["means"]))
    steps = np.diff(np.stack(means), axis=0)  # (Tq, B, K)
    assert np.all(steps > 0)
    assert 0.5 < steps.mean() < 3.0  # about softplus(1) = 1.31 at the start


def test_gmm_weights_are_not_renormalized_over_the_mask(rng):
    layer = _randomized(GMMAttention(num_mixtures=2, units=4), rng)
    q, v = _inputs(rng, tv=6)
    value_mask = np.array([[True] * 6, [True] * 2 + [False] * 4])
    _, weights = layer(q, v, value_mask=value_mask, return_attention_scores=True)
    _, unmasked = layer(q, v, return_attention_scores=True)
    weights, unmasked = to_numpy(weights), to_numpy(unmasked)
    np.testing.assert_array_equal(weights[1, :, 2:], 0.0)
    np.testing.assert_allclose(weights[1, :, :2], unmasked[1, :, :2], atol=1e-6)


def test_gmm_state_of_size_k_in_the_cell_and_the_search_helpers(rng):
    cell = AttentionRNNCell(keras.layers.GRUCell(DQ), GMMAttention(num_mixtures=3, units=5))
    encoder = rng.normal(size=(2, 7, DV)).astype("float32")
    memory_mask = np.array([[True] * 7, [True] * 4 + [False] * 3])
    states = cell.initial_state(encoder, value_mask=memory_mask)
    assert cell.state_size[-2:] == [7, 3]  # weights (B, Tv), means (B, K)
    assert [tuple(s.shape) for s in states[-2:]] == [(2, 7), (2, 3)]
    inputs = rng.normal(size=(2, 3)).astype("float32")
    output, new_states = cell(inputs, states)
    alignment = cell.unpack_state(new_states).alignment
    assert tuple(alignment["means"].shape) == (2, 3)
    assert np.all(to_numpy(alignment["means"]) > 0)
    # A beam search's tiling and reordering act on every (B, n) leaf alike.
    tiled = tile_state(list(states), 2)  # rows b * 2 + k
    tiled_output, tiled_states = cell(np.repeat(inputs, 2, axis=0), tiled)
    np.testing.assert_allclose(to_numpy(tiled_output)[::2], to_numpy(output), atol=1e-5)
    reordered = reorder_state(list(tiled_states), np.array([3, 2, 1, 0]))
    np.testing.assert_allclose(
        to_numpy(reordered[-1]), to_numpy(new_states[-1])[[1, 1, 0, 0]], atol=1e-5
    )
    # An unknown memory length leaves the weights' size unknown (None), never the means'.
    symbolic = AttentionRNNCell(keras.layers.GRUCell(DQ), GMMAttention(num_mixtures=3, units=5))
    symbolic.initial_state(keras.Input((None, DV)))
    assert symbolic.state_size[-2:] == [None, 3]


# ------------------------------------------------------------------ DCA
def test_dca_defaults_are_the_papers(rng):
    layer = DynamicConvolutionAttention()
    assert (layer.units, layer.static_filters, layer.static_kernel_size) == (128, 8, 21)
    assert (layer.dynamic_filters, layer.dynamic_kernel_size, layer.dynamic_units) == (8, 21, 128)
    assert (layer.prior_length, layer.prior_alpha, layer.prior_beta) == (11, 0.1, 0.9)
    q, v = _inputs(rng, tv=30)
    layer(q, v)
    assert tuple(layer.static_kernel.shape) == (21, 8)
    assert tuple(layer.filter_dense.kernel.shape) == (128, 8 * 21)
    assert all(w.trainable for w in layer.weights)  # the prior is a constant, not a weight
    assert len(layer.weights) == 8


def test_dca_weights_are_a_softmax_that_moves_forward(rng):
    layer = _randomized(DynamicConvolutionAttention(units=8, dynamic_units=8), rng)
    q, v = _inputs(rng, tq=6, tv=30)
    value_mask = np.arange(30)[None] < np.array([[30], [12]])
    weights = to_numpy(layer(q, v, value_mask=value_mask, return_attention_scores=True)[1])
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(weights[1, :, 12:], 0.0)
    # The causal prior: at step 1 (from position 0) positions past the prior's
    # reach get at most the floor's 1e-6 factor.
    assert np.all(weights[:, 0, 11:] < 1e-3)


def test_dca_works_with_a_symbolic_batch_and_length(rng):
    query, value = keras.Input((None, DQ)), keras.Input((None, DV))
    layer = DynamicConvolutionAttention(units=8, dynamic_units=8)
    model = keras.Model([query, value], layer(query, value))
    q, v = _inputs(rng, batch=3, tv=11)
    assert tuple(model([q, v]).shape) == (3, 5, DV)


# ------------------------------------------------------------------ fresh layers
FRESH = {
    "stepwise": lambda **kw: StepwiseMonotonicAttention(16, **kw),
    "gmm": lambda **kw: GMMAttention(units=16, **kw),
    "dca": lambda **kw: DynamicConvolutionAttention(units=16, dynamic_units=16, **kw),
}


@pytest.mark.parametrize("seeded", [False, True])
@pytest.mark.parametrize("name", sorted(FRESH))
def test_fresh_layers_start_with_distinct_kernels(name, seeded):
    """Every kernel and score vector of a fresh layer its own (16 -> 16 where shapes allow)."""
    x = np.random.default_rng(0).normal(size=(2, 5, 16)).astype("float32")
    kwargs = {"kernel_initializer": keras.initializers.GlorotUniform(seed=4)} if seeded else {}
    layer = FRESH[name](**kwargs)
    layer(x, x)
    kernels = {
        w.path: to_numpy(w) for w in layer.weights if len(w.shape) >= 2 or w.path.endswith("/v")
    }
    assert len(kernels) >= 2
    for (path_a, a), (path_b, b) in itertools.combinations(kernels.items(), 2):
        size = min(a.size, b.size)
        assert not np.allclose(a.ravel()[:size], b.ravel()[:size]), (path_a, path_b)
    for path, kernel in kernels.items():
        assert np.std(kernel) > 0, f"{path} starts constant"


# ------------------------------------------------------------------ bad arguments
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: StepwiseMonotonicAttention(4, mode="parallel"),
         r"StepwiseMonotonicAttention: `mode` must be one of \('auto', 'soft', 'hard'\)\. "
         r"Received: mode='parallel'"),
        (lambda: StepwiseMonotonicAttention(0), r"`units` must be a positive integer\. "
         r"Received: units=0"),
        (lambda: StepwiseMonotonicAttention(4, sigmoid_noise=-1.0),
         r"`sigmoid_noise` must be a number >= 0\. Received: sigmoid_noise=-1\.0"),
        (lambda: GMMAttention(num_mixtures=0),
         r"GMMAttention: `num_mixtures` must be a positive integer\. Received: num_mixtures=0"),
        (lambda: GMMAttention(units=2.5), r"`units` must be a positive integer\. "
         r"Received: units=2\.5"),
        (lambda: GMMAttention(sigma_bias_init="wide"),
         r"`sigma_bias_init` must be a number\. Received: sigma_bias_init='wide'"),
        (lambda: DynamicConvolutionAttention(dynamic_kernel_size=0),
         r"DynamicConvolutionAttention: `dynamic_kernel_size` must be a positive integer\. "
         r"Received: dynamic_kernel_size=0"),
        (lambda: DynamicConvolutionAttention(prior_alpha=0.0),
         r"`prior_alpha` must be a positive number\. Received: prior_alpha=0\.0"),
        (lambda: DynamicConvolutionAttention(prior_length=True),
         r"`prior_length` must be a positive integer\. Received: prior_length=True"),
    ],
)  # fmt: skip
def test_bad_constructor_arguments_name_the_argument(make, message):
    with pytest.raises(ValueError, match=message):
        make()
