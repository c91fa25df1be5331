"""Cached decoding with `MultiHead.call_with_cache` against recomputing the prefix.

    KERAS_BACKEND=tensorflow python benchmarks/kv_cache.py
    KERAS_BACKEND=jax python benchmarks/kv_cache.py --rotary

One causal self-attention layer generates `--tokens` outputs from a
`--prompt`-token prompt, each output fed back as the next input:

- cached: one `call_with_cache` over the prompt, then one call per token on
  a fixed-size cache (traced once);
- recompute: `layer(prefix, prefix, use_causal_mask=True)` over the whole
  prefix at every token, keeping the last row (one trace per length).

Both run compiled (`tf.function(jit_compile=True)` on TensorFlow, `jax.jit`
on JAX; eager on PyTorch). A full untimed pass compiles every shape first;
the figures are medians over `--repeats` timed passes, in milliseconds per
generated token. The two methods' outputs are checked to agree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def compiled(fn):
    """`fn` under the backend's compiler (eager on PyTorch)."""
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.get_logger().setLevel("ERROR")  # one trace per prefix length is the point
        return tf.function(fn, jit_compile=True)
    if backend == "jax":
        import jax

        return jax.jit(fn)
    return fn


def cached_decode(layer, prompt, tokens: int, step):
    """`(B, tokens, d)` outputs: the prompt through the cache, then one token at a time."""
    from keras import ops

    batch, length = prompt.shape[0], prompt.shape[1]
    cache = layer.init_cache(batch, length + tokens)
    context, cache = step(prompt, cache, ops.convert_to_tensor(0, "int32"))
    outputs = [context[:, -1]]
    for t in range(1, tokens):
        index = ops.convert_to_tensor(length + t - 1, "int32")
        context, cache = step(outputs[-1][:, None], cache, index)
        outputs.append(context[:, -1])
    return ops.stack(outputs, axis=1)


def recompute_decode(prompt, tokens: int, full):
    """`(B, tokens, d)` outputs, recomputing the whole prefix for every token."""
    from keras import ops

    sequence, outputs = prompt, []
    for _ in range(tokens):
        outputs.append(full(sequence)[:, -1])
        sequence = ops.concatenate([sequence, outputs[-1][:, None]], axis=1)
    return ops.stack(outputs, axis=1)


def timed(fn, repeats: int) -> tuple[float, object]:
    """(median seconds, last result) over `repeats` calls, each synchronized."""
    from keras import ops

    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = ops.convert_to_numpy(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=None)
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rotary", action="store_true")
    args = parser.parse_args(argv)

    import keras
    import numpy as np

    from keras_attention import MultiHead

    keras.utils.set_random_seed(0)
    layer = MultiHead(
        num_heads=args.heads,
        key_dim=args.dim // args.heads,
        num_key_value_heads=args.kv_heads,
        rotary=args.rotary,
    )
    layer.build((None, None, args.dim))
    prompt = np.random.default_rng(0).normal(size=(args.batch, args.prompt, args.dim))
    prompt = keras.ops.convert_to_tensor(prompt.astype("float32"))
    step = compiled(layer.call_with_cache)
    full = compiled(lambda x: layer(x, x, use_causal_mask=True))

    runs = {
        "cached": lambda: cached_decode(layer, prompt, args.tokens, step),
        "recompute": lambda: recompute_decode(prompt, args.tokens, full),
    }
    print(
        f"backend={keras.backend.backend()} B={args.batch} d={args.dim} H={args.heads} "
        f"Hkv={args.kv_heads or args.heads} prompt={args.prompt} tokens={args.tokens} "
        f"rotary={args.rotary}",
        flush=True,
    )
    results = {}
    for name, run in runs.items():
        start = time.perf_counter()
        run()  # compiles every shape this method meets
        print(f"  {name}: warm-up (compiling) {time.perf_counter() - start:.1f} s", flush=True)
        seconds, outputs = timed(run, args.repeats)
        results[name] = (seconds * 1000.0 / args.tokens, outputs)
    gap = np.max(np.abs(results["cached"][1] - results["recompute"][1]))
    scale = np.max(np.abs(results["recompute"][1]))
    assert gap <= 1e-3 * max(scale, 1.0), f"cached and recomputed outputs differ by {gap}"
    cached_ms, recompute_ms = results["cached"][0], results["recompute"][0]
    print(f"  cached:    {cached_ms:8.3f} ms/token")
    print(f"  recompute: {recompute_ms:8.3f} ms/token")
    print(f"  speed-up:  {recompute_ms / cached_ms:8.1f}x   (max |difference| {gap:.1e})")
    return {
        "cached_ms": cached_ms,
        "recompute_ms": recompute_ms,
        "speedup": recompute_ms / cached_ms,
    }


if __name__ == "__main__":
    main()
