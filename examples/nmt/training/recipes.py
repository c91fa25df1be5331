"""Training recipes: the defaults of the flags, keyed by task and architecture.

The recipes are files, ``examples/nmt/recipes/{date,real,g2p}.toml``
(``read_recipes``), with the measurements behind their values as comments.

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
import glob
import os

from examples.common import recipes as common_recipes
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


# The named recipes, one TOML file each in examples/nmt/recipes/ (NAME.toml): its
# top-level keys are train.py flags (argparse dest names) and "architecture" (the
# recipe's when --architecture is left out); its [transformer] table, what
# --architecture transformer changes. The measurements behind each value are
# the files' comments.
RECIPES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "recipes")


def read_recipes(folder: str = RECIPES_DIR) -> tuple[dict, dict, dict]:
    """``(RECIPES, TRANSFORMER_RECIPES, ARCHITECTURES)`` from the recipe files in ``folder``.

    Raises:
        ValueError: a file without ``architecture`` (``rnn`` or ``transformer``).
    """
    defaults, transformer, architectures = {}, {}, {}
    for path in sorted(glob.glob(os.path.join(folder, "*.toml"))):
        name = os.path.basename(path).removesuffix(".toml")
        table = dict(common_recipes.read_file(path))
        architecture = table.pop("architecture", None)
        if architecture not in ("rnn", "transformer"):
            raise ValueError(
                f"{path}: expected architecture = 'rnn' or 'transformer'. Received: "
                f"{architecture!r}"
            )
        transformer[name] = dict(table.pop("transformer", {}))
        defaults[name], architectures[name] = table, architecture
    return defaults, transformer, architectures


RECIPES, TRANSFORMER_RECIPES, ARCHITECTURES = read_recipes()
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
