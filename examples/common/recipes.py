"""Recipes in files: a TOML or JSON file loaded into an example's typed dataclass.

An example states its whole configuration as one dataclass whose field
defaults are its default recipe. ``load(Config, path, sets)`` starts from
those defaults, merges the file at ``path`` over them (TOML or JSON: a run's
own ``config.json`` is a valid recipe, so ``--config runs/x/config.json``
repeats a run), then each ``--set key=value``; every value is checked
against its field's type, and an unknown key is an error that lists the
known ones. Fields a file does not name keep their defaults, so files
written before a field existed still load.

    parser = argparse.ArgumentParser()
    recipes.add_arguments(parser)
    args = parser.parse_args(["--set", "epochs=3"])
    config = recipes.from_arguments(Config, args)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import types
import typing
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any
from typing import TypeVar

from examples.common.runs import RunError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover  (Python 3.10: the examples extra installs tomli)
    import tomli as tomllib

T = TypeVar("T")
# Keys a run's config.json holds beside the recipe's fields (runs.BACKEND_KEY).
RECORD_ONLY = frozenset({"keras_backend"})


def read_file(path: str) -> dict[str, Any]:
    """The table in a ``.toml`` or ``.json`` recipe file."""
    if not os.path.isfile(path):
        raise RunError(f"--config {path}: no such file")
    try:
        if path.endswith(".toml"):
            with open(path, "rb") as file:
                return tomllib.load(file)
        with open(path, encoding="utf-8") as file:
            value = json.load(file)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RunError(f"--config {path}: not a TOML or JSON recipe ({error})") from None
    if not isinstance(value, dict):
        raise RunError(f"--config {path}: expected a table of settings, received {value!r}")
    return value


def _types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {field.name: hints[field.name] for field in dataclasses.fields(cls)}


def _options(kind: Any) -> tuple[Any, ...]:
    """The alternatives of ``X | Y`` / ``Optional[X]``, else ``(kind,)``."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return typing.get_args(kind)
    return (kind,)


def _check(key: str, value: Any, kind: Any, where: str) -> Any:
    """``value`` as the field's type (int to float, list to tuple), or a ``RunError``."""
    for option in _options(kind):
        if option is type(None) and value is None:
            return None
        if typing.get_origin(option) is typing.Literal:
            if value in typing.get_args(option):
                return value
            continue
        if option is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if option is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if option in (str, bool) and type(value) is option:
            return value
        if typing.get_origin(option) is tuple and isinstance(value, (list, tuple)):
            (inner, *_) = typing.get_args(option) or (Any,)
            if inner is Any or all(_fits(item, inner) for item in value):
                return tuple(value)
    raise RunError(f"{where}: {key} expects {_describe(kind)}, received {value!r}")


def _fits(value: Any, kind: Any) -> bool:
    try:
        _check("", value, kind, "")
    except RunError:
        return False
    return True


def _describe(kind: Any) -> str:
    names = []
    for option in _options(kind):
        if typing.get_origin(option) is typing.Literal:
            names.append(" or ".join(repr(choice) for choice in typing.get_args(option)))
        elif option is type(None):
            names.append("none (omit it in TOML; null in JSON; --set key=none)")
        else:
            names.append(getattr(option, "__name__", str(option)))
    return " or ".join(names)


def parse_value(text: str) -> Any:
    """A ``--set`` value: JSON where it parses (numbers, true, lists, null), else the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _parse_set(text: str, kind: Any) -> Any:
    """``parse_value``, with ``none`` read as None where ``kind`` allows it."""
    if text in ("none", "null") and type(None) in _options(kind):
        return None
    return parse_value(text)


def merge(cls: type[T], base: T, values: Mapping[str, Any], where: str) -> T:
    """``base`` with ``values`` over it, each checked against ``cls``'s field types."""
    known = _types(cls)
    unknown = sorted(set(values) - set(known) - RECORD_ONLY)
    if unknown:
        raise RunError(
            f"{where}: unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"known: {', '.join(sorted(known))}"
        )
    checked = {
        key: _check(key, value, known[key], where)
        for key, value in values.items()
        if key not in RECORD_ONLY
    }
    return dataclasses.replace(base, **checked)


def load(cls: type[T], path: str | None = None, sets: Iterable[str] = ()) -> T:
    """``cls()``'s defaults, the recipe file at ``path`` over them, then each ``key=value``."""
    config = cls()
    if path is not None:
        config = merge(cls, config, read_file(path), f"--config {path}")
    known = _types(cls)
    for text in sets:
        key, equals, value = text.partition("=")
        key = key.strip().replace("-", "_")
        if not equals or not key:
            raise RunError(f"--set {text}: expected key=value")
        kind = known.get(key, Any)
        config = merge(cls, config, {key: _parse_set(value.strip(), kind)}, f"--set {text}")
    return config


def add_arguments(parser: argparse.ArgumentParser, recipes_dir: str | None = None) -> None:
    """``--config FILE`` (or a recipe name in ``recipes_dir``) and ``--set key=value``."""
    named = ""
    if recipes_dir is not None and os.path.isdir(recipes_dir):
        names = sorted(name[:-5] for name in os.listdir(recipes_dir) if name.endswith(".toml"))
        named = f", or a recipe's name: {', '.join(names)}"
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"a recipe file (TOML or JSON; a run's config.json repeats that run){named}",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one setting over the recipe (repeatable), e.g. --set epochs=3",
    )


def resolve(path: str | None, recipes_dir: str | None) -> str | None:
    """``path``, or ``recipes_dir/path.toml`` when ``path`` names a recipe there."""
    if path is None or os.path.isfile(path) or recipes_dir is None:
        return path
    named = os.path.join(recipes_dir, f"{path}.toml")
    return named if os.path.isfile(named) else path


def from_arguments(
    cls: type[T], args: argparse.Namespace, recipes_dir: str | None = None, **overrides: Any
) -> T:
    """``load`` of the parsed ``--config`` and ``--set``; then ``overrides`` not None."""
    config = load(cls, resolve(args.config, recipes_dir), args.set)
    given = {key: value for key, value in overrides.items() if value is not None}
    return merge(cls, config, given, "command line") if given else config


def to_dict(config: Any) -> dict[str, Any]:
    """The dataclass as JSON values (tuples as lists): what ``config.json`` holds."""
    return json.loads(json.dumps(dataclasses.asdict(config)))
