"""A TensorFlow SavedModel that captions a batch of uint8 scenes, from a run of any backend.

Writes ``RUN/saved_model`` from ``RUN/model.keras`` (trained on any backend:
``train`` runs this command in a TensorFlow process)::

    captioner = tf.saved_model.load("runs/captioning/saved_model")
    outputs = captioner.caption(images)  # (B, H, W) uint8, the run's scene size
    outputs["caption"]  # (B,) strings of digits, left to right
    outputs["length"]  # (B,) int32 tokens written, the end included
    outputs["attention"]  # (B, T, H', W') float32 weights of each token

Inside: the model's greedy search (``Captioner.search``), traced once.
``--check`` then captions the run's test scenes with the SavedModel and
records in ``metrics.json`` the share whose caption equals the one the
training backend wrote (``captions.tsv``) as ``saved_model_agreement``.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import sys
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from examples.captioning import data
from examples.captioning.config import DEFAULT_OUTPUT_DIR
from examples.captioning.evaluate import CAPTIONS
from examples.captioning.evaluate import load_run
from examples.common import runs

SAVED_MODEL = "saved_model"


class _Untracked:
    """Holds the model out of the SavedModel's object graph (its variables are listed apart)."""

    def __init__(self, model):
        self.model = model


class CaptionModule(tf.Module):
    """``caption(images (B, H, W) uint8) -> {"caption", "length", "attention"}``."""

    def __init__(self, model, height: int, width: int):
        super().__init__(name="captioner")
        self._holder = _Untracked(model)
        self.model_variables = [variable.value for variable in model.variables]
        self.words = tf.constant(
            ["" if i < data.DIGIT_OFFSET else t for i, t in enumerate(data.TOKENS)]
        )
        spec = tf.TensorSpec([None, height, width], tf.uint8, name="images")
        self.caption = tf.function(self._caption, input_signature=[spec], autograph=False)

    def _caption(self, images):
        model = self._holder.model
        result = model.search(images)
        rows, cols = model.grid
        attention = tf.reshape(
            result.attention, [tf.shape(images)[0], model.max_length, rows, cols]
        )
        # Padding and the end token map to "", so the join keeps the digits alone.
        caption = tf.strings.reduce_join(tf.gather(self.words, result.ids), axis=-1)
        return {"caption": caption, "length": result.lengths, "attention": attention}


def export_run(run_dir: str, path: str | None = None) -> str:
    """Writes the SavedModel of the run in ``run_dir``; returns its path."""
    config, model = load_run(run_dir)
    path = path or os.path.join(run_dir, SAVED_MODEL)
    module = CaptionModule(model, config.height, config.width)
    tf.saved_model.save(module, path, signatures={"serving_default": module.caption})
    return path


def check(run_dir: str, path: str) -> float:
    """The share of test scenes whose SavedModel caption equals ``captions.tsv``'s."""
    config, _ = load_run(run_dir)
    table = os.path.join(run_dir, CAPTIONS)
    if not os.path.isfile(table):
        raise runs.RunError(f"no {table}: evaluate the run first")
    with open(table, encoding="utf-8") as file:
        written = [line.rstrip("\n").split("\t")[2] for line in file.readlines()[1:]]
    scenes = data.load(config)["test"]
    loaded = tf.saved_model.load(path)
    found = []
    for start in range(0, len(scenes.images), 250):
        captions = loaded.caption(tf.constant(scenes.images[start : start + 250]))["caption"]
        found.extend(caption.decode() for caption in captions.numpy())
    agreement = float(np.mean([a == b for a, b in zip(found, written, strict=True)]))
    metrics_path = os.path.join(run_dir, runs.METRICS)
    metrics = runs.read_json(metrics_path) or {}
    runs.write_json({**metrics, "saved_model_agreement": agreement}, metrics_path)
    return agreement


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(
        prog="python -m examples.captioning.export", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--run", default=DEFAULT_OUTPUT_DIR, help="a finished run's folder")
    parser.add_argument("--output", help=f"the SavedModel's folder (default: RUN/{SAVED_MODEL})")
    parser.add_argument(
        "--check", action="store_true", help="compare its test captions with captions.tsv"
    )
    args = parser.parse_args(argv)
    try:
        path = export_run(args.run, args.output)
        print(f"SavedModel: {path}")
        if args.check:
            print(f"Its captions equal captions.tsv on {check(args.run, path):.1%} of test scenes")
    except runs.RunError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    return path


if __name__ == "__main__":
    main(sys.argv[1:])
