"""What the command lines share: one-line errors, warnings, integer, model and decoding flags,
and ``--config FILE`` / ``--set KEY=VALUE`` over a parser's flags (``parse_with_config``)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import NoReturn

from examples.common import recipes as common_recipes
from examples.common.runs import RunError


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


class _HelpAll(argparse.Action):
    """``--help-all``: the help of every flag (``make_parser()`` of the command), then exit."""

    def __init__(self, option_strings, dest, full_parser: Callable[[], Any], **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)
        self.full_parser = full_parser

    def __call__(self, parser, namespace, values, option_string=None):
        self.full_parser().print_help()
        parser.exit()


def everyday_help(
    parser: argparse.ArgumentParser, everyday: Sequence[str], full_parser: Callable[[], Any]
) -> argparse.ArgumentParser:
    """``--help`` lists the flags whose dest is in ``everyday``; ``--help-all`` every flag.

    The other flags still parse, and work in ``--config`` files and as ``--set
    key=value``; only their help is folded away, as ``git``'s and ``ffmpeg``'s
    short help is. ``full_parser()`` builds the parser with every help.
    """
    hidden = 0
    for action in parser._actions:  # noqa: SLF001 - argparse keeps no public list
        if action.dest not in everyday and not isinstance(action, argparse._HelpAction):  # noqa: SLF001
            action.help = argparse.SUPPRESS
            hidden += 1
    parser.add_argument(
        "--help-all",
        action=_HelpAll,
        full_parser=full_parser,
        help=f"show every flag ({hidden} more: model sizes, training, decoding, "
        "distribution) and exit; each is also a --set key=value",
    )
    return parser


def checked_setting(parser: argparse.ArgumentParser, key: str, value: Any, where: str) -> Any:
    """``value`` for the flag whose dest is ``key``, checked as the flag checks its text."""
    action = next((a for a in parser._actions if a.dest == key), None)  # noqa: SLF001
    if action is None or key in ("config", "set", "help"):
        known = sorted(a.dest for a in parser._actions if a.dest not in ("help", "config", "set"))  # noqa: SLF001
        parser.error(f"{where}: unknown setting {key!r}; known: {', '.join(known)}")
    if value is None:
        return None
    if action.nargs == 0:  # --overwrite, --no-export, ...
        if not isinstance(value, bool):
            parser.error(f"{where}: {key} expects true or false, received {value!r}")
        return value
    text = str(value).lower() if isinstance(value, bool) else str(value)
    try:
        checked = action.type(text) if action.type is not None else text
    except (argparse.ArgumentTypeError, ValueError) as error:
        parser.error(f"{where}: {key}: {error}")
    if action.choices is not None and checked not in action.choices:
        parser.error(f"{where}: {key} expects one of {list(action.choices)}, received {value!r}")
    return checked


def parse_with_config(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """The arguments, with ``--config FILE`` and each ``--set KEY=VALUE`` as their defaults.

    The file's keys are the flags' dest names (a run's ``config.json``, which
    thus repeats the run); a flag given on the command line wins. Neither
    ``--config`` nor ``--set`` stays in the arguments: the run records the
    values they gave.
    """
    args = parser.parse_args(argv)
    values: dict[str, Any] = {}
    if args.config is not None:
        try:
            table = common_recipes.read_file(args.config)
        except RunError as error:
            parser.error(str(error))
        if "mixed_precision" in table:  # a run's config.json from before --precision
            table["precision"] = "mixed_float16" if table.pop("mixed_precision") else "float32"
        for key, value in table.items():
            if key not in common_recipes.RECORD_ONLY:
                values[key] = checked_setting(parser, key, value, f"--config {args.config}")
    for text in args.set:
        key, equals, value = text.partition("=")
        key = key.strip().replace("-", "_")
        if not equals or not key:
            parser.error(f"--set {text}: expected KEY=VALUE")
        parsed = common_recipes.parse_value(value.strip())
        values[key] = checked_setting(parser, key, parsed, f"--set {text}")
    if values:
        parser.set_defaults(**values)
        args = parser.parse_args(argv)
    del args.config, args.set
    return args
