"""Every Python code block in README.md and docs/*.md runs, so the docs cannot rot.

Blocks of one page run in order in one namespace, in a temporary folder.
A page's blocks that import TensorFlow run only on the TensorFlow backend.
"""

import pathlib
import re

import keras
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    blocks = BLOCK.findall(page.read_text())
    for number, block in enumerate(blocks, 1):
        if "import tensorflow" in block and keras.backend.backend() != "tensorflow":
            continue
        code = compile(block, f"{page.name} block {number}", "exec")
        exec(code, namespace)  # noqa: S102 - our own documentation
