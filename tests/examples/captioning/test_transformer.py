"""The Transformer decoder (``architecture="transformer"``) on this backend.

Its cached steps against its teacher-forced pass, beam 1 against greedy, save
and load, the ink mask, the penalty; and an older RNN ``model.keras`` (its
config without the architecture keys) still loading as the RNN it was.
"""

import json
import zipfile

import keras
import numpy as np
import pytest

from examples.captioning import data
from examples.captioning.model import Captioner

SMALL = dict(height=8, width=16, pooling=4, filters=4, attention_mask="ink")
TRANSFORMER = dict(**SMALL, architecture="transformer", decoder_layers=2, heads=2, d_model=8)
TRANSFORMER["ff_dim"] = 16


def _images(seed=0, count=4):
    images = np.random.default_rng(seed).integers(0, 256, (count, 8, 16), dtype="uint8")
    images[-1] = 0  # a blank scene: no ink to attend to
    return images


def _numpy(result):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, result)


def test_greedy_search_equals_teacher_forced_argmax():
    """Each cached step's token and weights, recomputed by a teacher-forced pass."""
    keras.utils.set_random_seed(3)
    model = Captioner(**TRANSFORMER)
    images = _images()
    result = _numpy(model.search(images))
    ids = np.full((len(images), 1), data.START_ID, "int32")
    for _ in range(model.max_length):
        logits, _ = model.attend(images, ids, penalty=False)
        next_ids = np.argmax(keras.ops.convert_to_numpy(logits)[:, -1], axis=-1)
        ids = np.concatenate([ids, next_ids[:, None].astype("int32")], axis=1)
    _, weights = model.attend(images, ids[:, :-1], penalty=False)
    weights = keras.ops.convert_to_numpy(weights)
    assert weights.shape == (len(images), model.max_length, 2, 4)
    weights = weights.reshape(len(images), model.max_length, -1)
    for row, length in enumerate(result.lengths):
        np.testing.assert_array_equal(result.ids[row, :length], ids[row, 1 : length + 1])
        np.testing.assert_allclose(result.attention[row, :length], weights[row, :length], atol=1e-5)
    np.testing.assert_array_equal(weights[-1], 0.0)  # the blank scene: zeros, not NaN


def test_beam_of_one_is_greedy_and_a_wider_beam_scores_no_lower():
    model = Captioner(**TRANSFORMER)
    images = _images(1)
    greedy = _numpy(model.search(images))
    one = _numpy(model.search(images, beam_size=1))
    np.testing.assert_array_equal(one.ids, greedy.ids)
    beam = _numpy(model.search(images, beam_size=3))
    assert beam.ids.shape == (4, 6) and beam.attention.shape == (4, 6, 8)
    assert (beam.log_probs >= greedy.log_probs - 1e-4).all()


def test_weights_stay_on_ink_and_feed_the_penalty():
    model = Captioner(**{**TRANSFORMER, "doubly_stochastic": 0.5})
    images = np.zeros((2, 8, 16), "uint8")
    images[0, 4:8, 9] = 255  # cell (1, 2) alone holds ink
    caption_in = np.array([[2, 5, 6], [2, 7, 0]], "int32")
    _, weights = model.attend(images, caption_in, penalty=False)
    weights = keras.ops.convert_to_numpy(weights)  # (B, T, 2, 4)
    expected = np.zeros((3, 2, 4))
    expected[:, 1, 2] = 1.0
    np.testing.assert_allclose(weights[0], expected, atol=1e-6)
    steps = (caption_in != 0).astype("float32")
    per_cell = (weights * steps[:, :, None, None]).sum(axis=1)
    penalty = 0.5 * np.mean(((1.0 - per_cell) ** 2).sum(axis=(1, 2)))
    model({"image": images, "caption_in": caption_in})
    got = sum(float(keras.ops.convert_to_numpy(loss)) for loss in model.losses)
    assert got == pytest.approx(penalty, rel=1e-4)


def test_saved_and_loaded_transformer_searches_the_same(tmp_path):
    model = Captioner(**{**TRANSFORMER, "attention_keys": "cell"})
    images = _images(2)
    before = _numpy(model.search(images, beam_size=2))
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras", compile=False)
    assert loaded.get_config() == model.get_config()
    after = _numpy(loaded.search(images, beam_size=2))
    np.testing.assert_array_equal(after.ids, before.ids)
    np.testing.assert_allclose(after.attention, before.attention, atol=1e-6)


def test_an_older_rnn_model_keras_loads_as_the_rnn(tmp_path):
    """A ``model.keras`` saved before ``architecture`` existed: its config lacks the new keys."""
    model = Captioner(**SMALL, units=8, attention_units=4, embedding_dim=4)
    images = _images(4)
    before = keras.ops.convert_to_numpy(model.search(images).attention)
    model.save(tmp_path / "new.keras")
    with zipfile.ZipFile(tmp_path / "new.keras") as new:
        files = {name: new.read(name) for name in new.namelist()}
    saved = json.loads(files["config.json"])
    for key in ("architecture", "decoder_layers", "heads", "d_model", "ff_dim"):
        del saved["config"][key]
    files["config.json"] = json.dumps(saved).encode()
    with zipfile.ZipFile(tmp_path / "old.keras", "w") as old:
        for name, content in files.items():
            old.writestr(name, content)
    loaded = keras.saving.load_model(tmp_path / "old.keras", compile=False)
    assert loaded.architecture == "rnn"
    after = keras.ops.convert_to_numpy(loaded.search(images).attention)
    np.testing.assert_allclose(after, before, atol=1e-6)


@pytest.mark.parametrize(
    "settings, word",
    [
        ({"architecture": "lstm"}, "architecture"),
        ({"d_model": 7}, "d_model"),
        ({"decoder_layers": 0}, "num_layers"),
    ],
)
def test_bad_transformer_settings_are_refused(settings, word):
    with pytest.raises(ValueError, match=word):
        Captioner(**{**TRANSFORMER, **settings})
