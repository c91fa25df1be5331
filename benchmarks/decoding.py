"""Greedy and beam search of `keras_attention.decoding` on a small AttentionRNNCell model.

    KERAS_BACKEND=tensorflow python benchmarks/decoding.py
    KERAS_BACKEND=jax python benchmarks/decoding.py --beam-size 4 --batch 32

A GRU `AttentionRNNCell` with `BahdanauAttention` over a random `--source-length`
memory decodes `--batch` sentences with random weights, so every sentence runs
`--max-length` steps (a random model never ends). The memory is tiled once
and closed over; the search carries and reorders only the cell's states. The
searches run compiled (`tf.function`, with `--xla` `jit_compile=True`;
`jax.jit`) or eagerly on PyTorch; figures are medians over `--repeats`
alternating runs after a warm-up, in milliseconds per sentence.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import keras
import numpy as np
from keras import ops
from measure import alternate  # this folder's helper

import keras_attention
from keras_attention import AttentionRNNState
from keras_attention import decoding

START, END = 1, 2


def make_search(args, beam_size: int):
    """A zero-argument compiled search of `beam_size` (1: greedy search)."""
    rng = np.random.default_rng(0)
    cell = keras_attention.AttentionRNNCell(
        keras.layers.GRUCell(args.units), keras_attention.BahdanauAttention(args.units)
    )
    embedding = keras.layers.Embedding(args.vocab, args.units)
    projection = keras.layers.Dense(args.vocab)
    embedding.build((None,))
    projection.build((None, args.units))
    memory = rng.normal(size=(args.batch, args.source_length, args.units)).astype("float32")
    memory = ops.convert_to_tensor(memory)

    def search(memory):
        full = cell.unpack_state(cell.initial_state(memory))
        constant = decoding.tile_state((full.keys, full.values, full.mask), beam_size)

        def step(ids, state, index):
            packed = cell.pack_state(AttentionRNNState(*state, *constant))
            _, packed = cell(embedding(ids), packed)
            new = cell.unpack_state(packed)
            return (
                projection(new.attention),
                (new.cell_states, new.attention, new.weights),
                new.weights,
            )

        state = (full.cell_states, full.attention, full.weights)
        common = dict(start_id=START, end_id=END, max_length=args.max_length)
        if beam_size == 1:
            return decoding.greedy_search(step, state, **common).ids
        return decoding.beam_search(step, state, beam_size=beam_size, **common).ids

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        compiled = tf.function(search, jit_compile=args.xla)
        return lambda: compiled(memory).numpy()
    if backend == "jax":
        import jax

        cell.initial_state(memory)  # builds the cell outside the trace
        compiled = jax.jit(search)
        return lambda: np.asarray(compiled(memory))
    import torch

    def run():
        with torch.no_grad():
            return search(memory).cpu().numpy()

    return run


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--source-length", type=int, default=20)
    parser.add_argument("--max-length", type=int, default=20)
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--xla", action="store_true", help="TensorFlow: jit_compile=True")
    args = parser.parse_args(argv)
    steps = {
        "greedy": make_search(args, 1),
        f"beam {args.beam_size}": make_search(args, args.beam_size),
    }
    print(
        f"{keras.backend.backend()}: batch {args.batch}, {args.max_length} steps, "
        f"vocabulary {args.vocab}, {args.units} units",
        flush=True,
    )
    results = alternate(steps, warmup=1, count=args.repeats, keep_errors=True)
    for name, ms in results.items():
        if isinstance(ms, Exception):
            print(f"  {name}: failed: {ms!r}")
        else:
            print(f"  {name}: {ms / args.batch:.2f} ms per sentence ({ms:.0f} ms per batch)")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
