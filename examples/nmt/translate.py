"""Translates sentences with a trained run and draws their attention.

    python -m examples.nmt.translate --model runs/nmt "May 9th, 1998" "the 3rd of june 2001"

Uses the exported SavedModel (``DIR/saved_model``, needs no model code) when
there is one, else ``DIR/model.keras`` with greedy or beam search. Prints one
translation a line and writes ``translation_K.png`` (``plot_attention``) into
``--plots-dir`` (default: the model dir). A sentence without tokens
translates to the empty string on both paths; warnings on stderr name the
sentences cut at the run's ``--max-length`` and those made only of words the
model does not know.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from examples.nmt import runs

DEFAULT_MAX_LENGTH = 64


def translate_saved_model(
    path: str, sentences: Sequence[str], max_length: int | None = None
) -> list[dict[str, Any]]:
    """Runs ``translate`` of an exported SavedModel; tokens and ``(T, Ts)`` attention.

    ``max_length``: the most output tokens; the exported default if None.
    """
    translator = tf.saved_model.load(path)  # keep the reference while calling it
    texts = tf.constant(list(sentences), tf.string)
    if max_length is None:
        outputs = translator.translate(texts)
    else:
        outputs = translator.translate(texts, tf.constant(max_length, tf.int32))
    results = []
    for index in range(len(sentences)):
        source = [t.decode() for t in outputs["source_tokens"][index].numpy() if t]
        length = int(outputs["target_length"][index])
        target = [t.decode() for t in outputs["target_tokens"][index, :length].numpy()]
        results.append(
            {
                "translation": outputs["translation"][index].numpy().decode(),
                "source": source,
                "target": target,
                "attention": outputs["attention"][index, :length, : len(source)].numpy(),
                "source_length": int(outputs["source_length"][index]),
                "unknown_tokens": int(outputs["unknown_tokens"][index]),
            }
        )
    return results


def translate_keras(
    directory: str,
    sentences: Sequence[str],
    beam_size: int = 1,
    length_penalty: float = 0.0,
    coverage_penalty: float = 0.0,
    max_length: int | None = None,
) -> list[dict[str, Any]]:
    """Decodes with ``model.keras`` (greedy or beam search); as ``translate_saved_model``."""
    from examples.nmt import data  # noqa: PLC0415
    from examples.nmt import evaluate  # noqa: PLC0415

    model, vocabularies = runs.load_run(directory)
    config = runs.load_config(directory) or {}
    max_source_length = config.get("max_length", DEFAULT_MAX_LENGTH)
    if max_length is None:
        max_length = config.get("max_decode_length", DEFAULT_MAX_LENGTH)
    texts = tf.constant(list(sentences), tf.string)
    source_lengths = vocabularies.source.encode(texts).row_lengths().numpy()
    source_ids = data.encode_texts(texts, vocabularies.source, max_source_length)
    source_ids = tf.pad(source_ids, [[0, 0], [0, max(1 - source_ids.shape[1], 0)]])
    translate = evaluate.make_translate_fn(
        model,
        beam_size=beam_size,
        length_penalty=length_penalty,
        coverage_penalty=coverage_penalty,
        max_length=max_length,
    )
    result = translate(source_ids)
    translations = vocabularies.target.decode(result.ids).numpy()
    results = []
    for index, text in enumerate(translations):
        found = evaluate.sample(source_ids[index], result, index, vocabularies)
        if source_lengths[index] == 0:  # nothing to translate: no guess
            text, found = b"", {"source": [], "target": [], "attention": np.zeros((0, 0))}
        unknown = int(np.sum(source_ids[index].numpy() == data.UNK_ID))
        results.append(
            {
                "translation": text.decode(),
                **found,
                "source_length": int(source_lengths[index]),
                "unknown_tokens": unknown,
            }
        )
    return results


def warn_about(
    sentences: Sequence[str], results: Sequence[dict[str, Any]], max_source_length: int | None
) -> None:
    """Warnings on stderr: empty, truncated and all-unknown sentences."""
    for number, (sentence, result) in enumerate(zip(sentences, results), start=1):
        length = result.get("source_length")
        if length == 0:
            runs.warn(f"sentence {number} ({sentence!r}) has no tokens: empty translation")
        elif max_source_length is not None and length is not None and length > max_source_length:
            runs.warn(
                f"sentence {number} has {length} tokens: only the first "
                f"{max_source_length} (the run's --max-length) were translated"
            )
        kept = min(length or 0, max_source_length or length or 0)
        if kept and result.get("unknown_tokens") == kept:
            runs.warn(
                f"sentence {number} ({sentence!r}) has only words the model does not "
                "know: its translation is a guess"
            )


def plot_results(results: Sequence[dict[str, Any]], directory: str) -> list[str]:
    """One ``plot_attention`` heat-map per sentence; returns the PNG paths."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    import keras_attention  # noqa: PLC0415

    os.makedirs(directory, exist_ok=True)
    paths = []
    for index, result in enumerate(results):
        if not result["source"] or not result["target"]:
            continue
        ax = keras_attention.plot_attention(
            np.asarray(result["attention"]),
            result["source"],
            result["target"],
            title=result["translation"],
        )
        path = os.path.join(directory, f"translation_{index}.png")
        ax.figure.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(ax.figure)
        paths.append(path)
    return paths


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Translates the sentences given on the command line."""
    from examples.nmt import evaluate  # noqa: PLC0415

    parser = argparse.ArgumentParser(
        prog="python -m examples.nmt.translate", description=main.__doc__
    )
    parser.add_argument("sentences", nargs="+")
    parser.add_argument("--model", default="runs/nmt", help="a train.py output dir")
    parser.add_argument("--plots-dir", help="where heat-maps go (default: --model)")
    parser.add_argument(
        "--keras", action="store_true", help="use model.keras even if a SavedModel exists"
    )
    evaluate.add_decoding_arguments(parser, default_max_length=None)
    args = parser.parse_args(argv)
    saved_model = os.path.join(args.model, "saved_model")
    use_saved_model = os.path.isdir(saved_model) and not args.keras and args.beam_size == 1
    if not use_saved_model and not os.path.isfile(os.path.join(args.model, runs.MODEL)):
        parser.error(
            f"argument --model: no trained run in {args.model!r} "
            f"(neither {saved_model} nor {runs.MODEL})"
        )
    config = runs.load_config(args.model) or {}
    if use_saved_model:
        results = translate_saved_model(saved_model, args.sentences, args.max_decode_length)
    else:
        runs.require_tensorflow_backend()
        results = translate_keras(
            args.model,
            args.sentences,
            args.beam_size,
            args.length_penalty,
            args.coverage_penalty,
            args.max_decode_length,
        )
    warn_about(args.sentences, results, config.get("max_length", DEFAULT_MAX_LENGTH))
    paths = plot_results(results, args.plots_dir or args.model)
    for sentence, result in zip(args.sentences, results):
        print(f"{sentence}\t{result['translation']}")
    print(f"Heat-maps: {', '.join(paths)}")
    return results


if __name__ == "__main__":
    main()
