"""Forward+backward time and peak memory of each layer against its Keras twin.

Runs on the TensorFlow backend (it needs `tf.function` and XLA):

    KERAS_BACKEND=tensorflow python benchmarks/layers.py

Times are medians over `--steps` steps of one compiled forward+backward pass,
measured for both layers of a pair in this same process, alternating, so the
ratio is fair on a shared, noisy machine. Peak memory is the growth of the
resident set (Linux VmHWM) over the first steps, tracing included, of a fresh
subprocess that runs only that one measurement.
A ratio below 1 means ours is faster / smaller.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import measure  # this folder's helper

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

PAIRS = ("luong_dot", "bahdanau", "scaled_dot", "multi_head")


# Both sides of a pair run under the same name scope: XLA on CPU orders the
# instructions of a compiled step partly by TensorFlow op names, and on these
# 5 ms steps the order alone moved the time by up to 15% (identical HLO,
# different layer names; see docs/performance.md).
SCOPE = "attention"


def make_pair(name: str, d: int, heads: int, implementation: str = "auto", dtype=None):
    """(ours, theirs, layers): callables (q, v) -> output of the same math.

    `layers` lists ours first (if it is a layer), then Keras's; `implementation`
    and `dtype` go to our layer (`dtype` to Keras's too). Backend-neutral: the
    name scope is `keras.name_scope`, a `tf.name_scope` on TensorFlow.
    """
    import keras

    import keras_attention as ka

    options = dict(name=SCOPE, dtype=dtype)
    ours_options = dict(options, implementation=implementation)
    if name == "luong_dot":
        ours, theirs = ka.LuongAttention(**ours_options), keras.layers.Attention(**options)
        return (lambda q, v: ours(q, v)), (lambda q, v: theirs([q, v])), (ours, theirs)
    if name == "bahdanau":
        # AdditiveAttention has no projections; ours projects with units=d.
        ours = ka.BahdanauAttention(units=d, **ours_options)
        theirs = keras.layers.AdditiveAttention(**options)
        return (lambda q, v: ours(q, v)), (lambda q, v: theirs([q, v])), (ours, theirs)
    if name == "scaled_dot":
        ours = ka.ScaledDotProduct(**ours_options)

        def theirs_fn(q, v):  # (B, T, d) as one head: (B, T, 1, d)
            with keras.name_scope(SCOPE):
                return keras.ops.dot_product_attention(q[:, :, None], v[:, :, None], v[:, :, None])

        return (lambda q, v: ours(q, v)), theirs_fn, (ours,)
    if name == "multi_head":
        ours = ka.MultiHead(num_heads=heads, key_dim=d // heads, **ours_options)
        theirs = keras.layers.MultiHeadAttention(num_heads=heads, key_dim=d // heads, **options)
        return (lambda q, v: ours(q, v)), (lambda q, v: theirs(q, v)), (ours, theirs)
    raise ValueError(f"unknown pair {name!r}; expected one of {PAIRS}")


def compiled_step(fn, layers, jit: bool):
    import tensorflow as tf

    @tf.function(jit_compile=jit)
    def step(q, v):
        with tf.GradientTape() as tape:
            tape.watch([q, v])
            out = fn(q, v)
            loss = tf.reduce_sum(tf.square(out))
        variables = [w for layer in layers for w in layer.trainable_weights]
        return loss, tape.gradient(loss, [q, v] + variables)

    return step


def inputs(batch: int, length: int, d: int):
    import tensorflow as tf

    tf.random.set_seed(0)
    return tf.random.normal((batch, length, d)), tf.random.normal((batch, length, d))


def time_pair(name: str, args) -> dict:
    q, v = inputs(args.batch, args.length, args.dim)
    ours_fn, theirs_fn, layers = make_pair(name, args.dim, args.heads)
    ours_fn(q, v), theirs_fn(q, v)  # build
    ours_layers = layers[:1]
    theirs_layers = layers[1:]
    steps = {
        "ours": compiled_step(ours_fn, ours_layers, args.xla),
        "keras": compiled_step(theirs_fn, theirs_layers, args.xla),
    }
    times = {key: [] for key in steps}
    for step in steps.values():
        for _ in range(args.warmup):
            step(q, v)
    for _ in range(args.steps):
        for key, step in steps.items():
            start = time.perf_counter()
            step(q, v)[0].numpy()
            times[key].append(1000 * (time.perf_counter() - start))
    return {key: statistics.median(values) for key, values in times.items()}


def peak_memory_mib(name: str, side: str, args) -> float:
    """Run one side's step in a fresh process; its max RSS growth in MiB."""
    command = [sys.executable, __file__, "--child", name, side] + _shape_args(args)
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["peak_mib"]


def _shape_args(args) -> list[str]:
    flags = [
        "--batch",
        args.batch,
        "--length",
        args.length,
        "--dim",
        args.dim,
        "--heads",
        args.heads,
    ]
    return [str(f) for f in flags] + (["--xla"] if args.xla else [])


def child(name: str, side: str, args) -> None:
    """Peak RSS growth of the first compiled steps (tracing included) here.

    Measured from before the layer is built: TensorFlow's allocator keeps
    freed blocks, so later steps reuse the first step's pages.
    """
    q, v = inputs(args.batch, args.length, args.dim)
    ours_fn, theirs_fn, layers = make_pair(name, args.dim, args.heads)
    fn, used = (ours_fn, layers[:1]) if side == "ours" else (theirs_fn, layers[1:])
    measure.reset_peak()
    baseline = measure.status_kib("VmRSS")
    fn(q, v)  # build
    step = compiled_step(fn, used, args.xla)
    for _ in range(3):
        step(q, v)[0].numpy()
    peak = measure.status_kib("VmHWM")
    print(json.dumps({"peak_mib": (peak - baseline) / 1024}))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", nargs="+", default=list(PAIRS), choices=PAIRS)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--xla", action="store_true", help="jit_compile=True")
    parser.add_argument("--both", action="store_true", help="run without and with XLA")
    parser.add_argument("--no-memory", action="store_true", help="skip the subprocess memory runs")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(*args.child, args)
    modes = [False, True] if args.both else [args.xla]
    print(
        f"B={args.batch} Tq=Tv={args.length} d={args.dim} heads={args.heads}, "
        f"{os.cpu_count()} CPUs, median of {args.steps} fwd+bwd steps"
    )
    print("| pair | XLA | ours ms | keras ms | time ratio | ours MiB | keras MiB | memory ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for xla in modes:
        args.xla = xla
        for name in args.pairs:
            times = time_pair(name, args)
            memory = "| - | - | -"
            if not args.no_memory:
                ours, theirs = (peak_memory_mib(name, side, args) for side in ("ours", "keras"))
                memory = f"| {ours:.0f} | {theirs:.0f} | {ours / max(theirs, 1e-9):.2f}"
            print(
                f"| {name} | {'yes' if xla else 'no'} "
                f"| {times['ours']:.1f} | {times['keras']:.1f} "
                f"| {times['ours'] / times['keras']:.2f} {memory} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
