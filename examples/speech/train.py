"""Trains, scores and exports the speech model: ``python -m examples.speech.train``.

Everything goes to ``--output-dir`` (``runs/speech``): ``config.json`` (a
valid ``--config``), ``model.keras`` (the best epoch), ``history.csv``,
``training.json``, ``metrics.json`` (digit error rate, exact match and
alignment accuracy of each test set, training and total time, the backend),
``alignment_<set>.png`` (the attention over the spectrogram, gold digit
boundaries drawn) and ``saved_model/`` (waveforms -> digit strings, written
by ``examples.speech.export`` in a TensorFlow process, which checks its
transcripts against this backend's greedy search: ``export.json``).
A killed run started again with the same settings resumes after its last
finished epoch; a finished one is scored and exported again.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from examples.common import backend
from examples.common import recipes
from examples.common import runs
from examples.common.batches import ArrayBatches
from examples.common.export import export_in_tensorflow
from examples.common.training import fit_resumable
from examples.speech import data
from examples.speech import evaluate
from examples.speech import model as listener
from examples.speech.config import RECIPES_DIR
from examples.speech.config import Config

DEFAULT_OUTPUT_DIR = os.path.join("runs", "speech")
EXPORT_CHECK = "export_check.npz"  # waveforms and this backend's transcripts, for the export
EXPORT_REPORT = "export.json"
OUTPUTS = (
    runs.MODEL, runs.METRICS, runs.HISTORY, runs.TRAINING, runs.BACKUP, runs.CHECKPOINTS,
    "alignment_*.png", "saved_model", EXPORT_CHECK, EXPORT_REPORT,
)  # fmt: skip


def train_model(
    config: Config, datasets: dict[str, dict[str, np.ndarray]], run_dir: str
) -> tuple[listener.Listener, dict[str, Any]]:
    """The trained model (best epoch) and ``fit_resumable``'s summary; or the finished run's."""
    if os.path.isfile(os.path.join(run_dir, runs.TRAINING)):
        print(f"Training is done ({run_dir}/{runs.TRAINING}): scoring and exporting again.")
        return runs.load_model(run_dir), runs.read_json(os.path.join(run_dir, runs.TRAINING))
    train, validation = datasets["train"], datasets["validation"]
    batches = ArrayBatches(
        (data.model_inputs(train), train["targets"]),
        config.batch_size,
        shuffle_seed=config.seed,
        passes=config.epochs,
        drop_remainder=True,
        sorted_passes=config.sorted_epochs,
        sort_key=train["lengths"],
    )
    model = listener.compile_model(listener.build_model(config), config, batches.per_pass)
    validation_batches = ArrayBatches(
        (data.model_inputs(validation), validation["targets"]), config.batch_size
    )
    return fit_resumable(
        model, batches, validation_batches, run_dir, config.epochs, config.patience, config.seed
    )


def export(model: listener.Listener, arrays: dict[str, np.ndarray], run_dir: str) -> dict:
    """``saved_model/`` in a TensorFlow process, checked on ``arrays``'s first utterances
    against this backend's greedy transcripts (``export.json``)."""
    rows = min(16, len(arrays["lengths"]))
    waveform, lengths = arrays["waveform"][:rows], arrays["lengths"][:rows]
    found = evaluate.transcribe_arrays(model, waveform, lengths, batch_size=rows)
    np.savez(
        os.path.join(run_dir, EXPORT_CHECK),
        waveform=waveform,
        lengths=lengths,
        tokens=found["tokens"],
    )
    export_in_tensorflow("examples.speech.export", ["--run", run_dir])
    return runs.read_json(os.path.join(run_dir, EXPORT_REPORT))


def run(
    config: Config,
    data_path: str | None,
    run_dir: str,
    overwrite: bool = False,
    export_model: bool = True,
) -> dict[str, Any]:
    """The whole run of ``config`` into ``run_dir``; returns ``metrics.json``'s values."""
    start = time.perf_counter()
    print(f"Training on: {backend.devices()}")
    backend.set_seed(config.seed)  # without importing TensorFlow on JAX or PyTorch
    runs.prepare_run_dir(run_dir, recipes.to_dict(config), overwrite=overwrite, outputs=OUTPUTS)
    clips = data.load_clips(data_path, config.max_clips_per_speaker)
    datasets = data.make_datasets(clips, config)
    print(", ".join(f"{name} {len(a['lengths'])}" for name, a in datasets.items()) + " utterances")
    model, summary = train_model(config, datasets, run_dir)
    tests = {k: v for k, v in datasets.items() if k != "train"}
    scores = evaluate.evaluate_sets(model, tests, config.batch_size, figures=run_dir)
    values = {
        **evaluate.flat_scores(scores),
        "best_epoch": summary["best_epoch"],
        "epochs": summary["epochs"],
        "train_seconds": summary["train_seconds"],
        "backend": backend.name(),
        "devices": backend.devices(),
    }
    runs.write_json(values, os.path.join(run_dir, runs.METRICS))
    if export_model:
        report = export(model, datasets["test"], run_dir)
        values["saved_model_matches_greedy"] = report["matches"]
        print(f"SavedModel: {run_dir}/saved_model (transcripts equal this backend's greedy "
              f"search on {report['utterances']} utterances: {report['matches']})")  # fmt: skip
    values["total_seconds"] = round(time.perf_counter() - start, 1)
    runs.write_json(values, os.path.join(run_dir, runs.METRICS))
    print(f"Total time: {values['total_seconds']} s")
    return values


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m examples.speech.train", description=__doc__.split("\n")[0]
    )
    recipes.add_arguments(parser, RECIPES_DIR)
    parser.add_argument(
        "--data",
        help="a folder of FSDD WAV files or a zip of one (default: download the pinned archive)",
    )
    parser.add_argument("--output-dir", default=DEFAULT_OUTPUT_DIR)
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run's outputs")
    parser.add_argument("--no-export", action="store_true", help="skip the SavedModel")
    args = parser.parse_args(argv)
    try:
        config = recipes.from_arguments(Config, args, RECIPES_DIR)
        return run(config, args.data, args.output_dir, args.overwrite, not args.no_export)
    except runs.RunError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
