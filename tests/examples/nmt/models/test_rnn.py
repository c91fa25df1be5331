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

import tiny  # noqa: E402

from examples.nmt.models.decoding import search_start  # noqa: E402
from examples.nmt.models.rnn import ATTENTIONS  # noqa: E402
from examples.nmt.text import special  # noqa: E402
from keras_attention import decoding  # noqa: E402

SOURCE, TARGET_IN = tiny.SOURCE, tiny.TARGET_IN


def tiny_model(attention="bahdanau", decoder="bahdanau", rnn="gru"):
    return tiny.tiny_model(attention=attention, decoder=decoder, rnn=rnn)


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
    step, state = search_start(model, SOURCE)
    for t in range(TARGET_IN.shape[1]):
        logits, state, _ = step(TARGET_IN[:, t], state, t)
        log_probs = tf.nn.log_softmax(logits)
        real = TARGET_IN[:, t] != 0
        np.testing.assert_allclose(log_probs.numpy()[real], expected[real, t], atol=1e-5)


@pytest.mark.parametrize("decoder", ["bahdanau", "luong"])
def test_beam_size_one_equals_greedy(decoder):
    model = tiny_model("multihead", decoder)
    greedy = tiny.search(model, SOURCE, max_length=7)
    step, state = search_start(model, SOURCE)
    beam = decoding.beam_search(step, state, special.START_ID, special.END_ID, 7, beam_size=1)
    np.testing.assert_array_equal(beam.ids[:, 0].numpy(), greedy.ids.numpy())
    np.testing.assert_allclose(beam.log_probs[:, 0].numpy(), greedy.log_probs.numpy(), atol=1e-5)
    np.testing.assert_allclose(beam.attention[:, 0].numpy(), greedy.attention.numpy(), atol=1e-6)


def test_saved_and_reloaded_model_steps_like_the_original(tmp_path):
    model = tiny_model("bahdanau", "bahdanau", rnn="lstm")
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras", compile=False)
    assert type(reloaded) is type(model) and reloaded.get_config() == model.get_config()
    expected = tiny.search(model, SOURCE, max_length=5)
    got = tiny.search(reloaded, SOURCE, max_length=5)
    np.testing.assert_array_equal(got.ids.numpy(), expected.ids.numpy())
    np.testing.assert_allclose(got.attention.numpy(), expected.attention.numpy(), atol=1e-6)
