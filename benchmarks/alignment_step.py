"""Time of one decoding step of each alignment-state layer (issue 21) against BahdanauAttention's.

    KERAS_BACKEND=tensorflow python benchmarks/alignment_step.py [--batch 64 --length 256]
    KERAS_BACKEND=jax python benchmarks/alignment_step.py     # under jax.jit
    KERAS_BACKEND=torch python benchmarks/alignment_step.py   # eager, under no_grad

One step is `attend` on a `(B, dq)` query with memory already projected
(`project_memory`). On TensorFlow it is compiled with
`tf.function(jit_compile=True)` (add `--no-xla` for a plain graph), on JAX
with `jax.jit`; PyTorch runs it eagerly. The query, the projected memory, the
mask and the state are the compiled step's arguments, not values it closes
over: `jax.jit` makes a closed-over array a constant, and XLA then folds
everything that depends only on it (the whole location convolution of a
fixed state) out of the step it times. Times are medians over `--steps`
calls (`measure.alternate`), the layers measured in turn, round after round,
so a noisy shared machine slows all of them alike. The ratio is to
`BahdanauAttention(units)`'s step; issue 21's target is <= 1.5.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from measure import alternate  # this folder's helpers


def layers(units: int) -> dict:
    import keras_attention as ka

    return {
        "bahdanau": ka.BahdanauAttention(units),
        "location_sensitive": ka.LocationSensitiveAttention(units),
        # TensorFlowTTS's inference window: a step scores only its 6 positions.
        "location_sensitive_window": ka.LocationSensitiveAttention(units, inference_window=(2, 3)),
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


def compile_step(step, no_xla: bool):
    """`step(*arrays)` compiled for the running backend, returning NumPy arrays."""
    import keras
    import numpy as np

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        compiled = tf.function(step, jit_compile=not no_xla)
    elif backend == "jax":
        import jax

        compiled = jax.jit(step)
    else:
        import torch

        def compiled(*arrays):
            with torch.no_grad():
                return step(*arrays)

    def run(*arrays):
        outputs = keras.tree.flatten(compiled(*arrays))
        return [np.asarray(keras.ops.convert_to_numpy(x)) for x in outputs]

    return run


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--depth", type=int, default=256)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--no-xla", action="store_true", help="TensorFlow: a plain graph")
    parser.add_argument(
        "--layers", nargs="+", help="only these (Bahdanau, the reference, always runs)"
    )
    args = parser.parse_args(argv)

    import keras
    import numpy as np

    ops = keras.ops
    rng = np.random.default_rng(0)
    query = ops.convert_to_tensor(rng.normal(size=(args.batch, args.depth)).astype("float32"))
    memory = ops.convert_to_tensor(
        rng.normal(size=(args.batch, args.length, args.depth)).astype("float32")
    )
    lengths = rng.integers(1, args.length, (args.batch, 1))
    mask = ops.convert_to_tensor(np.arange(args.length)[None] < lengths)
    chosen = layers(args.units)
    if args.layers:
        unknown = set(args.layers) - set(chosen)
        if unknown:
            parser.error(f"unknown layers {sorted(unknown)}; known: {sorted(chosen)}")
        chosen = {name: chosen[name] for name in ["bahdanau", *args.layers]}
    steps = {}
    for name, layer in chosen.items():
        layer.build((None, args.depth), (None, None, args.depth))
        key_features, value_features = layer.project_memory(memory, memory, mask)
        arrays = [query, key_features, value_features, mask]
        if layer.has_alignment_state:
            arrays.append(layer.initial_alignment_state(key_features, mask))

            def step(q, k, v, m, s, layer=layer):
                return layer.attend(q, k, v, value_mask=m, alignment_state=s)
        else:

            def step(q, k, v, m, layer=layer):
                return layer.attend(q, k, v, value_mask=m)

        compiled = compile_step(step, args.no_xla)
        steps[name] = lambda compiled=compiled, arrays=arrays: compiled(*arrays)
    medians = alternate(steps, warmup=1, count=args.steps)
    result = {
        "settings": {**vars(args), "backend": keras.backend.backend()},
        "median_ms": {name: round(t, 3) for name, t in medians.items()},
        "ratio_to_bahdanau": {
            name: round(t / medians["bahdanau"], 2) for name, t in medians.items()
        },
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
