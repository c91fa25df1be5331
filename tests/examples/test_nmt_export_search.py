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

from examples.nmt import data  # noqa: E402
from examples.nmt import decoding  # noqa: E402
from examples.nmt import export  # noqa: E402
from examples.nmt.model import build_model  # noqa: E402
from examples.nmt.model import step_fn  # noqa: E402

TOKENS = ("[PAD]", "[UNK]", "[START]", "[END]", "may", "9", "th", ",", "1998", "june", "a")
SENTENCES = ["May 9th, 1998", "june a 9", "9", ""]
MAX_LENGTH = 7


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A random tiny model, its vocabularies and its loaded SavedModel (defaults: beam 3)."""
    vocabularies = data.Vocabularies(data.Vocabulary(TOKENS), data.Vocabulary(TOKENS))
    keras.utils.set_random_seed(1)
    model = build_model(len(TOKENS), len(TOKENS), embedding_dim=8, units=8, attention="luong")
    # A flat random model ends at once; larger output weights give varied, longer outputs.
    kernel = model.output_layer.kernel
    kernel.assign(kernel * 8.0)
    path = tmp_path_factory.mktemp("export") / "saved_model"
    export.export_translator(
        model, vocabularies, path, max_length=MAX_LENGTH, beam_size=3, alpha=0.6, beta=0.3
    )
    return model, vocabularies, tf.saved_model.load(str(path))


def python_search(model, vocabularies, beam_size, alpha, beta, max_length=MAX_LENGTH):
    source_ids = data.encode_texts(tf.constant(SENTENCES[:3]), vocabularies.source)
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
    return search(
        step_fn(model),
        model.initial_state(source_ids),
        data.START_ID,
        data.END_ID,
        max_length,
        pad_id=data.PAD_ID,
        **options,
    )


@pytest.mark.parametrize("beam_size", [1, 4])
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
    translations = vocabularies.target.decode(expected.ids[:, 0]).numpy()
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


def test_saved_model_beam_one_is_the_greedy_path(exported):
    model, vocabularies, translator = exported
    outputs = translator.translate(tf.constant(SENTENCES[:3]), beam_size=1, alpha=0.6, beta=0.3)
    greedy = python_search(model, vocabularies, None, 0.0, 0.0)
    np.testing.assert_array_equal(outputs["target_length"].numpy(), greedy.lengths.numpy()[:, 0])
    translations = vocabularies.target.decode(greedy.ids[:, 0]).numpy()
    np.testing.assert_array_equal(outputs["translation"].numpy(), translations)


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
