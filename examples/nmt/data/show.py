"""``python -m examples.nmt.data``: loads a dataset (any kind) and prints a few examples a split.

With ``--write-splits DIR`` it writes a pronunciation dataset's splits as
dictionary files (``train.dict``, ``validation.dict``, ``test.dict``), so
that the same split can be read back with ``dict:`` / ``--test`` or scored
by other G2P tools.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from examples.nmt import cli
from examples.nmt.data import pronunciations
from examples.nmt.data.arguments import add_arguments
from examples.nmt.data.arguments import is_pronunciation
from examples.nmt.host import splits as host_splits


def write_splits(splits: dict[str, list[tuple[str, str]]], folder: str) -> None:
    """Writes each split of pronunciations to ``folder/SPLIT.dict``; prints the counts."""
    os.makedirs(folder, exist_ok=True)
    for name, pairs in splits.items():
        path = os.path.join(folder, f"{name}.dict")
        print(f"{path}: {pronunciations.write_pronunciations(pairs, path):,} entries")


def main(argv: Sequence[str] | None = None) -> None:
    """Loads (and caches) a dataset, then prints a few examples of each split."""
    parser = argparse.ArgumentParser(prog="python -m examples.nmt.data", description=main.__doc__)
    add_arguments(parser)
    parser.add_argument("--show", type=int, default=3, help="examples to print a split")
    parser.add_argument(
        "--write-splits",
        metavar="DIR",
        help="pronunciations: write each split to DIR/SPLIT.dict (word<TAB>PH ON EMES)",
    )
    args = parser.parse_args(argv)
    if args.write_splits and not is_pronunciation(args.dataset):
        cli.fail(
            parser.prog,
            "expected --write-splits with a pronunciation dataset (cmu_pronouncing_dictionary, "
            f"dict:PATH). Received --dataset {args.dataset}",
        )
    try:
        splits = host_splits.splits_from_args(args)
        if args.write_splits:
            write_splits(splits, args.write_splits)
    except (OSError, ValueError) as error:
        cli.fail(parser.prog, str(error))
    for name, pairs in splits.items():
        print(f"{name}:")
        for source, target in pairs[: args.show]:
            print(f"  {source}  ->  {target}")


if __name__ == "__main__":
    main()
