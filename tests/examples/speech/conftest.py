"""What the speech example's tests share: the FSDD copy beside the repository, one tiny run.

The recordings are read from ``<repository>/../shared/data/fsdd.zip`` (never
committed here; FSDD, CC BY-SA 4.0, Zohar Jackson and contributors); tests
that need them skip when it is absent.
"""

import contextlib
import io
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
FSDD = ROOT.parent / "shared" / "data" / "fsdd.zip"


@pytest.fixture(scope="session")
def fsdd() -> str:
    if not FSDD.is_file():
        pytest.skip(f"the FSDD copy {FSDD} is absent (see examples/speech/README.md)")
    return str(FSDD)


@pytest.fixture(scope="session")
def tiny_run(fsdd, tmp_path_factory):
    """``(folder, metrics, printed)`` of one finished tiny run (recipe ``tiny``, no export)."""
    from examples.speech import train

    folder = tmp_path_factory.mktemp("speech") / "run"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        values = train.main(
            ["--config", "tiny", "--data", fsdd, "--output-dir", str(folder), "--no-export"]
        )
    return folder, values, printed.getvalue()
