"""Translates sentences with a trained run and draws their attention.

    python -m examples.nmt.translate --model runs/nmt "May 9th, 1998" "the 3rd of june 2001"

Uses the exported SavedModel (``DIR/saved_model``, needs no model code) when
there is one, else ``DIR/model.keras`` with greedy or beam search. Prints one
translation a line and writes ``translation_K.png`` (``plot_attention``) into
``--plots-dir`` (default: the model dir).
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf


def translate_saved_model(path: str, sentences: Sequence[str]) -> list[dict[str, Any]]:
    """Runs ``translate`` of an exported SavedModel; tokens and ``(T, Ts)`` attention."""
    translator = tf.saved_model.load(path)  # keep the reference while calling it
    outputs = translator.translate(tf.constant(list(sentences)))
    results = []
    for index in range(len(sentences)):
        source = [t.decode() for t in outputs["source_tokens"][index].numpy() if t]
        length = int(outputs["target_length"][index])
        target = [t.decode() for t in outputs["target_tokens"][index, :length].numpy()]
        results.append({
            "translation": outputs["translation"][index].numpy().decode(),
            "source": source,
            "target": target,
            "attention": outputs["attention"][index, :length, : len(source)].numpy(),
        })
    return results


def translate_keras(
    directory: str, sentences: Sequence[str], beam_size: int = 1,
    length_penalty: float = 0.0, coverage_penalty: float = 0.0, max_length: int = 64,
) -> list[dict[str, Any]]:
    """Decodes with ``model.keras`` (greedy or beam search)."""
    from examples.nmt import data, evaluate, train  # noqa: PLC0415
    from examples.nmt.model import Seq2SeqDecoder  # noqa: PLC0415

    model, vocabularies = train.load_run(directory)
    texts = tf.constant(list(sentences))
    source_ids = data.encode_texts(texts, vocabularies.source, max_length)
    translate = evaluate.make_translate_fn(
        Seq2SeqDecoder(model), beam_size=beam_size, length_penalty=length_penalty,
        coverage_penalty=coverage_penalty, max_length=max_length,
    )
    result = translate(source_ids)
    translations = vocabularies.target.decode(result.ids).numpy()
    results = []
    for index, text in enumerate(translations):
        found = evaluate.sample(source_ids[index], result, index, vocabularies)
        results.append({"translation": text.decode(), **found})
    return results


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
            np.asarray(result["attention"]), result["source"], result["target"],
            title=result["translation"],
        )
        path = os.path.join(directory, f"translation_{index}.png")
        ax.figure.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(ax.figure)
        paths.append(path)
    return paths


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Translates the sentences given on the command line."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("sentences", nargs="+")
    parser.add_argument("--model", default="runs/nmt", help="a train.py output dir")
    parser.add_argument("--plots-dir", help="where heat-maps go (default: --model)")
    parser.add_argument("--keras", action="store_true",
                        help="use model.keras even if a SavedModel exists")
    from examples.nmt import evaluate  # noqa: PLC0415

    evaluate.add_decoding_arguments(parser)
    args = parser.parse_args(argv)
    saved_model = os.path.join(args.model, "saved_model")
    if os.path.isdir(saved_model) and not args.keras and args.beam_size == 1:
        results = translate_saved_model(saved_model, args.sentences)
    else:
        from examples.nmt import train  # noqa: PLC0415

        train.require_tensorflow_backend()
        results = translate_keras(
            args.model, args.sentences, args.beam_size, args.length_penalty,
            args.coverage_penalty, args.max_decode_length,
        )
    paths = plot_results(results, args.plots_dir or args.model)
    for sentence, result in zip(args.sentences, results):
        print(f"{sentence}\t{result['translation']}")
    print(f"Heat-maps: {', '.join(paths)}")
    return results


if __name__ == "__main__":
    main()
