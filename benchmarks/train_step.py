"""Train-step time of the NMT example's configurations, measured against each other.

    python benchmarks/train_step.py --dataset cmu_pronouncing_dictionary \\
        --config "recipe=" --config "attention 128=--attention-units 128" \\
        --config "dca=--attention dca"

Each ``--config NAME=FLAGS`` is a ``python -m examples.nmt.train`` command
line: ``--dataset`` (and ``--max-examples``), then ``FLAGS``, with the recipe
filling the rest, as a run would. For each configuration the script builds
the vocabularies and the training batches of that command line (the run's
own bucketing and shuffling, ``--seed``), and the model compiled as
``examples.nmt.training.fit`` compiles it. Each configuration then trains on
its first ``--batches`` batches in a cycle, one step each in turn (A B C A B
C ...; ``measure.alternate``), so that load on a shared machine
hits all alike. Prints each one's median milliseconds a step, microseconds
an example (batch sizes may differ) and that cost's ratio to the first
configuration's; ``--json`` prints them as one JSON line.

Whole training runs on a shared 2-core machine drift by 1.5x within an hour
(``examples/nmt/README.md``), so a trade of step time for quality is weighed
with this, not with the times of two runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras
import numpy as np
from measure import alternate  # this folder's helper

from examples.nmt import train
from examples.nmt.host.batches import make_batches
from examples.nmt.host.vocabularies import build_vocabularies
from examples.nmt.training import pipeline
from examples.nmt.training.fit import compiled_model


def parse_config(text: str) -> tuple[str, list[str]]:
    """``"NAME=FLAGS"`` -> ``(NAME, [flags])``; ValueError without a name."""
    name, separator, flags = text.partition("=")
    if not separator or not name.strip():
        raise ValueError(f"Expected --config NAME=FLAGS. Received: {text!r}")
    return name.strip(), shlex.split(flags)


def prepare(argv: list[str], batches: int):
    """One configuration: its compiled model, its first ``batches`` batches, examples each."""
    args = train.parse_args(argv)
    keras.utils.set_random_seed(args.seed)
    splits = pipeline.load_splits(args)
    vocabularies = build_vocabularies(
        splits["train"], args.vocab_size, args.source_tokenizer, args.target_tokenizer
    )
    dataset = make_batches(
        splits["train"],
        vocabularies,
        args.batch_size,
        training=True,
        max_length=args.max_length,
        seed=args.seed,
        bucket_step=args.length_bucket_step,
    )
    data = [
        tuple(np.asarray(part) for part in (inputs[0], inputs[1], targets))
        for inputs, targets in (dataset[index] for index in range(min(batches, len(dataset))))
    ]
    if len(data) < batches:
        raise ValueError(
            f"Expected at least {batches} training batches for {argv}. Received: {len(data)}"
        )
    policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(args.precision)  # as fit trains it
    try:
        model = compiled_model(args, vocabularies, dataset, steps_per_epoch=len(data))
    finally:
        keras.mixed_precision.set_global_policy(policy)
    return model, data


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="cmu_pronouncing_dictionary")
    parser.add_argument("--max-examples", type=int, default=25_600)
    parser.add_argument(
        "--config",
        action="append",
        required=True,
        help='NAME=FLAGS, train.py flags (repeat; the first is the reference), e.g. "recipe="',
    )
    parser.add_argument("--batches", type=int, default=8, help="batches cycled through")
    parser.add_argument("--rounds", type=int, default=40, help="timed steps of each")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        configs = dict(parse_config(text) for text in args.config)
    except ValueError as error:
        parser.error(f"argument --config: {error}")
    shared = ["--dataset", args.dataset, "--max-examples", str(args.max_examples)]

    steps, examples = {}, {}
    for name, flags in configs.items():
        model, data = prepare(shared + flags, args.batches)
        examples[name] = np.mean([len(batch[0]) for batch in data])
        cycle = iter(range(10**9))

        def step(model=model, data=data, cycle=cycle):
            source, target_in, target_out = data[next(cycle) % len(data)]
            model.train_on_batch([source, target_in], target_out)

        steps[name] = step
    # Every bucket shape is traced in the warm-up: one pass over the batches.
    milliseconds = alternate(steps, warmup=args.batches, count=args.rounds)
    reference = next(iter(configs))
    per_example = {name: 1000 * milliseconds[name] / examples[name] for name in configs}
    results = {
        name: {
            "ms_per_step": round(milliseconds[name], 1),
            "us_per_example": round(per_example[name]),
            "cost_ratio": round(per_example[name] / per_example[reference], 3),
        }
        for name in configs
    }
    if args.json:
        print(json.dumps(results))
    else:
        print(f"{'configuration':<24} {'ms/step':>8} {'us/example':>11} {'cost':>6}")
        for name, row in results.items():
            print(
                f"{name:<24} {row['ms_per_step']:>8} {row['us_per_example']:>11} "
                f"{row['cost_ratio']:>5.2f}x"
            )
    return results


if __name__ == "__main__":
    main()
