"""Resumable training: RunCheckpoint keeps the best epoch, early stopping and the random state;
killed runs resume."""

import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")  # tiny's vocabularies; RunCheckpoint runs on every backend

import tiny  # noqa: E402

from examples.common import checkpointing  # noqa: E402
from examples.nmt import runs  # noqa: E402

ROOT = tiny.ROOT


def fake_epoch(callbacks, model, epoch, val_loss):
    model.layers[-1].kernel.assign(np.full((2, 1), float(epoch), "float32"))
    for callback in callbacks:
        callback.on_epoch_end(epoch, {"loss": 1.0, "val_loss": val_loss})


def compiled_model():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, use_bias=False)])
    model.compile("adam", "mse")
    model.optimizer.build(model.trainable_variables)
    return model


def checkpoint_callbacks(directory, model, keep_checkpoints=0):
    stopping = keras.callbacks.EarlyStopping(patience=2)
    (directory / "backup").mkdir(exist_ok=True)
    checkpoint = checkpointing.RunCheckpoint(
        str(directory / "backup"),
        stopping,
        str(directory / "history.csv"),
        run_directory=str(directory),
        keep_checkpoints=keep_checkpoints,
    )
    for callback in (stopping, checkpoint):
        callback.set_model(model)
    return stopping, checkpoint


def test_resumed_run_keeps_the_best_epoch_and_early_stopping_state(tmp_path):
    losses = [1.0, 0.5, 0.7, 0.8]  # best: epoch 1; patience 2 stops after epoch 3
    model = compiled_model()
    stopping, checkpoint = checkpoint_callbacks(tmp_path, model)
    checkpoint.on_train_begin()
    stopping.on_train_begin()
    for epoch in range(3):
        fake_epoch([stopping, checkpoint], model, epoch, losses[epoch])
    # "Killed" here; a new process resumes.
    model = compiled_model()
    stopping, checkpoint = checkpoint_callbacks(tmp_path, model)
    assert checkpoint.restore(model) == 3
    np.testing.assert_array_equal(model.layers[-1].kernel.numpy(), 2.0)  # last epoch's weights
    stopping.on_train_begin()
    checkpoint.on_train_begin()
    assert (stopping.wait, stopping.best, stopping.best_epoch) == (1, 0.5, 1)
    fake_epoch([stopping, checkpoint], model, 3, losses[3])
    assert model.stop_training and checkpoint.state["stopped"]
    assert checkpoint.state["best_epoch"] == 1
    checkpoint.restore_best(model)
    np.testing.assert_array_equal(model.layers[-1].kernel.numpy(), 1.0)  # best epoch's
    assert tiny.history_epochs(tmp_path) == [0, 1, 2, 3]
    assert sorted(os.listdir(tmp_path / "backup")) == [
        "best_1.weights.h5",
        "epoch_4.weights.h5",
        "state.json",
    ]


def test_the_last_epochs_model_weights_stay_in_checkpoints_across_a_resume(tmp_path):
    model = compiled_model()
    stopping, checkpoint = checkpoint_callbacks(tmp_path, model, keep_checkpoints=2)
    for epoch in range(3):
        fake_epoch([stopping, checkpoint], model, epoch, 1.0 - 0.1 * epoch)
    assert runs.kept_epochs(str(tmp_path)) == [2, 3]
    model = compiled_model()  # "killed"; a new process resumes
    stopping, checkpoint = checkpoint_callbacks(tmp_path, model, keep_checkpoints=2)
    checkpoint.restore(model)
    fake_epoch([stopping, checkpoint], model, 3, 0.6)
    assert sorted(os.listdir(tmp_path / runs.CHECKPOINTS)) == [
        "epoch_3.weights.npz",
        "epoch_4.weights.npz",
    ]
    for epoch in (3, 4):  # the model's one kernel, no optimizer state
        with np.load(runs.checkpoint_path(str(tmp_path), epoch)) as arrays:
            assert arrays.files == ["arr_0"]
            np.testing.assert_array_equal(arrays["arr_0"], np.full((2, 1), epoch - 1.0))


@pytest.mark.slow
@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="trains on TensorFlow: once per suite"
)
def test_killed_five_times_ends_like_an_uninterrupted_run(date_data_dir, tmp_path):
    """SIGKILL at random moments, resume each time: same best epoch and test metrics."""
    env = {
        **os.environ,
        "KERAS_BACKEND": "tensorflow",
        "PYTHONPATH": str(ROOT),
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }

    def argv(out):
        return [
            sys.executable,
            "-m",
            "examples.nmt.train",
            *tiny.tiny_args(
                out,
                "--epochs",
                "3",
                "--max-examples",
                "1000",
                "--batch-size",
                "8",
                "--units",
                "16",
                "--no-export",
                "--samples",
                "0",
                data_dir=date_data_dir,
                examples=64,
                units=8,
                max_length=24,
            ),
        ]

    def wait_for(process, log, text):
        while process.poll() is None and text not in log.read_text(errors="replace"):
            time.sleep(0.02)
        return time.perf_counter()

    def launch(out, log):
        """Starts a run; returns it once ``fit`` starts (after its "Training" line)."""
        process = subprocess.Popen(
            argv(out), cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT
        )
        wait_for(process, log, "Training nmt_")
        return process

    reference, log = tmp_path / "reference", tmp_path / "reference.log"
    process = launch(reference, log)
    fit_start = time.perf_counter()
    fit_seconds = wait_for(process, log, "Best epoch:") - fit_start
    assert process.wait(timeout=600) == 0, log.read_text()[-3000:]
    out = tmp_path / "killed"
    rng = random.Random(0)
    epochs_at_kills = []

    def epochs_done():
        state = checkpointing.RunCheckpoint.load_state(str(out / "backup"))
        return None if state is None else state["epochs_done"]

    for attempt in range(5):
        before = epochs_done() or 0
        process = launch(out, tmp_path / f"attempt_{attempt}.log")
        if attempt % 2 == 0 and before < 2:  # let it commit one more epoch first
            while process.poll() is None and (epochs_done() or 0) <= before:
                time.sleep(0.02)
        # Then a random point of the next epoch: training, validation or saving.
        time.sleep(rng.uniform(0.0, 0.8) * fit_seconds / 3)
        process.send_signal(signal.SIGKILL)
        process.wait()
        epochs_at_kills.append(epochs_done())
    print(f"epochs done at the kills: {epochs_at_kills}; fit took {fit_seconds:.1f} s")
    # Kills interrupted training (a state was left), some after committed epochs.
    assert sum(epochs is not None for epochs in epochs_at_kills) >= 2, epochs_at_kills
    assert any(epochs_at_kills), epochs_at_kills
    done = subprocess.run(
        argv(out), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected = json.loads((reference / "metrics.json").read_text())
    got = json.loads((out / "metrics.json").read_text())
    for key in ("best_epoch", "exact_match", "bleu", "chrf", "alignment_accuracy"):
        assert got[key] == expected[key], (key, got, expected)
    assert tiny.history_epochs(out) == tiny.history_epochs(reference) == [0, 1, 2]
    with open(reference / "history.csv") as a, open(out / "history.csv") as b:
        for row_a, row_b in zip(csv.DictReader(a), csv.DictReader(b)):
            assert float(row_a["val_loss"]) == pytest.approx(float(row_b["val_loss"]), rel=1e-5)


def dropout_run(directory, epochs, callbacks=()):
    """A tiny model with dropout fitted to ``epochs``, as a new process would (resuming
    from ``directory``'s backup if there is one); returns its weights."""
    keras.utils.set_random_seed(0)  # as every `train` does first
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = x @ rng.normal(size=(4, 1)).astype("float32")
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(16),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(1),
        ]
    )
    model.compile(keras.optimizers.SGD(0.1), "mse")
    stopping = keras.callbacks.EarlyStopping("loss", patience=5)
    (directory / "backup").mkdir(parents=True, exist_ok=True)
    checkpoint = checkpointing.RunCheckpoint(
        str(directory / "backup"), stopping, str(directory / "history.csv"), monitor="loss"
    )
    done = checkpoint.restore(model)

    def stream():  # endless, as fit.py feeds them: 4 batches an epoch
        while True:
            for start in range(0, 32, 8):
                yield x[start : start + 8], y[start : start + 8]

    model.fit(
        stream(),
        steps_per_epoch=4,
        epochs=epochs,
        initial_epoch=done,
        shuffle=False,
        verbose=0,
        callbacks=[stopping, checkpoint, *callbacks],
    )
    return model.get_weights()


def test_a_resumed_run_draws_the_dropout_masks_of_an_uninterrupted_one(tmp_path):
    """The seed generators' states come back with the weights (on PyTorch, its generator is
    reseeded per epoch): else the resumed epoch would repeat the first epoch's masks."""
    killed = tmp_path / "killed" / "backup"
    copy = keras.callbacks.LambdaCallback(  # the backup of a run killed after epoch 1
        on_epoch_end=lambda epoch, logs: epoch or shutil.copytree(tmp_path / "whole/backup", killed)
    )
    whole = dropout_run(tmp_path / "whole", epochs=2, callbacks=[copy])
    resumed = dropout_run(tmp_path / "killed", epochs=2)
    for ours, theirs in zip(resumed, whole):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-7)


def averaging_run(directory, epochs, initial_epoch=0, momentum=0.5, keep_checkpoints=0):
    """A linear model fitted with weight averages; returns it, the checkpoint and
    the trained (not averaged) kernels after every step of this call."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5]], "float32")
    x_val = rng.normal(size=(16, 3)).astype("float32")
    y_val = x_val @ np.array([[1.0], [-2.0], [0.5]], "float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, use_bias=False)])
    model.layers[0].kernel.assign(np.zeros((3, 1), "float32"))
    model.compile(keras.optimizers.Adam(0.1, use_ema=True, ema_momentum=momentum), "mse")
    model.optimizer.build(model.trainable_variables)
    stopping = keras.callbacks.EarlyStopping(patience=5)
    (directory / "backup").mkdir(parents=True, exist_ok=True)
    averages = keras.callbacks.SwapEMAWeights()
    checkpoint = checkpointing.RunCheckpoint(
        str(directory / "backup"),
        stopping,
        str(directory / "history.csv"),
        averages=averages,
        run_directory=str(directory),
        keep_checkpoints=keep_checkpoints,
    )
    done = checkpoint.restore(model)
    assert done == initial_epoch
    kernels = []
    record = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: kernels.append(model.layers[0].kernel.numpy())
    )
    model.fit(
        x,
        y,
        batch_size=8,
        epochs=epochs,
        initial_epoch=done,
        validation_data=(x_val, y_val),
        shuffle=False,
        verbose=0,
        callbacks=[averages, stopping, checkpoint, record],
    )
    return model, checkpoint, kernels, (x_val, y_val)


def moving_averages(kernels, momentum):
    """a_1 = w_1, a_t = m a_(t-1) + (1 - m) w_t: the average after every step."""
    averages = [kernels[0]]
    for kernel in kernels[1:]:
        averages.append(momentum * averages[-1] + (1 - momentum) * kernel)
    return averages


@pytest.mark.tf_only  # its recorder reads the kernel mid-epoch: None on JAX
def test_with_weight_averages_validation_and_the_best_epoch_use_the_averages(tmp_path):
    model, checkpoint, kernels, (x_val, y_val) = averaging_run(
        tmp_path, epochs=3, keep_checkpoints=3
    )
    steps = 4  # 32 examples in batches of 8
    averages = moving_averages(kernels, 0.5)
    epoch_ends = [averages[steps * (epoch + 1) - 1] for epoch in range(3)]
    val_losses = [row["val_loss"] for row in checkpoint.state["history"]]
    expected = [float(np.mean((x_val @ kernel - y_val) ** 2)) for kernel in epoch_ends]
    np.testing.assert_allclose(val_losses, expected, rtol=1e-5)  # scored with the averages
    raw_loss = float(np.mean((x_val @ kernels[-1] - y_val) ** 2))
    assert abs(raw_loss - expected[-1]) > 1e-3  # the two differ: the check can tell
    # After fit the model is back on its trained weights; the best epoch's are averages.
    best = checkpoint.state["best_epoch"]
    checkpoint.restore_best(model)
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), epoch_ends[best], rtol=1e-5)
    assert not np.allclose(epoch_ends[best], kernels[steps * (best + 1) - 1], rtol=1e-3)
    for epoch, expected_kernel in enumerate(epoch_ends, start=1):  # the kept epochs: averages too
        (kept,) = runs.read_weights(runs.checkpoint_path(str(tmp_path), epoch))
        np.testing.assert_allclose(kept, expected_kernel, rtol=1e-5)


@pytest.mark.tf_only  # its recorder reads the kernel mid-epoch: None on JAX
def test_a_resumed_run_goes_on_with_its_trained_weights_and_their_averages(tmp_path):
    _, reference, _, _ = averaging_run(tmp_path / "reference", epochs=3)
    averaging_run(tmp_path / "resumed", epochs=1)  # "killed" after epoch 1
    model, resumed, _, _ = averaging_run(tmp_path / "resumed", epochs=3, initial_epoch=1)
    assert resumed.state["best_epoch"] == reference.state["best_epoch"]
    reference_losses = [row["val_loss"] for row in reference.state["history"]]
    resumed_losses = [row["val_loss"] for row in resumed.state["history"]]
    np.testing.assert_allclose(resumed_losses, reference_losses, rtol=1e-5)
