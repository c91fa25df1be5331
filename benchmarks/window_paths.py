"""Sliding-window attention on each path: which one `implementation="auto"` should take.

`MultiHead(heads, key_dim, window=W)` causal self-attention of `(B, T, d)`
inputs on each path that can run it here (exact, chunked, fused: the
backend's kernel, PyTorch's `scaled_dot_product_attention` with a band mask
on a CPU) and on `"auto"`; one forward pass (`--mode forward`) or one forward
and backward step (`--mode train`: gradients for the input and every weight),
compiled with `tf.function` / `jax.jit`, eager on PyTorch. Steps alternate
(`measure.alternate`), so a busy machine slows them alike; read the ratios to
the fastest path, not the milliseconds.

    nice -n 19 env KERAS_BACKEND=torch python benchmarks/window_paths.py
    nice -n 19 env KERAS_BACKEND=jax python benchmarks/window_paths.py --mode train
"""

from __future__ import annotations

import argparse
import json
import pathlib

from measure import alternate  # this folder's helpers

PATHS = ("exact", "chunked", "fused", "auto")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048])
    parser.add_argument("--windows", type=int, nargs="+", default=[128])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--key-dim", type=int, default=64)
    parser.add_argument("--mode", choices=("forward", "train"), default="forward")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (torch, TF)")
    parser.add_argument("--json", type=pathlib.Path, default=None, help="write results here")
    return parser.parse_args(argv)


def _set_threads(threads) -> None:
    import keras

    if threads is None:
        return
    if keras.backend.backend() == "torch":
        import torch

        torch.set_num_threads(threads)
    elif keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)


def _step(layer, x, mode):
    """A zero-argument function running one step of `layer` on `x` to completion."""
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.constant(x)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(tf.square(layer(x, x, use_causal_mask=True)))
            if mode == "forward":
                return loss
            return loss, tape.gradient(loss, [x, *layer.trainable_weights])

        return lambda: tf.nest.map_structure(lambda t: t.numpy(), step())
    if backend == "jax":
        import jax

        trainable = [w.value for w in layer.trainable_variables]
        frozen = [w.value for w in layer.non_trainable_variables]

        def loss(trainable, x):
            out, _ = layer.stateless_call(trainable, frozen, x, x, use_causal_mask=True)
            return jax.numpy.sum(jax.numpy.square(out))

        run = jax.jit(loss if mode == "forward" else jax.value_and_grad(loss, argnums=(0, 1)))
        return lambda: jax.block_until_ready(run(trainable, x))
    import torch

    x = torch.tensor(x, requires_grad=mode == "train")

    def step():
        if mode == "forward":
            with torch.no_grad():
                return float(torch.sum(torch.square(layer(x, x, use_causal_mask=True))))
        loss = torch.sum(torch.square(layer(x, x, use_causal_mask=True)))
        loss.backward()
        return float(loss.detach())

    return step


def measure(length: int, window: int, args) -> dict:
    """`{path: ms or error text}` and the path `"auto"` took, for one length and window."""
    import numpy as np

    import keras_attention
    from keras_attention import memory_efficient

    x = np.random.default_rng(0).normal(size=(args.batch, length, 256)).astype("float32")
    layers = {
        path: keras_attention.MultiHead(
            args.heads, args.key_dim, window=window, implementation=path
        )
        for path in PATHS
    }
    for layer in layers.values():
        layer.build(x.shape, x.shape)
        layer.set_weights(layers["exact"].get_weights())
    taken = []
    chunked, fused = (
        memory_efficient.chunked_attention,
        memory_efficient.fused_dot_product_attention,
    )

    def spy(name, fn):
        def wrapped(*a, **k):
            taken.append(name)
            return fn(*a, **k)

        return wrapped

    memory_efficient.chunked_attention = spy("chunked", chunked)
    memory_efficient.fused_dot_product_attention = spy("fused", fused)
    try:
        layers["auto"](x[:, :length], x[:, :length], use_causal_mask=True)
    finally:
        memory_efficient.chunked_attention, memory_efficient.fused_dot_product_attention = (
            chunked,
            fused,
        )
    steps = {path: _step(layer, x, args.mode) for path, layer in layers.items()}
    results = alternate(steps, args.warmup, args.repeats, keep_errors=True)
    results = {k: v if isinstance(v, float) else type(v).__name__ for k, v in results.items()}
    return {"times": results, "auto_took": taken[0] if taken else "exact"}


def main(argv=None) -> list:
    args = parse_args(argv)
    import keras

    _set_threads(args.threads)
    backend, rows = keras.backend.backend(), []
    print(f"| backend | mode | T | W | {' | '.join(PATHS)} | auto took |")
    print("|---|---|---|---|" + "---|" * len(PATHS) + "---|")
    for length in args.lengths:
        for window in args.windows:
            record = measure(length, window, args)
            times = record["times"]
            best = min(t for t in times.values() if isinstance(t, float))
            cells = [
                f"{t / best:.2f}x ({t:.0f} ms)" if isinstance(t, float) else f"n/a ({t})"
                for t in times.values()
            ]
            print(
                f"| {backend} | {args.mode} | {length} | {window} | {' | '.join(cells)} "
                f"| {record['auto_took']} |",
                flush=True,
            )
            rows.append(
                dict(backend=backend, mode=args.mode, length=length, window=window, **record)
            )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
