"""The plotting package as users get it: lazy matplotlib, and assets shipped in the wheel."""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import zipfile

import keras
import pytest

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


def source_files(package):
    """Paths (relative to the package's parent) of the files a wheel should hold."""
    return sorted(
        path.relative_to(package.parent).as_posix()
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )


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
        'pip install "keras-attention[plot]"'
    )


def test_assets_are_real_files_used_by_the_page(tmp_path):
    from keras_attention.plotting import save_attention_html

    path = save_attention_html([[0.25, 0.75]], ["a", "b"], ["x"], tmp_path / "p.html")
    page = path.read_text(encoding="utf-8")
    for name in ("attention.css", "attention.js"):
        assert (ASSETS / name).read_text(encoding="utf-8") in page


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="packaging does not depend on the backend; runs once, under KERAS_BACKEND=tensorflow",
)
def test_wheel_ships_the_plotting_assets(tmp_path):
    tree = tmp_path / "tree"  # a clean copy: no stale build/ of the source tree
    shutil.copytree(
        PACKAGE, tree / "keras_attention", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tree / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(tmp_path / "dist"),
            str(tree),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("keras_attention-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = sorted(n for n in archive.namelist() if n.startswith("keras_attention/"))
    assert shipped == source_files(PACKAGE)  # every module, asset and py.typed
    assert "keras_attention/plotting/assets/attention.js" in shipped

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--quiet",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    out = run_python(
        f"""
        import pathlib, sys
        sys.path.insert(0, {str(target)!r})
        import keras_attention
        print(keras_attention.__file__)
        page = keras_attention.save_attention_html(
            [[[0.9, 0.1]], [[0.2, 0.8]]], ["le", "chat"], ["cat"], "page.html")
        print(page.resolve())
    """,
        cwd=tmp_path,
        pythonpath="",
        backend="numpy",
    )
    file, page = out.strip().splitlines()[-2:]
    assert pathlib.Path(file).is_relative_to(target)
    text = pathlib.Path(page).read_text(encoding="utf-8")
    for name in ("attention.css", "attention.js"):
        assert (ASSETS / name).read_text(encoding="utf-8") in text
    assert 'id="ka-head"' in text and "ka-cell-0-1" in text
