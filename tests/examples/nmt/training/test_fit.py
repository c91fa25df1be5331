"""Training options end to end on tiny runs: XLA, resumption after a kill, two replicas.

``--jit-compile`` trains the input-feeding decoder; a killed run resumes
without losing a finished epoch; ``--strategy mirrored`` on two logical CPU
devices. (Apart from test_train.py so that xdist's ``--dist loadfile`` can run
them beside that module's runs: each is a whole training run.)
"""

import os
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

import tiny  # noqa: E402

from examples.nmt import train  # noqa: E402
from examples.nmt.training import pipeline  # noqa: E402

ROOT = tiny.ROOT


def test_jit_compile_trains_the_input_feeding_decoder(date_data_dir, tmp_path):
    """--jit-compile with the default (bahdanau) decoder: XLA compiles the
    gradient of the attention inside AttentionRNN's while loop."""
    out = tmp_path / "run"
    train.main(
        tiny.tiny_args(out, "--jit-compile", "--no-export", "--no-evaluate", data_dir=date_data_dir)
    )
    assert tiny.history_epochs(out) == [0]
    assert (out / "model.keras").exists()


def test_interrupted_run_resumes_after_its_last_finished_epoch(date_data_dir, tmp_path):
    out = tmp_path / "run"
    argv = tiny.tiny_args(
        out,
        "--epochs",
        "2",
        "--decoder",
        "luong",
        "--no-export",
        "--no-evaluate",
        data_dir=date_data_dir,
    )
    with pytest.raises(KeyboardInterrupt):
        pipeline.train(train.parse_args(argv), extra_callbacks=[tiny.Interrupt(epoch=0)])
    assert tiny.history_epochs(out) == [0]
    assert (out / "backup").exists() and not (out / "model.keras").exists()
    train.main(argv)
    assert tiny.history_epochs(out) == [0, 1]  # epoch 0 was not trained again
    assert (out / "model.keras").exists() and not (out / "backup").exists()


def test_mirrored_strategy_on_two_logical_cpus(date_data_dir, tmp_path):
    # Outside the f-string: Python 3.11 allows no quotes of its kind inside it.
    argv = tiny.tiny_args(
        tmp_path / "run",
        "--decoder",
        "luong",
        "--strategy",
        "mirrored",
        "--no-export",
        "--no-evaluate",
        data_dir=date_data_dir,
    )
    script = textwrap.dedent(f"""
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        from examples.nmt import train
        argv = {argv!r}
        train.main(argv)
    """)
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on 2 replicas" in done.stdout
    assert (tmp_path / "run" / "model.keras").exists()
