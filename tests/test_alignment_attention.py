"""Attention with an alignment state: location-sensitive, monotonic and location-relative layers.

The layers' own behaviour, against their recurrence written out in NumPy
(`layer_cases.alignment_reference`, one step after the other): masked queries,
monotonic movement, inference windows, noise, fully masked memories, XLA, and
inside `AttentionRNNCell`. What every layer honours (full call and `step`
against NumPy, config and `.keras` files, shapes, dtypes, masks, fresh
weights) is `test_layer_contract.py`'s, over `layer_cases.REGISTRY`.
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
from layer_cases import ALIGNMENT as CASES
from layer_cases import ALIGNMENT_DIMS
from layer_cases import alignment_reference as reference_run
from layer_cases import build_randomized
from layer_cases import make_alignment_inputs as make_inputs

from keras_attention import AttentionRNN
from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import BahdanauMonotonicAttention
from keras_attention import DynamicConvolutionAttention
from keras_attention import GMMAttention
from keras_attention import LocationSensitiveAttention
from keras_attention import LuongAttention
from keras_attention import LuongLocalPAttention
from keras_attention import LuongMonotonicAttention
from keras_attention import StepwiseMonotonicAttention
from keras_attention import monotonic

ALL = sorted(CASES)
DQ, DK, DV = ALIGNMENT_DIMS


# ------------------------------------------------------------------ the math
@pytest.mark.parametrize("length", [1, 2, 9, 16, 33])
@pytest.mark.parametrize("mode", ["parallel", "recursive"])
def test_monotonic_attention_is_the_recurrence(mode, length, rng):
    """Lengths around powers of two: the parallel scan's rounds reach back 1, 2, 4, ..."""
    p_choose = rng.uniform(size=(3, length)).astype("float32")
    previous = rng.dirichlet(np.ones(length), size=3).astype("float32")
    previous[2] = 0.0
    previous[2, length // 2] = 1.0
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


def test_parallel_mode_keeps_mass_carried_past_near_certain_stops():
    """Position 5 holds 0.34 of the previous alignment; the stops before it are near 1."""
    p_choose = np.array([[0.119593, 0.999996, 0.998921, 0.847678, 0.998871, 0.915739]], "float32")
    previous = np.array([[0.3631, 0.0375, 0.1244, 0.0089, 0.0046, 0.3396]], "float32")
    want = reference.monotonic_recurrence(p_choose, previous)  # [..., 0.311]
    got = to_numpy(monotonic.monotonic_attention(p_choose, previous, "parallel"))
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow graphs only")
def test_parallel_mode_in_a_graph_of_unknown_length(rng):
    """Traced with `Tv = None`, the scan loops over its rounds: the recurrence and its gradients."""
    import tensorflow as tf

    def alignment_and_grads(p_choose, previous, mode="parallel"):
        with tf.GradientTape() as tape:
            tape.watch([p_choose, previous])
            alignment = monotonic.monotonic_attention(p_choose, previous, mode)
            loss = tf.reduce_sum(alignment**2)
        return alignment, tape.gradient(loss, [p_choose, previous])

    spec = tf.TensorSpec([None, None], "float32")
    traced = tf.function(alignment_and_grads, input_signature=[spec, spec])
    for length in (1, 5, 8, 21):
        p_choose = rng.uniform(size=(2, length)).astype("float32")
        previous = rng.dirichlet(np.ones(length), size=2).astype("float32")
        alignment, grads = traced(p_choose, previous)
        want = reference.monotonic_recurrence(p_choose, previous)
        np.testing.assert_allclose(alignment.numpy(), want, atol=1e-5)
        _, want_grads = alignment_and_grads(
            tf.constant(p_choose), tf.constant(previous), "recursive"
        )
        for got, expected in zip(grads, want_grads):
            np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-5)


def test_bad_mode():
    with pytest.raises(ValueError, match="monotonic_attention: `mode` must be one of"):
        monotonic.monotonic_attention(np.ones((1, 2)), np.ones((1, 2)), "soft")


# ------------------------------------------------------------------ the layers
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
        "location_sigmoid_window",
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


def test_a_subclass_names_itself_and_takes_only_true_or_false():
    """Regression: StepwiseMonotonicAttention's errors named BahdanauMonotonicAttention,
    and normalize="yes" was taken as True."""
    with pytest.raises(ValueError, match=r"^StepwiseMonotonicAttention: `units`.*units=0"):
        StepwiseMonotonicAttention(units=0)
    with pytest.raises(TypeError, match=r"StepwiseMonotonicAttention: `normalize` must be True"):
        StepwiseMonotonicAttention(4, normalize="yes")
    with pytest.raises(TypeError, match=r"LuongMonotonicAttention: `use_scale`.*use_scale=1"):
        LuongMonotonicAttention(use_scale=1)
    with pytest.raises(TypeError, match=r"LocationSensitiveAttention: `use_bias`"):
        LocationSensitiveAttention(use_bias="no")


@pytest.mark.parametrize(
    "make, argument",
    [
        (lambda **kw: LocationSensitiveAttention(**kw), {"window": 3}),
        (lambda **kw: LocationSensitiveAttention(**kw), {"dropout": 0.1}),
        (lambda **kw: LocationSensitiveAttention(**kw), {"seed": 1}),
        (lambda **kw: BahdanauMonotonicAttention(4, **kw), {"implementation": "chunked"}),
        (lambda **kw: StepwiseMonotonicAttention(4, **kw), {"block_size": 8}),
        (lambda **kw: LuongMonotonicAttention(**kw), {"probability_fn": "sparsemax"}),
        (lambda **kw: GMMAttention(**kw), {"seed": 1}),
        (lambda **kw: GMMAttention(**kw), {"probability_fn": "softmax"}),
        (lambda **kw: DynamicConvolutionAttention(**kw), {"window": (1, 1)}),
    ],
)
def test_arguments_a_layer_does_not_take_are_refused_by_name(make, argument):
    """Regression: LocationSensitiveAttention(window=3) raised Python's "got multiple
    values for keyword argument 'window'"."""
    ((name, value),) = argument.items()
    pattern = rf"Attention: `{name}` must be left out \(.*\)\. Received: {name}="
    with pytest.raises(TypeError, match=pattern):
        make(**argument)


def test_no_layer_deletes_a_config_key_of_its_base():
    """The content arguments live on ContentAttention: an alignment layer's config holds
    only its own (location-sensitive: probability_fn; monotonic: seed), local-p all of
    LuongAttention's."""
    content = ("dropout", "implementation", "block_size", "window")
    for name in ALL:
        config = CASES[name]().get_config()
        assert not set(content) & set(config), name
        assert ("probability_fn" in config) == name.startswith("location"), name
        assert ("seed" in config) == ("monotonic" in name or "stepwise" in name), name
    local_p = LuongLocalPAttention(window_width=2, implementation="auto", block_size=8)
    assert set(LuongAttention().get_config()) <= set(local_p.get_config())
    assert LuongLocalPAttention.from_config(local_p.get_config()).get_config() == (
        local_p.get_config()
    )
    with pytest.raises(ValueError, match=r"LuongLocalPAttention: `implementation` must be"):
        LuongLocalPAttention(implementation="chunked")


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


@pytest.mark.parametrize("name", CELL_CASES)
def test_cell_initial_state_takes_a_memory_of_unknown_length_in_a_functional_model(name, rng):
    """Regression: with monotonic attention (and DCA) `initial_state` failed on a
    symbolic memory of unknown length ("Invalid dtype: NoneType"); the two-call form
    `RNN(cell)(x, initial_state=cell.initial_state(memory))` then runs as eagerly."""
    cell = AttentionRNNCell(keras.layers.GRUCell(DQ), CASES[name](), attention_layer_size=5)
    memory_in, target_in = keras.Input((None, DV)), keras.Input((None, 3))
    states = cell.initial_state(memory_in)
    assert sorted(cell.unpack_state(states).alignment) == sorted(
        cell.attention.alignment_state_keys
    )
    rnn = keras.layers.RNN(cell, return_sequences=True)
    model = keras.Model([memory_in, target_in], rnn(target_in, initial_state=states))
    encoder = rng.normal(size=(2, 6, DV)).astype("float32")
    inputs = rng.normal(size=(2, 4, 3)).astype("float32")
    expected = to_numpy(rnn(inputs, initial_state=cell.initial_state(encoder)))
    got = model.predict([encoder, inputs], verbose=0)
    np.testing.assert_allclose(got, expected, atol=1e-5)


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
