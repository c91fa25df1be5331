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

``--against OTHER [OTHER ...]`` times other SavedModels of the same weights
(for instance exported by an older checkout) in the same process, batch by
batch in turn (A B A B ...), so that load on a shared machine hits all alike,
and reports each one's speed, this one's speed ratio to it and how many
translations are identical. ``--batches N`` keeps the first N batches.
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
from examples.nmt.host.splits import load_splits


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True, help="a train.py output dir")
    parser.add_argument("--dataset", required=True, help="the run's --dataset")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--beam-sizes", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--saved-model", help="this SavedModel instead of RUN/saved_model")
    parser.add_argument("--export", action="store_true", help="re-export with this code first")
    parser.add_argument("--against", nargs="+", default=[], help="SavedModels to pair with")
    parser.add_argument("--batches", type=int, help="only the first N batches")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    config = runs.load_config(args.run) or {}
    texts = [source for source, _ in load_splits(args.dataset)["test"]]
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
        names = [path, *args.against]
        translators = [tf.saved_model.load(name) for name in names]  # kept alive while used
        batches = [
            tf.constant(texts[start : start + args.batch])
            for start in range(0, len(texts), args.batch)
        ][: args.batches]
        count = sum(int(batch.shape[0]) for batch in batches)
        results = {"run": args.run, "sentences": count, "batch": args.batch}
        for beam_size in args.beam_sizes:
            size = tf.constant(beam_size)
            for translator in translators:
                translator.translate(batches[0], beam_size=size)  # warm-up
            seconds = [0.0] * len(translators)
            outputs = [[] for _ in translators]
            for batch in batches:
                for i, translator in enumerate(translators):
                    start = time.perf_counter()
                    text = translator.translate(batch, beam_size=size)["translation"].numpy()
                    seconds[i] += time.perf_counter() - start
                    outputs[i].extend(text.tolist())
            entry = {
                "seconds": round(seconds[0], 2),
                "sentences_per_second": round(count / seconds[0], 1),
            }
            for name, other, other_outputs in zip(args.against, seconds[1:], outputs[1:]):
                same = sum(a == b for a, b in zip(outputs[0], other_outputs))
                entry.setdefault("against", []).append(
                    {
                        "saved_model": name,
                        "sentences_per_second": round(count / other, 1),
                        "speed_ratio": round(other / seconds[0], 3),
                        "identical_translations": same,
                    }
                )
            results[f"beam{beam_size}"] = entry
            if not args.json:
                print(
                    f"beam {beam_size}: {count} sentences in {seconds[0]:.1f} s, "
                    f"{count / seconds[0]:.1f} sentences/s"
                )
                for pair in entry.get("against", []):
                    print(
                        f"  against {pair['saved_model']}: {pair['sentences_per_second']} "
                        f"sentences/s, ratio {pair['speed_ratio']}x, "
                        f"{pair['identical_translations']}/{count} identical"
                    )
    if args.json:
        print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
