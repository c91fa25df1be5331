"""Every Python code block in README.md and docs/**/*.md runs, so the docs cannot rot.

Blocks of one page run in order in one namespace, in a temporary folder.
A page's blocks that import TensorFlow or the NMT example (``examples.``,
TensorFlow-based) run only on the TensorFlow backend.
The pages run on TensorFlow and PyTorch, not on JAX: there every eager search
and fit of a page compiles anew (215 s of the 2,014 s of JAX test time on
2 cores, 2026-12-01), and what the pages show is tested on JAX by the tests
of each feature (test_decoding's searches over the MultiHead cache and the
AttentionRNNCell state, the layers', the saving and the masking tests).
A block directly preceded by the line `<!-- no-test -->` (for code that
trains for minutes) is only compiled, so it still has to be valid Python.
"""

import importlib.util
import pathlib
import re

import keras
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^(<!-- no-test -->\n)?```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(page, tmp_path, monkeypatch):
    if keras.backend.backend() == "jax":
        pytest.skip("documentation blocks run on TensorFlow and PyTorch (module docstring)")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    blocks = BLOCK.findall(page.read_text())
    for number, (no_test, block) in enumerate(blocks, 1):
        code = compile(block, f"{page.name} block {number}", "exec")
        if no_test:
            continue
        needs_tensorflow = "import tensorflow" in block or re.search(
            r"^\s*(from|import) examples\.", block, re.M
        )
        if needs_tensorflow and keras.backend.backend() != "tensorflow":
            continue
        exec(code, namespace)  # noqa: S102 - our own documentation


def load_script(name):
    """The module of docs/scripts/NAME.py (not a package: loaded from its file)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_figure_script_draws_every_figure(tmp_path):
    """docs/scripts/make_figures.py, the script behind docs/img/, still runs."""
    pytest.importorskip("matplotlib")
    paths = load_script("make_figures").main(
        ["--output", str(tmp_path), "--epochs", "1", "--examples", "128"]
    )
    committed = {path.name for path in (ROOT / "docs" / "img").glob("*.png")}
    assert {path.name for path in paths} <= committed  # every figure it draws is in docs/img
    assert all(path.stat().st_size > 0 for path in paths)


@pytest.mark.slow
def test_location_figure_script_draws_its_figure(tmp_path):
    """docs/scripts/location_figures.py, behind docs/img/location_alignments.png, still runs."""
    pytest.importorskip("matplotlib")
    (path,) = load_script("location_figures").main(
        ["--output", str(tmp_path), "--epochs", "1", "--examples", "64"]
    )
    assert path.name == "location_alignments.png" and path.stat().st_size > 0
    assert (ROOT / "docs" / "img" / path.name).exists()
