"""Resumable training: a killed run restarts after its last finished epoch, same results.

``RunCheckpoint`` replaces ``BackupAndRestore`` + ``ModelCheckpoint`` +
``CSVLogger``. At the end of every epoch it writes, in ``backup/``:

1. ``best_E.weights.h5`` when the epoch improved ``val_loss``;
2. ``epoch_N.weights.h5``: model and optimizer after ``N`` finished epochs;
3. ``state.json``, written to a temporary file and renamed, which names
   those two files and holds the best epoch and ``val_loss``, the
   ``EarlyStopping`` counters (``wait``, ``best``, ``best_epoch``), the
   history rows, the training time and the states of the model's seed
   generators (``seed_generator_states``: they draw the dropout masks, and
   ``save_weights`` leaves them out). Renaming it commits the epoch;

then rewrites ``history.csv`` from the history rows and deletes the files
``state.json`` no longer names. With ``keep_checkpoints`` K > 0 it also
writes the model weights (no optimizer state) of the epoch into the run's
``checkpoints/epoch_N.weights.npz`` (``runs.save_weights``) before the
commit, and deletes those older than the last K after it: they outlive
``backup/``, for ``--average-checkpoints``. A kill at any point leaves the state of the
last committed epoch whole. ``restore`` reloads it before ``fit``
(``initial_epoch``) and ``on_train_begin`` hands the counters back to
``EarlyStopping``; the training batches of the resumed epochs are the same
because the caller skips the batches of the finished ones, and so are their
dropout masks (the seed generators' states come back; on PyTorch,
``reseed_torch``): a resumed run ends with the weights of an uninterrupted
one. After ``fit``, ``restore_best`` loads the best epoch's weights.

With ``--ema`` (the optimizer's ``use_ema``: an exponential moving average of
the weights, Polyak averaging), validation scores the averages
(``keras.callbacks.SwapEMAWeights``) and ``best_E.weights.h5`` holds them in
the model's variables (the same callback swaps them in around the save:
pass it as ``averages``), so ``restore_best``
and ``model.keras`` give the averaged weights, and so do the kept
``checkpoints/``; ``epoch_N.weights.h5`` keeps
the trained weights and their averages in place, so a resumed run goes on
with both.
"""

from __future__ import annotations

import contextlib
import glob
import os
import time
from typing import Any

import keras
import numpy as np

from examples.common import runs

STATE = "state.json"


def seed_generator_states(model: keras.Model) -> list[Any]:
    """The state variables of the model's ``keras.random.SeedGenerator``s, in the model's order.

    ``model.variables`` less ``model.weights``: the ``[seed, counter]`` pairs
    that draw the dropout masks on TensorFlow and JAX. ``save_weights`` leaves
    them out, and a new process starts them at counter 0 (with
    ``keras.utils.set_random_seed``, at the seeds of the first run): a
    resumed run would repeat the first epoch's masks.
    """
    weights = {id(variable) for variable in model.weights}
    return [variable for variable in model.variables if id(variable) not in weights]


def reseed_torch(seed: int, epoch: int) -> None:
    """On PyTorch, torch's global generator reseeded for ``epoch``: ``seed * 1_000_003 + epoch``.

    Keras draws the dropout masks of a layer without a ``seed`` (the
    example's ``Dropout(rate)``) from that generator, not from the layer's
    ``SeedGenerator``; and ``fit`` draws from it too when it makes a data
    iterator, once per ``fit`` or once per epoch. Reseeded before each
    epoch's first step, the masks depend on the epoch alone, as the batches
    of each pass do (``examples.common.batches``), whatever ran before.
    No-op on the other backends.
    """
    if keras.backend.backend() == "torch":
        import torch  # noqa: PLC0415  (the PyTorch backend's own package)

        torch.manual_seed(seed * 1_000_003 + epoch)


class RunCheckpoint(keras.callbacks.Callback):
    """See the module doc. Place it after ``early_stopping`` in the callbacks."""

    def __init__(
        self,
        directory: str,
        early_stopping: keras.callbacks.EarlyStopping,
        history_path: str,
        monitor: str = "val_loss",
        averages: keras.callbacks.SwapEMAWeights | None = None,
        run_directory: str | None = None,
        keep_checkpoints: int = 0,
        seed: int = 0,
    ):
        super().__init__()
        self.seed = seed  # PyTorch's dropout generator, reseeded per epoch (reseed_torch)
        self.directory = directory
        self.run_directory = run_directory  # where checkpoints/ goes
        self.keep_checkpoints = keep_checkpoints if run_directory is not None else 0
        self.early_stopping = early_stopping
        self.history_path = history_path
        self.monitor = monitor
        self.averages = averages  # with --ema: the fit's callback that swaps them in
        self.state: dict[str, Any] = {
            "epochs_done": 0,
            "weights": None,
            "best_epoch": None,
            "best_value": None,
            "best_weights": None,
            "early_stopping": None,
            "stopped": False,
            "history": [],
            "train_seconds": 0.0,
            "seed_generators": None,
        }
        self._epoch = 0
        self._reseeded = True
        self._start = time.perf_counter()
        self._seconds_before = 0.0

    @staticmethod
    def load_state(directory: str) -> dict[str, Any] | None:
        return runs.read_json(os.path.join(directory, STATE))

    def restore(self, model: keras.Model) -> int:
        """Loads the committed state into ``model`` (compiled); returns the epochs done."""
        state = self.load_state(self.directory)
        if state is None:
            return 0
        self.state = state
        self._seconds_before = state["train_seconds"]
        model.optimizer.build(model.trainable_variables)  # so its variables load too
        model.load_weights(os.path.join(self.directory, state["weights"]))
        saved = state.get("seed_generators")  # None: a backup from before they were kept
        if saved is not None:
            for variable, value in zip(seed_generator_states(model), saved, strict=True):
                variable.assign(np.asarray(value, variable.dtype))
        return state["epochs_done"]

    def on_train_begin(self, logs=None):
        self._start = time.perf_counter()
        saved = self.state["early_stopping"]
        if saved is not None:  # after EarlyStopping's own reset
            for name, value in saved.items():
                setattr(self.early_stopping, name, value)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch, self._reseeded = epoch, False

    def on_train_batch_begin(self, batch, logs=None):
        if not self._reseeded:  # after fit made this epoch's data iterator, if it makes one
            reseed_torch(self.seed, self._epoch)
            self._reseeded = True

    def _save_weights(self, name: str, averaged: bool = False) -> str:
        temporary = os.path.join(self.directory, f"{name}.tmp.weights.h5")
        with self._swapped(averaged):
            self.model.save_weights(temporary)
        os.replace(temporary, os.path.join(self.directory, f"{name}.weights.h5"))
        return f"{name}.weights.h5"

    @contextlib.contextmanager
    def _swapped(self, averaged: bool):
        """With ``averaged`` and ``--ema``: the averages in the model's variables meanwhile."""
        swap = self.averages if averaged else None
        if swap is not None:
            swap.on_test_begin()  # the averages into the model's variables
        try:
            yield
        finally:
            if swap is not None:
                swap.on_test_end()  # and the trained weights back

    def _keep_epoch(self, epochs_done: int) -> None:
        """The model weights of this epoch into ``checkpoints/`` (as validation scored them)."""
        path = runs.checkpoint_path(self.run_directory, epochs_done)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with self._swapped(averaged=True):
            runs.save_weights(self.model, path)

    def _drop_old_epochs(self, epochs_done: int) -> None:
        for epoch in runs.kept_epochs(self.run_directory):
            if epoch <= epochs_done - self.keep_checkpoints or epoch > epochs_done:
                os.remove(runs.checkpoint_path(self.run_directory, epoch))

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        value = float(logs[self.monitor])
        state = dict(self.state)
        if state["best_value"] is None or value < state["best_value"]:
            state.update(
                best_epoch=epoch,
                best_value=value,
                best_weights=self._save_weights(f"best_{epoch}", averaged=True),
            )
        if self.keep_checkpoints:
            self._keep_epoch(epoch + 1)
        stopping = self.early_stopping
        best = None if stopping.best is None else float(stopping.best)
        state.update(
            epochs_done=epoch + 1,
            weights=self._save_weights(f"epoch_{epoch + 1}"),
            early_stopping={"wait": stopping.wait, "best": best, "best_epoch": stopping.best_epoch},
            stopped=bool(self.model.stop_training),
            history=[
                *state["history"],
                {"epoch": epoch, **{k: float(v) for k, v in logs.items() if k != "learning_rate"}},
            ],
            train_seconds=self._seconds_before + time.perf_counter() - self._start,
            seed_generators=[
                keras.ops.convert_to_numpy(variable.value).tolist()
                for variable in seed_generator_states(self.model)
            ],
        )
        runs.write_json(state, os.path.join(self.directory, STATE))  # the commit
        self.state = state
        runs.write_history(state["history"], self.history_path)
        keep = {STATE, state["weights"], state["best_weights"]}
        for path in glob.glob(os.path.join(self.directory, "*")):
            if os.path.basename(path) not in keep:
                os.remove(path)
        if self.keep_checkpoints:
            self._drop_old_epochs(epoch + 1)

    def restore_best(self, model: keras.Model) -> None:
        """Loads the best epoch's weights into ``model``."""
        if self.state["best_weights"] is not None:
            model.load_weights(os.path.join(self.directory, self.state["best_weights"]))
