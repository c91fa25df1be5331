"""A run's folder: what ``train.py`` writes and ``evaluate.py``/``translate.py`` read.

Loading a run (``load_run``, ``load_config``), writing its outputs safely
(``write_json``, ``write_history``: to a temporary file, then renamed, so a
killed process never leaves half a file), plots (``plot_history``,
``save_heatmaps``) and the small command-line helpers the scripts share
(``integer_at_least``, ``fail``, ``RunError``, ``require_tensorflow_backend``).
"""

from __future__ import annotations

import argparse
import csv
import glob
import io
import json
import os
import shutil
import sys
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import NoReturn

import keras

from examples.nmt import model as _model  # noqa: F401  (registers Seq2Seq for loading)
from examples.nmt import transformer as _transformer  # noqa: F401  (registers Transformer)
from examples.nmt.vocabulary import Vocabularies

CONFIG = "config.json"
MODEL = "model.keras"
METRICS = "metrics.json"
HISTORY = "history.csv"
TRAINING = "training.json"
# Flags added since a run's config.json may have been written, with the value they had.
ADDED_FLAGS = {"architecture": "rnn"}
# Flags that may change between a run and its resumption.
RESUME_IRRELEVANT = frozenset(
    {
        "output_dir",
        "overwrite",
        "data_dir",
        "download",
        "strategy",
        "samples",
        "no_export",
        "no_evaluate",
        "beam_size",
        "length_penalty",
        "coverage_penalty",
        "max_decode_length",
    }
)


class RunError(Exception):
    """A problem with a run's inputs or folder that the scripts report on one line (exit 2)."""


def fail(prog: str, message: str) -> NoReturn:
    """Prints ``prog: error: message`` on stderr and exits with status 2, as argparse does."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def integer_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer ``>= minimum``, else a one-line usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, received {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, received {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def require_tensorflow_backend() -> None:
    """The example runs on TensorFlow (tf.data, tf.distribute, SavedModel)."""
    if keras.backend.backend() != "tensorflow":
        raise SystemExit(
            "examples.nmt needs the TensorFlow Keras backend. Received: "
            f"KERAS_BACKEND={keras.backend.backend()!r}; run with KERAS_BACKEND=tensorflow."
        )


def load_run(directory: str) -> tuple[keras.Model, Vocabularies]:
    """``model.keras`` and the vocabularies of a train.py output dir."""
    path = os.path.join(directory, MODEL)
    if not os.path.isfile(path):
        raise RunError(f"no trained model in {directory}: {path} does not exist")
    model = keras.saving.load_model(path, compile=False)
    return model, Vocabularies.load(directory)


def load_config(directory: str) -> dict[str, Any] | None:
    """The arguments a run was started with (``config.json``), or None."""
    path = os.path.join(directory, CONFIG)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as file:
        return json.load(file)


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


def prepare_output_dir(args: argparse.Namespace, outputs: Sequence[str]) -> bool:
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
    write_json(vars(args), os.path.join(out, CONFIG))
    return used and not args.overwrite


def plot_history(path: str, output: str) -> None:
    """Loss and token accuracy per epoch, train and validation, as a PNG."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    with open(path, encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    epochs = [int(row["epoch"]) + 1 for row in rows]
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, key in zip(axes, ("loss", "masked_accuracy")):
        for prefix in ("", "val_"):
            if rows and prefix + key in rows[0]:
                ax.plot(
                    epochs,
                    [float(row[prefix + key]) for row in rows],
                    marker="o",
                    label=(prefix or "train_").rstrip("_"),
                )
        ax.set_xlabel("epoch")
        ax.set_title(key)
        ax.legend()
    figure.tight_layout()
    figure.savefig(output, dpi=100)
    plt.close(figure)


def save_heatmaps(samples: list[dict[str, Any]], directory: str) -> list[str]:
    """``attention_K.png`` (plot_attention) and ``attention_K.html`` per sample.

    A sample with ``heads`` (``(H, T, Ts)``, the Transformer) also gets
    ``attention_K_heads.png`` (``plot_heads``), and its HTML page shows every
    head with a head selector.
    """
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    import keras_attention  # noqa: PLC0415

    paths = []
    for index, sample in enumerate(samples):
        stem = os.path.join(directory, f"attention_{index}")
        ax = keras_attention.plot_attention(
            sample["attention"],
            sample["source"],
            sample["target"],
            title=" ".join(sample["source"]),
        )
        ax.figure.savefig(stem + ".png", dpi=100, bbox_inches="tight")
        plt.close(ax.figure)
        if "heads" in sample:
            figure = keras_attention.plot_heads(
                sample["heads"],
                sample["source"],
                sample["target"],
                title=" ".join(sample["source"]),
            )
            figure.savefig(stem + "_heads.png", dpi=100, bbox_inches="tight")
            plt.close(figure)
            paths.append(stem + "_heads.png")
        keras_attention.save_attention_html(
            sample.get("heads", sample["attention"]),
            sample["source"],
            sample["target"],
            stem + ".html",
            title=" ".join(sample["source"]),
        )
        paths += [stem + ".png", stem + ".html"]
    return paths
