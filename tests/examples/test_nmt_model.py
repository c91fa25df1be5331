"""The NMT example's model: cached step-by-step decoding, search, export, metrics."""

import keras
import numpy as np
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip(
        "examples.nmt is TensorFlow-based (tf.data, tf.function, SavedModel)",
        allow_module_level=True,
    )

tf = pytest.importorskip("tensorflow")

from examples.nmt import data  # noqa: E402
from examples.nmt import decoding  # noqa: E402
from examples.nmt import evaluate  # noqa: E402
from examples.nmt import export  # noqa: E402
from examples.nmt import vocabulary  # noqa: E402
from examples.nmt.model import ATTENTIONS  # noqa: E402
from examples.nmt.model import build_model  # noqa: E402
from examples.nmt.model import step_fn  # noqa: E402

SOURCE = np.array([[5, 6, 7, 0, 0], [4, 5, 6, 7, 8], [9, 0, 0, 0, 0]], "int32")
TARGET_IN = np.array([[2, 5, 6, 7], [2, 9, 4, 0], [2, 4, 0, 0]], "int32")


def tiny_model(attention="bahdanau", decoder="bahdanau", rnn="gru"):
    keras.utils.set_random_seed(0)
    return build_model(
        12,
        10,
        embedding_dim=8,
        units=8,
        attention=attention,
        decoder=decoder,
        rnn=rnn,
        num_heads=2,
    )


@pytest.mark.parametrize("decoder", ["bahdanau", "luong"])
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_step_by_step_equals_teacher_forcing(attention, decoder):
    model = tiny_model(attention, decoder)
    expected = model([SOURCE, TARGET_IN]).numpy()  # (B, Tt, V) logits
    state, memory = model.initial_state(SOURCE)
    steps = []
    for t in range(TARGET_IN.shape[1]):
        logits, state, weights = model.step(TARGET_IN[:, t], state, memory)
        steps.append(logits.numpy())
        assert tuple(weights.shape) == SOURCE.shape
        np.testing.assert_allclose(weights.numpy().sum(-1), 1.0, atol=1e-5)
        assert np.all(weights.numpy()[SOURCE == 0] == 0)  # padding gets no weight
    real = TARGET_IN != 0  # the prefix: padded steps differ by design
    np.testing.assert_allclose(np.stack(steps, 1)[real], expected[real], atol=1e-5)


def test_lstm_step_by_step_equals_teacher_forcing():
    model = tiny_model("luong", "bahdanau", rnn="lstm")
    expected = tf.nn.log_softmax(model([SOURCE, TARGET_IN])).numpy()
    search_state = model.initial_state(SOURCE)
    for t in range(TARGET_IN.shape[1]):
        log_probs, search_state, _ = step_fn(model)(TARGET_IN[:, t], search_state, t)
        real = TARGET_IN[:, t] != 0
        np.testing.assert_allclose(log_probs.numpy()[real], expected[real, t], atol=1e-5)


@pytest.mark.parametrize("decoder", ["bahdanau", "luong"])
def test_beam_size_one_equals_greedy(decoder):
    model = tiny_model("multihead", decoder)
    greedy = evaluate.make_translate_fn(model, max_length=7)(SOURCE)
    state = model.initial_state(SOURCE)
    beam = decoding.beam_search(step_fn(model), state, data.START_ID, data.END_ID, 7, 1)
    np.testing.assert_array_equal(beam.ids[:, 0].numpy(), greedy.ids.numpy())
    np.testing.assert_allclose(beam.log_probs[:, 0].numpy(), greedy.log_probs.numpy(), atol=1e-5)
    np.testing.assert_allclose(beam.attention[:, 0].numpy(), greedy.attention.numpy(), atol=1e-6)


def test_alignment_accuracy_on_a_constructed_case():
    gold = np.zeros((2, 3, 4), "float32")
    gold[0, 0, 1] = gold[0, 1, 2] = gold[0, 1, 3] = 1  # row 2 has no link: not counted
    gold[1, 0, 0] = gold[1, 1, 1] = gold[1, 2, 2] = 1
    attention = np.zeros((2, 4, 4), "float32")  # one more output step than gold rows
    attention[0, 0] = [0.1, 0.7, 0.1, 0.1]  # hit
    attention[0, 1] = [0.1, 0.1, 0.1, 0.7]  # hit: any linked source token counts
    attention[0, 2] = [0.7, 0.1, 0.1, 0.1]  # no gold link: skipped
    attention[1, 0] = [0.1, 0.7, 0.1, 0.1]  # miss
    attention[1, 1] = [0.1, 0.7, 0.1, 0.1]  # hit
    attention[1, 2] = [0.1, 0.1, 0.7, 0.1]  # hit, but past the output length 2: skipped
    assert evaluate.alignment_accuracy(attention, gold) == (4, 5)
    assert evaluate.alignment_accuracy(attention, gold, lengths=np.array([3, 2])) == (3, 4)


def test_exported_translator_matches_keras_greedy_search(tmp_path):
    tokens = ("[PAD]", "[UNK]", "[START]", "[END]", "may", "9", "th", ",", "1998", "june", "a")
    vocabularies = data.Vocabularies(data.Vocabulary(tokens[:11]), data.Vocabulary(tokens[:10]))
    keras.utils.set_random_seed(0)
    model = build_model(11, 10, embedding_dim=8, units=8, decoder="luong")
    path = export.export_translator(model, vocabularies, tmp_path / "saved_model", max_length=6)
    sentences = ["May 9th, 1998", "june  UNSEEN", ""]
    translator = tf.saved_model.load(path)
    outputs = translator.translate(tf.constant(sentences))
    source_ids = data.encode_texts(tf.constant(sentences), vocabularies.source)
    expected = evaluate.make_translate_fn(model, max_length=6)(source_ids)
    lengths = outputs["target_length"].numpy()
    np.testing.assert_array_equal(lengths[:2], expected.lengths.numpy()[:2])
    assert lengths[2] == 0  # no tokens: no invented output
    np.testing.assert_allclose(
        outputs["attention"].numpy()[:2],
        expected.attention.numpy()[:2, :, : source_ids.shape[1]],
        atol=1e-5,
    )
    np.testing.assert_array_equal(outputs["attention"].numpy()[2], 0.0)
    translations = vocabularies.target.decode(expected.ids).numpy()
    np.testing.assert_array_equal(outputs["translation"].numpy()[:2], translations[:2])
    assert outputs["translation"].numpy()[2] == b""
    assert [t.decode() for t in outputs["source_tokens"].numpy()[0]] == [
        "may",
        "9",
        "th",
        ",",
        "1998",
    ]
    np.testing.assert_array_equal(outputs["source_length"].numpy(), [5, 2, 0])
    np.testing.assert_array_equal(outputs["unknown_tokens"].numpy(), [0, 1, 0])
    # The most output tokens is an input, with the export's value as default.
    short = translator.translate(tf.constant(sentences[:2]), tf.constant(2))
    assert short["attention"].shape[1] == 2
    np.testing.assert_array_equal(short["target_length"].numpy(), np.minimum(lengths[:2], 2))
    np.testing.assert_array_equal(
        short["target_tokens"].numpy(), outputs["target_tokens"].numpy()[:2, :2]
    )


def test_saved_and_reloaded_model_steps_like_the_original(tmp_path):
    model = tiny_model("bahdanau", "bahdanau", rnn="lstm")
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras", compile=False)
    assert type(reloaded) is type(model) and reloaded.get_config() == model.get_config()
    expected = evaluate.make_translate_fn(model, max_length=5)(SOURCE)
    got = evaluate.make_translate_fn(reloaded, max_length=5)(SOURCE)
    np.testing.assert_array_equal(got.ids.numpy(), expected.ids.numpy())
    np.testing.assert_allclose(got.attention.numpy(), expected.attention.numpy(), atol=1e-6)


def test_detokenize_stops_at_end_and_drops_specials():
    tokens = tf.constant(["[PAD]", "[UNK]", "[START]", "[END]", "a", "b"])
    ids = tf.constant([[2, 4, 1, 5, 3, 4], [4, 0, 5, 0, 0, 0], [3, 4, 4, 4, 4, 4]])
    np.testing.assert_array_equal(
        vocabulary.detokenize(ids, tokens).numpy(), [b"a [UNK] b", b"a b", b""]
    )
