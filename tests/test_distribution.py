"""The sdist and the wheel as the package index would get them.

One build per module, from a clean copy of the source tree: the sdist, the wheel, and a
second wheel built from the unpacked sdist. `.ci/release` goes further: it installs the
wheel with its dependencies and a backend in a fresh environment and runs
`.ci/smoke_wheel.py` there.
"""

import email.parser
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "keras_attention"
ASSETS = PACKAGE / "plotting" / "assets"
DISTRIBUTION = "keras-attention-layers"
# Build outputs, environments and runs of a working tree: never part of a release.
NOT_SOURCE = ("build", "dist", "site", "runs", "outputs", "*.egg-info", "__pycache__", "*.pyc")


def version():
    (match,) = re.findall(r'^__version__ = "(.+)"$', (PACKAGE / "__init__.py").read_text(), re.M)
    return match


def source_files(package):
    """Paths (relative to the package's parent) of the files a wheel should hold."""
    return sorted(
        path.relative_to(package.parent).as_posix()
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )


def build(*args, outdir):
    """`python -m build` without isolation (the test extra has setuptools); returns `outdir`."""
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--quiet", "--outdir", str(outdir)]
        + [str(arg) for arg in args],
        cwd=outdir.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return outdir


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """The sdist, the wheel built from the tree, and the wheel built from the sdist."""
    pytest.importorskip("build", reason="the test extra installs `build`")
    tmp = tmp_path_factory.mktemp("dist")
    tree = tmp / "tree"  # the repository's top-level entries, so that leaks would show
    tree.mkdir()
    ignore = shutil.ignore_patterns(*NOT_SOURCE)
    for entry in ROOT.iterdir():
        if entry.name.startswith(".") or ignore(ROOT, [entry.name]):
            continue
        if entry.is_dir():
            shutil.copytree(entry, tree / entry.name, ignore=ignore)
        else:
            shutil.copy2(entry, tree / entry.name)
    (sdist,) = build("--sdist", tree, outdir=tmp / "sdist").iterdir()
    (wheel,) = build("--wheel", tree, outdir=tmp / "wheel").iterdir()
    (rebuilt,) = build("--wheel", sdist, outdir=tmp / "rebuilt").iterdir()
    return sdist, wheel, rebuilt


def wheel_contents(wheel):
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_wheel_holds_the_package_its_data_and_the_licence_only(dists):
    _, wheel, _ = dists
    assert wheel.name == f"keras_attention_layers-{version()}-py3-none-any.whl"
    names = sorted(wheel_contents(wheel))
    info = f"keras_attention_layers-{version()}.dist-info"
    assert {name.split("/")[0] for name in names} == {"keras_attention", info}  # no tests/ etc.
    assert [n for n in names if n.startswith("keras_attention/")] == source_files(PACKAGE)
    for name in ("py.typed", "plotting/assets/attention.css", "plotting/assets/attention.js"):
        assert f"keras_attention/{name}" in names, name
    assert f"{info}/licenses/LICENSE" in names

    metadata = email.parser.Parser().parsestr(wheel_contents(wheel)[f"{info}/METADATA"].decode())
    assert metadata["Name"] == DISTRIBUTION and metadata["Version"] == version()
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata.get_all("Project-URL") is None  # none until the project has a home
    requires = metadata.get_all("Requires-Dist")
    assert [r for r in requires if "extra ==" not in r] == ["keras>=3.8", "numpy"]


def test_sdist_holds_the_sources_of_the_wheel_only(dists):
    sdist, _, _ = dists
    top = f"keras_attention_layers-{version()}"
    assert sdist.name == f"{top}.tar.gz"
    with tarfile.open(sdist) as archive:
        names = {m.name.removeprefix(f"{top}/") for m in archive.getmembers() if m.isfile()}
    assert {name.split("/")[0] for name in names} == {
        "keras_attention",
        "keras_attention_layers.egg-info",
        "LICENSE",
        "MANIFEST.in",
        "PKG-INFO",
        "README.md",
        "pyproject.toml",
        "setup.cfg",
    }
    assert sorted(n for n in names if n.startswith("keras_attention/")) == source_files(PACKAGE)


def test_sdist_rebuilds_the_same_wheel(dists):
    _, wheel, rebuilt = dists
    assert rebuilt.name == wheel.name
    direct, from_sdist = wheel_contents(wheel), wheel_contents(rebuilt)
    assert sorted(from_sdist) == sorted(direct)
    assert [name for name in direct if from_sdist[name] != direct[name]] == []


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_install_instructions_name_the_files_the_build_makes(dists, page):
    _, wheel, _ = dists  # the file name carries the version: bumping it must update the page
    assert f'pip install "dist/{wheel.name}[plot]"' in (ROOT / page).read_text(encoding="utf-8")


def test_installed_wheel_writes_the_page_from_its_own_assets(dists, tmp_path):
    _, wheel, _ = dists
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", target, wheel],
        check=True,
        capture_output=True,
        timeout=300,
    )
    code = f"""
        import pathlib, sys
        sys.path.insert(0, {str(target)!r})
        import keras_attention
        print(keras_attention.__file__)
        page = keras_attention.save_attention_html(
            [[[0.9, 0.1]], [[0.2, 0.8]]], ["le", "chat"], ["cat"], "page.html")
        print(page.resolve())
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        # This run's backend: Keras's numpy backend imports JAX, which `.[test]` lacks.
        env=dict(os.environ, PYTHONPATH="", TF_CPP_MIN_LOG_LEVEL="3"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    file, page = result.stdout.strip().splitlines()[-2:]
    assert pathlib.Path(file).is_relative_to(target)
    text = pathlib.Path(page).read_text(encoding="utf-8")
    for name in ("attention.css", "attention.js"):
        assert (ASSETS / name).read_text(encoding="utf-8") in text
    assert 'id="ka-head"' in text and "ka-cell-0-1" in text


# The index's `keras-attention` is an unrelated 2019 package that ships its own
# top-level keras_attention/; an install command naming it (or a spelling pip treats
# as the same name) installs that package, not this one.
OLD_INSTALL = re.compile(
    r"pip install.*\bkeras[-_.]attention\b(?![-_.]layers)|keras[-_.]attention\["
)
FOREIGN_URL = re.compile(r"github\.com/keras-attention|keras-attention\.github\.io")
TEXT_SUFFIXES = {".md", ".py", ".toml", ".yml", ".yaml", ".cfg", ".txt", ".in", ".html", ".js"}


def repository_text_files():
    ignore = shutil.ignore_patterns(*NOT_SOURCE)
    for folder, dirs, files in os.walk(ROOT):
        skipped = ignore(folder, dirs)
        dirs[:] = sorted(d for d in dirs if d not in skipped and (d == ".ci" or d[0] != "."))
        for name in sorted(files):
            path = pathlib.Path(folder, name)
            if path.suffix in TEXT_SUFFIXES or path.parent.name == ".ci":
                yield path


def test_nothing_tells_a_user_to_install_another_package():
    offenders = {}
    for path in repository_text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OLD_INSTALL.search(line) or FOREIGN_URL.search(line):
                offenders.setdefault(path.relative_to(ROOT).as_posix(), []).append(number)
    assert offenders == {}
