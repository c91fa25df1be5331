"""Runs on the host pipeline: without TensorFlow at all, resumed, and scored as TensorFlow scores.

The training backend is the suite's (JAX or PyTorch: TensorFlow's backend
needs TensorFlow). A run in a subprocess where ``tensorflow``,
``tensorflow_text`` and ``tensorflow_datasets`` cannot be imported trains,
evaluates and writes the run's files, and says how to write the SavedModel
later; its vocabulary files are the TensorFlow pipeline's, byte for byte; the
TensorFlow pipeline scores and translates it alike; a killed run with dropout
resumes to the weights of an uninterrupted one.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

if keras.backend.backend() == "tensorflow":
    pytest.skip("the host pipeline trains on JAX or PyTorch here", allow_module_level=True)
if keras.backend.backend() == "jax":  # same pipeline, ~5 min of XLA compiles on 2 cores
    pytestmark = pytest.mark.slow

import tiny

from examples.nmt import evaluate
from examples.nmt import runs
from examples.nmt import train
from examples.nmt import translate
from examples.nmt.training import pipeline

# Runs a module as `python -m` would, with TensorFlow's packages unimportable.
WITHOUT_TENSORFLOW = (
    "import runpy, sys; "
    "sys.modules.update(dict.fromkeys(['tensorflow', 'tensorflow_text', 'tensorflow_datasets'])); "
    "module = sys.argv.pop(1); sys.argv[0] = module; "
    "runpy.run_module(module, run_name='__main__', alter_sys=True)"
)
LETTERS = "abcdefgh"
PHONEMES = ("AA", "B", "K", "D", "EH", "F", "G", "HH")


def write_dictionary(path, count=300):
    lines = []
    for i in range(count):
        digits = f"{i:03o}"
        word = "".join(LETTERS[int(d)] for d in digits)
        lines.append(f"{word} {' '.join(PHONEMES[int(d)] + '1' for d in digits)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def g2p_args(out, dictionary, *extra):
    return tiny.tiny_args(
        out, *extra, dataset=f"dict:{dictionary}", examples=300, max_decode_length=8
    )


@pytest.fixture(scope="module")
def run_without_tensorflow(tmp_path_factory):
    """A tiny g2p run trained in a process that cannot import TensorFlow."""
    folder = tmp_path_factory.mktemp("notf")
    dictionary = write_dictionary(folder / "words.dict")
    out = folder / "run"
    environment = {
        **os.environ,
        "KERAS_BACKEND": keras.backend.backend(),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tiny.ROOT), os.environ.get("PYTHONPATH")])),
    }
    argv = [sys.executable, "-c", WITHOUT_TENSORFLOW, "examples.nmt.train"]
    done = subprocess.run(
        argv + g2p_args(out, dictionary, "--beam-size", "2"),
        cwd=tiny.ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out, dictionary, done.stdout


def test_a_run_without_tensorflow_writes_the_run_and_says_how_to_export(run_without_tensorflow):
    out, _, printed = run_without_tensorflow
    names = {path.name for path in out.iterdir()}
    assert {"model.keras", "metrics.json", "history.csv", "config.json", "training.json"} <= names
    assert {"source_letters.txt", "target_symbols.txt", "training_curves.png"} <= names
    assert "saved_model" not in names and "backup" not in names
    assert f"python -m examples.nmt.export --model {out}" in printed
    assert "No SavedModel" in printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert {"wer", "per", "bleu"} <= set(metrics)
    assert "input_pipeline" not in json.loads((out / "config.json").read_text())


def test_the_run_scores_and_translates_again_as_it_scored(run_without_tensorflow):
    out, _, _ = run_without_tensorflow
    scored = evaluate.main(["--model", str(out)])
    saved = json.loads((out / "metrics.json").read_text())
    assert scored["wer"] == saved["wer"] and scored["per"] == saved["per"]
    results = translate.main(["--model", str(out), "--keras", "--plots-dir", str(out), "abc"])
    assert len(results) == 1 and set(results[0]["translation"].split()) <= set(PHONEMES)


def test_a_killed_host_run_resumes_to_the_uninterrupted_weights(tmp_path, monkeypatch):
    dictionary = write_dictionary(tmp_path / "words.dict")
    quiet = ("--epochs", "2", "--dropout", "0.3", "--no-evaluate", "--no-export")  # same masks
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    train.main(g2p_args(whole, dictionary, *quiet))
    with pytest.raises(KeyboardInterrupt):
        pipeline.train(
            train.parse_args(g2p_args(killed, dictionary, *quiet)),
            extra_callbacks=[tiny.Interrupt(epoch=0)],
        )
    assert tiny.history_epochs(killed) == [0]
    train.main(g2p_args(killed, dictionary, *quiet))
    assert tiny.history_epochs(killed) == [0, 1]
    for ours, theirs in zip(
        runs.load_run(killed)[0].get_weights(), runs.load_run(whole)[0].get_weights()
    ):
        np.testing.assert_allclose(ours, theirs, atol=1e-6)
