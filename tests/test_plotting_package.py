"""The plotting package as users get it: lazy matplotlib, and the page built from its assets.

tests/test_distribution.py checks that the wheel ships the assets and that an installed
wheel writes the page from them.
"""

import os
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "keras_attention"
ASSETS = PACKAGE / "plotting" / "assets"


def run_python(code, cwd, pythonpath, backend=None):
    """Runs `code` in a fresh interpreter with `pythonpath` first on sys.path."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath), TF_CPP_MIN_LOG_LEVEL="3")
    if backend is not None:
        env["KERAS_BACKEND"] = backend
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_package_imports_without_matplotlib(tmp_path):
    # Keras itself imports matplotlib when it is installed, so "not in sys.modules"
    # cannot be checked here; blocking it proves no module of ours imports it on load.
    out = run_python(
        """
        import sys
        sys.modules["matplotlib"] = None  # any import of it now raises ImportError
        import keras_attention
        import keras_attention.plotting.figures
        import keras_attention.plotting.html_page
        print(keras_attention.__file__)
        try:
            keras_attention.plot_attention([[1.0]], ["a"], ["b"])
        except ImportError as err:
            print(err)
    """,
        cwd=tmp_path,
        pythonpath=ROOT,
    )
    file, error = out.strip().splitlines()[-2:]
    assert pathlib.Path(file).is_relative_to(PACKAGE)
    assert (
        error == "plot_attention needs matplotlib. Install the plotting extra: "
        'pip install "keras-attention-layers[plot]"'
    )


def test_assets_are_real_files_used_by_the_page(tmp_path):
    from keras_attention.plotting import save_attention_html

    path = save_attention_html([[0.25, 0.75]], ["a", "b"], ["x"], tmp_path / "p.html")
    page = path.read_text(encoding="utf-8")
    for name in ("attention.css", "attention.js"):
        assert (ASSETS / name).read_text(encoding="utf-8") in page
