"""Draws the figure of docs/image-attention.md into docs/img/, with the page's own code.

    python docs/scripts/image_figures.py [--output DIR]    # about 20 s on a CPU

`image_attention.png`: the page trains its small captioner and draws each word's
attention over a held-out image (`plot_image_attention`). This script runs the
page's Python blocks in order, in a temporary folder, exactly as the docs test
does, and copies the figure the page wrote there to the output folder: the figure
in the docs is the one the page's code draws.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import tempfile
from collections.abc import Sequence

DOCS = pathlib.Path(__file__).resolve().parent.parent
PAGE = DOCS / "image-attention.md"
DEFAULT_OUTPUT = DOCS / "img"
BLOCK = re.compile(r"^(<!-- no-test -->\n)?```python\n(.*?)^```", re.S | re.M)


def run_page(page: pathlib.Path, folder: pathlib.Path) -> dict:
    """Runs the page's Python blocks in `folder`; returns their namespace."""
    namespace = {"__name__": "__docs__"}
    previous = pathlib.Path.cwd()
    try:
        os.chdir(folder)
        for number, (no_test, block) in enumerate(BLOCK.findall(page.read_text()), 1):
            if no_test:
                continue
            print(f"{page.name}: block {number}", flush=True)
            exec(compile(block, f"{page.name} block {number}", "exec"), namespace)  # noqa: S102
    finally:
        os.chdir(previous)
    return namespace


def main(argv: Sequence[str] | None = None) -> list[pathlib.Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=pathlib.Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as folder:
        run_page(PAGE, pathlib.Path(folder))
        for name in ("image_attention.png",):
            target = args.output / name
            shutil.copyfile(pathlib.Path(folder) / name, target)
            print(f"wrote {target}")
            written.append(target)
    return written


if __name__ == "__main__":
    main()
