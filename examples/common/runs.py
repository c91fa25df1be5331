"""A run's folder, for every example: file names, ``config.json``, resume rules, safe writes.

Every file is written to a temporary name and renamed (``write_text``,
``write_json``, ``save_model``, ``save_weights``), so a killed process never
leaves half a file. ``prepare_run_dir`` refuses a used folder unless the run
is resumed with the same settings or ``overwrite`` is given, and records the
Keras backend the run trains on (``BACKEND_KEY``): a run resumes on the
backend it started on, and a finished run evaluates on any.

``checkpoints/epoch_N.weights.npz`` hold a model's weights after ``N``
finished epochs (``model.get_weights()`` order, no optimizer state).
"""

from __future__ import annotations

import csv
import glob
import io
import json
import os
import shutil
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

CONFIG = "config.json"
MODEL = "model.keras"
METRICS = "metrics.json"
HISTORY = "history.csv"
TRAINING = "training.json"  # written when training is done: its summary
CHECKPOINTS = "checkpoints"
BACKUP = "backup"  # RunCheckpoint's files while a run trains
# The Keras backend a run trains on, recorded in its config.json.
BACKEND_KEY = "keras_backend"


class RunError(Exception):
    """A problem with a run's inputs or folder that the commands report on one line (exit 2)."""


def read_json(path: str) -> Any:
    """The JSON value in ``path``, or None if there is no such file."""
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def write_text(text: str, path: str) -> None:
    """Writes ``text`` to ``path`` through a temporary file and a rename."""
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8", newline="\n") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


def write_json(value: Any, path: str) -> None:
    write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", path)


def write_history(rows: Sequence[Mapping[str, Any]], path: str) -> None:
    """``history.csv``: one row per finished epoch, ``epoch`` first (as ``CSVLogger``)."""
    keys = sorted({key for row in rows for key in row if key != "epoch"})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, ["epoch", *keys], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text(buffer.getvalue(), path)


def save_model(model: keras.Model, path: str) -> None:
    """``model.save`` through a temporary file and a rename."""
    temporary = path.removesuffix(".keras") + ".tmp.keras"
    model.save(temporary)
    os.replace(temporary, path)


def save_weights(model: keras.Model, path: str) -> None:
    """``model.get_weights()`` (no optimizer state) as an ``.npz`` file, through a rename."""
    temporary = f"{path}.tmp"
    with open(temporary, "wb") as file:
        np.savez(file, *model.get_weights())
    os.replace(temporary, path)


def read_weights(path: str) -> list[np.ndarray]:
    """The arrays ``save_weights`` wrote, in ``model.get_weights()`` order."""
    with np.load(path) as arrays:
        return [arrays[f"arr_{index}"] for index in range(len(arrays.files))]


def checkpoint_path(directory: str, epoch: int) -> str:
    """``directory/checkpoints/epoch_N.weights.npz``: the weights after ``epoch`` epochs."""
    return os.path.join(directory, CHECKPOINTS, f"epoch_{epoch}.weights.npz")


def kept_epochs(directory: str) -> list[int]:
    """The epochs whose weights ``directory/checkpoints`` keeps, in increasing order."""
    names = glob.glob(os.path.join(glob.escape(directory), CHECKPOINTS, "epoch_*.weights.npz"))
    epochs = [os.path.basename(name).split("_")[1].split(".")[0] for name in names]
    return sorted(int(epoch) for epoch in epochs if epoch.isdigit())


def load_model(directory: str) -> keras.Model:
    """``directory/model.keras``, uncompiled; a ``RunError`` if the run has none."""
    path = os.path.join(directory, MODEL)
    if not os.path.isfile(path):
        raise RunError(f"no trained model in {directory}: {path} does not exist")
    return keras.saving.load_model(path, compile=False)


def prepare_run_dir(
    out: str,
    config: Mapping[str, Any],
    *,
    overwrite: bool = False,
    outputs: Iterable[str],
    resume_irrelevant: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    option: str = "--output-dir",
    spell: Callable[[str], str] = str,
    read: Callable[[str], Mapping[str, Any] | None] | None = None,
) -> bool:
    """Refuses a used ``out`` unless resuming with the same ``config``, or ``overwrite``.

    Returns True on a resume. ``overwrite`` deletes the names (glob patterns)
    in ``outputs``, nothing else. A run resumes on the Keras backend it
    started on. Keys in ``resume_irrelevant`` may differ between a run and
    its resumption; ``defaults`` fill keys that an older ``config.json``
    lacks; ``spell`` names a key in messages (a flag, say); ``read`` reads a
    folder's saved config (default: its ``config.json`` as it is). Writes
    ``config``, with the run's backend, to ``out/config.json``.
    """
    backend = keras.backend.backend()
    if os.path.exists(out) and not os.path.isdir(out):
        raise RunError(f"{option} {out} is a file, not a folder")
    used = os.path.isdir(out) and bool(os.listdir(out))
    saved = None
    if used and overwrite:
        for pattern in outputs:
            for path in glob.glob(os.path.join(glob.escape(out), pattern)):
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    elif used:
        saved = read(out) if read else read_json(os.path.join(out, CONFIG))
        if saved is None:
            raise RunError(
                f"{option} {out} is not empty and holds no run of this command (no "
                f"{CONFIG}); choose another folder, or pass --overwrite to write into it"
            )
        saved = {**(defaults or {}), **saved}
        trained_on = saved.pop(BACKEND_KEY, "tensorflow")
        done = os.path.isfile(os.path.join(out, TRAINING))
        if trained_on != backend and not done:
            raise RunError(
                f"{option} {out} holds a run training on KERAS_BACKEND={trained_on}; "
                f"this process runs KERAS_BACKEND={backend}: resume it with "
                f"KERAS_BACKEND={trained_on} (a finished run evaluates on any backend), "
                "choose another folder, or pass --overwrite to replace it"
            )
        irrelevant = set(resume_irrelevant)
        differing = [
            f"{spell(key)} {saved.get(key)!r} there, {config.get(key)!r} here"
            for key in sorted((set(saved) | set(config)) - irrelevant)
            if saved.get(key) != config.get(key)
        ]
        if differing:
            raise RunError(
                f"{option} {out} holds a run with other settings ({'; '.join(differing)}); "
                "rerun with its settings to resume it, choose another folder, or pass "
                "--overwrite to replace it"
            )
        saved[BACKEND_KEY] = trained_on
    os.makedirs(out, exist_ok=True)
    trained_on = saved[BACKEND_KEY] if saved is not None else backend
    write_json({**config, BACKEND_KEY: trained_on}, os.path.join(out, CONFIG))
    return saved is not None
