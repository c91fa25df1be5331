"""Training options end to end on tiny runs: XLA, resumption after a kill, two replicas,
bfloat16.

``--jit-compile`` trains the input-feeding decoder; a killed run resumes
without losing a finished epoch; ``--ema`` saves the weights' moving average;
``--strategy mirrored`` on two logical CPU devices. (Apart from test_train.py
so that xdist's ``--dist loadfile`` can run them beside that module's runs:
each is a whole training run.)
"""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip(
        "examples.nmt is TensorFlow-based (tf.data, tf.distribute, SavedModel)",
        allow_module_level=True,
    )

tf = pytest.importorskip("tensorflow")

import tiny  # noqa: E402

from examples.nmt import backend  # noqa: E402
from examples.nmt import runs  # noqa: E402
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


def test_xla_on_tensorflow_gets_batches_of_few_shapes_as_jax_does():
    """XLA compiles each new input shape: without full, length-bucketed batches the
    tiny run above compiled its step per batch (105 s against 40 s, one loaded core)."""
    assert backend.compiles_per_shape(jit_compile=True)
    assert not backend.compiles_per_shape(jit_compile=False)  # a retrace costs only a trace


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


def test_ema_trains_and_saves_the_moving_average_of_the_weights(date_data_dir, tmp_path):
    """--ema 0.5: validation runs on, and model.keras holds, the average of the
    output kernel over the steps (a_1 = w_1, a_t = m a_(t-1) + (1 - m) w_t),
    not its last value."""
    out = tmp_path / "run"
    argv = tiny.tiny_args(
        out, "--ema", "0.5", "--no-export", "--no-evaluate", data_dir=date_data_dir
    )
    kernels, validated = [], []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            kernels.append(self.model.output_layer.kernel.numpy())

        def on_test_begin(self, logs=None):
            validated.append(self.model.output_layer.kernel.numpy())

    pipeline.train(train.parse_args(argv), extra_callbacks=[Record()])
    average = kernels[0]
    for kernel in kernels[1:]:
        average = 0.5 * average + 0.5 * kernel
    saved, _ = runs.load_run(str(out))
    assert len(kernels) > 1 and not np.allclose(average, kernels[-1], atol=1e-4)
    np.testing.assert_allclose(saved.output_layer.kernel.numpy(), average, atol=1e-6)
    assert len(validated) == 1  # one epoch
    np.testing.assert_allclose(validated[0], average, atol=1e-6)


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


def test_bfloat16_trains_in_bfloat16_and_saves_in_float32(date_data_dir, tmp_path, monkeypatch):
    """--precision mixed_bfloat16: the train step computes in bfloat16 (float32
    variables); the model the run evaluates and exports, and model.keras,
    compute in float32 and hold the trained weights; the global policy is
    float32 again afterwards."""
    out = tmp_path / "run"
    argv = tiny.tiny_args(out, "--precision", "mixed_bfloat16", data_dir=date_data_dir)
    seen = {}

    class Record(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            seen["compute"] = {layer.compute_dtype for layer in self.model._flatten_layers()}
            seen["variables"] = {variable.dtype for variable in self.model.trainable_variables}

        def on_train_end(self, logs=None):
            seen["weights"] = [variable.numpy() for variable in self.model.weights]

    def finish(args, model, *_):  # what evaluation and export get
        seen["finished"] = model
        return {}

    monkeypatch.setattr(pipeline, "finish", finish)
    pipeline.train(train.parse_args(argv), extra_callbacks=[Record()])
    assert "bfloat16" in seen["compute"] and seen["variables"] == {"float32"}
    assert keras.mixed_precision.global_policy().name == "float32"
    saved, _ = runs.load_run(str(out))
    for model in (seen["finished"], saved):
        assert {layer.compute_dtype for layer in model._flatten_layers()} == {"float32"}
        assert len(model.weights) == len(seen["weights"])  # one epoch: the best is the last
        for variable, trained in zip(model.weights, seen["weights"]):
            np.testing.assert_array_equal(variable.numpy(), trained)
