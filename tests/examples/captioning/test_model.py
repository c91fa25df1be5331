"""The captioner's pieces on this backend: keys by hand, save and load, bad settings."""

import keras
import numpy as np
import pytest

from examples.captioning.model import Captioner

SMALL = dict(height=8, width=16, pooling=4, filters=4, units=8, attention_units=4, embedding_dim=4)


def test_cell_keys_are_each_cells_own_pixels_and_coordinates():
    model = Captioner(attention_keys="cell", **SMALL)
    image = np.zeros((1, 8, 16), "uint8")
    image[0, 5, 9] = 255  # row 5, column 9: cell (1, 2), pixel (1, 1) of its 4x4
    keys, values, mask, _ = model.encode(keras.ops.convert_to_tensor(image))
    assert mask is None  # attention_mask="none"
    keys = keras.ops.convert_to_numpy(keys)
    assert keys.shape == (1, 2, 4, 16 + 2)
    expected = np.zeros((2, 4, 16))
    expected[1, 2, 1 * 4 + 1] = 1.0
    np.testing.assert_allclose(keys[0, ..., :16], expected)
    rows, cols = np.meshgrid([0.0, 1.0], np.linspace(0, 1, 4), indexing="ij")
    np.testing.assert_allclose(keys[0, ..., 16], rows, atol=1e-6)
    np.testing.assert_allclose(keys[0, ..., 17], cols, atol=1e-6)
    assert tuple(values.shape) == (1, 2, 4, 4 + 2)


def test_ink_mask_keeps_the_attention_on_cells_with_ink():
    model = Captioner(attention_mask="ink", **SMALL)
    images = np.zeros((2, 8, 16), "uint8")
    images[0, 4:8, 9] = 255  # cell (1, 2): 4 of 16 pixels lit, a mean of 25% of full
    images[0, 0, 0:3] = 255  # cell (0, 0): 3 of 16, 18.75%, under INK (20%): no ink
    caption_in = np.array([[2, 5, 6], [2, 7, 0]], "int32")
    _, weights = model.attend(images, caption_in, penalty=False)
    weights = keras.ops.convert_to_numpy(weights)  # (B, T, 2, 4)
    expected = np.zeros((3, 2, 4))
    expected[:, 1, 2] = 1.0
    np.testing.assert_allclose(weights[0], expected, atol=1e-6)
    np.testing.assert_array_equal(weights[1], 0.0)  # a blank scene: zeros, not NaN
    found = keras.ops.convert_to_numpy(model.search(images).attention)
    assert np.isfinite(found).all()
    np.testing.assert_allclose(found[0, 0], expected[0].ravel(), atol=1e-6)


def test_local_values_come_from_the_stem_and_keys_from_the_context():
    model = Captioner(attention_values="local", **SMALL)
    image = np.random.default_rng(2).integers(0, 256, (1, 8, 16), dtype="uint8")
    keys, values, _, _ = model.encode(keras.ops.convert_to_tensor(image))
    keys, values = keras.ops.convert_to_numpy(keys), keras.ops.convert_to_numpy(values)
    assert keys.shape == values.shape == (1, 2, 4, 4 + 2)
    grid = model.encoder(keras.ops.cast(image[..., None], "float32"))  # stem and the rest
    np.testing.assert_allclose(keys[..., :4], keras.ops.convert_to_numpy(grid), atol=1e-6)
    np.testing.assert_allclose(values[..., 4:], keys[..., 4:])  # the same coordinates
    assert not np.allclose(values[..., :4], keys[..., :4])


@pytest.mark.parametrize("attention", ["bahdanau", "luong", "scaled_dot"])
def test_saved_and_loaded_model_searches_the_same(tmp_path, attention):
    model = Captioner(attention=attention, attention_mask="ink", attention_values="local", **SMALL)
    images = np.random.default_rng(0).integers(0, 256, (3, 8, 16), dtype="uint8")
    before = keras.ops.convert_to_numpy(model.search(images).attention)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras", compile=False)
    after = keras.ops.convert_to_numpy(loaded.search(images).attention)
    np.testing.assert_allclose(after, before, atol=1e-6)
    assert before.shape == (3, 6, 8)  # (B, max_length, H' * W')
    np.testing.assert_allclose(before[:, 0].sum(axis=-1), 1.0, atol=1e-5)


def test_doubly_stochastic_penalty_is_added_to_the_loss():
    model = Captioner(doubly_stochastic=0.5, **SMALL)
    images = np.zeros((2, 8, 16), "uint8")
    caption_in = np.array([[2, 5, 6], [2, 7, 0]], "int32")
    _, weights = model.attend(images, caption_in, penalty=False)
    weights = keras.ops.convert_to_numpy(weights)
    steps = (caption_in != 0).astype("float32")
    per_cell = (weights * steps[:, :, None, None]).sum(axis=1)
    expected = 0.5 * np.mean(((1.0 - per_cell) ** 2).sum(axis=(1, 2)))
    model({"image": images, "caption_in": caption_in})
    got = sum(float(keras.ops.convert_to_numpy(loss)) for loss in model.losses)
    assert got == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize(
    "settings, word",
    [
        ({"pooling": 3}, "pooling"),
        ({"attention": "dot"}, "attention"),
        ({"attention_keys": "x"}, "attention_keys"),
        ({"attention_values": "x"}, "attention_values"),
        ({"attention_mask": "x"}, "attention_mask"),
    ],
)
def test_bad_settings_are_refused(settings, word):
    with pytest.raises(ValueError, match=word):
        Captioner(**{**SMALL, **settings})


def test_beam_search_scores_no_lower_than_greedy():
    model = Captioner(**SMALL)
    images = np.random.default_rng(1).integers(0, 256, (3, 8, 16), dtype="uint8")
    greedy = keras.tree.map_structure(keras.ops.convert_to_numpy, model.search(images))
    beam = keras.tree.map_structure(keras.ops.convert_to_numpy, model.search(images, 3))
    assert beam.ids.shape == greedy.ids.shape == (3, 6)
    assert beam.attention.shape == (3, 6, 8)
    assert (beam.log_probs >= greedy.log_probs - 1e-4).all()
