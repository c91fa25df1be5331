"""Shared fixtures of the NMT example tests.

The example is a package at the repository root (``examples.nmt``), run as
``python -m examples.nmt.train``; put the root on the import path so plain
``pytest`` finds it too, and this folder, for the helpers in ``tiny.py``.
The tests under ``nmt/`` mirror the example's layout.
"""

import contextlib
import json
import os
import pathlib
import shutil
import sys

import pytest

try:
    import fcntl
except ImportError:  # Windows: each xdist worker makes its own (_once_per_session)
    fcntl = None

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent  # for `import tiny`, the tests' shared helpers
for path in (ROOT, HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def _once_per_session(tmp_path_factory: pytest.TempPathFactory, name: str, make):
    """``make(folder)`` once per test session, its folder shared by the xdist workers.

    The first worker that needs it makes it under a file lock; another waits for
    it and reuses it (``--dist loadfile`` sends the modules that need it to
    either worker). Without xdist, or without ``fcntl`` (Windows), a folder of
    this process's own. Returns ``(folder, what make returned)``, the latter
    through JSON.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None or fcntl is None:
        folder = tmp_path_factory.mktemp(name)
        return folder, make(folder)
    root = tmp_path_factory.getbasetemp().parent  # the session's, above each worker's
    folder, made = root / name, root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not made.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed attempt left
            folder.mkdir()
            made.write_text(json.dumps(make(folder)))
    return folder, json.loads(made.read_text())


@pytest.fixture(scope="session")
def date_data_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A TFDS data dir holding the built ``date_normalization/small``, built once
    per session (``_once_per_session``)."""
    tfds = pytest.importorskip("tensorflow_datasets")
    from examples.nmt.data import date_normalization  # noqa: F401  (registers the builder)

    def build(data_dir):
        tfds.builder("date_normalization/small", data_dir=str(data_dir)).download_and_prepare()

    return _once_per_session(tmp_path_factory, "tfds", build)[0]


@pytest.fixture(scope="session")
def finished_tiny_run(date_data_dir, tmp_path_factory):
    """One finished tiny training run (``tiny.finished_run_args``: trained, evaluated, exported).

    Shared by the tests that only read a finished run or copy it (test_train,
    test_runs, test_readme_saved_model), so the run is made once per test
    session (``_once_per_session``: the xdist workers share it), not once per
    module or worker. (``--dist loadgroup`` would keep them on one worker, but
    it groups nothing under pytest 9.2: pytest-xdist issue 1386.)
    Returns ``(folder, metrics, printed)``: ``train.main``'s metrics and what
    it printed. Tests that change the run work on a copy.
    """
    import io

    import tiny

    from examples.nmt import train

    def run(folder):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            metrics = train.main(tiny.finished_run_args(folder / "run", data_dir=date_data_dir))
        return {"metrics": metrics, "printed": printed.getvalue()}

    folder, made = _once_per_session(tmp_path_factory, "finished", run)
    return folder / "run", made["metrics"], made["printed"]
