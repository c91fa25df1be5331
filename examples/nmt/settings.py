"""The command line of ``examples.nmt.train``: its flags, their checks, the everyday ones.

``make_parser()`` builds every flag (the flag reference, ``docs/nmt-flags.md``,
is generated from it), ``make_parser(everyday=True)`` folds all but
``EVERYDAY`` out of ``--help`` (``--help-all`` lists them), ``parse_args``
applies ``--config``/``--set`` and the recipe, checks what one flag's type
cannot, and returns the run's ``Config`` (``examples.nmt.config``, where
every default is written once). Apart from ``train.py`` so that a run's folder
(``examples.nmt.runs``) can read its ``config.json`` as the command line
reads it, without importing the training pipeline.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from examples.common import recipes as common_recipes
from examples.nmt import cli
from examples.nmt import config
from examples.nmt.config import Config
from examples.nmt.data import arguments
from examples.nmt.host.text import TOKENIZERS
from examples.nmt.models.attentions import ATTENTIONS
from examples.nmt.models.attentions import SIZED_ATTENTIONS
from examples.nmt.models.rnn import DECODERS
from examples.nmt.models.rnn import RNNS
from examples.nmt.training import distribution
from examples.nmt.training import recipes

PROG = "python -m examples.nmt.train"
DESCRIPTION = "Trains, evaluates and exports an attention NMT model: python -m examples.nmt.train."

DEFAULT_OUTPUT_DIR = config.DEFAULT_OUTPUT_DIR
# What --help lists; --help-all (and docs/nmt-flags.md) lists every flag.
EVERYDAY = (
    "dataset",
    "test",
    "max_examples",
    "output_dir",
    "overwrite",
    "config",
    "set",
    "recipe",
    "architecture",
    "attention",
    "epochs",
    "batch_size",
    "learning_rate",
    "seed",
    "precision",
    "strategy",
    "beam_size",
    "no_export",
)


def make_parser(everyday: bool = False) -> argparse.ArgumentParser:
    """The command's parser; with ``everyday``, ``--help`` lists ``EVERYDAY`` (``--help-all``)."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    positive, at_least = cli.integer_at_least(1), cli.integer_at_least
    arguments.add_arguments(parser)
    parser.add_argument("--output-dir")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the outputs of an earlier run in --output-dir",
    )
    parser.add_argument(
        "--architecture",
        choices=("rnn", "transformer"),
        help="(recipe: rnn for date, transformer for real) an RNN encoder-decoder with "
        "attention, or a Transformer (examples.nmt.models.transformer)",
    )
    parser.add_argument(
        "--attention",
        choices=ATTENTIONS,
        help="(recipe, rnn) bahdanau, luong (general), scaled_dot, multihead; with an "
        "alignment state: location (location-sensitive), monotonic (Bahdanau monotonic, "
        "soft), stepwise (stepwise monotonic, soft), gmm (GMMv2b), dca (dynamic "
        "convolution); local-p (Luong local-p)",
    )
    parser.add_argument("--decoder", choices=DECODERS, help="(recipe, rnn)")
    parser.add_argument("--rnn", choices=RNNS, help="(rnn)")
    parser.add_argument(
        "--attention-units",
        type=positive,
        help="(recipe, rnn) hidden size of a bahdanau, location, monotonic, stepwise, gmm "
        "or dca attention (default: the recipe's, else --units)",
    )
    parser.add_argument(
        "--encoder-layers",
        type=positive,
        help="(rnn) bidirectional RNN layers in the encoder",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="settings from a file (TOML or JSON, keys as the flags' dest names): a run's "
        "config.json repeats that run; a flag given on the command line wins",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one setting, as a flag would give it (repeatable), e.g. --set epochs=3",
    )
    parser.add_argument(
        "--recipe",
        choices=("auto", *recipes.RECIPES),
        help="defaults of the flags marked (recipe): 'date' for the date task, 'real' for "
        "natural language (SentencePiece, larger model), 'g2p' for pronunciations (letters "
        "in, phonemes out); auto: date for date_normalization, g2p for "
        "cmu_pronouncing_dictionary and dict:PATH, real otherwise",
    )
    tokenizers = TOKENIZERS
    parser.add_argument(
        "--source-tokenizer",
        choices=tokenizers,
        help="(recipe) lower-cased words or letters, white-space-separated symbols "
        "(phonemes), or a SentencePiece unigram/bpe/char model (cased)",
    )
    parser.add_argument("--target-tokenizer", choices=tokenizers, help="(recipe) as above")
    parser.add_argument("--embedding-dim", type=positive, help="(recipe, rnn)")
    parser.add_argument("--units", type=at_least(2), help="(recipe, rnn) even")
    parser.add_argument(
        "--num-heads",
        type=positive,
        help="(recipe) heads of the multihead attention, or of every Transformer attention",
    )
    parser.add_argument(
        "--layers", type=positive, help="(recipe, transformer) encoder and decoder blocks"
    )
    parser.add_argument(
        "--d-model", type=positive, help="(recipe, transformer) features of every token"
    )
    parser.add_argument(
        "--ff-dim", type=positive, help="(recipe, transformer) inner size of the feed-forwards"
    )
    parser.add_argument(
        "--alignment-layer",
        type=int,
        help="(recipe, transformer) the decoder block whose cross-attention, averaged over "
        "heads, is reported (alignment accuracy, coverage penalty, heat-maps); negative "
        "counts from the end",
    )
    parser.add_argument("--dropout", type=float, help="(recipe)")
    parser.add_argument("--label-smoothing", type=float, help="(recipe)")
    parser.add_argument(
        "--vocab-size",
        type=at_least(5),
        help="(recipe) most ids per side, the 4 reserved ones included",
    )
    parser.add_argument("--max-length", type=at_least(2), help="most tokens per sentence")
    parser.add_argument("--epochs", type=positive, help="(recipe)")
    parser.add_argument("--batch-size", type=positive, help="(recipe)")
    parser.add_argument(
        "--length-bucket-step",
        type=cli.number_above(1.0),
        help="(recipe) training batches come from buckets of lengths whose upper edges "
        "start at 8 and grow by this factor: 2 gives 8, 16, 32, ...; 1.1 pads less",
    )
    parser.add_argument("--learning-rate", type=float, help="(recipe) peak, after warm-up")
    parser.add_argument("--warmup-steps", type=at_least(0), help="(recipe)")
    parser.add_argument("--clipnorm", type=float, help="per-variable; 0 = off")
    parser.add_argument(
        "--weight-decay",
        type=float,
        help="(recipe) decoupled weight decay (AdamW) of the kernels and embeddings, "
        "not the biases; 0 = Adam",
    )
    parser.add_argument(
        "--ema",
        type=float,
        help="momentum of a moving average of the weights (0.999, say), which "
        "validation, the best epoch and model.keras then use; 0 = off",
    )
    parser.add_argument(
        "--output-bias",
        choices=("unigram", "zeros"),
        help="initial logits bias: log target-token frequencies, or zeros",
    )
    parser.add_argument(
        "--patience",
        type=cli.integer_at_least_or_off(0),
        help="early stopping: the epochs without a lower val_loss it waits (0 = stop at the "
        "first); off = train every --epochs (the best epoch's weights are kept either way)",
    )
    parser.add_argument(
        "--keep-checkpoints",
        type=at_least(0),
        help="keep the model weights of the last N epochs in checkpoints/ (no optimizer "
        "state; each as large as the model's weights), for evaluate/translate/export "
        "--average-checkpoints; 0 = none",
    )
    parser.add_argument("--seed", type=int)
    parser.add_argument(
        "--precision",
        choices=recipes.PRECISIONS,
        help="the Keras dtype policy of training (recipe: auto = mixed_bfloat16 for the real "
        "recipe's Transformer where the CPU computes bfloat16 natively, float32 otherwise); "
        "model.keras and the SavedModel compute in float32 whatever trained them",
    )
    parser.add_argument(
        "--mixed-precision",
        dest="precision",
        action="store_const",
        const="mixed_float16",
        help="the same as --precision mixed_float16",
    )
    parser.add_argument("--jit-compile", action="store_true", help="XLA for the train step")
    parser.add_argument(
        "--strategy",
        help="default: one device; mirrored (TensorFlow): every local GPU; data (JAX): "
        "keras.distribution.DataParallel over every device of every process. (multiworker, "
        "tf.distribute.MultiWorkerMirroredStrategy, is refused: Keras 3 does not support "
        "it, keras-team/keras#20585; use data on JAX across machines)",
    )
    parser.add_argument(
        "--coordinator",
        help="with --strategy data over several processes: HOST:PORT of process 0",
    )
    parser.add_argument(
        "--num-processes", type=positive, help="with --coordinator: processes in all"
    )
    parser.add_argument(
        "--process-id", type=at_least(0), help="with --coordinator: this process, 0 = chief"
    )
    parser.add_argument("--samples", type=at_least(0), help="heat-maps to draw")
    parser.add_argument("--no-export", action="store_true", help="skip the SavedModel")
    parser.add_argument(
        "--no-evaluate", action="store_true", help="skip the test-split evaluation and heat-maps"
    )
    cli.add_decoding_arguments(parser, default_beam_size=None, default_length_penalty=None)
    # One place for the defaults: the Config's fields (every dest is one).
    parser.set_defaults(**config.defaults())
    return cli.everyday_help(parser, EVERYDAY, make_parser) if everyday else parser


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Applies the recipe, then the checks one flag's type cannot make (exit 2 on failure)."""
    chosen = args.architecture
    recipes.apply_recipe(args)
    # The recipe fills only its architecture's flags: the other's set are the user's.
    for architecture, flags in recipes.ARCHITECTURE_FLAGS.items():
        given = [flag for flag in flags if getattr(args, flag) is not None]
        if architecture != args.architecture and given:
            default = "" if chosen else f" (the {args.recipe} recipe's default)"
            parser.error(
                f"argument --{given[0].replace('_', '-')}: only for --architecture "
                f"{architecture}, received --architecture {args.architecture}{default}"
            )
    if args.strategy == "multiworker":
        parser.error(f"argument --strategy: {distribution.MULTIWORKER_REFUSAL}")
    if args.strategy not in distribution.STRATEGIES:
        parser.error(
            f"argument --strategy: expected one of {', '.join(distribution.STRATEGIES)}, "
            f"received {args.strategy!r}"
        )
    processes = (args.coordinator, args.num_processes, args.process_id)
    if any(value is not None for value in processes) and None in processes:
        parser.error(
            "arguments --coordinator, --num-processes, --process-id: expected all three or none"
        )
    if args.process_id is not None and args.process_id >= args.num_processes:
        parser.error(
            f"argument --process-id: expected < --num-processes {args.num_processes}, "
            f"received {args.process_id}"
        )
    if not 0.0 <= args.label_smoothing < 1.0:
        parser.error(
            f"argument --label-smoothing: expected 0 <= value < 1, received {args.label_smoothing}"
        )
    if not 0.0 <= args.ema < 1.0:
        parser.error(f"argument --ema: expected 0 <= value < 1, received {args.ema}")
    if args.architecture == "rnn":
        if args.units % 2:
            parser.error(f"argument --units: expected an even number, received {args.units}")
        if args.attention_units is not None and args.attention not in SIZED_ATTENTIONS:
            parser.error(
                f"argument --attention-units: only for --attention in "
                f"{', '.join(SIZED_ATTENTIONS)}, received --attention {args.attention}"
            )
        if args.attention == "multihead" and args.units % args.num_heads:
            parser.error(
                f"argument --num-heads: expected a divisor of --units {args.units}, "
                f"received {args.num_heads}"
            )
    else:
        if args.d_model % args.num_heads:
            parser.error(
                f"argument --num-heads: expected a divisor of --d-model {args.d_model}, "
                f"received {args.num_heads}"
            )
        if not -args.layers <= args.alignment_layer < args.layers:
            parser.error(
                f"argument --alignment-layer: expected {-args.layers} <= value < "
                f"{args.layers} (--layers {args.layers}), received {args.alignment_layer}"
            )
    if not 0.0 <= args.dropout < 1.0:
        parser.error(f"argument --dropout: expected 0 <= dropout < 1, received {args.dropout}")
    if not args.learning_rate > 0.0:
        parser.error(f"argument --learning-rate: expected > 0, received {args.learning_rate}")
    if args.clipnorm < 0.0:
        parser.error(f"argument --clipnorm: expected >= 0, received {args.clipnorm}")
    if not 0.0 <= args.weight_decay < 1.0:
        parser.error(
            f"argument --weight-decay: expected 0 <= value < 1, received {args.weight_decay}"
        )


def parse_args(argv: Sequence[str] | None = None) -> Config:
    """The command line (``--config`` and ``--set`` applied), the recipe filled in, checked.

    Exits with status 2 and the parser's usage message on a bad flag.
    """
    parser = make_parser(everyday=True)
    args = cli.parse_with_config(parser, argv)
    check_args(parser, args)
    return to_config(args)


def to_config(args: argparse.Namespace) -> Config:
    """The parsed flags as a ``Config``, each value checked against its field's type."""
    return common_recipes.merge(Config, Config(), vars(args), "command line")
