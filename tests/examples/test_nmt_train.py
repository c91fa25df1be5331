"""The NMT example's scripts end to end, on tiny configurations.

Train -> export -> reload -> translate; a killed run resumes without losing a
finished epoch; ``--strategy mirrored`` on two logical CPU devices.
"""

import csv
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip(
        "examples.nmt is TensorFlow-based (tf.data, tf.distribute, SavedModel)",
        allow_module_level=True,
    )

tf = pytest.importorskip("tensorflow")

from examples.nmt import train, translate  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def tiny_args(data_dir, output_dir, *extra):
    return [
        "--dataset", "date_normalization/small", "--data-dir", str(data_dir),
        "--max-examples", "96", "--units", "16", "--embedding-dim", "8",
        "--batch-size", "32", "--epochs", "1", "--samples", "1",
        "--max-decode-length", "12", "--output-dir", str(output_dir), *extra,
    ]


def epochs_logged(output_dir):
    with open(output_dir / "history.csv", encoding="utf-8") as file:
        return [int(row["epoch"]) for row in csv.DictReader(file)]


def test_train_export_reload_translate(date_data_dir, tmp_path):
    out = tmp_path / "run"
    metrics = train.main(tiny_args(date_data_dir, out))
    for name in (
        "model.keras", "source_vocabulary.txt", "target_vocabulary.txt", "metrics.json",
        "training_curves.png", "attention_0.png", "attention_0.html", "history.csv",
        "saved_model/saved_model.pb",
    ):
        assert (out / name).exists(), name
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["examples"] == 96 and 0.0 <= saved["alignment_accuracy"] <= 1.0
    assert {"bleu", "chrf", "exact_match", "train_seconds"} <= set(metrics)
    assert not (out / "backup").exists()  # a finished run leaves no backup

    sentences = ["May 9th, 1998", "the 3rd of june 2001"]
    exported = translate.main(["--model", str(out), "--plots-dir", str(tmp_path), *sentences])
    reloaded = translate.main(["--model", str(out), "--keras", "--max-decode-length", "12",
                               "--plots-dir", str(tmp_path / "keras"), *sentences])
    assert [r["translation"] for r in exported] == [r["translation"] for r in reloaded]
    assert (tmp_path / "translation_0.png").exists()


def test_interrupted_run_resumes_after_its_last_finished_epoch(date_data_dir, tmp_path):
    out = tmp_path / "run"
    argv = tiny_args(date_data_dir, out, "--epochs", "2", "--decoder", "luong", "--no-export",
                     "--no-evaluate")
    with pytest.raises(KeyboardInterrupt):
        train.train(train.parse_args(argv), extra_callbacks=[train._Interrupt(epoch=0)])
    assert epochs_logged(out) == [0]
    assert (out / "backup").exists() and not (out / "model.keras").exists()
    train.main(argv)
    assert epochs_logged(out) == [0, 1]  # epoch 0 was not trained again
    assert (out / "model.keras").exists() and not (out / "backup").exists()


def test_mirrored_strategy_on_two_logical_cpus(date_data_dir, tmp_path):
    script = textwrap.dedent(f"""
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        from examples.nmt import train
        argv = {tiny_args(date_data_dir, tmp_path / "run", "--decoder", "luong",
                          "--strategy", "mirrored", "--no-export",
                          "--no-evaluate")!r}
        train.main(argv)
    """)
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on 2 replicas" in done.stdout
    assert (tmp_path / "run" / "model.keras").exists()
