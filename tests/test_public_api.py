"""The public surface of keras_attention equals its list, `keras_attention/_api.py`.

A public module's surface is its `__all__`: the names `from m import *` gives,
the names the API reference renders. It must equal the module's tuple in
`PUBLIC`, and each name must import. Every other name a public module defines
without a leading underscore is listed in `INTERNAL_NAMES`, so nothing becomes
public (or silently stops being so) without an edit to the list. Every module
of the package is either public or internal (`INTERNAL`, or a name starting
with `_`). Moving code between internal modules keeps these tests green;
removing or renaming a public name does not.

These run on every backend (importing the package is what differs between
them); the API reference check reads files only.
"""

import importlib
import importlib.util
import pathlib
import pkgutil
import types

import keras
import pytest

import keras_attention
from keras_attention import _api

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIX = "keras_attention/_api.py (PUBLIC) and the module's __all__ change together"


def _package_modules():
    """Every module and package of keras_attention, found on disk (leaf modules not imported)."""
    names = ["keras_attention"]
    for info in pkgutil.walk_packages(keras_attention.__path__, "keras_attention."):
        names.append(info.name)
    return names


def _internal(name):
    parts = name.split(".")
    prefixes = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return any(part.startswith("_") for part in parts) or bool(prefixes & set(_api.INTERNAL))


def test_every_module_is_public_or_internal():
    unclassified = [
        name for name in _package_modules() if name not in _api.PUBLIC and not _internal(name)
    ]
    assert not unclassified, (
        f"modules neither public nor internal: {unclassified}; add each to PUBLIC or INTERNAL "
        "(with the reason) in keras_attention/_api.py"
    )


def test_the_list_names_existing_modules_once():
    modules = set(_package_modules())
    for name in [*_api.PUBLIC, *_api.INTERNAL]:
        assert name in modules, f"keras_attention/_api.py lists {name}, which does not exist"
    both = [name for name in _api.PUBLIC if _internal(name)]
    assert not both, f"public modules under an internal one: {both}"
    for module, names in _api.PUBLIC.items():
        assert len(set(names)) == len(names), f"{module}: a name listed twice in PUBLIC"


@pytest.mark.parametrize("module_name", list(_api.PUBLIC))
def test_public_names_equal_the_list(module_name):
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{module_name} has no __all__; {FIX}"
    assert len(set(exported)) == len(exported), f"{module_name}.__all__ names a name twice"
    listed = set(_api.PUBLIC[module_name])
    assert set(exported) == listed, (
        f"{module_name}: __all__ adds {sorted(set(exported) - listed)} and lacks "
        f"{sorted(listed - set(exported))}; {FIX}. Removing or renaming a public name is a "
        "breaking change: keep the old name importable instead."
    )


@pytest.mark.parametrize("module_name", list(_api.PUBLIC))
def test_every_listed_name_imports(module_name):
    for name in _api.PUBLIC[module_name]:
        namespace = {}
        exec(f"from {module_name} import {name}", namespace)  # noqa: S102 - the statement a user writes
        assert name in namespace


def _defined_in(obj, module_name):
    """Whether `obj` belongs to `module_name` (defined there or in a module under it).

    Objects without `__module__` (numbers, strings, tuples) count as the module's own.
    """
    home = getattr(obj, "__module__", None)
    return home is None or home == module_name or home.startswith(module_name + ".")


@pytest.mark.parametrize("module_name", list(_api.PUBLIC))
def test_no_unlisted_public_names(module_name):
    module = importlib.import_module(module_name)
    listed = set(_api.PUBLIC[module_name])
    internal = set(_api.INTERNAL_NAMES.get(module_name, ()))
    assert not listed & internal, f"{module_name}: public and internal: {listed & internal}"
    unlisted = [
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and not isinstance(obj, types.ModuleType)
        and _defined_in(obj, module_name)
        and name not in listed | internal
    ]
    assert not unlisted, (
        f"{module_name} defines {unlisted} without a leading underscore: list each in PUBLIC "
        "(and __all__) or INTERNAL_NAMES of keras_attention/_api.py"
    )
    for name in internal:
        assert hasattr(module, name), f"INTERNAL_NAMES lists {module_name}.{name}, which is gone"


@pytest.mark.parametrize("module_name", list(_api.PUBLIC))
def test_internal_modules_are_not_reexported(module_name):
    module = importlib.import_module(module_name)
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType):
            assert obj.__name__ in _api.PUBLIC, (
                f"{module_name}.__all__ exports the internal module {obj.__name__}"
            )


def test_layers_are_registered_under_their_public_names():
    for name in _api.LAYERS:
        cls = getattr(keras_attention, name)
        assert getattr(keras_attention.layers, name) is cls
        if not (isinstance(cls, type) and issubclass(cls, keras.layers.Layer)):
            continue
        if name in _api.BASE_CLASSES:
            continue
        registered = f"keras_attention>{name}"
        assert keras.saving.get_registered_name(cls) == registered, (
            f"{name} is not registered as {registered!r}: decorate it with "
            '@keras.saving.register_keras_serializable(package="keras_attention")'
        )
        assert keras.saving.get_registered_object(registered) is cls
    for name in _api.BASE_CLASSES:
        assert issubclass(getattr(keras_attention, name), keras.layers.Layer)


def test_top_level_names_are_those_of_their_submodules():
    for name in _api.PUBLIC["keras_attention.plotting"]:
        assert getattr(keras_attention, name) is getattr(keras_attention.plotting, name)
    for name in _api.SUBMODULES:
        assert getattr(keras_attention, name) is importlib.import_module(f"keras_attention.{name}")


def _load_script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.backend_independent
def test_api_reference_pages_are_generated_from_the_list():
    generated = _load_script("api_pages").pages()
    folder = ROOT / "docs" / "api"
    committed = {path.name: path.read_text() for path in folder.glob("*.md")}
    differ = sorted(name for name in generated if committed.get(name) != generated[name])
    extra = sorted(set(committed) - set(generated))
    assert not differ and not extra, (
        f"docs/api/ is not what keras_attention/_api.py generates (differ: {differ}, not "
        f"generated: {extra}); run `python docs/scripts/api_pages.py` and commit docs/api/"
    )
