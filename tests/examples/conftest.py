"""Shared fixtures of the NMT example tests.

The example is a package at the repository root (``examples.nmt``), run as
``python -m examples.nmt.train``; put the root on the import path so plain
``pytest`` finds it too, and this folder, for the helpers in ``tiny.py``.
The tests under ``nmt/`` mirror the example's layout.
"""

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent  # for `import tiny`, the tests' shared helpers
for path in (ROOT, HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


@pytest.fixture(scope="session")
def date_data_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A TFDS data dir holding the built ``date_normalization/small``."""
    tfds = pytest.importorskip("tensorflow_datasets")
    from examples.nmt.data import date_normalization  # noqa: F401  (registers the builder)

    data_dir = tmp_path_factory.mktemp("tfds")
    tfds.builder("date_normalization/small", data_dir=str(data_dir)).download_and_prepare()
    return data_dir


@pytest.fixture(scope="session")
def finished_tiny_run(date_data_dir, tmp_path_factory):
    """One finished tiny training run (``tiny.finished_run_args``: trained, evaluated, exported).

    Shared by the tests that only read a finished run or copy it (test_train,
    test_runs, test_readme_saved_model), so the run is made once per xdist
    worker that runs one of them (``--dist loadfile``: a module stays on one
    worker), not once per module. (``--dist loadgroup`` would keep them on
    one worker, but it groups nothing under pytest 9.2: pytest-xdist issue
    1386.)
    Returns ``(folder, metrics, printed)``: ``train.main``'s metrics and what
    it printed. Tests that change the run work on a copy.
    """
    import contextlib
    import io

    import tiny

    from examples.nmt import train

    out = tmp_path_factory.mktemp("finished") / "run"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        metrics = train.main(tiny.finished_run_args(out, data_dir=date_data_dir))
    return out, metrics, printed.getvalue()
