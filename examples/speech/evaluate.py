"""Scores a trained run on every test set: ``python -m examples.speech.evaluate --run DIR``.

``transcribe_arrays`` runs the greedy search over NumPy waveforms in batches
(``examples.common.backend.compile_search``: ``jax.jit`` on JAX, one compiled
program per set, every batch padded to the same rows and samples);
``evaluate_sets`` scores the sets ``data.make_datasets`` makes: digit error
rate, exact match and alignment accuracy on the dataset's own test split,
the held-out speaker, and the long utterances (14 and 28 digits) on which a
model trained on 2 to 7 digits has never been run; and the same on the
validation clips (``validation``, ``validation_long_N``), which choose
settings. ``main`` rebuilds the run's sets from its ``config.json`` and
``--data`` and rewrites ``metrics.json``'s scores.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

from examples.common import backend
from examples.common import recipes
from examples.common import runs
from examples.speech import data
from examples.speech import metrics
from examples.speech import model as listener
from examples.speech import plots
from examples.speech import search
from examples.speech.config import Config


def transcribe_arrays(
    model: listener.Listener, waveform: np.ndarray, lengths: np.ndarray, batch_size: int = 32
) -> dict[str, np.ndarray]:
    """Greedy transcripts of ``(N, S)`` waveforms: ``tokens`` (N, T), ``length`` (N,) and
    ``attention`` (N, T, Tv), ``T`` the most tokens ``max_decode_length`` allows for ``S``."""
    rows, samples = waveform.shape
    max_length = search.max_decode_length(samples)
    transcribe = backend.compile_search(
        model, lambda inputs: search.greedy(model, inputs[0], inputs[1], max_length)
    )
    parts = []
    for start in range(0, rows, batch_size):
        batch = slice(start, start + batch_size)
        wave, length = waveform[batch], lengths[batch]
        real = len(wave)
        if real < batch_size and rows > batch_size:  # one shape per set: pad the rows
            wave = np.concatenate([wave, np.repeat(wave[:1], batch_size - real, 0)])
            length = np.concatenate([length, np.repeat(length[:1], batch_size - real)])
        out = transcribe((wave, length.astype("int32")))
        parts.append({key: value[:real] for key, value in out.items()})
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def score(arrays: dict[str, np.ndarray], found: dict[str, np.ndarray]) -> dict[str, float]:
    """Digit error rate, exact match and alignment accuracy of transcripts ``found``."""
    hypotheses = [metrics.digits(tokens) for tokens in found["tokens"]]
    references = [
        [int(token) - 3 for token in row[:count]]
        for row, count in zip(arrays["targets"], arrays["digit_count"])
    ]
    emitted = np.asarray([len(h) for h in hypotheses])
    return {
        "digit_error_rate": metrics.digit_error_rate(hypotheses, references),
        "exact_match": metrics.exact_match(hypotheses, references),
        "alignment_accuracy": metrics.alignment_accuracy(
            found["attention"],
            emitted,
            arrays["spans"],
            arrays["digit_count"],
            listener.SAMPLES_PER_STEP,
        ),  # fmt: skip
        "utterances": len(references),
    }


def evaluate_sets(
    model: listener.Listener,
    datasets: dict[str, dict[str, np.ndarray]],
    batch_size: int,
    figures: str | None = None,
) -> dict[str, dict[str, float]]:
    """Scores of every set but ``train`` (the ``validation`` ones too, to choose settings on);
    with ``figures`` (a folder), the alignment figure of each set's first utterance."""
    scores = {}
    for name, arrays in datasets.items():
        if name == "train":
            continue
        found = transcribe_arrays(model, arrays["waveform"], arrays["lengths"], batch_size)
        scores[name] = score(arrays, found)
        if figures is not None:
            draw(model, arrays, found, 0, os.path.join(figures, f"alignment_{name}.png"), name)
        print(f"{name:>10}: " + ", ".join(f"{k} {v:.4f}" for k, v in scores[name].items()))
    return scores


def draw(
    model: listener.Listener,
    arrays: dict[str, np.ndarray],
    found: dict[str, np.ndarray],
    row: int,
    path: str,
    name: str = "",
) -> str:
    """The alignment figure of utterance ``row`` of a set (``plots.plot_alignment``)."""
    length = int(arrays["lengths"][row])
    waveform = arrays["waveform"][row : row + 1, :length]
    features = model.features(waveform, np.asarray([length], "int32"))
    log_mel = keras.ops.convert_to_numpy(features)[0]
    count = int(arrays["digit_count"][row])
    reference = [int(token) - 3 for token in arrays["targets"][row, :count]]
    hypothesis = metrics.digits(found["tokens"][row])
    steps = -(-log_mel.shape[0] // listener.SUBSAMPLING)
    steps += int(bool(model.settings.get("end_sentinel")))  # the end-of-audio position too
    emitted = int(found["length"][row])
    attention = found["attention"][row, :emitted, :steps]
    title = f"{name}: gold {''.join(map(str, reference))}, heard {''.join(map(str, hypothesis))}"
    return plots.plot_alignment(
        log_mel, attention, hypothesis, reference, arrays["spans"][row, :count], path, title
    )


def flat_scores(scores: dict[str, dict[str, float]]) -> dict[str, float]:
    """``{"test/digit_error_rate": ...}``: what ``metrics.json`` holds."""
    return {
        f"{name}/{key}": value for name, values in scores.items() for key, value in values.items()
    }


def parse_window(text: str) -> tuple[int, int] | None:
    """``"BACK,FORWARD"`` as a pair of non-negative ints, or ``"none"`` as None."""
    if text.lower() == "none":
        return None
    parts = text.split(",")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        raise runs.RunError(f"--inference-window {text}: expected BACK,FORWARD (e.g. 2,16) or none")
    return int(parts[0]), int(parts[1])


def parse_end_window(text: str) -> int | None:
    """A non-negative int, or ``"none"`` as None (``search.end_guard``)."""
    if text.lower() == "none":
        return None
    if not text.strip().isdigit():
        raise runs.RunError(f"--end-window {text}: expected a non-negative int (e.g. 3) or none")
    return int(text)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Scores a run's ``model.keras`` on its test sets, rebuilt from its config and ``--data``."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.speech.evaluate", description=main.__doc__
    )
    parser.add_argument("--run", default=os.path.join("runs", "speech"), help="a run's folder")
    parser.add_argument(
        "--inference-window",
        metavar="BACK,FORWARD",
        help="decode with this location-sensitive window instead of the run's ('none': without)",
    )
    parser.add_argument(
        "--end-window",
        metavar="N",
        help="decode with END allowed only N positions from the end of the audio instead of "
        "the run's ('none': anywhere)",
    )
    parser.add_argument(
        "--data", help="a folder of FSDD WAV files or a zip of one (default: download)"
    )
    args = parser.parse_args(argv)
    try:
        config = recipes.load(Config, os.path.join(args.run, runs.CONFIG))
        model = runs.load_model(args.run)
        if args.inference_window is not None:
            search.set_decoding_window(model, parse_window(args.inference_window))
        if args.end_window is not None:
            search.set_end_window(model, parse_end_window(args.end_window))
        datasets = data.make_datasets(
            data.load_clips(args.data, config.max_clips_per_speaker), config
        )
    except runs.RunError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    datasets = {k: v for k, v in datasets.items() if k != "train"}
    scores = flat_scores(evaluate_sets(model, datasets, config.batch_size, figures=args.run))
    saved = runs.read_json(os.path.join(args.run, runs.METRICS)) or {}
    runs.write_json({**saved, **scores}, os.path.join(args.run, runs.METRICS))
    return scores


if __name__ == "__main__":
    main()
