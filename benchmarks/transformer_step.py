"""Train-step time of the NMT example's Transformer: our MultiHead against Keras's.

    KERAS_BACKEND=jax python benchmarks/transformer_step.py --steps 20

Builds the example's Transformer (``examples.nmt.models.transformer``) with
the sizes ``python -m examples.nmt.train --recipe real`` gives it
(``examples.nmt.training.recipes``; ``--flags`` changes them as on that
command line), compiled as ``examples.nmt.training.fit`` compiles it, twice:
as the example builds it, every attention a ``keras_attention.MultiHead``,
and with every one replaced by ``keras.layers.MultiHeadAttention`` of the
same heads, ``key_dim`` and dropout (``KerasMultiHead``: our call contract
on Keras's layer). Both train on the same synthetic batches of ids
(``--batch-size`` rows, ``--length`` tokens a side with padding, the
recipe's vocabulary), one teacher-forced step each in turn (A B A B ...;
``measure.alternate``), so that load on a shared machine hits both alike.
Prints each one's median milliseconds a step and the ratio ours / Keras
(issue 42's target: at most 1.05x on every backend); ``--json`` prints them
as one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
from collections.abc import Iterator
from unittest import mock

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras
import numpy as np
from measure import alternate  # this folder's helper

from examples.nmt import train
from examples.nmt.host.vocabularies import Vocabularies
from examples.nmt.models import transformer
from examples.nmt.text.special import END_ID
from examples.nmt.text.special import PAD_ID
from examples.nmt.text.special import RESERVED
from examples.nmt.text.special import START_ID
from examples.nmt.training.fit import compiled_model

OURS, KERAS = "keras_attention.MultiHead", "keras.layers.MultiHeadAttention"

Batch = tuple[np.ndarray, np.ndarray, np.ndarray]  # source, target_in, target_out ids (B, T)


class KerasMultiHead(keras.layers.MultiHeadAttention):
    """``keras.layers.MultiHeadAttention`` called as ``keras_attention.MultiHead`` is.

    ``value_mask`` ``(B, Tv)`` (True on real tokens) becomes Keras's
    ``attention_mask`` ``(B, 1, Tv)``; the weights it returns are ``(B, H,
    Tq, Tv)``, as ours.
    """

    def call(
        self,
        query,
        value,
        value_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        attention_mask = None if value_mask is None else value_mask[:, None, :]  # (B, 1, Tv)
        return super().call(
            query,
            value,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )


@contextlib.contextmanager
def keras_attention_replaced() -> Iterator[None]:
    """Inside: every Transformer block made gets ``KerasMultiHead`` attentions.

    Each has the heads, ``key_dim`` and dropout of the ``MultiHead`` the block
    would have made (``_Block._attention``), so the two models differ only in
    the attention layers.
    """
    # The one place the example's blocks make their attentions: patched for
    # the time of a build, so examples/ need not know about this benchmark.
    block_class = transformer._Block  # noqa: SLF001
    ours = block_class._attention  # noqa: SLF001

    def keras_attention(block: keras.layers.Layer, name: str) -> KerasMultiHead:
        layer = ours(block, name)
        return KerasMultiHead(layer.num_heads, layer.key_dim, dropout=layer.dropout, name=name)

    with mock.patch.object(block_class, "_attention", keras_attention):
        yield


def recipe_args(flags: list[str], batch_size: int | None) -> argparse.Namespace:
    """The arguments of ``python -m examples.nmt.train --recipe real FLAGS`` (a Transformer)."""
    extra = [] if batch_size is None else ["--batch-size", str(batch_size)]
    return train.parse_args(["--recipe", "real", "--architecture", "transformer", *flags, *extra])


def synthetic_batches(
    count: int, batch_size: int, length: int, vocab_size: int, seed: int = 0
) -> list[Batch]:
    """``count`` batches of ``(B, length)`` ids, each row ``3/4 length`` to ``length`` tokens.

    Sources are random non-reserved ids; targets end with ``[END]``, the
    decoder's inputs start with ``[START]``; both are padded with 0.
    """
    rng = np.random.default_rng(seed)
    positions = np.arange(length)

    def rows() -> tuple[np.ndarray, np.ndarray]:
        ids = rng.integers(len(RESERVED), vocab_size, size=(batch_size, length))  # (B, T)
        lengths = rng.integers(max(3 * length // 4, 2), length + 1, size=(batch_size, 1))  # (B, 1)
        return ids, lengths

    batches = []
    for _ in range(count):
        ids, lengths = rows()
        source = np.where(positions < lengths, ids, PAD_ID)  # (B, T)
        ids, lengths = rows()
        target_out = np.where(positions < lengths - 1, ids, PAD_ID)
        target_out[np.arange(batch_size), lengths[:, 0] - 1] = END_ID  # (B, T)
        target_in = np.concatenate(
            [np.full((batch_size, 1), START_ID), target_out[:, :-1]], axis=1
        )  # (B, T)
        target_in[target_in == END_ID] = PAD_ID
        batches.append(tuple(part.astype("int32") for part in (source, target_in, target_out)))
    return batches


def compiled_models(args: argparse.Namespace, batches: list[Batch]) -> dict[str, keras.Model]:
    """``{OURS: model, KERAS: model}``, each made by ``fit.compiled_model`` from ``args``."""
    # make_model reads only the vocabularies' sizes.
    vocabularies = Vocabularies(range(args.vocab_size), range(args.vocab_size))
    targets_out = np.stack([target_out for _, _, target_out in batches])
    # The output bias's unigram prior (--output-bias unigram), add-one smoothed, no padding.
    counts = 1 + np.bincount(targets_out[targets_out != PAD_ID], minlength=args.vocab_size)
    log_prior = np.log(counts / counts.sum()).astype("float32")
    models = {}
    for name, scope in ((OURS, contextlib.nullcontext), (KERAS, keras_attention_replaced)):
        keras.utils.set_random_seed(args.seed)
        with scope():
            models[name] = compiled_model(args, vocabularies, None, len(batches), log_prior)
    return models


def print_results(results: dict, as_json: bool = False) -> None:
    """``main``'s results as a table, or as one JSON line."""
    if as_json:
        print(json.dumps(results))
        return
    shape = results["shape"]
    print(
        f"{results['backend']}: batch {shape['batch_size']}, length {shape['length']}, "
        f"vocabulary {shape['vocab_size']}, median of {results['steps']} steps"
    )
    print(f"{'attention':<32} {'ms/step':>8} {'parameters':>11}")
    for name, row in results["models"].items():
        print(f"{name:<32} {row['ms_per_step']:>8} {row['parameters']:>11,}")
    print(f"ratio ours / Keras: {results['ratio']:.3f}x")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps of each model")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps of each (compiles)")
    parser.add_argument(
        "--batch-size", type=int, default=None, help="rows a batch (default: the recipe's)"
    )
    parser.add_argument("--length", type=int, default=32, help="padded tokens a side")
    parser.add_argument("--batches", type=int, default=4, help="synthetic batches cycled through")
    parser.add_argument(
        "--flags",
        default="",
        help='train.py flags over the real recipe, e.g. "--d-model 64 --vocab-size 100"',
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    recipe = recipe_args(shlex.split(args.flags), args.batch_size)
    batches = synthetic_batches(
        args.batches, recipe.batch_size, args.length, recipe.vocab_size, recipe.seed
    )
    models = compiled_models(recipe, batches)

    steps = {}
    for name, model in models.items():
        cycle = iter(range(10**9))

        def step(model=model, cycle=cycle):
            source, target_in, target_out = batches[next(cycle) % len(batches)]
            model.train_on_batch([source, target_in], target_out)

        steps[name] = step
    milliseconds = alternate(steps, warmup=args.warmup, count=args.steps)
    results = {
        "backend": keras.backend.backend(),
        "shape": {
            "batch_size": recipe.batch_size,
            "length": args.length,
            "vocab_size": recipe.vocab_size,
        },
        "steps": args.steps,
        "models": {
            name: {
                "ms_per_step": round(milliseconds[name], 1),
                "parameters": models[name].count_params(),
            }
            for name in models
        },
        "ratio": round(milliseconds[OURS] / milliseconds[KERAS], 3),
    }
    print_results(results, as_json=args.json)
    return results


if __name__ == "__main__":
    main()
