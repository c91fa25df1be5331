"""The fit every example runs: resumable, early-stopped, the best epoch saved as ``model.keras``.

``fit_resumable(model, train, validation, run_dir, epochs, ...)`` trains a
compiled model on ``ArrayBatches`` (``examples.common.batches``, laid out
for ``epochs`` passes) with ``RunCheckpoint`` (``examples.common.checkpointing``):
a killed run started again with the same settings resumes after its last
finished epoch, on the batches an uninterrupted run would have seen. Early
stopping watches ``val_loss`` (``patience`` None: never stops early, so a
schedule reaches its end); the best epoch's weights are restored, saved as
``run_dir/model.keras`` and summarized in ``run_dir/training.json``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import Any

import keras

from examples.common import runs
from examples.common.batches import ArrayBatches
from examples.common.batches import for_fit
from examples.common.checkpointing import RunCheckpoint


def early_stopping(epochs: int, patience: int | None) -> keras.callbacks.EarlyStopping:
    """Stops on ``val_loss`` after ``patience`` epochs without a lower one; None: never."""
    return keras.callbacks.EarlyStopping(
        patience=epochs + 1 if patience is None else patience, verbose=1
    )


def fit_resumable(
    model: keras.Model,
    train: ArrayBatches,
    validation: keras.utils.PyDataset,
    run_dir: str,
    epochs: int,
    patience: int | None = None,
    seed: int = 0,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    verbose: int | str = "auto",
) -> tuple[keras.Model, dict[str, Any]]:
    """Trains ``model`` (compiled) to the end or resumes it; see the module doc.

    Returns the model with the best epoch's weights and the summary
    ``{"best_epoch", "best_val_loss", "epochs", "train_seconds"}`` (epochs
    counted from 1), which ``run_dir/training.json`` holds too.
    """
    if train.passes < epochs:
        raise ValueError(
            f"Expected training batches laid out for at least {epochs} passes. "
            f"Received: {train.passes}"
        )
    backup = os.path.join(run_dir, runs.BACKUP)
    os.makedirs(backup, exist_ok=True)
    stopping = early_stopping(epochs, patience)
    checkpoint = RunCheckpoint(
        backup, stopping, os.path.join(run_dir, runs.HISTORY), run_directory=run_dir, seed=seed
    )
    done = checkpoint.restore(model)
    if done:
        print(f"Resuming after epoch {done} (backup in {backup}).")
    steps = train.per_pass
    last = done if checkpoint.state["stopped"] else epochs
    if done < last:  # else killed after its last epoch's commit: nothing left to train
        model.fit(
            for_fit(train.skip(done * steps)),
            steps_per_epoch=steps,
            validation_data=for_fit(validation, repeat=True),
            validation_steps=len(validation),
            initial_epoch=done,
            epochs=last,
            callbacks=[stopping, checkpoint, *callbacks],
            verbose=verbose,
            shuffle=False,
        )
    state = checkpoint.state
    checkpoint.restore_best(model)
    summary = {
        "best_epoch": state["best_epoch"] + 1,
        "best_val_loss": state["best_value"],
        "epochs": state["epochs_done"],
        "train_seconds": round(state["train_seconds"], 1),
    }
    print(
        f"Best epoch: {summary['best_epoch']} of {summary['epochs']} "
        f"(val_loss {summary['best_val_loss']:.4f}); model.keras holds its weights."
    )
    runs.save_model(model, os.path.join(run_dir, runs.MODEL))
    runs.write_json(summary, os.path.join(run_dir, runs.TRAINING))
    shutil.rmtree(backup)
    return model, summary
