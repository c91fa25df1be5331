"""The whole training run: data, vocabularies, fit or resume, evaluation, plots, export.

``train(args)`` is what ``python -m examples.nmt.train`` runs once the
arguments are parsed: it says which devices it trains on, prepares the
output folder (``examples.nmt.runs``: a used one resumes), loads the splits
(``examples.nmt.data``), builds or reloads the vocabularies
(``examples.nmt.text``), fits (``examples.nmt.training.fit``) unless training
is done, then ``finish``es: evaluation on the test split
(``examples.nmt.evaluation``), heat-maps and curves (``examples.nmt.plots``),
``metrics.json`` and the SavedModel (``examples.nmt.export``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

import keras

from examples.nmt import backend
from examples.nmt import cli
from examples.nmt import evaluation
from examples.nmt import host
from examples.nmt import plots
from examples.nmt import runs
from examples.nmt.config import Config
from examples.nmt.data.arguments import is_pronunciation
from examples.nmt.host import splits as host_splits
from examples.nmt.host.vocabularies import build_vocabularies
from examples.nmt.training import distribution
from examples.nmt.training.fit import fit


def load_splits(args: Config) -> Any:
    """The data, with a one-line ``RunError`` for a missing file or an empty split.

    ``{"train", "validation", "test"}`` lists of pairs (``examples.nmt.host.splits``).
    """
    try:
        splits = host_splits.splits_from_args(args)
    except (OSError, ValueError) as error:
        raise cli.RunError(str(error)) from error
    empty = [name for name, split in splits.items() if not split]
    if empty:
        raise cli.RunError(f"the {empty[0]} split of {args.dataset} is empty")
    return splits


def train(
    args: Config,
    extra_callbacks: Sequence[keras.callbacks.Callback] = (),
    distributed: distribution.Distribution | None = None,
) -> dict[str, Any]:
    """Runs the whole pipeline for parsed ``args``; returns the metrics.

    ``distributed``: set up from ``args.strategy`` here if None (``main``
    sets it up first, before any other work). The first line printed names
    the backend and devices (``Distribution.describe``). A run records its
    backend; it resumes only on that backend. After a data-parallel fit the
    chief reloads ``model.keras`` without the distribution and finishes on
    its own; the other processes stop (their metrics are empty).

    Raises:
        cli.RunError: a used output folder, a resume on another backend,
            missing or too little data, a failed export (after
            ``metrics.json`` is written).
    """
    start = time.perf_counter()
    distributed = distributed or distribution.setup(args.strategy)
    print(distributed.describe())
    resuming = runs.prepare_output_dir(args)
    backend.set_seed(args.seed)  # without importing TensorFlow on JAX or PyTorch
    splits = load_splits(args)
    vocabularies = run_vocabularies(args, splits["train"], resuming)
    training_path = os.path.join(args.output_dir, runs.TRAINING)
    # The chief's folder is the run's: the others learn from it whether training is done.
    trained = distribution.from_the_chief(distributed, resuming and os.path.isfile(training_path))
    if trained and distributed.strategy == "data":  # the chief evaluates and exports alone
        keras.distribution.set_distribution(None)
        if not distributed.is_chief:
            distribution.wait_for_all(distributed, "finished")
            return {}
    if trained:
        print(f"Training of the run in {args.output_dir} is done: evaluating and exporting it.")
        model, _ = runs.load_run(args.output_dir)
        with open(training_path, encoding="utf-8") as file:
            summary = json.load(file)
    else:
        model, summary = fit(args, splits, vocabularies, extra_callbacks, distributed)
        if distributed.strategy == "data":  # the global arrays end with the fit
            keras.distribution.set_distribution(None)
            if not distributed.is_chief:
                distribution.wait_for_all(distributed, "finished")
                return {}
            model, _ = runs.load_run(args.output_dir)
    try:
        return finish(args, model, vocabularies, splits, summary, start)
    finally:
        if distributed.is_chief and distributed.processes > 1:
            distribution.wait_for_all(distributed, "finished")


def run_vocabularies(args: Config, train_split: Any, resuming: bool) -> Any:
    """A resumed run's saved vocabularies, or new ones from the training split (then saved).

    The files the SavedModel's TensorFlow Text tokenizers read too (``examples.nmt.host.text``).
    """
    if resuming:
        try:
            return runs.load_vocabularies(args.output_dir)
        except FileNotFoundError:  # killed before they were written: build them again
            print(f"No saved vocabularies in {args.output_dir}: building them.")
    start = time.perf_counter()
    vocabularies = build_vocabularies(
        train_split, args.vocab_size, args.source_tokenizer, args.target_tokenizer
    )
    vocabularies.save(args.output_dir)
    print(
        f"Vocabularies: {len(vocabularies.source):,} {args.source_tokenizer} source and "
        f"{len(vocabularies.target):,} {args.target_tokenizer} target tokens "
        f"({time.perf_counter() - start:.0f} s)."
    )
    return vocabularies


def finish(
    args: Config,
    model: keras.Model,
    vocabularies: Any,
    splits: Any,
    summary: dict[str, Any],
    start: float,
) -> dict[str, Any]:
    """Evaluates on test, plots, writes ``metrics.json``, then exports."""
    out = args.output_dir
    metrics, samples = {}, []
    if not args.no_evaluate:
        metrics, samples = evaluation.evaluate(
            model,
            splits["test"],
            vocabularies,
            beam_size=args.beam_size,
            length_penalty=args.length_penalty,
            coverage_penalty=args.coverage_penalty,
            max_length=args.max_decode_length,
            max_source_length=args.max_length,
            samples=args.samples,
            pronunciation=is_pronunciation(args.dataset),
        )
    metrics["best_epoch"] = summary["best_epoch"]
    metrics["train_seconds"] = round(summary["train_seconds"], 1)
    metrics["keras_backend"] = backend.name()
    peak = backend.peak_memory_mb()
    if peak is not None:
        metrics["peak_device_memory_mb"] = peak
    outputs = [
        runs.MODEL,
        vocabularies.source.file_name("source"),
        vocabularies.target.file_name("target"),
    ]
    plots.plot_history(os.path.join(out, runs.HISTORY), os.path.join(out, "training_curves.png"))
    outputs.append("training_curves.png")
    outputs += [os.path.basename(path) for path in plots.save_heatmaps(samples, out)]
    metrics_path = os.path.join(out, runs.METRICS)
    metrics["total_seconds"] = round(time.perf_counter() - start, 1)
    runs.save_metrics(metrics, metrics_path)  # before the export, which may fail
    if not args.no_export and not export_possible():
        print(
            f"No SavedModel: writing it needs TensorFlow, which this Python lacks; on a machine "
            f"with TensorFlow run: python -m examples.nmt.export --model {out}"
        )
    elif not args.no_export:
        from examples.nmt import export  # noqa: PLC0415  (TensorFlow)

        path = os.path.join(out, "saved_model")
        try:
            if backend.name() == "tensorflow":  # the vocabulary files as TensorFlow Text ops
                export.export_translator(
                    model,
                    export.Vocabularies.load(out),
                    path,
                    args.max_decode_length,
                    args.max_length,
                    beam_size=args.beam_size,
                    alpha=args.length_penalty,
                    beta=args.coverage_penalty,
                )
            else:  # model.keras is backend-neutral: TensorFlow writes the SavedModel
                export.export_in_tensorflow(out, path)
        except Exception as error:  # any failure: one clear line
            raise cli.RunError(
                f"could not write the SavedModel to {path} ({type(error).__name__}: "
                f"{str(error).splitlines()[0] if str(error) else ''}); {metrics_path} and "
                "model.keras are saved: free that path and run the same command again to "
                "export without training"
            ) from error
        outputs.append("saved_model/")
        metrics["total_seconds"] = round(time.perf_counter() - start, 1)
        runs.save_metrics(metrics, metrics_path)
    outputs += [runs.METRICS, runs.HISTORY]
    print("Test:", json.dumps(metrics, sort_keys=True))
    if os.path.isdir(os.path.join(out, "logs")):
        outputs.append("logs/ (TensorBoard)")
    print(f"Outputs in {os.path.abspath(out)}: {', '.join(outputs)}")
    return metrics


def export_possible() -> bool:
    """Whether this Python can write the SavedModel (TensorFlow and TensorFlow Text import)."""
    return host.tensorflow_available()
