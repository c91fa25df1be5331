"""The SavedModel's search (beam size, penalties as graph inputs) against the Python searches."""

import keras
import numpy as np
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip(
        "examples.nmt is TensorFlow-based (tf.data, tf.function, SavedModel)",
        allow_module_level=True,
    )

tf = pytest.importorskip("tensorflow")

import tiny  # noqa: E402

from examples.nmt import export  # noqa: E402
from examples.nmt.models.decoding import search_start  # noqa: E402
from examples.nmt.text import special  # noqa: E402
from keras_attention import decoding  # noqa: E402

TOKENS = tiny.TOKENS
SENTENCES = ["May 9th, 1998", "june a 9", "9", ""]
MAX_LENGTH = 7


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A random tiny model, its vocabularies and its loaded SavedModel (defaults: beam 3)."""
    vocabularies = tiny.tiny_vocabularies()
    sizes = len(TOKENS), len(TOKENS)
    model = tiny.tiny_model(seed=1, sizes=sizes, output_scale=8.0, attention="luong")
    path = tmp_path_factory.mktemp("export") / "saved_model"
    export.export_translator(
        model, vocabularies, path, max_length=MAX_LENGTH, beam_size=3, alpha=0.6, beta=0.3
    )
    return model, vocabularies, tf.saved_model.load(str(path))


def encode_texts(texts, vocabulary):
    """``(B,)`` strings -> ``(B, T)`` int32 ids by the SavedModel's engine of ``vocabulary``."""
    return vocabulary.tensorflow().encode(texts).to_tensor(default_value=0)


def python_search(model, vocabularies, beam_size, alpha, beta, max_length=MAX_LENGTH):
    source_ids = encode_texts(tf.constant(SENTENCES[:3]), vocabularies.source)
    search = decoding.greedy_search if beam_size is None else decoding.beam_search
    options = (
        {}
        if beam_size is None
        else {
            "beam_size": beam_size,
            "length_penalty_alpha": alpha,
            "coverage_penalty_beta": beta,
        }
    )
    step, state = search_start(model, source_ids, max_length, beam_size or 1)
    return search(
        step,
        state,
        special.START_ID,
        special.END_ID,
        max_length,
        pad_id=special.PAD_ID,
        **options,
    )


@pytest.mark.parametrize("beam_size", [2, 4])
def test_saved_model_beam_search_equals_python_beam_search(exported, beam_size):
    model, vocabularies, translator = exported
    outputs = translator.translate(tf.constant(SENTENCES), beam_size=beam_size, alpha=0.6, beta=0.3)
    expected = python_search(model, vocabularies, beam_size, 0.6, 0.3)
    lengths = expected.lengths.numpy()[:, 0]
    assert lengths.max() > 1  # the check covers more than one step
    np.testing.assert_array_equal(outputs["target_length"].numpy(), [*lengths, 0])
    np.testing.assert_allclose(
        outputs["scores"].numpy(), [*expected.scores.numpy()[:, 0], 0.0], atol=1e-5
    )
    translations = vocabularies.target.tensorflow().decode(expected.ids[:, 0]).numpy()
    np.testing.assert_array_equal(outputs["translation"].numpy(), [*translations, b""])
    ids = np.array(
        [
            [TOKENS.index(t.decode()) if t else 0 for t in row]
            for row in outputs["target_tokens"].numpy()
        ]
    )
    np.testing.assert_array_equal(ids[:3], expected.ids.numpy()[:, 0])
    source_length = outputs["source_tokens"].shape[1]
    attention = expected.attention.numpy()[:, 0, :, :source_length]  # (B, T, Ts)
    np.testing.assert_allclose(outputs["attention"].numpy()[:3], attention, atol=1e-5)
    np.testing.assert_array_equal(outputs["attention"].numpy()[3], 0.0)


def test_saved_model_beam_one_is_the_greedy_search(exported):
    """A graph-input beam size of 1 runs the greedy search: its tokens and scores, no penalties."""
    model, vocabularies, translator = exported
    outputs = translator.translate(tf.constant(SENTENCES[:3]), beam_size=1, alpha=0.6, beta=0.3)
    greedy = python_search(model, vocabularies, None, 0.0, 0.0)
    np.testing.assert_array_equal(outputs["target_length"].numpy(), greedy.lengths.numpy()[:, 0])
    translations = vocabularies.target.tensorflow().decode(greedy.ids[:, 0]).numpy()
    np.testing.assert_array_equal(outputs["translation"].numpy(), translations)
    # As `translate(..., beam_size=1)` in Python: greedy log-probabilities, not GNMT scores.
    np.testing.assert_allclose(outputs["scores"].numpy(), greedy.log_probs[:, 0], atol=1e-5)
    source_length = outputs["source_tokens"].shape[1]
    np.testing.assert_allclose(
        outputs["attention"].numpy(), greedy.attention[:, 0, :, :source_length], atol=1e-5
    )


def test_saved_model_defaults_are_the_export_settings(exported):
    model, vocabularies, translator = exported
    texts = tf.constant(SENTENCES)
    default = translator.translate(texts)
    explicit = translator.translate(texts, max_length=MAX_LENGTH, beam_size=3, alpha=0.6, beta=0.3)
    for key in ("translation", "scores", "target_length"):
        np.testing.assert_array_equal(default[key].numpy(), explicit[key].numpy())
    expected = python_search(model, vocabularies, 3, 0.6, 0.3)
    np.testing.assert_allclose(default["scores"].numpy()[:3], expected.scores[:, 0], atol=1e-5)
    # Any subset of the optional inputs, by keyword; the others keep their defaults.
    short = translator.translate(texts, max_length=tf.constant(2))
    assert short["attention"].shape[1] == 2
    serving = translator.signatures["serving_default"](texts=texts)
    np.testing.assert_array_equal(serving["translation"].numpy(), default["translation"].numpy())


def test_saved_model_rejects_a_beam_size_below_one(exported):
    _, _, translator = exported
    with pytest.raises(tf.errors.InvalidArgumentError, match="beam_size >= 1"):
        translator.translate(tf.constant(SENTENCES), beam_size=0)


def test_python_beam_search_rejects_a_beam_size_below_one(exported):
    model, vocabularies, _ = exported
    with pytest.raises(ValueError, match="beam_size=0"):
        python_search(model, vocabularies, 0, 0.0, 0.0)


def test_exported_translator_matches_keras_greedy_search(tmp_path):
    vocabularies = tiny.tiny_vocabularies(11, 10)
    model = tiny.tiny_model(sizes=(11, 10), decoder="luong")
    path = export.export_translator(model, vocabularies, tmp_path / "saved_model", max_length=6)
    sentences = ["May 9th, 1998", "june  UNSEEN", ""]
    translator = tf.saved_model.load(path)
    outputs = translator.translate(tf.constant(sentences))
    source_ids = encode_texts(tf.constant(sentences), vocabularies.source)
    expected = tiny.search(model, source_ids, max_length=6)
    lengths = outputs["target_length"].numpy()
    np.testing.assert_array_equal(lengths[:2], expected.lengths.numpy()[:2])
    assert lengths[2] == 0  # no tokens: no invented output
    np.testing.assert_allclose(
        outputs["attention"].numpy()[:2],
        expected.attention.numpy()[:2, :, : source_ids.shape[1]],
        atol=1e-5,
    )
    np.testing.assert_array_equal(outputs["attention"].numpy()[2], 0.0)
    translations = vocabularies.target.tensorflow().decode(expected.ids).numpy()
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


@pytest.mark.parametrize("beam_size", [1, 3])
def test_saved_model_search_equals_the_python_search(tmp_path, beam_size):
    vocabularies = tiny.tiny_vocabularies(11, 10)
    model = tiny.tiny_model("transformer", seed=1, sizes=(11, 10), layers=1)
    path = export.export_translator(model, vocabularies, tmp_path / "saved_model", max_length=6)
    sentences = ["May 9th, 1998", "june a june", "a"]
    translator = tf.saved_model.load(path)  # kept: its variables live as long as it does
    assert_translates_as_the_python_search(translator, model, vocabularies, sentences, beam_size)


def assert_translates_as_the_python_search(translator, model, vocabularies, sentences, beam_size):
    """The loaded SavedModel's best translations of ``sentences`` are the Python search's.

    Returns the Python search's result.
    """
    outputs = translator.translate(tf.constant(sentences), beam_size=tf.constant(beam_size))
    source_ids = encode_texts(tf.constant(sentences), vocabularies.source)
    expected = tiny.search(model, source_ids, beam_size=beam_size, max_length=6)
    np.testing.assert_array_equal(outputs["target_length"].numpy(), expected.lengths.numpy())
    translations = vocabularies.target.tensorflow().decode(expected.ids).numpy()
    np.testing.assert_array_equal(outputs["translation"].numpy(), translations)
    np.testing.assert_allclose(outputs["scores"].numpy(), expected.scores.numpy(), atol=1e-5)
    np.testing.assert_allclose(
        outputs["attention"].numpy(),
        expected.attention.numpy()[:, :, : source_ids.shape[1]],
        atol=1e-5,
    )
    return expected


@pytest.mark.parametrize(
    "attention, decoder",
    # Each decoder packs the alignment state of its cell its own way: each is
    # checked with one state-carrying attention (location: previous and
    # cumulative weights; monotonic: previous weights); local-p carries none.
    # (All five pairs took 107 s of 2,019 s of TensorFlow test time.)
    [("location", "bahdanau"), ("monotonic", "luong"), ("local-p", "luong")],
)  # fmt: skip
def test_saved_model_with_an_alignment_attention_equals_the_python_search(
    tmp_path, attention, decoder
):
    """The alignment state rides through the exported greedy and beam searches."""
    vocabularies = tiny.tiny_vocabularies(11, 10)
    model = tiny.tiny_model(
        seed=1, sizes=(11, 10), output_scale=8.0, attention=attention, decoder=decoder
    )
    path = export.export_translator(model, vocabularies, tmp_path / "saved_model", max_length=6)
    sentences = ["May 9th, 1998", "june a june", "a"]
    translator = tf.saved_model.load(path)  # kept: its variables live as long as it does
    for beam_size in (1, 4):
        expected = assert_translates_as_the_python_search(
            translator, model, vocabularies, sentences, beam_size
        )
        assert expected.lengths.numpy().max() > 1  # more than one step is checked
