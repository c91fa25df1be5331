"""The data flags every command line shares, and the names they take; no TensorFlow here.

``add_arguments`` adds ``--dataset`` and the flags ``sources.splits_from_args``
(TensorFlow) and ``host.splits.splits_from_args`` (plain Python) read; the
command lines import it before they know which input pipeline runs.
"""

from __future__ import annotations

import argparse

from examples.nmt import cli
from examples.nmt.data.pronunciations import is_pronunciation

# The example's own date task (``date_normalization.DateNormalization``, a TFDS builder).
DEFAULT_DATASET = "date_normalization"
SPLITS = ("train", "validation", "test")
__all__ = ["DEFAULT_DATASET", "SPLITS", "add_arguments", "is_pronunciation"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the flags that ``splits_from_args`` reads."""
    parser.add_argument(
        "--dataset",
        default=DEFAULT_DATASET,
        help="a TFDS name (e.g. ted_hrlr_translate/pt_to_en, or cmu_pronouncing_dictionary: "
        "the bundled CMUdict, words -> phonemes), tsv:PATH, dict:PATH (a pronouncing "
        "dictionary, CMUdict or Phonetisaurus format) or folder:PATH",
    )
    parser.add_argument(
        "--test",
        metavar="PATH",
        help="a file in the dataset's format (tsv:, dict:, or a dictionary for "
        "cmu_pronouncing_dictionary) to test on instead of the hash split; its sources are "
        "dropped from training",
    )
    parser.add_argument(
        "--join-words",
        type=cli.integer_at_least(1),
        metavar="K",
        help="pronunciations: train and validate on joins of 1 to K words (phonemes "
        "separated by |), for long-input tests (python -m examples.nmt.long_inputs)",
    )
    parser.add_argument(
        "--keep-stress",
        action="store_true",
        help="keep the stress digits of a dict: dictionary (AH0); removed by default",
    )
    parser.add_argument("--data-dir", help="TFDS data dir (default: TFDS's own)")
    parser.add_argument("--source-lang", help="source language key, where ambiguous")
    parser.add_argument("--target-lang", help="target language key, where ambiguous")
    parser.add_argument(
        "--max-examples", type=cli.integer_at_least(1), help="keep this many examples a split"
    )
    parser.add_argument(
        "--download",
        action="store_true",
        help="download and prepare a TFDS dataset missing from the data dir (needs the network)",
    )
