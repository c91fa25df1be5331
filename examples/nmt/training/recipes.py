"""Training recipes: the defaults of the flags, keyed by task and architecture.

``python -m examples.nmt.train --recipe auto|date|real|g2p``: ``auto`` takes
``date`` for the date-normalization task, ``g2p`` for pronunciations
(``cmu_pronouncing_dictionary``, ``dict:PATH``) and ``real`` for any other
dataset.
A flag given on the command line wins over its recipe; ``config.json`` keeps
the values used.

* ``date``: word-level source (its gold alignments count those tokens), a
  SentencePiece character model for the ISO target (``"1998-05-09"``), a
  small input-feeding model: 100% exact match in a few minutes on 2 CPU cores.
* ``real``: SentencePiece unigram models (cased) on both sides, dropout and
  label smoothing, and a Transformer (2+2 blocks, ``d_model`` 192): on
  Tatoeba French->English it beats the recipe's RNN (Luong decoder and
  attention, 256 units) in the same 27 minutes of training on 2 CPU cores
  (``docs/transformers.md``). It trains in ``mixed_bfloat16`` where the CPU
  computes bfloat16 (``--precision auto``, ``resolve_precision``).
* ``g2p``: grapheme-to-phoneme conversion: lower-cased letters in
  (``letters``), phoneme symbols out (``symbols``), an RNN of 512 units with
  Bahdanau attention (128 hidden units) and a Luong decoder, AdamW (weight
  decay 0.1), beam search of 4 for evaluation (``docs/pronunciation.md``).

``--architecture`` picks the model; left out, it is the recipe's
(``ARCHITECTURES``: the RNN for ``date``, the Transformer for ``real``).
``--architecture transformer`` replaces the RNN sizes and the optimisation
settings of a recipe by those of ``TRANSFORMER_RECIPES`` (layers,
``d_model``, feed-forward size, heads, learning rate, epochs).
"""

from __future__ import annotations

import argparse

from examples.nmt import backend
from examples.nmt.data.arguments import DEFAULT_DATASET
from examples.nmt.data.arguments import is_pronunciation
from examples.nmt.models.attentions import SIZED_ATTENTIONS

# --precision: a Keras dtype policy, or "auto" (resolve_precision).
PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
# The backends, for each architecture, whose train step "auto" has measured
# faster in mixed_bfloat16 on a CPU with bfloat16 arithmetic (2 cores with
# AMX). The real recipe's Transformer (fra-eng, 2026-12-05): 0.85x the float32
# step on TensorFlow, 0.86x on PyTorch; 0.93x on JAX, beside other work: left in
# float32. The g2p recipe's RNN (2026-12-06, its buckets of 1.1): 0.81x on
# TensorFlow (0.85x with buckets of 2); 1.23x on PyTorch, whose GRU steps
# through the sequence op by op, so there it is slower: left in float32.
BFLOAT16_BACKENDS = {"transformer": ("tensorflow", "torch"), "rnn": ("tensorflow",)}


# Defaults keyed by task; the keys are train.py flags (argparse dest names).
RECIPES = {
    "date": {
        "attention": "bahdanau",
        "decoder": "bahdanau",
        "source_tokenizer": "words",
        "target_tokenizer": "char",
        "vocab_size": 20_000,
        "embedding_dim": 64,
        "units": 128,
        "num_heads": 4,
        "dropout": 0.0,
        "label_smoothing": 0.0,
        "epochs": 2,
        "batch_size": 128,
        "length_bucket_step": 2.0,
        "precision": "float32",
        "learning_rate": 3e-3,
        "warmup_steps": 100,
        "weight_decay": 0.0,
        "beam_size": 1,
        "length_penalty": 0.0,
    },
    "real": {
        "attention": "luong",
        "decoder": "luong",
        "source_tokenizer": "unigram",
        "target_tokenizer": "unigram",
        "vocab_size": 8000,
        "embedding_dim": 128,
        "units": 256,
        "num_heads": 4,
        "dropout": 0.2,
        "label_smoothing": 0.1,
        "epochs": 5,
        "batch_size": 128,
        "length_bucket_step": 2.0,
        "precision": "float32",
        "learning_rate": 3e-3,
        "warmup_steps": 300,
        "weight_decay": 0.0,
        # Beam 4 with GNMT's length penalty 0.6 (Wu et al. 2016's value, not
        # tuned here): cased sacreBLEU 54.86 against 53.04 greedy and 54.44
        # with beam 4 alone, the same Transformer run (2026-12-05); seeds 1
        # and 2 scored 55.04 and 54.34 with it (mean of three: 54.75).
        "beam_size": 4,
        "length_penalty": 0.6,
    },
    "g2p": {
        "attention": "bahdanau",
        "decoder": "luong",
        "source_tokenizer": "letters",
        "target_tokenizer": "symbols",
        "vocab_size": 1000,
        # 512 units (256 a direction in the encoder) and embeddings of 128:
        # WER 25.38% against 28.21% for 256 / 64 / dropout 0.1 (dropout 0.3
        # did worse). Then, in the same 30 minutes of training on 2 CPU cores,
        # an attention of 128 hidden units (0.89x the step) for 12 epochs
        # instead of 10, with AdamW: weight decay 0.1 scored WER 24.87%,
        # 24.89%, 25.26% and 24.84% with seeds 0-3 (mean 24.96%, PER 5.97%);
        # 0.05 24.82% and 25.05% (seed 0), 25.64% (seed 1); the recipe before
        # (512 hidden units, Adam, 10 epochs) 25.38-25.64% (seed 0), 25.61%
        # (seed 1). 24-26 min of training (examples/nmt/README.md).
        "embedding_dim": 128,
        "units": 512,
        "attention_units": 128,
        "num_heads": 4,
        "dropout": 0.2,
        "label_smoothing": 0.1,
        "epochs": 12,
        "batch_size": 128,
        "length_bucket_step": 2.0,
        "precision": "float32",
        "learning_rate": 3e-3,
        "warmup_steps": 300,
        "weight_decay": 0.1,
        "beam_size": 4,
        "length_penalty": 0.0,
    },
}


# What --architecture transformer changes in a recipe.
TRANSFORMER_RECIPES = {
    "date": {
        "layers": 2,
        "d_model": 128,
        "ff_dim": 256,
        "num_heads": 4,
        "alignment_layer": 0,
        "dropout": 0.0,
        "epochs": 3,
        "learning_rate": 2e-3,
        "warmup_steps": 200,
    },
    "real": {
        "layers": 2,
        "d_model": 192,
        "ff_dim": 768,
        "num_heads": 4,
        "alignment_layer": 0,
        "dropout": 0.1,
        # Buckets one length wide from 8 to 19 tokens, then ~10% (fra-eng pads
        # 1.11x its tokens instead of 1.52x, each batches shuffled into the
        # pass): an epoch costs 0.75x, so 5 epochs train in 4's time. Seed 2,
        # idle, 2026-12-05: cased sacreBLEU 55.92 in 1,716 s of training
        # against 54.34 in 1,766 s (buckets 8/16/32, 4 epochs); 4 epochs of
        # the fine buckets 54.06 in 1,334 s. Seed 1: 55.99 (old recipe
        # 55.04), 1,826 s in a slow hour of the host (examples/nmt/README.md).
        "length_bucket_step": 1.1,
        # mixed_bfloat16 where the CPU computes bfloat16 (resolve_precision):
        # 0.85x the float32 step; seed 2, 2026-12-05, 2 idle cores with AMX:
        # cased sacreBLEU 56.33 (float32: 55.92), val_loss 2.113 (2.110),
        # 1,685 s of training (1,716 s), one epoch of five in a slow phase of
        # the host (382 s against 316-322 s). Seed 1, the recipe as it is
        # (validation bucketed too): 55.83 (float32: 55.99) in 1,587 s.
        "precision": "auto",
        "epochs": 5,
        "learning_rate": 1.5e-3,
        "warmup_steps": 800,
    },
}
# Pronunciations: the real recipe's Transformer, trained longer (short
# sequences), without the RNN's weight decay (not measured on it). Measured
# 2026-12-05 on 2 CPU cores: WER 30.46% / PER 7.62% (seed 0) against the
# RNN's 24.96% mean, at the RNN's cost an example; it learns less an epoch,
# and a doubled learning rate did not change that (examples/nmt/README.md),
# so the RNN stays the g2p architecture on 2 cores.
TRANSFORMER_RECIPES["g2p"] = {
    **TRANSFORMER_RECIPES["real"],
    "epochs": 12,
    "weight_decay": 0.0,
    "length_bucket_step": 2.0,  # what it was measured with
    "precision": "float32",
}
# The architecture of each recipe when --architecture is left out: measured
# on 2 CPU cores, the RNN wins the date task (100% against 99.95% exact
# match), the Transformer fra-eng (53.4 against 51.7 cased BLEU, same time).
ARCHITECTURES = {"date": "rnn", "real": "transformer", "g2p": "rnn"}
# The flags of one architecture only: left None for the other.
ARCHITECTURE_FLAGS = {
    "rnn": ("attention", "decoder", "embedding_dim", "units", "attention_units"),
    "transformer": ("layers", "d_model", "ff_dim", "alignment_layer"),
}


def recipe_name(args: argparse.Namespace) -> str:
    """``--recipe``, with ``auto`` resolved by ``--dataset``."""
    if args.recipe != "auto":
        return args.recipe
    if args.dataset.split("/")[0] == DEFAULT_DATASET:
        return "date"
    return "g2p" if is_pronunciation(args.dataset) else "real"


def architecture_name(args: argparse.Namespace) -> str:
    """``--architecture``, or the recipe's when it was left out (None)."""
    if getattr(args, "architecture", None) is not None:
        return args.architecture
    return ARCHITECTURES[recipe_name(args)]


def recipe_values(recipe: str, architecture: str = "rnn") -> dict:
    """The defaults of ``recipe`` for ``architecture`` (``"rnn"`` or ``"transformer"``)."""
    values = dict(RECIPES[recipe])
    if architecture == "transformer":
        values.update(TRANSFORMER_RECIPES[recipe])
    other = "transformer" if architecture == "rnn" else "rnn"
    return {key: value for key, value in values.items() if key not in ARCHITECTURE_FLAGS[other]}


def apply_recipe(args: argparse.Namespace) -> None:
    """Fills the flags left unset (None) from the recipe; ``args.recipe`` becomes its name.

    ``args.architecture`` becomes ``architecture_name(args)``.
    """
    args.architecture = architecture_name(args)
    args.recipe = recipe_name(args)
    values = recipe_values(args.recipe, args.architecture)
    unset = [key for key in values if getattr(args, key, None) is None]
    for key in unset:
        setattr(args, key, values[key])
    # A recipe's attention size is that of its attention's hidden layer: an
    # --attention without one (luong, say) takes none from the recipe.
    if "attention_units" in unset and args.attention not in SIZED_ATTENTIONS:
        args.attention_units = None
    args.precision = resolve_precision(args.precision, args.architecture)


def resolve_precision(precision: str, architecture: str) -> str:
    """``--precision``'s dtype policy: ``"auto"`` is ``mixed_bfloat16`` where it was measured
    faster (a CPU with bfloat16 arithmetic, no GPU, a backend of ``BFLOAT16_BACKENDS``
    for ``architecture``), ``float32`` anywhere else; any other value is itself.
    """
    if precision != "auto":
        return precision
    if (
        backend.name() in BFLOAT16_BACKENDS[architecture]
        and not backend.accelerators()
        and backend.native_bfloat16_cpu()
    ):
        return "mixed_bfloat16"
    return "float32"
