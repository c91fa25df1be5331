"""Scores a saved run on a split: ``python -m examples.nmt.evaluate --model runs/nmt``.

The data and decoding flags default to the run's own settings (its
``config.json``: dataset, test file, beam size, penalties, lengths; the first
run's with several); a flag given on the command line wins. ``--model A
--model B`` scores the ensemble of the runs (``examples.nmt.models.ensemble``),
``--average-checkpoints N`` each run with the mean of its last N epochs'
weights (``examples.nmt.runs.averaged_weights``). Prints the metrics of
``examples.nmt.evaluation.evaluate`` (BLEU, chrF, exact match, alignment
accuracy; WER and PER for pronunciations) as JSON, then the BLEU line (the
WER line for pronunciations).
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import json
from collections.abc import Sequence

from examples.nmt import cli
from examples.nmt import runs
from examples.nmt.data import arguments
from examples.nmt.evaluation import evaluate
from examples.nmt.host import splits
from examples.nmt.models import attentions


def run_flags() -> set[str]:
    """The data and decoding flags (``sources.add_arguments``, ``cli.add_decoding_arguments``):
    their defaults are the run's own values (its config.json)."""
    shared = argparse.ArgumentParser(add_help=False)
    arguments.add_arguments(shared)
    cli.add_decoding_arguments(shared)
    return set(vars(shared.parse_args([])))


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    """Scores a saved run (``model.keras`` + vocabularies), or an ensemble of runs, on a split."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.nmt.evaluate", description=main.__doc__
    )
    cli.add_model_arguments(parser)
    parser.add_argument("--split", default="test", choices=arguments.SPLITS)
    parser.add_argument("--batch-size", type=cli.integer_at_least(1), default=256)
    parser.add_argument(
        "--attention-mode",
        help="decode with the run's monotonic or stepwise attention in this mode "
        "(e.g. hard, for weights trained soft); the saved model is unchanged",
    )
    arguments.add_arguments(parser)
    cli.add_decoding_arguments(parser)
    # The run's own data and decoding settings are the defaults (a flag given
    # wins): `--model runs/g2p` alone scores the pronunciation run on its test split.
    folders = cli.model_folders(parser.parse_known_args(argv)[0].model)
    config = runs.load_config(folders[0]) or {}
    parser.set_defaults(**{key: config[key] for key in run_flags() if key in config})
    args = parser.parse_args(argv)
    try:
        model, vocabularies = runs.load_runs(folders, args.average_checkpoints)
        if args.attention_mode is not None:
            for member in getattr(model, "members", (model,)):
                attentions.set_attention_mode(member, args.attention_mode)
        split = splits.splits_from_args(args)[args.split]
    except (OSError, ValueError, cli.RunError) as error:
        cli.fail(parser.prog, str(error))
    metrics, _ = evaluate(
        model,
        split,
        vocabularies,
        batch_size=args.batch_size,
        beam_size=args.beam_size,
        length_penalty=args.length_penalty,
        coverage_penalty=args.coverage_penalty,
        max_length=args.max_decode_length,
        max_source_length=config.get("max_length"),
        pronunciation=arguments.is_pronunciation(args.dataset),
    )
    print(json.dumps(metrics, indent=2, sort_keys=True))
    if "wer" in metrics:
        print(f"WER {100 * metrics['wer']:.2f}%, PER {100 * metrics['per']:.2f}%")
    else:
        print(f"BLEU {metrics['bleu']:.1f} ({metrics['bleu_signature']})")
    return metrics


if __name__ == "__main__":
    main()
