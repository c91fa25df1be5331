"""What the command lines share: one-line errors, warnings, integer, model and decoding flags."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any
from typing import NoReturn

from examples.common.runs import RunError  # noqa: F401  (cli.RunError)


def fail(prog: str, message: str) -> NoReturn:
    """Prints ``prog: error: message`` on stderr and exits with status 2, as argparse does."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _checked(
    convert: Callable[[str], Any], kind: str, accepts: Callable[[Any], bool], requirement: str
) -> Callable[[str], Any]:
    """An argparse ``type``: ``convert(text)`` if ``accepts`` it, else a one-line usage error."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind}, received {text!r}") from None
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"expected {requirement}, received {value}")
        return value

    parse.__name__ = requirement.split(" ", 1)[1]
    return parse


def integer_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer ``>= minimum``, else a one-line usage error."""
    return _checked(int, "an integer", lambda value: value >= minimum, f"an integer >= {minimum}")


def integer_at_least_or_off(minimum: int) -> Callable[[str], int | None]:
    """An argparse ``type``: ``off`` (None), or an integer ``>= minimum``, else a usage error."""
    integer = _checked(
        int,
        "an integer or 'off'",
        lambda value: value >= minimum,
        f"an integer >= {minimum} or 'off'",
    )

    def parse(text: str) -> int | None:
        return None if text.strip().lower() == "off" else integer(text)

    parse.__name__ = integer.__name__
    return parse


def number_above(minimum: float) -> Callable[[str], float]:
    """An argparse ``type``: a finite number ``> minimum`` (not NaN), else a usage error."""
    return _checked(
        float,
        "a number",
        lambda value: minimum < value < math.inf,
        f"a finite number > {minimum}",
    )


def add_decoding_arguments(
    parser: argparse.ArgumentParser,
    default_max_length: Any = 64,
    default_beam_size: Any = 1,
    default_length_penalty: Any = 0.0,
) -> None:
    """``--beam-size``, ``--length-penalty``, ``--coverage-penalty``, ``--max-decode-length``.

    ``train`` leaves the beam and the length penalty None: its recipe fills them.
    """
    at_least_one = integer_at_least(1)
    parser.add_argument(
        "--beam-size",
        type=at_least_one,
        default=default_beam_size,
        help="1 = greedy search" + ("" if default_beam_size else " (recipe: 4 for g2p and real)"),
    )
    parser.add_argument(
        "--length-penalty",
        type=float,
        default=default_length_penalty,
        help="GNMT alpha"
        + ("" if default_length_penalty is not None else " (recipe: 0.6 for real)"),
    )
    parser.add_argument("--coverage-penalty", type=float, default=0.0, help="GNMT beta")
    parser.add_argument(
        "--max-decode-length",
        type=at_least_one,
        default=default_max_length,
        help="most output tokens",
    )


DEFAULT_MODEL = "runs/nmt"


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model DIR`` (repeatable: an ensemble of runs) and ``--average-checkpoints N``.

    ``model_folders(args.model)`` gives the folders.
    """
    parser.add_argument(
        "--model",
        action="append",
        help=f"a train.py output dir (default: {DEFAULT_MODEL}); repeat it to decode the "
        "ensemble of several runs (the mean of their log-probabilities, "
        "keras_attention.decoding.ensemble_step), which must share their vocabularies",
    )
    parser.add_argument(
        "--average-checkpoints",
        type=integer_at_least(1),
        metavar="N",
        help="decode with the element-wise mean of the weights of each run's last N trained "
        "epochs (its checkpoints/, train.py --keep-checkpoints) instead of the best "
        "epoch's: the last as trained, as Vaswani et al. 2017 average a run's last "
        "checkpoints (after early stopping, they include the --patience epochs after the best)",
    )


def model_folders(given: list[str] | None) -> list[str]:
    """The ``--model`` folders given, else ``[DEFAULT_MODEL]``."""
    return list(given or [DEFAULT_MODEL])
