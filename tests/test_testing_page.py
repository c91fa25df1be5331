"""docs/testing.md, the one page that says which tests run on which backend, names
every entry of tests/conftest.py's lists: a test moved between backends there
must be moved on the page too.
"""

import ast
import pathlib

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parent.parent
LISTS = ("BACKEND_INDEPENDENT", "EXAMPLES_ON_EVERY_BACKEND", "BACKEND_DEPENDENT")


def conftest_lists(names=LISTS):
    tree = ast.parse((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            name = getattr(node.targets[0], "id", None)
            if name in names:
                found[name] = ast.literal_eval(node.value)
    return found


def test_testing_page_names_every_entry_of_the_conftest_lists():
    lists = conftest_lists()
    assert sorted(lists) == sorted(LISTS)
    page = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    missing = [f"{name}: {entry}" for name, entries in lists.items() for entry in entries]
    missing = [item for item in missing if f"`{item.split(': ', 1)[1]}`" not in page]
    assert missing == [], "docs/testing.md does not name these tests/conftest.py entries"


@pytest.mark.parametrize(
    "page", ["README.md", "docs/nmt.md", "examples/nmt/README.md"], ids=lambda p: p
)
def test_guides_link_to_the_testing_page_and_do_not_restate_it(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "testing.md" in text
    assert "skip on the JAX and" not in text


def test_every_file_conftest_runs_first_exists():
    """A moved or renamed slow file would silently fall back to collection order."""
    run_first = conftest_lists(("RUN_FIRST",))["RUN_FIRST"]
    assert len(run_first) == len(set(run_first))
    assert [path for path in run_first if not (ROOT / "tests" / path).is_file()] == []
