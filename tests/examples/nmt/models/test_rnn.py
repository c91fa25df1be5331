"""The NMT example's model: cached step-by-step decoding, search, export, metrics."""

import re

import keras
import numpy as np
import pytest
import tiny
from keras.ops import convert_to_numpy as to_numpy

from examples.nmt.models.attentions import ATTENTIONS
from examples.nmt.models.attentions import SIZED_ATTENTIONS
from examples.nmt.models.attentions import make_attention
from examples.nmt.models.attentions import set_attention_mode
from examples.nmt.models.decoding import search_start
from examples.nmt.models.rnn import build_model
from examples.nmt.text import special
from keras_attention import decoding

SOURCE, TARGET_IN = tiny.SOURCE, tiny.TARGET_IN
# Weights that need not sum to 1: monotonic mass may pass the end, local-p's
# Gaussian scales its softmax down.
# Weights that may sum to less than 1: mass leaves past the end (monotonic,
# stepwise) or the window cuts the Gaussian (local-p). GMM's are a mixture of
# densities at the positions, which sum to more than 1 under a narrow component.
UNNORMALIZED = {"monotonic", "stepwise", "local-p"}
DENSITIES = {"gmm"}
DECODERS = ("bahdanau", "luong")
# The attentions whose decoding state carries an alignment state.
ALIGNMENT = [name for name in ATTENTIONS if make_attention(name, 8).has_alignment_state]
# Each alignment attention with one decoder, the two decoders taking turns: each
# decoder packs the alignment state its own way, and every pair checks both the
# state and that packing (the full grid cost 126 s of TensorFlow test time in
# the two search tests below, 2026-12-01).
ALIGNMENT_DECODERS = [(name, DECODERS[number % 2]) for number, name in enumerate(ALIGNMENT)]
# Step by step against teacher forcing: each attention once, the decoders taking
# turns over the content attentions, and each alignment attention with the
# decoder the search tests do not give it, so every alignment pair is checked
# by one of the two (the full grid: 20 models on every backend).
CONTENT = [name for name in ATTENTIONS if name not in ALIGNMENT]
STEP_PAIRS = [
    *[(name, DECODERS[number % 2]) for number, name in enumerate(CONTENT)],
    *[(name, DECODERS[1 - DECODERS.index(decoder)]) for name, decoder in ALIGNMENT_DECODERS],
]


def tiny_model(attention="bahdanau", decoder="bahdanau", rnn="gru"):
    return tiny.tiny_model(attention=attention, decoder=decoder, rnn=rnn)


@pytest.mark.parametrize("attention, decoder", STEP_PAIRS)
def test_step_by_step_equals_teacher_forcing(attention, decoder):
    model = tiny_model(attention, decoder)
    expected = to_numpy(model([SOURCE, TARGET_IN]))  # (B, Tt, V) logits
    state, memory = model.initial_state(SOURCE)
    steps = []
    for t in range(TARGET_IN.shape[1]):
        logits, state, weights = model.step(TARGET_IN[:, t], state, memory)
        steps.append(to_numpy(logits))
        assert tuple(weights.shape) == SOURCE.shape
        weights = to_numpy(weights)
        sums = weights.sum(-1)
        if attention in UNNORMALIZED:
            assert np.all(sums <= 1.0 + 1e-5) and np.all(sums > 0.0)
        elif attention in DENSITIES:
            assert np.all(np.isfinite(sums)) and np.all(weights >= 0.0)
        else:
            np.testing.assert_allclose(sums, 1.0, atol=1e-5)
        assert np.all(weights[SOURCE == 0] == 0)  # padding gets no weight
        assert ("alignment" in state) == (attention in ALIGNMENT)
    real = TARGET_IN != 0  # the prefix: padded steps differ by design
    np.testing.assert_allclose(np.stack(steps, 1)[real], expected[real], atol=1e-5)


def test_lstm_step_by_step_equals_teacher_forcing():
    model = tiny_model("luong", "bahdanau", rnn="lstm")
    expected = to_numpy(keras.ops.log_softmax(model([SOURCE, TARGET_IN])))
    step, state = search_start(model, SOURCE)
    for t in range(TARGET_IN.shape[1]):
        logits, state, _ = step(TARGET_IN[:, t], state, t)
        log_probs = to_numpy(keras.ops.log_softmax(logits))
        real = TARGET_IN[:, t] != 0
        np.testing.assert_allclose(log_probs[real], expected[real, t], atol=1e-5)


def test_the_alignment_attentions_are_registered():
    assert set(ALIGNMENT) == {"location", "monotonic", "stepwise", "gmm", "dca"}
    assert "local-p" in ATTENTIONS and "local-p" not in ALIGNMENT
    with pytest.raises(ValueError, match="Expected attention in"):
        make_attention("gaussian", 8)
    assert make_attention("stepwise", 8).mode == "soft"  # decodes soft, as monotonic
    monotonic = make_attention("monotonic", 8)
    assert monotonic.mode == "parallel" and monotonic.sigmoid_noise > 0  # decodes soft


def test_build_model_documents_every_attention_it_accepts():
    documented = re.findall(r'``"([a-z_-]+)"``', build_model.__doc__.split("decoder:")[0])
    assert set(documented) >= set(ATTENTIONS)


def test_set_attention_mode_decodes_hard_with_the_same_weights():
    """evaluate.py --attention-mode hard: one-hot (or no) weights at each step."""
    model = tiny_model("monotonic", "bahdanau")
    soft = tiny.search(model, SOURCE, max_length=5)
    set_attention_mode(model, "hard")
    assert model.attention_layer.mode == "hard"
    state, memory = model.initial_state(SOURCE)
    for t in range(TARGET_IN.shape[1]):
        _, state, weights = model.step(TARGET_IN[:, t], state, memory)
        assert set(np.unique(to_numpy(weights))) <= {0.0, 1.0}
    set_attention_mode(model, "parallel")
    hard_then_soft = tiny.search(model, SOURCE, max_length=5)
    np.testing.assert_array_equal(to_numpy(hard_then_soft.ids), to_numpy(soft.ids))
    with pytest.raises(ValueError, match="mode"):
        set_attention_mode(model, "sideways")
    with pytest.raises(ValueError, match="attention has modes.*BahdanauAttention"):
        set_attention_mode(tiny_model("bahdanau"), "hard")


@pytest.mark.parametrize(
    "attention, decoder",
    [("multihead", "bahdanau"), ("multihead", "luong"), *ALIGNMENT_DECODERS, ("local-p", "luong")],
)
def test_beam_size_one_equals_greedy(attention, decoder):
    model = tiny_model(attention, decoder)
    greedy = tiny.search(model, SOURCE, max_length=7)
    step, state = search_start(model, SOURCE)
    beam = decoding.beam_search(step, state, special.START_ID, special.END_ID, 7, beam_size=1)
    beam, greedy = (type(found)(*map(to_numpy, found)) for found in (beam, greedy))
    np.testing.assert_array_equal(beam.ids[:, 0], greedy.ids)
    np.testing.assert_allclose(beam.log_probs[:, 0], greedy.log_probs, atol=1e-5)
    np.testing.assert_allclose(beam.attention[:, 0], greedy.attention, atol=1e-6)


def _exhaustive(model, entry, depth):
    """Every hypothesis of sentence ``entry`` as ``(ids, log_prob, attention rows)``, best first.

    Each prefix is decoded from scratch at batch 1, without a search: no state
    is tiled or reordered.
    """
    state, memory = model.initial_state(SOURCE[entry : entry + 1])

    def run(prefix):
        one = state
        for token in (special.START_ID, *prefix):
            logits, one, weights = model.step(np.array([token], "int32"), one, memory)
        return to_numpy(keras.ops.log_softmax(logits))[0], to_numpy(weights)[0]

    done, frontier = [], [((), 0.0, [])]
    for t in range(depth):
        grown = []
        for prefix, log_prob, rows in frontier:
            log_probs, weights = run(prefix)
            for token, token_log_prob in enumerate(log_probs):
                item = (prefix + (token,), log_prob + token_log_prob, [*rows, weights])
                (done if token == special.END_ID or t == depth - 1 else grown).append(item)
        frontier = grown
    return sorted(done, key=lambda item: -item[1])


@pytest.mark.parametrize("attention, decoder", ALIGNMENT_DECODERS)
def test_beam_covering_every_hypothesis_is_the_exhaustive_search(attention, decoder):
    """The alignment state rides with its hypothesis: beam reordering is exact."""
    depth, vocabulary = 3, 5
    model = tiny.tiny_model(
        attention=attention, decoder=decoder, sizes=(12, vocabulary), output_scale=4.0
    )
    beam_size = vocabulary**depth  # 125 beams: room for all 1 + 4 + 80 hypotheses
    step, state = search_start(model, SOURCE, depth, beam_size)
    found = decoding.beam_search(
        step, state, special.START_ID, special.END_ID, depth, beam_size, pad_id=special.PAD_ID
    )
    result = type(found)(*map(to_numpy, found))  # ids, lengths, log_probs, scores, attention
    for entry in range(len(SOURCE)):
        every = _exhaustive(model, entry, depth)
        for k, (ids, log_prob, rows) in enumerate(every):
            assert result.lengths[entry, k] == len(ids)
            assert tuple(result.ids[entry, k, : len(ids)]) == ids
            np.testing.assert_allclose(result.log_probs[entry, k], log_prob, atol=1e-4)
            np.testing.assert_allclose(
                result.attention[entry, k, : len(ids)], np.stack(rows), atol=1e-5
            )
        assert np.all(result.scores[entry, len(every) :] < -1e8)  # the surplus beams are dead


@pytest.mark.parametrize(
    "attention, decoder, rnn",
    [
        ("bahdanau", "bahdanau", "lstm"),
        *[(name, decoder, "gru") for name in ("location", "monotonic", "local-p")
          for decoder in ("bahdanau", "luong")],
    ],
)  # fmt: skip
def test_saved_and_reloaded_model_steps_like_the_original(tmp_path, attention, decoder, rnn):
    model = tiny_model(attention, decoder, rnn=rnn)
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras", compile=False)
    assert type(reloaded) is type(model) and reloaded.get_config() == model.get_config()
    expected = tiny.search(model, SOURCE, max_length=5)
    got = tiny.search(reloaded, SOURCE, max_length=5)
    np.testing.assert_array_equal(to_numpy(got.ids), to_numpy(expected.ids))
    np.testing.assert_allclose(to_numpy(got.attention), to_numpy(expected.attention), atol=1e-6)


def _steps_as_it_trains_and_reloads(model, tmp_path, option, value):
    """Step-by-step logits equal the teacher-forced ones; the file keeps ``option``."""
    expected = to_numpy(model([SOURCE, TARGET_IN]))
    state, memory = model.initial_state(SOURCE)
    for t in range(TARGET_IN.shape[1]):
        logits, state, _ = model.step(TARGET_IN[:, t], state, memory)
        rows = TARGET_IN[:, t] != 0
        np.testing.assert_allclose(to_numpy(logits)[rows], expected[rows, t], atol=1e-5)
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras", compile=False)
    assert reloaded.get_config()[option] == value
    np.testing.assert_allclose(to_numpy(reloaded([SOURCE, TARGET_IN])), expected, atol=1e-6)


def test_a_two_layer_encoder_stacks_masked_layers_and_decodes_as_it_trains(tmp_path):
    """The top layer reads the lower one's output; padding reaches neither; saves and reloads."""
    model = tiny.tiny_model(attention="bahdanau", decoder="luong", encoder_layers=2)
    (lower,) = model.lower_encoders
    assert lower.name == "encoder_0" and model.encoder.name == "encoder"
    memory, mask, first = model.encode(SOURCE)
    stacked = model.encoder(lower(model.source_embedding(SOURCE), mask=mask), mask=mask)
    np.testing.assert_allclose(to_numpy(memory), to_numpy(stacked[0]), atol=1e-6)
    # Two more pad columns change nothing at the real tokens: the backward
    # direction of the lower layer must not read the padding either.
    padded = np.pad(SOURCE, ((0, 0), (0, 2)))
    longer, _, longer_first = model.encode(padded)
    real = SOURCE != 0
    np.testing.assert_allclose(to_numpy(longer)[:, :5][real], to_numpy(memory)[real], atol=1e-6)
    np.testing.assert_allclose(to_numpy(longer_first[0]), to_numpy(first[0]), atol=1e-6)
    # A different lower layer changes the memory: it is not bypassed.
    lower.set_weights([weights + 0.5 for weights in lower.get_weights()])
    assert not np.allclose(to_numpy(model.encode(SOURCE)[0]), to_numpy(memory), atol=1e-3)
    _steps_as_it_trains_and_reloads(model, tmp_path, "encoder_layers", 2)


@pytest.mark.parametrize(
    "value, error, match",
    [(0, ValueError, "encoder_layers >= 1. Received: 0"), (2.0, TypeError, "int. Received: float"),
     (True, TypeError, "int. Received: bool")],
)  # fmt: skip
def test_encoder_layers_must_be_a_positive_int(value, error, match):
    with pytest.raises(error, match=match):
        tiny.tiny_model(encoder_layers=value)


@pytest.mark.parametrize("name", SIZED_ATTENTIONS)
def test_attention_units_sizes_the_hidden_layer_of_the_sized_attentions(name):
    assert make_attention(name, 8).get_config()["units"] == 8  # --units when left out
    assert make_attention(name, 8, attention_units=3).get_config()["units"] == 3


@pytest.mark.parametrize("name", sorted(set(ATTENTIONS) - set(SIZED_ATTENTIONS)))
def test_attention_units_is_refused_by_attentions_without_a_hidden_layer(name):
    with pytest.raises(ValueError, match=f"attention_units.*attention='{name}'"):
        make_attention(name, 8, attention_units=3)


@pytest.mark.parametrize(
    "value, error, match",
    [(0, ValueError, "attention_units >= 1. Received: 0"),
     (3.0, TypeError, "int or None. Received: float")],
)  # fmt: skip
def test_attention_units_must_be_a_positive_int(value, error, match):
    with pytest.raises(error, match=match):
        make_attention("bahdanau", 8, attention_units=value)


def test_a_model_with_smaller_attention_decodes_as_it_trains_and_reloads(tmp_path):
    """DCA of 3 hidden units in a model of 8: its (8, 3) query kernel, both paths, the file."""
    model = tiny.tiny_model(attention="dca", decoder="luong", attention_units=3)
    shapes = [tuple(weight.shape) for weight in model.attention_layer.weights]
    assert (8, 3) in shapes and (8, 8) not in shapes
    _steps_as_it_trains_and_reloads(model, tmp_path, "attention_units", 3)
