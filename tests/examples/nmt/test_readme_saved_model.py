"""The README's SavedModel snippet runs as written, in a process that needs nothing of ours.

The block is read from README.md; only its path is replaced, by the SavedModel of a
tiny training run. It runs in a fresh interpreter (`-I`: no PYTHONPATH, no script or
working folder on sys.path) from a temporary folder, so `examples` cannot be imported
there; afterwards the process checks that it never imported `keras_attention` either.
"""

import os
import pathlib
import re
import subprocess
import sys

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("the SavedModel comes from the TensorFlow-based example", allow_module_level=True)

pytest.importorskip("tensorflow_text")


ROOT = pathlib.Path(__file__).resolve().parents[3]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
README_PATH = '"runs/nmt/saved_model"'
# Appended to the snippet: what the process imported while it ran.
AFTER = """
import importlib.util as _util
import sys as _sys
assert "keras_attention" not in _sys.modules, "the snippet imported keras_attention"
assert _util.find_spec("examples") is None, "the example's code was importable"
print("snippet ran")
"""


def readme_snippet():
    (block,) = [b for b in BLOCK.findall((ROOT / "README.md").read_text()) if README_PATH in b]
    return block


def test_the_readme_block_is_the_one_this_test_runs():
    block = readme_snippet()
    assert block.count(README_PATH) == 1
    assert block.index("import tensorflow_text") < block.index("tf.saved_model.load(")


@pytest.fixture
def saved_model(finished_tiny_run):
    """The SavedModel of the shared finished tiny run (tests/examples/conftest.py)."""
    out = finished_tiny_run[0]
    assert (out / "target_sentencepiece.model").exists()  # the SentencePiece op is in the graph
    return out / "saved_model"


def test_readme_saved_model_snippet_runs_as_written(saved_model, tmp_path):
    code = readme_snippet().replace(README_PATH, repr(str(saved_model))) + AFTER
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERAS_BACKEND")}
    result = subprocess.run(
        [sys.executable, "-I", "-c", code],
        cwd=tmp_path,
        env=dict(env, TF_CPP_MIN_LOG_LEVEL="3"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    translations, done = result.stdout.strip().splitlines()[-2:]
    assert done == "snippet ran"
    assert re.fullmatch(r"\[b'[^']*' b'[^']*'\]", translations), translations  # two sentences
