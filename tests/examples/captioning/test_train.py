"""A tiny run on this backend writes every output; its search, predict and SavedModel agree.

The run is made once per module (``tiny_run``): the ``tiny`` recipe, a few
hundred scenes and one epoch. The SavedModel is exported (in a TensorFlow
process, as a JAX or PyTorch run does) on one backend only, ``EXPORT_BACKEND``.
"""

import contextlib
import dataclasses
import io
import os

import keras
import numpy as np
import pytest

from examples.captioning import data
from examples.captioning import predict
from examples.captioning import train
from examples.captioning.config import RECIPES
from examples.captioning.config import Config
from examples.captioning.evaluate import load_run
from examples.common import recipes

EXPORT_BACKEND = "torch"  # the export runs once per CI run, from a non-TensorFlow backend
TRANSFORMER_EXPORT_BACKEND = "tensorflow"  # the Transformer's export, from another backend
BACKEND = keras.backend.backend()


def _tiny(tmp_path_factory, name, sets=(), export_backend=None):
    """A tiny recipe's run (``sets`` over it), exported on ``export_backend``."""
    folder = str(tmp_path_factory.mktemp("captioning") / name)
    config = recipes.load(Config, recipes.resolve("tiny", RECIPES), sets)
    config = dataclasses.replace(config, export=BACKEND == export_backend)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = train.train(config, folder)
    return folder, config, result, printed.getvalue()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    return _tiny(tmp_path_factory, "run", export_backend=EXPORT_BACKEND)


OUTPUTS = {
    "config.json",
    "model.keras",
    "history.csv",
    "training.json",
    "metrics.json",
    "captions.tsv",
    "training_curves.png",
    "attention_0.png",
    "attention_0.html",
}  # fmt: skip  (what every run writes)


def test_a_tiny_run_writes_every_output(tiny_run):
    folder, config, result, printed = tiny_run
    names = set(os.listdir(folder))
    assert OUTPUTS <= names and "backup" not in names
    assert printed.splitlines()[0].startswith("Training on: ")
    for key in ("exact_match", "digit_error_rate", "attention_correctness", "pointing_accuracy"):
        assert 0.0 <= result[key] <= 1.0 or key == "digit_error_rate"
        assert key.replace("_", " ") in printed
    baseline = result["attention_correctness_uniform"]
    assert 0 < baseline < 0.2 and result["pointing_accuracy_uniform"] == baseline
    assert result["backend"] == BACKEND and result["test_scenes"] == config.test_scenes
    with open(os.path.join(folder, "captions.tsv"), encoding="utf-8") as file:
        assert len(file.readlines()) == config.test_scenes + 1


def test_greedy_search_equals_teacher_forced_argmax(tiny_run):
    """The step function against the teacher-forced model: each greedy token, recomputed."""
    folder, config, _, _ = tiny_run
    _, model = load_run(folder)
    images = data.load(config)["test"].images[:6]
    result = keras.tree.map_structure(keras.ops.convert_to_numpy, model.search(images))
    ids = np.full((len(images), 1), data.START_ID, "int32")
    for _ in range(model.max_length):
        logits, _ = model.attend(images, ids, penalty=False)
        next_ids = np.argmax(keras.ops.convert_to_numpy(logits)[:, -1], axis=-1)
        ids = np.concatenate([ids, next_ids[:, None].astype("int32")], axis=1)
    _, weights = model.attend(images, ids[:, :-1], penalty=False)
    weights = keras.ops.convert_to_numpy(weights).reshape(len(images), model.max_length, -1)
    for row, length in enumerate(result.lengths):
        np.testing.assert_array_equal(result.ids[row, :length], ids[row, 1 : length + 1])
        np.testing.assert_allclose(result.attention[row, :length], weights[row, :length], atol=1e-5)


def test_predict_captions_a_png_and_draws_it(tiny_run, tmp_path, capsys):
    from PIL import Image

    folder, config, _, _ = tiny_run
    scenes = data.load(config)["test"]
    path = tmp_path / "scene.png"
    Image.fromarray(scenes.images[0]).save(path)
    caption = predict.main([str(path), "--run", folder])
    with open(os.path.join(folder, "captions.tsv"), encoding="utf-8") as file:
        assert caption == file.readlines()[1].rstrip("\n").split("\t")[2]
    assert (tmp_path / "scene.attention.png").is_file()
    assert (tmp_path / "scene.attention.html").is_file()
    capsys.readouterr()
    Image.fromarray(np.zeros((10, 10), "uint8")).save(tmp_path / "small.png")
    with pytest.raises(SystemExit) as raised:
        predict.main([str(tmp_path / "small.png"), "--run", folder])
    assert raised.value.code == 2
    error = capsys.readouterr().err
    assert f"{config.height}x{config.width}" in error and "10x10" in error


@pytest.fixture(scope="module")
def tiny_transformer_run(tmp_path_factory):
    """The tiny recipe with a one-block Transformer decoder, exported from TensorFlow."""
    sets = ["architecture=transformer", "decoder_layers=1", "heads=2", "d_model=16", "ff_dim=32"]
    return _tiny(tmp_path_factory, "transformer", sets, TRANSFORMER_EXPORT_BACKEND)


def test_a_tiny_transformer_run_writes_every_output(tiny_transformer_run):
    folder, config, result, printed = tiny_transformer_run
    assert OUTPUTS <= set(os.listdir(folder))
    for key in ("exact_match", "attention_correctness", "pointing_accuracy"):
        assert 0.0 <= result[key] <= 1.0
    _, model = load_run(folder)
    assert model.architecture == "transformer" and model.transformer.num_layers == 1
    if BACKEND == TRANSFORMER_EXPORT_BACKEND:
        assert os.path.isfile(os.path.join(folder, "saved_model", "saved_model.pb"))
        assert result["saved_model_agreement"] == 1.0


@pytest.mark.skipif(BACKEND != EXPORT_BACKEND, reason=f"exported once, from {EXPORT_BACKEND}")
def test_saved_model_captions_equal_this_backends(tiny_run):
    folder, _, result, printed = tiny_run
    assert os.path.isfile(os.path.join(folder, "saved_model", "saved_model.pb"))
    assert result["saved_model_agreement"] == 1.0
    assert "SavedModel in" in printed
