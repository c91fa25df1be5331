"""keras_attention.decoding against NumPy: exhaustive enumeration, a list-based beam search, GNMT.

The scripted models give logits that depend on the whole prefix (through a
prefix code carried in a nested state), so a wrongly reordered state changes
the result. V = 4, depth 3: 40 hypotheses, so a beam of 64 covers all of them.
"""

import keras
import numpy as np
import pytest
from backend_utils import to_numpy
from keras import ops

from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import MultiHead
from keras_attention import decoding

BACKEND = keras.backend.backend()
PAD, END, START = 0, 1, 2
V, T, TV, B = 4, 3, 4, 2


# ----------------------------------------------------------------------------
# NumPy references
# ----------------------------------------------------------------------------
def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _score(log_prob, length, coverage, alpha, beta):
    """GNMT: log P / ((5 + |Y|) / 6) ** alpha + beta * sum log min(coverage, 1), zeros left out."""
    logs = np.log(np.minimum(coverage[coverage > 0], 1.0))
    return log_prob / ((5.0 + length) / 6.0) ** alpha + beta * logs.sum()


def _exhaustive(model, alpha=0.0, beta=0.0, depth=T):
    """Every hypothesis (tokens, log_prob, attention rows, score), best first."""
    done, frontier = [], [((), 0.0, [])]
    for t in range(depth):
        grown = []
        for prefix, log_prob, rows in frontier:
            log_probs, attention = model(prefix)
            for token in range(len(log_probs)):
                item = (prefix + (token,), log_prob + log_probs[token], [*rows, attention])
                (done if token == END or t == depth - 1 else grown).append(item)
        frontier = grown
    scored = [
        (y, lp, rows, _score(lp, len(y), np.sum(rows, axis=0), alpha, beta)) for y, lp, rows in done
    ]
    return sorted(scored, key=lambda item: -item[3])


def _numpy_beam(model, beam_size, alpha=0.0, beta=0.0, depth=T):
    """A list-based beam search with the package's semantics; best first."""
    beams = [((), 0.0, [], False)]

    def score(beam):
        y, lp, rows, _ = beam
        return _score(lp, len(y), np.sum(rows, axis=0) if rows else np.zeros(1), alpha, beta)

    for _ in range(depth):
        candidates = []
        for y, lp, rows, finished in beams:
            if finished:
                candidates.append((y, lp, rows, True))
                continue
            log_probs, attention = model(y)
            for token in range(len(log_probs)):
                candidates.append(
                    (y + (token,), lp + log_probs[token], [*rows, attention], token == END)
                )
        beams = sorted(candidates, key=lambda beam: -score(beam))[:beam_size]
        if all(beam[3] for beam in beams):
            break
    return [(y, lp, rows, score((y, lp, rows, f))) for y, lp, rows, f in beams]


# ----------------------------------------------------------------------------
# A scripted model: logits and attention looked up by (batch entry, prefix code)
# ----------------------------------------------------------------------------
CODES = (V + 1) ** T


def _tables(seed=0, entries=B):
    rng = np.random.default_rng(seed)
    logits = (2.0 * rng.normal(size=(entries, CODES, V))).astype("float32")
    attention = rng.uniform(0.05, 0.5, size=(entries, CODES, TV)).astype("float32")
    attention[..., -1] = 0.0  # a padding position no step attends to
    return logits, attention


def _code(prefix):
    return sum((token + 1) * (V + 1) ** i for i, token in enumerate(prefix))


def _numpy_model(tables, entry):
    logits, attention = tables
    return lambda prefix: (
        _log_softmax(logits[entry, _code(prefix)]),
        attention[entry, _code(prefix)],
    )


def _scripted(tables, with_attention=True, dtype="float32"):
    """`(step, initial_state)`; the state is a nest: {"code", "nest": (power, [entry])}."""
    logits_table = ops.convert_to_tensor(tables[0])
    attention_table = ops.convert_to_tensor(tables[1])

    def step(ids, state, index):
        code, (power, [entry]) = state["code"], state["nest"]
        started = ops.greater(index, 0)
        code = ops.where(started, code + (ids + 1) * power, 0)
        power = ops.where(started, power * (V + 1), 1)
        rows = entry * CODES + code
        logits = ops.take(ops.reshape(logits_table, (-1, V)), rows, axis=0)
        new = {"code": code, "nest": (power, [entry])}
        if not with_attention:
            return ops.cast(logits, dtype), new
        return (
            ops.cast(logits, dtype),
            new,
            ops.take(ops.reshape(attention_table, (-1, TV)), rows, axis=0),
        )

    entries = len(tables[0])
    zeros = np.zeros(entries, "int32")
    state = {
        "code": zeros,
        "nest": (np.ones(entries, "int32"), [np.arange(entries, dtype="int32")]),
    }
    return step, keras.tree.map_structure(ops.convert_to_tensor, state)


def _check(result, expected, entry, k, atol=1e-5):
    ids, lengths = to_numpy(result.ids)[entry, k], to_numpy(result.lengths)[entry, k]
    y, log_prob, rows, score = expected
    assert lengths == len(y)
    assert tuple(ids[: len(y)]) == y
    assert (ids[len(y) :] == PAD).all()
    np.testing.assert_allclose(to_numpy(result.log_probs)[entry, k], log_prob, atol=atol)
    np.testing.assert_allclose(to_numpy(result.scores)[entry, k], score, atol=atol)
    if result.attention is not None:
        attention = to_numpy(result.attention)[entry, k]
        np.testing.assert_allclose(attention[: len(y)], np.stack(rows), atol=atol)
        np.testing.assert_array_equal(attention[len(y) :], 0.0)


# ----------------------------------------------------------------------------
# Penalties
# ----------------------------------------------------------------------------
def test_penalties_match_hand_computed_values():
    lp = to_numpy(decoding.length_penalty(np.array([1, 4, 7]), 0.6))
    np.testing.assert_allclose(lp, [1.0, 1.5**0.6, 2.0**0.6], rtol=1e-6)
    np.testing.assert_allclose(to_numpy(decoding.length_penalty(np.array([3]), 0.0)), [1.0])
    coverage = np.array([[0.25, 1.5, 0.0, 1.0], [0.5, 0.5, 0.5, 0.0]], "float32")
    cp = to_numpy(decoding.coverage_penalty(coverage, 0.2))
    np.testing.assert_allclose(cp, [0.2 * np.log(0.25), 0.2 * 3 * np.log(0.5)], rtol=1e-6)


# ----------------------------------------------------------------------------
# Beam search
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("alpha, beta", [(0.0, 0.0), (0.6, 0.0), (1.0, 0.4)])
def test_beam_covering_every_hypothesis_is_the_exhaustive_search(alpha, beta):
    tables = _tables()
    step, state = _scripted(tables)
    result = decoding.beam_search(step, state, START, END, T, V**T, alpha, beta, PAD)
    assert to_numpy(result.ids).shape == (B, V**T, T)
    assert to_numpy(result.attention).shape == (B, V**T, T, TV)
    for entry in range(B):
        every = _exhaustive(_numpy_model(tables, entry), alpha, beta)
        assert len(every) == 40
        for k, expected in enumerate(every):
            _check(result, expected, entry, k)
        # The surplus beams are dead: they score about -1e9.
        assert (to_numpy(result.scores)[entry, len(every) :] < -1e8).all()


@pytest.mark.parametrize("beam_size", [1, 2, 3])
def test_pruned_beam_matches_a_numpy_beam_search(beam_size):
    tables = _tables(seed=1)
    step, state = _scripted(tables)
    result = decoding.beam_search(step, state, START, END, T, beam_size, 0.8, 0.3, PAD)
    for entry in range(B):
        for k, expected in enumerate(_numpy_beam(_numpy_model(tables, entry), beam_size, 0.8, 0.3)):
            _check(result, expected, entry, k)


def test_beam_of_one_is_greedy_and_greedy_follows_the_argmax():
    tables = _tables(seed=2)
    step, state = _scripted(tables)
    greedy = decoding.greedy_search(step, state, START, END, T, PAD)
    beam = decoding.beam_search(step, state, START, END, T, beam_size=1, pad_id=PAD)
    for field in ("ids", "lengths", "log_probs", "scores", "attention"):
        np.testing.assert_allclose(
            to_numpy(getattr(beam, field)), to_numpy(getattr(greedy, field)), atol=1e-6
        )
    for entry in range(B):
        model, y, log_prob, rows = _numpy_model(tables, entry), (), 0.0, []
        while len(y) < T and END not in y:
            log_probs, attention = model(y)
            y, log_prob, rows = (
                y + (int(log_probs.argmax()),),
                log_prob + log_probs.max(),
                [*rows, attention],
            )
        _check(greedy, (y, log_prob, rows, log_prob), entry, 0)


def test_finished_hypotheses_extend_with_pad_and_the_search_stops_early():
    calls = []

    def step(ids, state, index):  # never the end at step 0, only the end after
        calls.append(index)
        is_end = ops.equal(ops.arange(5), END)
        logits = ops.where(ops.logical_xor(is_end, index > 0), decoding.NEG_INF, 0.0)
        return ops.tile(logits[None], (ops.shape(ids)[0], 1)), state

    state = {"h": ops.zeros((3, 2))}
    for search in (decoding.greedy_search, decoding.beam_search):
        calls.clear()
        result = search(step, state, START, END, max_length=50, pad_id=PAD)
        ids = to_numpy(result.ids)
        assert ids.shape[-1] == 50 and (ids[..., 1] == END).all() and (ids[..., 2:] == PAD).all()
        assert (to_numpy(result.lengths) == 2).all()
        assert result.attention is None
        if BACKEND != "jax":  # jax.lax.while_loop traces the body once
            assert len(calls) == 2  # step 0, step 1, then every beam has ended


def test_two_stage_top_k_equals_top_k_at_a_large_vocabulary(rng):
    from keras_attention.decoding import loop

    x = rng.normal(size=(6, 8000)).astype("float32")
    x[0, [5, 4000, 7999]] = 10.0  # ties come lowest index first, as in ops.top_k
    for k in (1, 4, 90, 120):  # 100 chunks of 80: 120 keeps them all
        values, indices = loop.top_k(ops.convert_to_tensor(x), k)
        order = np.argsort(-x, axis=-1, kind="stable")[:, :k]
        np.testing.assert_array_equal(to_numpy(values), np.take_along_axis(x, order, -1))
        np.testing.assert_array_equal(to_numpy(indices)[1:], order[1:])
        # Ties: lowest index first on TensorFlow and JAX; torch.topk orders them freely.
        same = np.array_equal if BACKEND != "torch" else lambda a, b: set(a) == set(b)
        assert same(to_numpy(indices)[0], order[0]) or BACKEND == "torch" and k < 3


def test_tile_and_reorder_walk_any_nest():
    state = {
        "a": np.arange(2)[:, None] * np.ones((2, 3)),
        "b": (np.array([5, 6]), [np.array([[1.0], [2.0]])]),
    }
    tiled = decoding.tile_state(state, 3)
    assert to_numpy(tiled["b"][0]).tolist() == [5, 5, 5, 6, 6, 6]
    moved = decoding.reorder_state(tiled, np.array([5, 0, 0, 1, 2, 3]))
    assert to_numpy(moved["b"][1][0])[:, 0].tolist() == [2.0, 1.0, 1.0, 1.0, 1.0, 2.0]
    assert to_numpy(moved["a"]).shape == (6, 3)


# ----------------------------------------------------------------------------
# Real layers' states: an AttentionRNNCell state and MultiHead key/value caches
# ----------------------------------------------------------------------------
def _attention_rnn(rng):
    cell = AttentionRNNCell(keras.layers.GRUCell(8), BahdanauAttention(8))
    memory = rng.normal(size=(B, 5, 6)).astype("float32")
    mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    embeddings = ops.convert_to_tensor(rng.normal(size=(V, 4)).astype("float32"))
    projection = ops.convert_to_tensor(rng.normal(size=(6, V)).astype("float32"))

    def step(ids, states, index):
        _, states = cell(ops.take(embeddings, ids, axis=0), states)
        new = cell.unpack_state(states)  # a_t (N, 6), w_t (N, Tv)
        return ops.matmul(new.attention, projection), states, new.weights

    states = cell.initial_state(
        ops.convert_to_tensor(memory), value_mask=ops.convert_to_tensor(mask)
    )

    def model(entry):
        def run(prefix):  # batch 1, no search, the whole prefix from scratch
            one = [s[entry : entry + 1] for s in states]
            for index, token in enumerate((START, *prefix)):
                logits, one, attention = step(ops.convert_to_tensor([token], "int32"), one, index)
            return _log_softmax(to_numpy(logits)[0]), to_numpy(attention)[0]

        return run

    return step, states, model


@pytest.mark.parametrize("beam_size", [2, V**T])
def test_attention_rnn_cell_state_through_beam_search(beam_size, rng):
    step, states, model = _attention_rnn(rng)
    result = decoding.beam_search(step, states, START, END, T, beam_size, 0.6, 0.2, PAD)
    for entry in range(B):
        if beam_size == V**T:
            expected = _exhaustive(model(entry), 0.6, 0.2)
        else:
            expected = _numpy_beam(model(entry), beam_size, 0.6, 0.2)
        for k, hypothesis in enumerate(expected):
            _check(result, hypothesis, entry, k, atol=1e-4)
        assert (to_numpy(result.attention)[1, ..., 3:] == 0).all()  # masked memory positions


def test_multi_head_cache_through_beam_search(rng):
    """A causal MultiHead language model decoding with its key/value cache."""
    layer = MultiHead(num_heads=2, key_dim=4)
    layer.build((None, None, 6))
    embeddings = ops.convert_to_tensor(rng.normal(size=(V, 6)).astype("float32"))
    projection = ops.convert_to_tensor(rng.normal(size=(6, V)).astype("float32"))
    prompts = ops.convert_to_tensor(rng.normal(size=(B, 6)).astype("float32"))

    def step(ids, state, index):
        cache, prompt = state
        x = ops.where(ops.equal(index, 0), prompt, ops.take(embeddings, ids, axis=0))
        context, cache = layer.call_with_cache(x, cache, index)
        return ops.matmul(context, projection), (cache, prompt)

    def model(entry):
        def run(prefix):  # the full causal pass over the prefix, no cache
            x = [to_numpy(prompts)[entry]] + [to_numpy(embeddings)[t] for t in prefix]
            x = np.stack(x)[None]
            context = to_numpy(layer(x, x, use_causal_mask=True))[0, -1]
            return _log_softmax(context @ to_numpy(projection)), np.zeros(1)

        return run

    state = (layer.init_cache(B, T), prompts)
    result = decoding.beam_search(step, state, START, END, T, V**T, 0.6, pad_id=PAD)
    assert result.attention is None
    for entry in range(B):
        for k, hypothesis in enumerate(_exhaustive(model(entry), 0.6)):
            _check(result, hypothesis, entry, k, atol=1e-4)


# ----------------------------------------------------------------------------
# Early stopping
# ----------------------------------------------------------------------------
def _prefix_tables(probabilities, default):
    """One entry's tables: `probabilities[prefix]` where given, else `default`."""
    logits = np.tile(np.log(np.asarray(default, "float32")), (1, CODES, 1))
    for prefix, probs in probabilities.items():
        logits[0, _code(prefix)] = np.log(np.asarray(probs, "float32"))
    return logits, np.full((1, CODES, TV), 0.25, "float32")


def test_early_stopping_finds_the_full_searchs_best_hypothesis():
    entries, settled_early = 16, 0
    for alpha, beta in [(0.0, 0.0), (0.8, 0.3), (2.0, 0.0)]:
        for beam_size in (2, 3):
            tables = _tables(seed=10 + beam_size, entries=entries)
            step, state = _scripted(tables)
            result = decoding.beam_search(
                step, state, START, END, T, beam_size, alpha, beta, PAD, early_stopping=True
            )
            for entry in range(entries):
                beams = _numpy_beam(_numpy_model(tables, entry), beam_size, alpha, beta)
                _check(result, beams[0], entry, 0)
                full = sum(len(beam[0]) for beam in beams)
                settled_early += int(to_numpy(result.lengths)[entry].sum() < full)
    assert settled_early > 0  # some entries did end before all their beams had


def test_early_stopping_ends_an_entry_whose_best_has_ended():
    # The end first (p = 0.9); after any other token, never the end.
    tables = _prefix_tables({(): [1e-6, 0.9, 0.09, 0.01 - 1e-6]}, [1e-6, 1e-6, 0.5, 0.5 - 1e-6])
    step, state = _scripted(tables)
    full = decoding.beam_search(step, state, START, END, T, 2, pad_id=PAD)
    early = decoding.beam_search(step, state, START, END, T, 2, pad_id=PAD, early_stopping=True)
    assert to_numpy(full.lengths)[0].tolist() == [1, T]  # the second beam ran to max_length
    assert to_numpy(early.lengths)[0].tolist() == [1, 1]  # stopped after the first step
    assert to_numpy(early.ids)[0, 0].tolist() == [END] + [PAD] * (T - 1)
    np.testing.assert_allclose(to_numpy(early.scores)[0, 0], np.log(0.9), rtol=1e-6)


def test_early_stopping_waits_while_the_length_penalty_can_let_a_live_beam_overtake():
    # [end] scores log 0.5 = -0.69 at once; [a, a, end] has log-probability
    # -0.83, but alpha = 2 divides it by lp(3) = (8 / 6) ** 2: -0.47 wins. A rule
    # that stopped once the best kept hypothesis had ended would answer [end].
    a = 2
    tables = _prefix_tables(
        {
            (): [1e-6, 0.5, 0.45, 0.05 - 1e-6],
            (a,): [1e-6, 0.01, 0.98, 0.01 - 1e-6],
            (a, a): [1e-6, 0.99, 0.005, 0.005 - 1e-6],
        },
        [0.25] * V,
    )
    step, state = _scripted(tables)
    early = decoding.beam_search(
        step, state, START, END, T, 2, 2.0, pad_id=PAD, early_stopping=True
    )
    best = _numpy_beam(_numpy_model(tables, 0), 2, alpha=2.0)[0]
    assert best[0] == (a, a, END)
    _check(early, best, 0, 0)


# ----------------------------------------------------------------------------
# Sampling
# ----------------------------------------------------------------------------
def test_sampling_is_reproducible_and_its_limits_are_greedy():
    tables = _tables(seed=3)
    step, state = _scripted(tables)
    greedy = to_numpy(decoding.greedy_search(step, state, START, END, T, PAD).ids)
    first = decoding.sample(step, state, START, END, T, seed=7)
    again = decoding.sample(step, state, START, END, T, seed=7)
    np.testing.assert_array_equal(to_numpy(first.ids), to_numpy(again.ids))
    for entry in range(B):  # log_probs are the model's, of the drawn tokens
        y = tuple(to_numpy(first.ids)[entry, 0, : to_numpy(first.lengths)[entry, 0]])
        model = _numpy_model(tables, entry)
        log_prob = sum(model(y[:i])[0][token] for i, token in enumerate(y))
        np.testing.assert_allclose(to_numpy(first.log_probs)[entry, 0], log_prob, atol=1e-5)
    for options in ({"top_k": 1}, {"top_p": 1e-6}, {"temperature": 1e-4}):
        ids = decoding.sample(step, state, START, END, T, seed=1, **options).ids
        np.testing.assert_array_equal(to_numpy(ids), greedy)


def test_sampling_draws_from_the_filtered_distribution():
    probs = np.array([0.5, 0.3, 0.15, 0.05], "float32")
    rows = 4000

    def step(ids, state, index):
        return ops.tile(ops.log(ops.convert_to_tensor(probs))[None], (rows, 1)), state

    state = ops.zeros((rows, 1))
    cases = [
        ({}, probs),
        ({"top_k": 2}, [0.625, 0.375, 0, 0]),
        ({"top_p": 0.7}, [0.625, 0.375, 0, 0]),
    ]
    cases.append(({"temperature": 2.0}, np.sqrt(probs) / np.sqrt(probs).sum()))
    for options, expected in cases:
        ids = to_numpy(decoding.sample(step, state, START, END, 1, seed=3, **options).ids)
        frequencies = np.bincount(ids[:, 0, 0], minlength=V) / rows
        np.testing.assert_allclose(frequencies, expected, atol=0.03)


# ----------------------------------------------------------------------------
# Precision, compilation, graph inputs
# ----------------------------------------------------------------------------
def test_float16_logits_give_the_float32_search():
    tables = _tables(seed=4)
    tables = (tables[0].astype("float16").astype("float32"), tables[1])
    expected = decoding.beam_search(*_scripted(tables), START, END, T, 3, 0.6, 0.2, PAD)
    result = decoding.beam_search(
        *_scripted(tables, dtype="float16"), START, END, T, 3, 0.6, 0.2, PAD
    )
    np.testing.assert_array_equal(to_numpy(result.ids), to_numpy(expected.ids))
    np.testing.assert_allclose(to_numpy(result.scores), to_numpy(expected.scores), atol=1e-5)


def _compiled_equals_eager(compile_fn):
    tables = _tables(seed=5)
    step, state = _scripted(tables)

    def search(state):
        beam = decoding.beam_search(step, state, START, END, T, 3, 0.6, 0.2, PAD)
        early = decoding.beam_search(step, state, START, END, T, 3, 0.6, 0.2, PAD, True)
        greedy = decoding.greedy_search(step, state, START, END, T, PAD)
        drawn = decoding.sample(step, state, START, END, T, top_k=3, top_p=0.9, seed=2)
        return beam, early, greedy, drawn

    eager, compiled = search(state), compile_fn(search)(state)
    for got, want in zip(keras.tree.flatten(compiled[:3]), keras.tree.flatten(eager[:3])):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-5)
    # TensorFlow's stateless generators may differ under XLA; JAX's do not.
    if BACKEND == "jax":
        np.testing.assert_array_equal(to_numpy(compiled[3].ids), to_numpy(eager[3].ids))
    assert set(to_numpy(compiled[3].lengths).ravel()) <= set(range(1, T + 1))


@pytest.mark.tf_only
@pytest.mark.parametrize("jit_compile", [False, True])
def test_tf_function_and_xla(jit_compile):
    import tensorflow as tf

    _compiled_equals_eager(lambda fn: tf.function(fn, jit_compile=jit_compile))


@pytest.mark.skipif(BACKEND != "jax", reason="jax.jit")
def test_jax_jit():
    import jax

    _compiled_equals_eager(jax.jit)


@pytest.mark.tf_only
def test_graph_inputs_batch_beam_size_and_max_length():
    """As a SavedModel calls it: unknown batch, beam size and max_length as int32 scalars."""
    import tensorflow as tf

    tables = _tables(seed=6)
    step, state = _scripted(tables)
    spec = keras.tree.map_structure(lambda x: tf.TensorSpec([None], tf.int32), state)
    scalar = tf.TensorSpec([], tf.int32)

    @tf.function(input_signature=[spec, scalar, scalar])  # autograph on: `int` is a cast
    def search(state, beam_size, max_length):
        beam = decoding.beam_search(step, state, START, END, max_length, beam_size, 0.6, 0.2, PAD)
        drawn = decoding.sample(step, state, START, END, max_length, seed=1)
        return beam, decoding.greedy_search(step, state, START, END, max_length, PAD), drawn.ids

    for beam_size in (1, 3):
        beam, greedy, _ = search(state, tf.constant(beam_size), tf.constant(T))
        expected = decoding.beam_search(step, state, START, END, T, beam_size, 0.6, 0.2, PAD)
        np.testing.assert_array_equal(beam.ids.numpy(), to_numpy(expected.ids))
        np.testing.assert_allclose(beam.attention.numpy(), to_numpy(expected.attention), atol=1e-6)
    assert beam.ids.shape == (B, 3, T) and greedy.ids.shape == (B, 1, T)


# ----------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------
def _bad_step(kind):
    def step(ids, state, index):
        n = ops.shape(ids)[0]
        if kind == "logits":
            return ops.zeros((n, 2, V)), state
        if kind == "heads":
            return ops.zeros((n, V)), state, ops.zeros((n, 2, TV))
        if kind == "state":
            return ops.zeros((n, V)), (state, state)
        return ops.zeros((n, V))

    return step


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda s, x: decoding.beam_search(s, x, START, END, T, beam_size=0),
            ValueError,
            "beam_size",
        ),
        (lambda s, x: decoding.beam_search(s, x, START, END, -1), ValueError, "max_length"),
        (lambda s, x: decoding.greedy_search(s, x, START, END, 2.5), ValueError, "max_length"),
        (lambda s, x: decoding.sample(s, x, START, END, T, top_p=0.0), ValueError, "top_p"),
        (lambda s, x: decoding.sample(s, x, START, END, T, top_p=1.5), ValueError, "top_p"),
        (lambda s, x: decoding.sample(s, x, START, END, T, top_k=0), ValueError, "top_k"),
        (
            lambda s, x: decoding.sample(s, x, START, END, T, temperature=0),
            ValueError,
            "temperature",
        ),
        (lambda s, x: decoding.beam_search(s, x, -1, END, T), ValueError, "start_id"),
        (
            lambda s, x: decoding.beam_search(s, x, START, END, T, early_stopping=1),
            TypeError,
            "early_stopping",
        ),
        (
            lambda s, x: decoding.beam_search(s, x, START, END, T, 2, 0.0, 0.3),
            ValueError,
            "coverage",
        ),
        (lambda s, x: decoding.greedy_search(s, {}, START, END, T), ValueError, "initial_state"),
    ],
)
def test_bad_arguments_name_themselves(call, error, match):
    with pytest.raises(error, match=match):
        call(
            lambda ids, state, index: (ops.zeros((ops.shape(ids)[0], V)), state), ops.zeros((B, 1))
        )


@pytest.mark.parametrize(
    "kind, error",
    [("logits", ValueError), ("heads", ValueError), ("state", ValueError), ("arity", TypeError)],
)
def test_a_step_returning_the_wrong_thing_is_named(kind, error):
    with pytest.raises(error, match="step"):
        decoding.beam_search(_bad_step(kind), ops.zeros((B, 1)), START, END, T, beam_size=2)


# ----------------------------------------------------------------------------
# decode: the best hypothesis over a memory
# ----------------------------------------------------------------------------
DECODE = dict(start_id=START, end_id=END, max_length=T, pad_id=PAD)  # decode's keywords


def _over_memory(tables):
    """The scripted model with its batch entry moved into a memory no step changes."""
    step, state = _scripted(tables)

    def with_memory(ids, state, memory, index):
        logits, new, attention = step(ids, {"code": state[0], "nest": (state[1], [memory])}, index)
        return logits, (new["code"], new["nest"][0]), attention

    return with_memory, (state["code"], state["nest"][0]), state["nest"][1][0]


@pytest.mark.parametrize("beam_size", [1, 3])
def test_decode_gives_the_best_hypothesis_of_the_numpy_search(beam_size):
    tables = _tables(seed=7)
    step, state, memory = _over_memory(tables)
    penalties = dict(length_penalty_alpha=0.8, coverage_penalty_beta=0.3)
    best = decoding.decode(step, state, memory, beam_size=beam_size, **penalties, **DECODE)
    assert tuple(best.ids.shape) == (B, T) and tuple(best.attention.shape) == (B, T, TV)
    as_beam = keras.tree.map_structure(lambda x: ops.expand_dims(x, 1), best)  # k = 0
    for entry in range(B):
        model = _numpy_model(tables, entry)
        if beam_size == 1:  # greedy: the argmax chain, scored by its log-probability
            y, log_prob, rows = (), 0.0, []
            while len(y) < T and END not in y:
                log_probs, attention = model(y)
                token = int(log_probs.argmax())
                y, log_prob, rows = y + (token,), log_prob + log_probs[token], [*rows, attention]
            expected = (y, log_prob, rows, log_prob)
        else:
            expected = _numpy_beam(model, beam_size, 0.8, 0.3)[0]
        _check(as_beam, expected, entry, 0)


def test_decode_without_memory_is_the_search_of_its_step():
    tables = _tables(seed=8)
    step, state = _scripted(tables)
    best = decoding.decode(
        lambda ids, state, memory, index: step(ids, state, index), state, beam_size=2, **DECODE
    )
    expected = decoding.beam_search(
        step, state, START, END, T, beam_size=2, pad_id=PAD, early_stopping=True
    )
    np.testing.assert_array_equal(to_numpy(best.ids), to_numpy(expected.ids)[:, 0])


@pytest.mark.tf_only
def test_decode_takes_a_graph_beam_size():
    import tensorflow as tf

    tables = _tables(seed=9)
    step, state, memory = _over_memory(tables)

    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
    def search(beam_size):
        return decoding.decode(step, state, memory, beam_size=beam_size, **DECODE)

    for beam_size in (1, 3):
        expected = decoding.decode(step, state, memory, beam_size=beam_size, **DECODE)
        got = search(tf.constant(beam_size))
        np.testing.assert_array_equal(got.ids.numpy(), to_numpy(expected.ids))
        np.testing.assert_allclose(got.scores.numpy(), to_numpy(expected.scores), atol=1e-6)


@pytest.mark.parametrize(
    "step, beam_size, error, match",
    [("not a function", 1, TypeError, "decode: `step`"), (None, 0, ValueError, "beam_size")],
)
def test_decode_names_its_bad_arguments(step, beam_size, error, match):
    tables = _tables(seed=10)
    good, state, memory = _over_memory(tables)
    with pytest.raises(error, match=match):
        decoding.decode(step or good, state, memory, beam_size=beam_size, **DECODE)
