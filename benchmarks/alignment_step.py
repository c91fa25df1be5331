"""Time of one decoding step of each alignment-state layer (issue 21) against BahdanauAttention's.

    KERAS_BACKEND=tensorflow python benchmarks/alignment_step.py [--batch 64 --length 256]

One step is `attend` on a `(B, dq)` query with memory already projected
(`project_memory`), compiled with `tf.function(jit_compile=True)` (add
`--no-xla` for a plain graph). Times are medians over `--steps` calls, the
layers measured in turn, round after round, so a noisy shared machine slows all
of them alike. The ratio is to `BahdanauAttention(units)`'s step; issue 21's
target is <= 1.5.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def layers(units: int) -> dict:
    import keras_attention as ka

    return {
        "bahdanau": ka.BahdanauAttention(units),
        "location_sensitive": ka.LocationSensitiveAttention(units),
        "bahdanau_monotonic_parallel": ka.BahdanauMonotonicAttention(units),
        "bahdanau_monotonic_hard": ka.BahdanauMonotonicAttention(units, mode="hard"),
        "luong_monotonic_parallel": ka.LuongMonotonicAttention(),
        "luong_local_p": ka.LuongLocalPAttention(),
        # mode="auto" decodes hard: a benchmark step runs outside training.
        "stepwise_monotonic_auto": ka.StepwiseMonotonicAttention(units),
        "stepwise_monotonic_soft": ka.StepwiseMonotonicAttention(units, mode="soft"),
        "gmm": ka.GMMAttention(units=units),
        "dynamic_convolution": ka.DynamicConvolutionAttention(units, dynamic_units=units),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--depth", type=int, default=256)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--no-xla", action="store_true")
    args = parser.parse_args(argv)

    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    query = tf.constant(rng.normal(size=(args.batch, args.depth)).astype("float32"))
    memory = tf.constant(rng.normal(size=(args.batch, args.length, args.depth)).astype("float32"))
    mask = tf.constant(np.arange(args.length)[None] < rng.integers(1, args.length, (args.batch, 1)))
    steps = {}
    for name, layer in layers(args.units).items():
        layer.build((None, args.depth), (None, None, args.depth))
        key_features, value_features = layer.project_memory(memory, memory, mask)
        if layer.has_alignment_state:
            state = layer.initial_alignment_state(key_features, mask)

            def step(q, layer=layer, k=key_features, v=value_features, s=state):
                return layer.attend(q, k, v, value_mask=mask, alignment_state=s)
        else:

            def step(q, layer=layer, k=key_features, v=value_features):
                return layer.attend(q, k, v, value_mask=mask)

        steps[name] = tf.function(step, jit_compile=not args.no_xla)
        steps[name](query)  # trace and compile
    times = {name: [] for name in steps}
    for _ in range(args.steps):
        for name, step in steps.items():
            start = time.perf_counter()
            tf.nest.map_structure(lambda x: x.numpy(), step(query))
            times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in times.items()}
    result = {
        "settings": vars(args),
        "median_ms": {name: round(1e3 * t, 3) for name, t in medians.items()},
        "ratio_to_bahdanau": {
            name: round(t / medians["bahdanau"], 2) for name, t in medians.items()
        },
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
