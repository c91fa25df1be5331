"""A SavedModel that maps float32 waveforms to digit strings: ``python -m examples.speech.export``.

TensorFlow only (a JAX or PyTorch run calls it in a TensorFlow process,
``examples.common.export.export_in_tensorflow``). The SavedModel's
``transcribe`` (and its ``serving_default``) takes ``waveform`` ``(B, S)``
float32 at 8 kHz in [-1, 1] and ``lengths`` ``(B,)`` int32 samples::

    import tensorflow as tf

    recognizer = tf.saved_model.load("runs/speech/saved_model")
    outputs = recognizer.transcribe(waveform, lengths)
    outputs["digits"]  # (B,) strings, e.g. b"4079"
    outputs["tokens"]  # (B, T) int32: 3 + digit, then END (2), then 0
    outputs["attention"]  # (B, T, Tv) float32, each token's weights over the memory

Inside: ``examples.speech.search.greedy``, the search evaluation runs,
traced into a ``tf.function``. When the run holds ``export_check.npz``
(``train.py`` writes it: test waveforms and the training backend's greedy
tokens), the SavedModel is loaded back, run on them and compared:
``export.json`` says whether every transcript matched.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import sys
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from examples.common import runs
from examples.speech import model as listener
from examples.speech import search

SAVED_MODEL = "saved_model"
CHECK, REPORT = "export_check.npz", "export.json"
# Token -> text: PAD, START and END are empty, digits their character.
_TEXT = ["", "", "", *[str(digit) for digit in range(10)]]


class _Untracked:
    """Holds the model out of the SavedModel's object graph (a plain object, not trackable)."""

    def __init__(self, model: listener.Listener):
        self.model = model


class Recognizer(tf.Module):
    """``transcribe(waveform, lengths)``; see the module doc."""

    def __init__(self, model: listener.Listener):
        super().__init__(name="recognizer")
        self._holder = _Untracked(model)  # its variables are tracked, not its layers
        self.model_variables = [variable.value for variable in model.variables]
        self.transcribe = tf.function(
            self._transcribe,
            input_signature=[
                tf.TensorSpec([None, None], tf.float32, name="waveform"),
                tf.TensorSpec([None], tf.int32, name="lengths"),
            ],
            autograph=False,
        )

    def _transcribe(self, waveform: tf.Tensor, lengths: tf.Tensor) -> dict:
        max_length = 2 + tf.shape(waveform)[1] // (listener.SAMPLING_RATE // 10)
        found = search.greedy(self._holder.model, waveform, lengths, max_length)
        text = tf.gather(tf.constant(_TEXT), found["tokens"])
        return {
            "digits": tf.strings.reduce_join(text, axis=-1),
            "tokens": found["tokens"],
            "attention": found["attention"],
        }


def export_run(run_dir: str, path: str | None = None) -> str:
    """Writes ``run_dir``'s SavedModel (default ``run_dir/saved_model``); returns its path."""
    model = runs.load_model(run_dir)
    path = path or os.path.join(run_dir, SAVED_MODEL)
    recognizer = Recognizer(model)
    tf.saved_model.save(
        recognizer, path, signatures={"serving_default": recognizer.transcribe}
    )  # fmt: skip
    return path


def check(run_dir: str, path: str) -> dict:
    """The loaded SavedModel's tokens on ``export_check.npz`` against the stored ones."""
    with np.load(os.path.join(run_dir, CHECK)) as stored:
        waveform, lengths, tokens = stored["waveform"], stored["lengths"], stored["tokens"]
    loaded = tf.saved_model.load(path)
    found = loaded.transcribe(tf.constant(waveform), tf.constant(lengths))["tokens"].numpy()
    steps = min(found.shape[1], tokens.shape[1])
    matches = bool(
        np.array_equal(found[:, :steps], tokens[:, :steps])
        and not found[:, steps:].any()
        and not tokens[:, steps:].any()
    )
    report = {"matches": matches, "utterances": int(len(lengths))}
    runs.write_json(report, os.path.join(run_dir, REPORT))
    return report


def main(argv: Sequence[str] | None = None) -> str:
    """Writes a run's SavedModel (waveforms -> digit strings) from its ``model.keras``."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.speech.export", description=main.__doc__
    )
    parser.add_argument("--run", default=os.path.join("runs", "speech"), help="a run's folder")
    parser.add_argument("--output", help="the SavedModel's folder (default: RUN/saved_model)")
    args = parser.parse_args(argv)
    import keras  # noqa: PLC0415

    try:
        if keras.backend.backend() != "tensorflow":
            raise runs.RunError(
                "a SavedModel is written by TensorFlow: run with KERAS_BACKEND=tensorflow "
                f"(received {keras.backend.backend()!r})"
            )
        path = export_run(args.run, args.output)
    except runs.RunError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"SavedModel: {path}")
    if os.path.isfile(os.path.join(args.run, CHECK)):
        print(f"Transcripts equal the training backend's: {check(args.run, path)}")
    return path


if __name__ == "__main__":
    main()
