"""Sentences per second of a trained run's SavedModel on its test split.

    python benchmarks/translator_speed.py --run runs/fra --dataset tsv:fra-eng.zip
    python benchmarks/translator_speed.py --run runs/fra --dataset tsv:fra-eng.zip --export

Loads ``RUN/saved_model`` (or ``--saved-model``; or, with ``--export``, first writes a new one from
``RUN/model.keras`` and the run's vocabularies with the current code, into a
temporary folder, with the run's own decoding settings), then translates the
test split of ``--dataset`` (the run's split: same dataset, same held-out
fraction) in batches of ``--batch`` for each ``--beam-sizes`` entry, after one
warm-up batch each: what a user of the SavedModel gets, string in and string
out. Prints the wall-clock seconds and sentences per second of each beam
size; ``--json`` prints them as one JSON line. The figures of issue 20's
targets were taken this way on an otherwise idle machine (2 CPU cores).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece and normalization ops)

from examples.nmt import export
from examples.nmt import runs
from examples.nmt.data import sources


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True, help="a train.py output dir")
    parser.add_argument("--dataset", required=True, help="the run's --dataset")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--beam-sizes", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--saved-model", help="this SavedModel instead of RUN/saved_model")
    parser.add_argument("--export", action="store_true", help="re-export with this code first")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    config = runs.load_config(args.run) or {}
    test = sources.load_splits(args.dataset)["test"]
    texts = [example["source"].decode() for example in test.as_numpy_iterator()]
    with tempfile.TemporaryDirectory() as scratch:
        path = args.saved_model or os.path.join(args.run, "saved_model")
        if args.export:
            model, vocabularies = runs.load_run(args.run)
            path = export.export_translator(
                model,
                vocabularies,
                os.path.join(scratch, "saved_model"),
                config.get("max_decode_length", 64),
                config.get("max_length", 64),
            )
        translator = tf.saved_model.load(path)
        batches = [
            tf.constant(texts[start : start + args.batch])
            for start in range(0, len(texts), args.batch)
        ]
        results = {"run": args.run, "sentences": len(texts), "batch": args.batch}
        for beam_size in args.beam_sizes:
            size = tf.constant(beam_size)
            translator.translate(batches[0], beam_size=size)  # warm-up
            start = time.perf_counter()
            for batch in batches:
                translator.translate(batch, beam_size=size)["translation"].numpy()
            seconds = time.perf_counter() - start
            results[f"beam{beam_size}"] = {
                "seconds": round(seconds, 2),
                "sentences_per_second": round(len(texts) / seconds, 1),
            }
            if not args.json:
                print(
                    f"beam {beam_size}: {len(texts)} sentences in {seconds:.1f} s, "
                    f"{len(texts) / seconds:.0f} sentences/s"
                )
    if args.json:
        print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
