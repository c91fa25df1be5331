"""The model on every backend: one decoding step equals teacher forcing, padding does not
leak into the memory, the features are normalized, and a saved model loads the same."""

import dataclasses
import math

import keras
import numpy as np
import pytest

from examples.common import recipes
from examples.speech import model as listener
from examples.speech.config import RECIPES_DIR
from examples.speech.config import Config

TINY = recipes.load(Config, f"{RECIPES_DIR}/tiny.toml")


def batch(rows=2, samples=4000, seed=0):
    rng = np.random.default_rng(seed)
    waveform = (0.1 * rng.standard_normal((rows, samples))).astype("float32")
    lengths = np.array([samples, samples * 3 // 4], "int32")[:rows]
    waveform[1, lengths[1] :] = 0.0
    decoder_in = np.array([[1, 5, 7, 9], [1, 12, 3, 0]], "int32")[:rows]
    return waveform, lengths, decoder_in


@pytest.mark.parametrize(
    "attention, end_sentinel",
    [("location_sensitive", True), ("location_sensitive", False), ("bahdanau", True)],
)
def test_decoding_steps_give_the_teacher_forced_logits(attention, end_sentinel):
    keras.utils.set_random_seed(1)
    config = dataclasses.replace(TINY, attention=attention, end_sentinel=end_sentinel)
    model = listener.build_model(config)
    waveform, lengths, decoder_in = batch()
    inputs = {"waveform": waveform, "lengths": lengths, "decoder_in": decoder_in}
    forced = keras.ops.convert_to_numpy(model(inputs, training=False))  # (B, T, 13)
    state, memory = model.initial_state(waveform, lengths)
    for index in range(decoder_in.shape[1]):
        logits, state, weights = model.step(decoder_in[:, index], state, memory)
        logits = keras.ops.convert_to_numpy(logits)
        real = decoder_in[:, index] != 0  # a padding step (after END) is not scored
        np.testing.assert_allclose(logits[real], forced[real, index], atol=1e-4)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(weights).sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("end_sentinel", [False, True])
def test_memory_ignores_the_padding_after_a_waveform(end_sentinel):
    model = listener.build_model(dataclasses.replace(TINY, end_sentinel=end_sentinel))
    waveform, lengths, _ = batch()
    memory, mask = map(keras.ops.convert_to_numpy, model.encode(waveform, lengths))
    longer = np.pad(waveform, ((0, 0), (0, 1234)))
    memory_2, mask_2 = map(keras.ops.convert_to_numpy, model.encode(longer, lengths))
    steps = memory.shape[1]
    np.testing.assert_array_equal(mask_2[:, :steps], mask)
    assert not mask_2[:, steps:].any()
    np.testing.assert_allclose(memory_2[:, :steps], memory, atol=1e-4)
    # Frames: ceil(length / 80); positions: ceil over three halvings (and the end's).
    expected = [math.ceil(math.ceil(n / 80) / 8) for n in lengths]
    assert mask.sum(1).tolist() == [n + end_sentinel for n in expected]
    assert not memory[~mask].any()
    if end_sentinel:  # the same learned vector right after each utterance's last position
        sentinel = keras.ops.convert_to_numpy(model.encoder.sentinel)
        for row, count in enumerate(expected):
            np.testing.assert_allclose(memory[row, count], sentinel, atol=1e-6)


def test_features_are_mean_normalized_over_real_frames_only():
    model = listener.build_model(TINY)
    waveform, lengths, _ = batch()
    features = keras.ops.convert_to_numpy(model.features(waveform, lengths))  # (B, F, M)
    frames = -(-lengths // 80)
    for row, count in enumerate(frames):
        np.testing.assert_allclose(features[row, :count].mean(0), 0.0, atol=1e-3)
        assert not features[row, count:].any()
        assert features[row, :count].std() > 0.1


def test_a_saved_model_loads_with_the_same_logits(tmp_path):
    model = listener.build_model(TINY)
    waveform, lengths, decoder_in = batch()
    inputs = {"waveform": waveform, "lengths": lengths, "decoder_in": decoder_in}
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", compile=False)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(loaded(inputs)), keras.ops.convert_to_numpy(model(inputs)),
        atol=1e-5,
    )  # fmt: skip


def test_an_unknown_attention_is_named():
    with pytest.raises(ValueError, match="Expected attention in .*Received: 'content'"):
        listener.Listener(attention="content")


def test_a_config_saved_before_the_end_position_builds_without_it():
    config = listener.build_model(dataclasses.replace(TINY, end_sentinel=False)).get_config()
    del config["end_sentinel"]
    assert not listener.Listener.from_config(config).encoder.end_sentinel


def test_the_attention_takes_the_probability_fn_and_an_older_config_gets_softmax(tmp_path):
    model = listener.build_model(dataclasses.replace(TINY, probability_fn="sigmoid"))
    assert model.attention_layer.probability_fn == "sigmoid"
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", compile=False)
    assert loaded.attention_layer.probability_fn == "sigmoid"
    config = model.get_config()
    del config["probability_fn"]  # a model saved before the setting
    assert listener.Listener.from_config(config).attention_layer.probability_fn == "softmax"
    with pytest.raises(ValueError, match="probability_fn='softmax' with attention='gmm'"):
        listener.Listener(attention="gmm", probability_fn="sigmoid")
