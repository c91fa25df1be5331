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
