"""Training recipes: the defaults of the flags, keyed by task and architecture.

``python -m examples.nmt.train --recipe auto|date|real``: ``auto`` takes
``date`` for the date-normalization task and ``real`` for any other dataset.
A flag given on the command line wins over its recipe; ``config.json`` keeps
the values used.

* ``date``: word-level source (its gold alignments count those tokens), a
  SentencePiece character model for the ISO target (``"1998-05-09"``), a
  small input-feeding model: 100% exact match in a few minutes on 2 CPU cores.
* ``real``: SentencePiece unigram models (cased) on both sides, the Luong
  decoder and attention (one RNN pass, then one attention call: the fastest
  to train per step), 256 units, dropout and label smoothing; picked by
  measurement on Tatoeba French->English (``examples/nmt/README.md``).

``--architecture transformer`` takes the same recipe and replaces the RNN
sizes and the optimisation settings by those of ``TRANSFORMER_RECIPES``
(layers, ``d_model``, feed-forward size, heads, learning rate, epochs).
"""

from __future__ import annotations

import argparse

from examples.nmt.data.sources import DEFAULT_DATASET

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
        "learning_rate": 3e-3,
        "warmup_steps": 100,
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
        "learning_rate": 3e-3,
        "warmup_steps": 300,
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
        "epochs": 4,
        "learning_rate": 1.5e-3,
        "warmup_steps": 800,
    },
}
# The flags of one architecture only: left None for the other.
ARCHITECTURE_FLAGS = {
    "rnn": ("attention", "decoder", "embedding_dim", "units"),
    "transformer": ("layers", "d_model", "ff_dim", "alignment_layer"),
}


def recipe_name(args: argparse.Namespace) -> str:
    """``--recipe``, with ``auto`` resolved by ``--dataset``."""
    if args.recipe != "auto":
        return args.recipe
    return "date" if args.dataset.split("/")[0] == DEFAULT_DATASET else "real"


def recipe_values(recipe: str, architecture: str = "rnn") -> dict:
    """The defaults of ``recipe`` for ``architecture`` (``"rnn"`` or ``"transformer"``)."""
    values = dict(RECIPES[recipe])
    if architecture == "transformer":
        values.update(TRANSFORMER_RECIPES[recipe])
    other = "transformer" if architecture == "rnn" else "rnn"
    return {key: value for key, value in values.items() if key not in ARCHITECTURE_FLAGS[other]}


def apply_recipe(args: argparse.Namespace) -> None:
    """Fills the flags left unset (None) from the recipe; ``args.recipe`` becomes its name."""
    args.recipe = recipe_name(args)
    architecture = getattr(args, "architecture", "rnn")
    for key, value in recipe_values(args.recipe, architecture).items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
