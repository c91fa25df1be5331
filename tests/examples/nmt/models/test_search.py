"""Greedy and beam search against scripted step functions (no model)."""

import itertools

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from examples.nmt.models import search as searches  # noqa: E402

PAD, START, END, A, B = 0, 1, 2, 3, 4
VOCAB = 5
MAX_LENGTH = 4
LONGEST_PREFIX = 5  # The scripted tables cover prefixes up to this length.


def prefix_step_fn(probs: dict, source_length: int = 3, attention_fn=None):
    """A step function whose next-token distribution depends on the whole prefix.

    ``probs`` maps a prefix (tuple of ids, without START) to ``VOCAB``
    probabilities; other prefixes get a uniform distribution. The state is the
    prefix encoded in base ``VOCAB + 1``, so a search that reorders beams
    without reordering the state reads the wrong rows. ``attention_fn(step,
    ids)`` gives the ``(N, Tv)`` weights (default: one-hot on ``step``).
    """
    codes = (VOCAB + 1) ** LONGEST_PREFIX
    table = np.full((codes, VOCAB), 1.0 / VOCAB)
    for prefix, row in probs.items():
        table[sum((t + 1) * (VOCAB + 1) ** i for i, t in enumerate(reversed(prefix)))] = row
    log_table = tf.constant(np.log(np.maximum(table, 1e-12)), tf.float32)

    def step_fn(ids, state, step):
        code = tf.where(step == 0, state, state * (VOCAB + 1) + ids + 1)
        if attention_fn is None:
            attention = tf.one_hot(
                tf.fill(tf.shape(ids), tf.minimum(step, source_length - 1)), source_length
            )
        else:
            attention = attention_fn(step, ids)
        return tf.gather(log_table, code), code, attention

    return step_fn


def row(**probs):
    """A ``VOCAB`` distribution: named tokens get their share, the rest ~0."""
    values = np.full(VOCAB, 1e-9)
    for name, p in probs.items():
        values[{"pad": PAD, "start": START, "end": END, "a": A, "b": B}[name]] = p
    return values / values.sum()


def random_probs(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    prefixes = [p for n in range(MAX_LENGTH) for p in itertools.product(range(VOCAB), repeat=n)]
    return {p: rng.dirichlet(np.ones(VOCAB) * 0.5) for p in prefixes}


def initial_state(batch_size: int = 2):
    return tf.zeros([batch_size], tf.int32)


def numpy_greedy(probs: dict) -> tuple:
    prefix, log_prob = (), 0.0
    while len(prefix) < MAX_LENGTH and (not prefix or prefix[-1] != END):
        token = int(np.argmax(probs[prefix]))
        log_prob += np.log(probs[prefix][token])
        prefix += (token,)
    return prefix, log_prob


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_follows_the_argmax_path(seed):
    probs = random_probs(seed)
    result = searches.greedy_search(prefix_step_fn(probs), initial_state(), START, END, MAX_LENGTH)
    expected, log_prob = numpy_greedy(probs)
    assert result.ids.shape == (2, 1, MAX_LENGTH)
    assert result.ids.dtype == tf.int32
    for b in range(2):
        assert tuple(result.ids[b, 0, : len(expected)].numpy()) == expected
        assert np.all(result.ids[b, 0, len(expected) :].numpy() == PAD)
        assert result.lengths[b, 0] == len(expected)
        np.testing.assert_allclose(result.log_probs[b, 0], log_prob, rtol=1e-5)
    np.testing.assert_allclose(result.scores, result.log_probs)


def test_beam_finds_a_better_sequence_than_greedy():
    # Greedy takes A (0.6) then can only reach 0.6 * 0.3; B (0.4) then END (0.9) is better.
    probs = {
        (): row(a=0.6, b=0.4),
        (A,): row(end=0.3, a=0.25, b=0.25, pad=0.1, start=0.1),
        (B,): row(end=0.9, a=0.1),
    }
    step_fn = prefix_step_fn(probs)
    greedy = searches.greedy_search(step_fn, initial_state(), START, END, MAX_LENGTH)
    beam = searches.beam_search(step_fn, initial_state(), START, END, MAX_LENGTH, beam_size=2)
    assert list(greedy.ids[0, 0, :2].numpy()) == [A, END]
    assert list(beam.ids[0, 0, :2].numpy()) == [B, END]
    assert beam.log_probs[0, 0] > greedy.log_probs[0, 0]
    np.testing.assert_allclose(beam.log_probs[0, 0], np.log(0.4 * 0.9), rtol=1e-4)
    assert np.all(np.diff(beam.scores.numpy(), axis=1) <= 0)  # Best first.


@pytest.mark.parametrize("seed", [3, 4])
def test_beam_size_one_equals_greedy(seed):
    step_fn = prefix_step_fn(random_probs(seed))
    greedy = searches.greedy_search(step_fn, initial_state(3), START, END, MAX_LENGTH)
    beam = searches.beam_search(step_fn, initial_state(3), START, END, MAX_LENGTH, beam_size=1)
    for name in searches.SearchResult._fields:
        np.testing.assert_allclose(
            getattr(beam, name), getattr(greedy, name), rtol=1e-6, err_msg=name
        )


def test_beam_keeps_its_state_with_its_hypothesis():
    # Only a search that reorders the state by parent beam finds [B, B, END].
    probs = {
        (): row(a=0.5, b=0.45, end=0.05),
        (A,): row(end=0.5, a=0.5),
        (B,): row(b=1.0),
        (A, A): row(end=0.4, a=0.6),
        (B, B): row(end=1.0),
    }
    beam = searches.beam_search(
        prefix_step_fn(probs), initial_state(), START, END, MAX_LENGTH, beam_size=3
    )
    assert list(beam.ids[0, 0, :3].numpy()) == [B, B, END]
    np.testing.assert_allclose(beam.log_probs[0, 0], np.log(0.45), rtol=1e-4)


def test_end_token_stops_and_pads():
    probs = {(): row(a=1.0), (A,): row(end=1.0)}
    for search in (searches.greedy_search, searches.beam_search):
        result = search(prefix_step_fn(probs), initial_state(), START, END, MAX_LENGTH)
        assert list(result.ids[0, 0].numpy()) == [A, END, PAD, PAD]
        assert result.lengths[0, 0] == 2
        assert np.all(result.attention[0, 0, 2:].numpy() == 0)


def test_max_length_cuts_hypotheses_without_end():
    probs = {p: row(a=1.0) for n in range(MAX_LENGTH) for p in itertools.product([A], repeat=n)}
    result = searches.greedy_search(
        prefix_step_fn(probs), initial_state(), START, END, MAX_LENGTH, pad_id=7
    )
    assert list(result.ids[0, 0].numpy()) == [A] * MAX_LENGTH
    assert result.lengths[0, 0] == MAX_LENGTH


def test_pad_id_fills_after_the_end():
    result = searches.greedy_search(
        prefix_step_fn({(): row(end=1.0)}), initial_state(), START, END, 3, pad_id=9
    )
    assert list(result.ids[0, 0].numpy()) == [END, 9, 9]


def test_attention_weights_of_every_step():
    probs = {(): row(a=1.0), (A,): row(a=1.0), (A, A): row(end=1.0)}
    result = searches.beam_search(
        prefix_step_fn(probs, source_length=5), initial_state(), START, END, 6, beam_size=2
    )
    assert result.attention.shape == (2, 2, 6, 5)
    np.testing.assert_allclose(result.attention[0, 0, :3], np.eye(5)[:3])
    assert np.all(result.attention[0, 0, 3:].numpy() == 0)


def test_length_penalty_favours_longer_hypotheses():
    # [END] has p = 0.5; [A, END] has p = 0.475 but gains more from lp(2) = (7/6) ** alpha.
    probs = {(): row(end=0.5, a=0.5), (A,): row(end=0.95, b=0.05)}
    step_fn = prefix_step_fn(probs)
    plain = searches.beam_search(step_fn, initial_state(), START, END, MAX_LENGTH, beam_size=2)
    alpha = 1.0
    penalized = searches.beam_search(
        step_fn, initial_state(), START, END, MAX_LENGTH, beam_size=2, length_penalty_alpha=alpha
    )
    assert plain.lengths[0, 0] == 1
    assert penalized.lengths[0, 0] == 2
    np.testing.assert_allclose(penalized.scores[0, 0], np.log(0.475) / (7 / 6) ** alpha, rtol=1e-4)


def test_coverage_penalty_favours_covering_the_source():
    # B is a little more probable, but its path never looks at source position 1.
    def attention_fn(step, ids):
        looks_at_1 = tf.logical_and(step > 0, tf.equal(ids, A))
        return tf.where(looks_at_1[:, None], [[0.0, 1.0]], [[0.9, 0.1]])

    probs = {(): row(a=0.49, b=0.51), (A,): row(end=1.0), (B,): row(end=1.0)}
    step_fn = prefix_step_fn(probs, attention_fn=attention_fn)
    plain = searches.beam_search(step_fn, initial_state(), START, END, MAX_LENGTH, beam_size=2)
    beta = 1.0
    covered = searches.beam_search(
        step_fn, initial_state(), START, END, MAX_LENGTH, beam_size=2, coverage_penalty_beta=beta
    )
    assert plain.ids[0, 0, 0] == B
    assert covered.ids[0, 0, 0] == A
    # A's coverage is (0.9, 1.1) -> log(0.9); B's is (1.8, 0.2) -> log(0.2).
    np.testing.assert_allclose(
        covered.scores[0], np.log([0.49, 0.51]) + beta * np.log([0.9, 0.2]), rtol=1e-4
    )


def test_penalty_functions():
    np.testing.assert_allclose(
        searches.length_penalty(tf.constant([1, 7]), 0.6), [1.0, 2.0**0.6], rtol=1e-6
    )
    coverage = tf.constant([[0.5, 2.0, 0.0]])  # The unattended (padded) position is skipped.
    np.testing.assert_allclose(
        searches.coverage_penalty(coverage, 0.2), [0.2 * np.log(0.5)], rtol=1e-6
    )


@pytest.mark.parametrize("jit_compile", [False, True])
def test_searches_compile_with_tf_function(jit_compile):
    step_fn = prefix_step_fn(random_probs(5))
    options = {"beam_size": 3, "length_penalty_alpha": 0.6, "coverage_penalty_beta": 0.2}
    eager = searches.beam_search(step_fn, initial_state(), START, END, MAX_LENGTH, **options)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)], jit_compile=jit_compile)
    def search(state):
        return searches.beam_search(step_fn, state, START, END, MAX_LENGTH, **options)

    concrete = search.get_concrete_function()
    assert concrete.structured_outputs.ids.shape.as_list() == [None, 3, MAX_LENGTH]
    assert concrete.structured_outputs.attention.shape.as_list() == [None, 3, MAX_LENGTH, 3]
    graph = search(initial_state())
    for name in searches.SearchResult._fields:
        np.testing.assert_allclose(
            getattr(graph, name), getattr(eager, name), rtol=1e-5, err_msg=name
        )


def test_tile_batch_repeats_each_entry():
    tiled = searches.tile_batch({"h": tf.constant([[1], [2]])}, 3)
    assert tiled["h"].numpy().ravel().tolist() == [1, 1, 1, 2, 2, 2]
