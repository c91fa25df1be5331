"""docs/nmt-flags.md is what docs/scripts/nmt_flags.py makes of the example's parsers today.

A flag added, removed or changed (its default, choices, help or a recipe's
value) without regenerating the page fails here, with the command that
regenerates it.
"""

import difflib
import importlib.util
import pathlib

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "docs" / "scripts" / "nmt_flags.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("nmt_flags", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_flag_reference_is_current():
    generator = load_generator()
    expected = generator.page()
    committed = generator.PAGE.read_text(encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            expected.splitlines(keepends=True),
            "docs/nmt-flags.md (committed)",
            "docs/nmt-flags.md (from the parsers)",
        )
    )
    assert committed == expected, (
        f"docs/nmt-flags.md is out of date: run `{generator.COMMAND}` and commit it.\n{diff}"
    )


def test_reference_lists_every_flag_of_train():
    from examples.nmt import train

    page = load_generator().page()
    actions = train.make_parser()._actions
    names = [name for action in actions for name in action.option_strings if name != "-h"]
    assert [name for name in names if f"`{name}`" not in page] == []
