"""Trains the digit-scene captioner, scores it and exports it (the whole run, one command).

The default recipe (``recipes/default.toml``, the ``Config`` defaults) runs
in a few minutes on two CPU cores, on TensorFlow, JAX or PyTorch
(``KERAS_BACKEND``). Everything goes to ``--output-dir`` (``runs/captioning``):

* ``config.json`` (the recipe used; a valid ``--config``), ``model.keras``
  (the best epoch by validation loss), ``history.csv``,
  ``training_curves.png``, ``training.json``;
* ``metrics.json``, ``captions.tsv``, ``attention_K.png`` and
  ``attention_K.html`` (``examples.captioning.evaluate``);
* ``saved_model/``: uint8 images -> caption strings, written in a
  TensorFlow process from ``model.keras`` (``examples.captioning.export``),
  which also checks that its captions equal this backend's on the test scenes.

A used ``--output-dir`` is refused unless it holds a run with the same
settings (which then resumes after its last finished epoch) or ``--overwrite``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import keras

from examples.captioning import data
from examples.captioning import evaluate as evaluation
from examples.captioning.config import DEFAULT_OUTPUT_DIR
from examples.captioning.config import RECIPES
from examples.captioning.config import Config
from examples.captioning.model import build_model
from examples.common import backend
from examples.common import export as common_export
from examples.common import recipes
from examples.common import runs
from examples.common.metrics import MaskedAccuracy  # token accuracy, pad left out
from examples.common.plots import plot_history  # loss and masked_accuracy curves
from examples.common.training import fit_resumable

OUTPUTS = (
    runs.MODEL, runs.METRICS, runs.HISTORY, runs.TRAINING, runs.BACKUP, runs.CHECKPOINTS,
    evaluation.CAPTIONS, "attention_*", "training_curves.png", "saved_model", "metrics_beam*",
    "scene_*",
)  # fmt: skip
# Settings that change what is written after training, not the training itself.
RESUME_IRRELEVANT = ("figures", "export", "test_scenes")


def train(config: Config, output_dir: str, overwrite: bool = False) -> dict[str, Any]:
    """The whole run (module doc); returns ``metrics.json``'s content."""
    config.check()
    start = time.perf_counter()
    print(f"Training on: {backend.devices()}")
    resumed = runs.prepare_run_dir(
        output_dir,
        recipes.to_dict(config),
        overwrite=overwrite,
        outputs=OUTPUTS,
        resume_irrelevant=RESUME_IRRELEVANT,
    )
    if resumed:
        print(f"Resuming the run in {output_dir}.")
    scenes = data.load(config)
    print(
        f"Scenes: {len(scenes['train'].counts)} train, {len(scenes['validation'].counts)} "
        f"validation, {len(scenes['test'].counts)} test (held-out glyphs); "
        f"{config.height}x{config.width} pixels, grid {config.grid[0]}x{config.grid[1]}"
    )
    backend.set_seed(config.seed)  # without importing TensorFlow on JAX or PyTorch
    model = build_model(config)
    train_batches = data.batches(
        scenes["train"], config.batch_size, shuffle_seed=config.seed, passes=config.epochs
    )
    validation_batches = data.batches(scenes["validation"], config.batch_size)
    schedule = keras.optimizers.schedules.CosineDecay(
        config.learning_rate, decay_steps=config.epochs * train_batches.per_pass, alpha=0.05
    )
    model.compile(
        optimizer=keras.optimizers.Adam(schedule),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=data.PAD_ID),
        metrics=[MaskedAccuracy()],
    )
    model, summary = fit_resumable(
        model,
        train_batches,
        validation_batches,
        output_dir,
        config.epochs,
        patience=config.patience,
        seed=config.seed,
        verbose=2,
    )
    plot_history(
        os.path.join(output_dir, runs.HISTORY), os.path.join(output_dir, "training_curves.png")
    )
    result = evaluation.evaluate(config, model, output_dir, scenes=scenes["test"])
    result.update(
        best_epoch=summary["best_epoch"],
        train_seconds=summary["train_seconds"],
        peak_memory_mb=backend.peak_memory_mb(),
    )
    runs.write_json(result, os.path.join(output_dir, runs.METRICS))
    print(evaluation.report(result))
    if config.export:
        common_export.export_in_tensorflow(
            "examples.captioning.export", ["--run", output_dir, "--check"]
        )
        result = runs.read_json(os.path.join(output_dir, runs.METRICS))
        print(
            "SavedModel in "
            f"{os.path.join(output_dir, 'saved_model')}: its captions equal this backend's on "
            f"{result['saved_model_agreement']:.1%} of the test scenes"
        )
    result["total_seconds"] = round(time.perf_counter() - start, 1)
    runs.write_json(result, os.path.join(output_dir, runs.METRICS))
    print(f"Done in {result['total_seconds']:.0f} s; outputs in {output_dir}")
    return result


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m examples.captioning.train", description=__doc__.split("\n")[0]
    )
    recipes.add_arguments(parser, RECIPES)
    parser.add_argument("--output-dir", default=DEFAULT_OUTPUT_DIR)
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run's outputs")
    parser.add_argument("--attention", choices=("bahdanau", "luong", "scaled_dot"))
    parser.add_argument("--architecture", choices=("rnn", "transformer"))
    parser.add_argument("--epochs", type=int)
    args = parser.parse_args(argv)
    try:
        config = recipes.from_arguments(
            Config,
            args,
            RECIPES,
            attention=args.attention,
            architecture=args.architecture,
            epochs=args.epochs,
        )
        return train(config, args.output_dir, args.overwrite)
    except (runs.RunError, ValueError, RuntimeError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
