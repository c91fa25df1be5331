"""examples.common: recipes, batches, the run folder and the resumable fit, on every backend."""

import dataclasses
import json
import os
from typing import Literal

import keras
import numpy as np
import pytest

from examples.common import recipes
from examples.common import runs
from examples.common.batches import ArrayBatches
from examples.common.training import fit_resumable


@dataclasses.dataclass(frozen=True)
class Config:
    epochs: int = 2
    learning_rate: float = 1e-3
    attention: Literal["bahdanau", "luong"] = "bahdanau"
    units: tuple[int, ...] = (8, 16)
    patience: int | None = None
    name: str = "run"


@pytest.mark.backend_independent
def test_recipe_file_then_sets_over_defaults(tmp_path):
    path = tmp_path / "recipe.toml"
    path.write_text('epochs = 5\nattention = "luong"\nunits = [4]\n')
    config = recipes.load(Config, str(path), ["learning-rate=0.5", "patience=3", "name=x y"])
    assert config == Config(5, 0.5, "luong", (4,), 3, "x y")
    assert recipes.load(Config, None, ["patience=none"]).patience is None
    assert recipes.load(Config, None, ["learning_rate=2"]).learning_rate == 2.0


@pytest.mark.backend_independent
def test_a_runs_config_json_is_a_recipe(tmp_path):
    config = Config(epochs=7, units=(3, 3))
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**recipes.to_dict(config), runs.BACKEND_KEY: "jax"}))
    assert recipes.load(Config, str(path)) == config


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "sets, message",
    [
        (["epoch=3"], r"unknown setting epoch; known: attention, epochs"),
        (["epochs=2.5"], r"epochs expects int, received 2.5"),
        (["attention=dot"], r"attention expects 'bahdanau' or 'luong', received 'dot'"),
        (['units=[1, "a"]'], r"units expects tuple"),
        (["epochs"], r"expected key=value"),
        (["name=3"], r"name expects str, received 3"),
    ],
)
def test_bad_settings_name_the_key(sets, message):
    with pytest.raises(runs.RunError, match=message):
        recipes.load(Config, None, sets)


@pytest.mark.backend_independent
def test_bad_recipe_files(tmp_path):
    with pytest.raises(runs.RunError, match="no such file"):
        recipes.load(Config, str(tmp_path / "missing.toml"))
    broken = tmp_path / "broken.toml"
    broken.write_text("epochs = = 3")
    with pytest.raises(runs.RunError, match="not a TOML or JSON recipe"):
        recipes.load(Config, str(broken))
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    with pytest.raises(runs.RunError, match="expected a table of settings"):
        recipes.load(Config, str(listed))


@pytest.mark.backend_independent
def test_batches_cover_each_pass_once_and_resume_at_the_same_batch():
    x = np.arange(10)
    batches = ArrayBatches((x, x * 10), 4, shuffle_seed=3, passes=3)
    assert len(batches) == 9 and batches.per_pass == 3
    for first in (0, 3, 6):
        rows = np.concatenate([batches[first + i][0] for i in range(3)])
        assert sorted(rows) == list(range(10))
    assert not np.array_equal(batches[0][0], batches[3][0])  # passes differ
    inputs, targets = batches[4]
    np.testing.assert_array_equal(targets, inputs * 10)
    resumed = batches.skip(3)
    assert len(resumed) == 6
    for index in range(6):
        np.testing.assert_array_equal(resumed[index][0], batches[index + 3][0])
    with pytest.raises(IndexError):
        resumed[6]


@pytest.mark.backend_independent
def test_sorted_passes_come_first_shortest_first_and_resume_sorted():
    x = np.arange(10)
    key = np.array([5, 1, 9, 1, 7, 3, 0, 8, 2, 6])
    batches = ArrayBatches((x,), 4, shuffle_seed=3, passes=3, sorted_passes=1, sort_key=key)
    first = np.concatenate([batches[i][0] for i in range(3)])
    np.testing.assert_array_equal(first, [6, 1, 3, 8, 5, 0, 9, 4, 7, 2])  # by key, ties in order
    plain = ArrayBatches((x,), 4, shuffle_seed=3, passes=3)
    for index in range(3, 9):  # the later passes are the shuffled ones
        np.testing.assert_array_equal(batches[index][0], plain[index][0])
    np.testing.assert_array_equal(batches.skip(1)[0][0], [5, 0, 9, 4])
    with pytest.raises(ValueError, match=r"sort_key of shape \(10,\).*Received: None"):
        ArrayBatches((x,), 4, shuffle_seed=3, sorted_passes=1)
    with pytest.raises(ValueError, match=r"sort_key of shape \(10,\).*Received: \(3,\)"):
        ArrayBatches((x,), 4, shuffle_seed=3, sorted_passes=1, sort_key=key[:3])
    with pytest.raises(ValueError, match="sorted_passes an integer >= 0. Received: -1"):
        ArrayBatches((x,), 4, shuffle_seed=3, sorted_passes=-1, sort_key=key)


@pytest.mark.backend_independent
def test_batches_in_order_padded_and_bad_input():
    x = np.arange(5, dtype="float32")[:, None]
    ordered = ArrayBatches({"x": x}, 2)
    assert len(ordered) == 3
    np.testing.assert_array_equal(ordered[2]["x"], [[4.0]])
    padded = ArrayBatches((x, x[:, 0]), 2, pad_rows=True)
    inputs, _, weights = padded[2]
    assert inputs.shape == (2, 1) and weights.tolist() == [1.0, 0.0]
    tokens = np.arange(15).reshape(5, 3)  # per-token targets: a weight a token
    _, targets, weights = ArrayBatches((x, tokens), 2, pad_rows=True)[2]
    assert targets.shape == weights.shape == (2, 3)
    assert weights.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    assert ArrayBatches((x, x), 2, drop_remainder=True).per_pass == 2
    with pytest.raises(ValueError, match="share their first axis"):
        ArrayBatches((x, x[:3]), 2)
    with pytest.raises(ValueError, match="batch_size"):
        ArrayBatches(x, 0)


def _model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(0.05), "mse")
    return model


class Killed(Exception):
    pass


class KillAfter(keras.callbacks.Callback):
    """Raises after ``epochs`` finished epochs (after RunCheckpoint committed them)."""

    def __init__(self, epochs):
        super().__init__()
        self.epochs = epochs

    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == self.epochs:
            raise Killed


def test_fit_resumable_saves_the_best_epoch_and_a_killed_run_resumes(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5]], "float32")
    validation = ArrayBatches((x, y), 32)

    def train():
        return ArrayBatches((x, y), 16, shuffle_seed=1, passes=4)

    whole, summary = fit_resumable(_model(), train(), validation, str(tmp_path / "a"), 4, verbose=0)
    assert summary["epochs"] == 4 and summary["best_epoch"] == 4
    assert os.path.isfile(tmp_path / "a" / runs.MODEL)
    assert not os.path.exists(tmp_path / "a" / runs.BACKUP)
    part = str(tmp_path / "b")
    with pytest.raises(Killed):
        fit_resumable(_model(), train(), validation, part, 4, callbacks=[KillAfter(2)], verbose=0)
    assert not os.path.exists(os.path.join(part, runs.MODEL))
    resumed, summary = fit_resumable(_model(), train(), validation, part, 4, verbose=0)
    assert summary["epochs"] == 4
    for ours, theirs in zip(resumed.get_weights(), whole.get_weights()):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    history = open(os.path.join(part, runs.HISTORY)).read().splitlines()
    assert len(history) == 5  # the header and four epochs, none twice
    loaded = keras.saving.load_model(os.path.join(part, runs.MODEL))
    np.testing.assert_allclose(loaded.predict(x, verbose=0), whole.predict(x, verbose=0), 1e-5)
    # Killed after the last epoch's commit, before model.keras: the rerun only saves.
    end = str(tmp_path / "end")
    with pytest.raises(Killed):
        fit_resumable(_model(), train(), validation, end, 4, callbacks=[KillAfter(4)], verbose=0)
    finished, summary = fit_resumable(_model(), train(), validation, end, 4, verbose=0)
    assert summary["epochs"] == 4 and os.path.isfile(os.path.join(end, runs.MODEL))
    for ours, theirs in zip(finished.get_weights(), whole.get_weights()):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.backend_independent
def test_prepare_run_dir_refuses_other_settings_and_resumes_same(tmp_path):
    out = str(tmp_path / "run")
    outputs = (runs.CONFIG, "*.png")
    assert not runs.prepare_run_dir(out, {"epochs": 2}, outputs=outputs)
    assert runs.prepare_run_dir(out, {"epochs": 2}, outputs=outputs)
    with pytest.raises(runs.RunError, match="epochs 2 there, 3 here"):
        runs.prepare_run_dir(out, {"epochs": 3}, outputs=outputs)
    (tmp_path / "run" / "a.png").write_text("x")
    (tmp_path / "run" / "keep.txt").write_text("x")
    assert not runs.prepare_run_dir(out, {"epochs": 3}, outputs=outputs, overwrite=True)
    assert sorted(os.listdir(out)) == [runs.CONFIG, "keep.txt"]
    with pytest.raises(runs.RunError, match="holds no run"):
        runs.prepare_run_dir(str(tmp_path), {"epochs": 3}, outputs=outputs)


SEEDED = """
import sys
import keras
from examples.common import backend
def draws():  # an unseeded initializer, and Keras's global seed generator (dropout's)
    weights = keras.initializers.GlorotUniform()((4, 4))
    return [keras.ops.convert_to_numpy(x).tolist() for x in (weights, keras.random.normal((3,)))]
backend.set_seed(3)
first = draws()
backend.set_seed(3)
print(first == draws(), "tensorflow" in sys.modules)
"""


def test_set_seed_repeats_the_initial_weights_and_imports_tensorflow_only_on_it():
    import subprocess
    import sys

    backend = keras.backend.backend()
    result = subprocess.run(
        [sys.executable, "-c", SEEDED],
        capture_output=True,
        text=True,
        env={**os.environ, "KERAS_BACKEND": backend},
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))),
        check=True,
    )
    same, imported = result.stdout.split()[-2:]
    assert same == "True"
    assert imported == str(backend == "tensorflow")
