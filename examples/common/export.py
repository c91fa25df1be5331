"""A SavedModel from a run of any backend: the export runs in a TensorFlow process.

A ``.keras`` file is backend-neutral, but ``model.export`` and the
TensorFlow ops a SavedModel holds need the TensorFlow backend. A JAX or
PyTorch run therefore ends by running its example's export command
(``python -m examples.<task>.export --model DIR ...``) in a new process with
``KERAS_BACKEND=tensorflow`` (``export_in_tensorflow``); a TensorFlow run
may call the same command in its own process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def export_in_tensorflow(module: str, arguments: Sequence[str]) -> None:
    """``python -m module *arguments`` with ``KERAS_BACKEND=tensorflow``, this checkout first.

    Raises:
        RuntimeError: the export failed; its last line of output.
    """
    command = [sys.executable, "-m", module, *arguments]
    python_path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, "KERAS_BACKEND": "tensorflow", "PYTHONPATH": python_path}
    done = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout or "no output").strip().splitlines()
        raise RuntimeError(f"{module} failed: {lines[-1]}")
