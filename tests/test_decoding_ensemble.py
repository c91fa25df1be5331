"""decoding.ensemble_step against NumPy: searches over the mean of two models' log-probabilities.

The two members carry different states: the scripted table model of
test_decoding (a dict with an int32 prefix code and a nested tuple) and a
tiny NumPy-checkable RNN (a float hidden state and a list holding a step
count). Both depend on the whole prefix, so a member state that beam search
failed to tile or reorder changes the result. The NumPy references
(test_decoding's exhaustive enumeration and list-based beam search, and a
greedy loop here) search the normalized mean of the members' log-softmaxes.
"""

import keras
import numpy as np
import pytest
from backend_utils import to_numpy
from keras import ops
from test_decoding import END
from test_decoding import PAD
from test_decoding import START
from test_decoding import TV
from test_decoding import B
from test_decoding import T
from test_decoding import V
from test_decoding import _check
from test_decoding import _exhaustive
from test_decoding import _log_softmax
from test_decoding import _numpy_beam
from test_decoding import _numpy_model
from test_decoding import _scripted
from test_decoding import _tables

from keras_attention import decoding

BACKEND = keras.backend.backend()
H = 5  # the RNN member's units


def _rnn(seed, with_attention=True):
    """`(step, state, numpy_model(entry))`: h' = tanh(h W + E[id]), logits = 2 h' U.

    The state is `(h (B, H) float32, [count (B,) int32])`; the attention is a
    softmax over the first `TV - 1` positions (the last is padding, as in the
    scripted model's tables).
    """
    rng = np.random.default_rng(seed)
    embeddings = rng.normal(size=(V, H)).astype("float32")
    recurrent = (0.7 * rng.normal(size=(H, H))).astype("float32")
    output = (2.0 * rng.normal(size=(H, V))).astype("float32")
    aligner = rng.normal(size=(H, TV - 1)).astype("float32")
    start = rng.normal(size=(B, H)).astype("float32")
    tensors = [ops.convert_to_tensor(x) for x in (embeddings, recurrent, output, aligner)]

    def step(ids, state, index):
        h, [count] = state
        embedded, weights, projection, align = tensors
        h = ops.tanh(ops.matmul(h, weights) + ops.take(embedded, ids, axis=0))
        logits = ops.matmul(h, projection)
        new = (h, [count + 1])
        if not with_attention:
            return logits, new
        attention = ops.softmax(ops.matmul(h, align), axis=-1)  # (N, TV - 1)
        return logits, new, ops.pad(attention, [[0, 0], [0, 1]])

    def numpy_model(entry):
        def run(prefix):
            h = start[entry].astype("float64")
            for token in (START, *prefix):
                h = np.tanh(h @ recurrent + embeddings[token])
            scores = h @ aligner
            attention = np.exp(scores - scores.max())
            attention = np.append(attention / attention.sum(), 0.0)
            return _log_softmax(h @ output), attention if with_attention else None

        return run

    state = (ops.convert_to_tensor(start), [ops.zeros((B,), "int32")])
    return step, state, numpy_model


def _numpy_ensemble(models):
    """The ensemble's model: log_softmax(mean of log-probs), the mean of the attentions given."""

    def run(prefix):
        outputs = [model(prefix) for model in models]
        mean = np.mean([log_probs for log_probs, _ in outputs], axis=0)
        attentions = [attention for _, attention in outputs if attention is not None]
        return _log_softmax(mean), np.mean(attentions, axis=0) if attentions else np.zeros(1)

    return run


def _members(seed=0, rnn_attention=True):
    tables = _tables(seed=seed)
    table_step, table_state = _scripted(tables)
    rnn_step, rnn_state, rnn_model = _rnn(seed + 100, with_attention=rnn_attention)
    steps, states = [table_step, rnn_step], (table_state, rnn_state)

    def reference(entry):
        return _numpy_ensemble([_numpy_model(tables, entry), rnn_model(entry)])

    return steps, states, reference


def _run(search, step, states, *args, **kwargs):
    """`search(step, states, ...)`, under `jax.jit` on JAX, where an eager search compiles
    each op and loop anew (as `backend_utils.compiled_value_and_grad`); test_jax_jit and
    the other backends' eager runs cover the rest."""
    if BACKEND != "jax":
        return search(step, states, *args, **kwargs)
    import jax

    return jax.jit(lambda states: search(step, states, *args, **kwargs))(states)


def _numpy_greedy(model):
    y, log_prob, rows = (), 0.0, []
    while len(y) < T and END not in y:
        log_probs, attention = model(y)
        token = int(log_probs.argmax())
        y, log_prob, rows = y + (token,), log_prob + log_probs[token], [*rows, attention]
    return y, log_prob, rows, log_prob


# ----------------------------------------------------------------------------
# Against NumPy
# ----------------------------------------------------------------------------
def test_the_step_returns_the_mean_log_softmax_the_states_and_the_mean_attention():
    tables = _tables(seed=7)
    table_step, table_state = _scripted(tables, dtype="float16")  # normalized in float32
    rnn_step, rnn_state, rnn_model = _rnn(107)
    step = decoding.ensemble_step([table_step, rnn_step])
    ids = ops.full((B,), START, "int32")
    log_probs, states, attention = step(ids, (table_state, rnn_state), ops.zeros((), "int32"))
    assert keras.backend.standardize_dtype(log_probs.dtype) == "float32"
    assert isinstance(states, tuple) and len(states) == 2
    keras.tree.assert_same_structure(states, (table_state, rnn_state))
    for entry in range(B):  # the mean itself: the searches normalize it, the step does not
        table_log_probs = _log_softmax(tables[0][entry, 0].astype("float16").astype("float64"))
        rnn_log_probs, rnn_attention = rnn_model(entry)(())
        expected = (table_log_probs + rnn_log_probs) / 2
        np.testing.assert_allclose(to_numpy(log_probs)[entry], expected, atol=1e-5)
        expected = (tables[1][entry, 0] + rnn_attention) / 2
        np.testing.assert_allclose(to_numpy(attention)[entry], expected, atol=1e-6)


@pytest.mark.parametrize("beam_size, alpha, beta", [(2, 0.6, 0.2), (V**T, 1.0, 0.4)])
def test_ensemble_beam_search_matches_numpy_over_the_mean_log_probabilities(beam_size, alpha, beta):
    steps, states, reference = _members(seed=1)
    step = decoding.ensemble_step(steps)
    result = _run(decoding.beam_search, step, states, START, END, T, beam_size, alpha, beta, PAD)
    for entry in range(B):
        if beam_size == V**T:
            expected = _exhaustive(reference(entry), alpha, beta)
        else:
            expected = _numpy_beam(reference(entry), beam_size, alpha, beta)
        for k, hypothesis in enumerate(expected):
            _check(result, hypothesis, entry, k, atol=1e-4)


def test_ensemble_greedy_search_matches_numpy():
    steps, states, reference = _members(seed=2)
    result = _run(decoding.greedy_search, decoding.ensemble_step(steps), states, START, END, T, PAD)
    for entry in range(B):
        expected = _numpy_greedy(reference(entry))
        _check(result, expected, entry, 0, atol=1e-4)
        # Not one member in disguise: each alone scores these tokens otherwise.
        members = [_numpy_model(_tables(seed=2), entry), _rnn(102)[2](entry)]
        for member in members:
            log_prob = sum(member(expected[0][:i])[0][t] for i, t in enumerate(expected[0]))
            assert abs(log_prob - expected[1]) > 1e-3


def test_sampling_an_ensemble_scores_the_draws_with_the_ensembles_log_probabilities():
    steps, states, reference = _members(seed=3)
    step = decoding.ensemble_step(steps)
    drawn = _run(decoding.sample, step, states, START, END, T, seed=5)
    for entry in range(B):
        y = tuple(to_numpy(drawn.ids)[entry, 0, : to_numpy(drawn.lengths)[entry, 0]])
        log_prob = sum(reference(entry)(y[:i])[0][token] for i, token in enumerate(y))
        np.testing.assert_allclose(to_numpy(drawn.log_probs)[entry, 0], log_prob, atol=1e-4)


def test_attention_is_the_mean_of_the_members_that_return_one():
    steps, states, reference = _members(seed=4, rnn_attention=False)
    step = decoding.ensemble_step(steps)
    result = _run(decoding.beam_search, step, states, START, END, T, 2, 0.6, 0.3, PAD)
    for entry in range(B):  # the table member's attention only, in the coverage penalty too
        for k, hypothesis in enumerate(_numpy_beam(reference(entry), 2, 0.6, 0.3)):
            _check(result, hypothesis, entry, k, atol=1e-4)
    quiet = [lambda ids, state, index: step(ids, state, index)[:2]] * 2  # none returns one
    outputs = decoding.ensemble_step(quiet)(ops.full((B,), START, "int32"), (states, states), 0)
    assert len(outputs) == 2  # (log_probs, states): the searches then keep no attention


# ----------------------------------------------------------------------------
# One member
# ----------------------------------------------------------------------------
def test_a_one_member_ensemble_is_the_member():
    steps, states, _ = _members(seed=5)
    member, state = steps[1], states[1]
    one = decoding.ensemble_step([member])
    pairs = [
        (
            _run(decoding.beam_search, member, state, START, END, T, 3, 0.6, 0.2, PAD),
            _run(decoding.beam_search, one, (state,), START, END, T, 3, 0.6, 0.2, PAD),
        ),
    ]
    for alone, ensemble in pairs:
        np.testing.assert_array_equal(to_numpy(ensemble.ids), to_numpy(alone.ids))
        np.testing.assert_array_equal(to_numpy(ensemble.lengths), to_numpy(alone.lengths))
        for field in ("scores", "log_probs", "attention"):
            got, want = to_numpy(getattr(ensemble, field)), to_numpy(getattr(alone, field))
            np.testing.assert_allclose(got, want, atol=1e-5)


# ----------------------------------------------------------------------------
# Compiled
# ----------------------------------------------------------------------------
def _compiled_matches_numpy(compile_fn, beam=True):
    steps, states, reference = _members(seed=6)
    step = decoding.ensemble_step(steps)

    def search(states):
        if beam:  # early stopping: the best hypothesis is the full search's
            return decoding.beam_search(step, states, START, END, T, 2, 0.6, 0.2, PAD, True)
        return decoding.greedy_search(step, states, START, END, T, PAD)

    result = compile_fn(search)(states)
    for entry in range(B):
        model = reference(entry)
        expected = _numpy_beam(model, 2, 0.6, 0.2)[0] if beam else _numpy_greedy(model)
        _check(result, expected, entry, 0, atol=1e-4)


@pytest.mark.tf_only
def test_tf_function():
    """Greedy search: the NMT example's tests run an ensemble's beam search in a
    `tf.function` and a SavedModel (here it took 4 to 9 s more, with XLA too)."""
    import tensorflow as tf

    _compiled_matches_numpy(tf.function, beam=False)


@pytest.mark.skipif(BACKEND != "jax", reason="jax.jit")
def test_jax_jit():
    import jax

    _compiled_matches_numpy(jax.jit)


# ----------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------
def _uniform(vocab):
    return lambda ids, state, index: (ops.zeros((ops.shape(ids)[0], vocab)), state)


@pytest.mark.parametrize(
    "steps, error, match",
    [
        ([], ValueError, "`steps` must be a non-empty list"),
        (_uniform(V), TypeError, "`steps` must be a list of step functions"),
        ("step", TypeError, "`steps` must be a list of step functions"),
        ([_uniform(V), "step"], TypeError, r"`steps\[1\]` must be a function"),
    ],
)
def test_bad_steps_name_themselves(steps, error, match):
    with pytest.raises(error, match=match):
        decoding.ensemble_step(steps)


def test_members_of_different_vocabularies_are_refused_by_name():
    step = decoding.ensemble_step([_uniform(V), _uniform(V + 2)])
    state = (ops.zeros((B, 1)), ops.zeros((B, 1)))
    match = r"`steps` must return logits of one vocabulary size.*\(2, 6\) from steps\[1\]"
    with pytest.raises(ValueError, match=match):
        decoding.greedy_search(step, state, START, END, T)


@pytest.mark.parametrize("state", [ops.zeros((B, 1)), (ops.zeros((B, 1)),)])
def test_a_state_that_is_not_one_per_member_is_refused_by_name(state):
    step = decoding.ensemble_step([_uniform(V), _uniform(V)])
    with pytest.raises(ValueError, match="`state` must be a tuple of 2 states"):
        decoding.beam_search(step, state, START, END, T, beam_size=2)
