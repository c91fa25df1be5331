"""Training recipes (defaults keyed by task) and the label-smoothed token loss.

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

import keras
import tensorflow as tf

from examples.nmt import data


@keras.saving.register_keras_serializable(package="examples_nmt")
class MaskedCrossentropy(keras.losses.Loss):
    """Token cross-entropy from logits, with label smoothing, over non-padding targets.

    The target distribution puts ``1 - label_smoothing`` on the gold token
    and spreads ``label_smoothing`` evenly over the vocabulary (Szegedy et
    al., 2016); the loss is the mean over tokens with ``y_true != 0``.
    """

    def __init__(self, label_smoothing: float = 0.0, name: str = "masked_crossentropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.label_smoothing = label_smoothing

    def call(self, y_true, y_pred):
        y_true = tf.cast(y_true, tf.int32)  # (B, T)
        log_probs = tf.nn.log_softmax(tf.cast(y_pred, tf.float32))  # (B, T, V)
        gold = -tf.gather(log_probs, y_true, batch_dims=2)  # (B, T)
        uniform = -tf.reduce_mean(log_probs, axis=-1)  # (B, T)
        per_token = (1.0 - self.label_smoothing) * gold + self.label_smoothing * uniform
        mask = tf.cast(y_true != data.PAD_ID, tf.float32)
        # The token mean, a scalar: Keras's reduction keeps it as it is, with
        # or without the logits' padding mask (which it rescales to mean 1).
        return tf.math.divide_no_nan(tf.reduce_sum(per_token * mask), tf.reduce_sum(mask))

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}


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
    return "date" if args.dataset.split("/")[0] == data.DEFAULT_DATASET else "real"


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
