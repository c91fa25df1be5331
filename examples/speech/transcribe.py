"""Transcribes your own recordings of digits: ``python -m examples.speech.transcribe FILE.wav``.

Reads PCM WAV files (8, 16 or 32-bit integer samples; several channels are
averaged to one), resamples them to 8 kHz with SciPy's ``resample_poly``
(other rates need SciPy: without it they get a clear error), and prints the
digits the run's model hears, one line per file. ``--plot PNG`` saves the
first file's attention over its spectrogram. Any backend; no TensorFlow.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from examples.common import runs
from examples.speech import data
from examples.speech import evaluate
from examples.speech import metrics


def transcribe_files(run_dir: str, paths: Sequence[str], plot: str | None = None) -> list[str]:
    """The digits heard in each WAV file, as strings (``"4079"``).

    Raises:
        RunError: no trained model in ``run_dir``.
        ValueError: a file that is not a PCM WAV file, or is empty.
    """
    model = runs.load_model(run_dir)
    audios = [data.resample(*data.read_wav(path)) for path in paths]
    waveform = np.zeros((len(audios), max(len(a) for a in audios)), "float32")
    for row, audio in enumerate(audios):
        waveform[row, : len(audio)] = audio
    lengths = np.asarray([len(a) for a in audios], "int32")
    found = evaluate.transcribe_arrays(model, waveform, lengths, batch_size=len(audios))
    texts = ["".join(map(str, metrics.digits(tokens))) for tokens in found["tokens"]]
    if plot is not None:
        no_gold = {
            "waveform": waveform[:1], "lengths": lengths[:1], "digit_count": np.zeros(1, "int32"),
            "targets": np.zeros((1, 1), "int32"), "spans": np.zeros((1, 0, 2), "int32"),
        }  # fmt: skip
        evaluate.draw(model, no_gold, {k: v[:1] for k, v in found.items()}, 0, plot, paths[0])
    return texts


def main(argv: Sequence[str] | None = None) -> list[str]:
    """Prints the digits heard in each WAV file."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.speech.transcribe", description=main.__doc__
    )
    parser.add_argument("files", nargs="+", metavar="FILE.wav")
    parser.add_argument("--run", default=os.path.join("runs", "speech"), help="a trained run")
    parser.add_argument("--plot", metavar="PNG", help="save the first file's alignment figure")
    args = parser.parse_args(argv)
    try:
        for path in args.files:
            if not os.path.isfile(path):
                raise runs.RunError(f"{path}: no such file")
        texts = transcribe_files(args.run, args.files, args.plot)
    except (runs.RunError, ValueError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    for path, text in zip(args.files, texts):
        print(f"{path}\t{text}")
    return texts


if __name__ == "__main__":
    main()
