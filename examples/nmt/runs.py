"""A run's folder: what ``train.py`` writes and ``evaluate.py``/``translate.py`` read.

Its file names (``OUTPUTS``), which settings a resumed run must share
(``RESUME_IRRELEVANT``, ``prepare_output_dir``), loading a run (``load_run``,
``load_config``) and writing its outputs safely (``write_json``,
``write_history``, ``save_model``: to a temporary file, then renamed, so a
killed process never leaves half a file).
"""

from __future__ import annotations

import argparse
import csv
import glob
import io
import json
import os
import shutil
from collections.abc import Sequence
from typing import Any

import keras

from examples.nmt import backend
from examples.nmt.cli import RunError
from examples.nmt.models import rnn as _rnn  # noqa: F401  (registers Seq2Seq for loading)
from examples.nmt.models import transformer as _transformer  # noqa: F401  (registers it)
from examples.nmt.text.vocabularies import Vocabularies

CONFIG = "config.json"
MODEL = "model.keras"
METRICS = "metrics.json"
HISTORY = "history.csv"
TRAINING = "training.json"
# What a run writes into its folder; --overwrite deletes these and nothing else.
OUTPUTS = (
    CONFIG,
    MODEL,
    METRICS,
    HISTORY,
    TRAINING,
    "source_vocabulary.txt",
    "target_vocabulary.txt",
    "source_letters.txt",
    "target_letters.txt",
    "source_symbols.txt",
    "target_symbols.txt",
    "source_sentencepiece.model",
    "target_sentencepiece.model",
    "training_curves.png",
    "attention_*.png",
    "attention_*.html",
    "saved_model",
    "long_inputs.json",
    "long_inputs.png",
    "backup",
    "logs",
    "checkpoint.weights.h5",
)
# Flags added since a run's config.json may have been written, with the value they had.
ADDED_FLAGS = {
    "architecture": "rnn",
    "test": None,
    "keep_stress": False,
    "join_words": None,
    "ema": 0.0,
    "encoder_layers": 1,
    "attention_units": None,
    "weight_decay": 0.0,
    "coordinator": None,
    "num_processes": None,
    "process_id": None,
}
# The Keras backend a run trains on, recorded in its config.json (runs before
# it was recorded trained on TensorFlow).
BACKEND_KEY = "keras_backend"
# Flags that may change between a run and its resumption.
RESUME_IRRELEVANT = frozenset(
    {
        "output_dir",
        "overwrite",
        "data_dir",
        "download",
        "strategy",
        "coordinator",
        "num_processes",
        "process_id",
        "samples",
        "no_export",
        "no_evaluate",
        "beam_size",
        "length_penalty",
        "coverage_penalty",
        "max_decode_length",
    }
)


def load_run(directory: str) -> tuple[keras.Model, Vocabularies]:
    """``model.keras`` and the vocabularies of a train.py output dir."""
    path = os.path.join(directory, MODEL)
    if not os.path.isfile(path):
        raise RunError(f"no trained model in {directory}: {path} does not exist")
    model = keras.saving.load_model(path, compile=False)
    return model, Vocabularies.load(directory)


def read_json(path: str) -> Any:
    """The JSON value in ``path``, or None if there is no such file."""
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def load_config(directory: str) -> dict[str, Any] | None:
    """The arguments a run was started with (``config.json``), or None."""
    return read_json(os.path.join(directory, CONFIG))


def _replace(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` through a temporary file and a rename."""
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8", newline="\n") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


def write_json(value: Any, path: str) -> None:
    _replace(path, json.dumps(value, indent=2, sort_keys=True) + "\n")


def save_metrics(metrics: dict[str, Any], path: str) -> None:
    write_json(metrics, path)


def write_history(rows: Sequence[dict[str, Any]], path: str) -> None:
    """``history.csv``: one row per finished epoch, ``epoch`` first (as ``CSVLogger``)."""
    keys = sorted({key for row in rows for key in row if key != "epoch"})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, ["epoch", *keys], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    _replace(path, buffer.getvalue())


def save_model(model: keras.Model, path: str) -> None:
    """``model.save`` through a temporary file and a rename."""
    temporary = path.removesuffix(".keras") + ".tmp.keras"
    model.save(temporary)
    os.replace(temporary, path)


def prepare_output_dir(args: argparse.Namespace, outputs: Sequence[str] = OUTPUTS) -> bool:
    """Refuses a used ``--output-dir`` unless resuming or ``--overwrite``; True on a resume.

    ``--overwrite`` deletes the names (glob patterns) in ``outputs``, nothing else.
    Writes ``config.json``.
    """
    out = args.output_dir
    if os.path.exists(out) and not os.path.isdir(out):
        raise RunError(f"--output-dir {out} is a file, not a folder")
    used = os.path.isdir(out) and bool(os.listdir(out))
    if used and args.overwrite:
        for pattern in outputs:
            for path in glob.glob(os.path.join(glob.escape(out), pattern)):
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    elif used:
        saved = load_config(out)
        if saved is not None:
            saved = {**ADDED_FLAGS, **saved}
        if saved is None:
            raise RunError(
                f"--output-dir {out} is not empty and holds no run of this script (no "
                f"{CONFIG}); choose another folder, or pass --overwrite to write into it"
            )
        trained_on = saved.pop(BACKEND_KEY, "tensorflow")
        done = os.path.isfile(os.path.join(out, TRAINING))
        if trained_on != backend.name() and not done:
            raise RunError(
                f"--output-dir {out} holds a run training on KERAS_BACKEND={trained_on}; "
                f"this process runs KERAS_BACKEND={backend.name()}: resume it with "
                f"KERAS_BACKEND={trained_on} (a finished run evaluates on any backend), "
                "choose another folder, or pass --overwrite to replace it"
            )
        current = vars(args)
        differing = [
            f"--{key.replace('_', '-')} {saved.get(key)!r} there, {current.get(key)!r} here"
            for key in sorted((set(saved) | set(current)) - RESUME_IRRELEVANT)
            if saved.get(key) != current.get(key)
        ]
        if differing:
            raise RunError(
                f"--output-dir {out} holds a run with other settings ({'; '.join(differing)}); "
                "rerun with its settings to resume it, choose another folder, or pass "
                "--overwrite to replace it"
            )
    os.makedirs(out, exist_ok=True)
    saved = load_config(out) if used and not args.overwrite else None
    trained_on = (saved or {}).get(BACKEND_KEY, "tensorflow" if saved else backend.name())
    write_json({**vars(args), BACKEND_KEY: trained_on}, os.path.join(out, CONFIG))
    return used and not args.overwrite
