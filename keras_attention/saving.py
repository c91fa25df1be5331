"""Loading `.keras` files with clear errors.

`keras.saving.load_model` works for models with this package's layers once
`keras_attention` is imported (importing registers the classes). Without it,
or for a damaged file, Keras's messages bury the cause: a class it cannot
locate appears deep inside a long error, and a truncated file is reported as
"File not found". `load_model` here imports the package (so our layers always
load), checks the file first, and names what is wrong.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterator
from typing import Any

import keras

__all__ = [
    "load_model",
]


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """`keras.saving.load_model`, with this package's layers registered and clear errors.

    Args:
        filepath: path to a `.keras` file (other formats go straight to Keras).
        custom_objects, compile, safe_mode: as in `keras.saving.load_model`.

    Raises:
        FileNotFoundError: no file at `filepath`.
        ValueError: a `.keras` file that is not a valid zip archive (truncated
            or corrupt).
        TypeError: the model holds a registered class whose package is not
            imported; the message names the class, its module and the import.
    """
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_model: no file at {path!r}.")
    if str(path).endswith(".keras") and os.path.isfile(path):
        if not zipfile.is_zipfile(path):
            raise ValueError(
                f"load_model: {path!r} is not a valid .keras file (a .keras file is a zip "
                "archive); it is probably truncated or corrupt. Save the model again."
            )
        _check_classes(path, custom_objects or {})
    return keras.saving.load_model(
        path, custom_objects=custom_objects, compile=compile, safe_mode=safe_mode
    )


def _check_classes(path: str, custom_objects: dict) -> None:
    with zipfile.ZipFile(path) as archive:
        try:
            config = json.loads(archive.read("config.json"))
        except (KeyError, ValueError, zipfile.BadZipFile) as error:
            raise ValueError(
                f"load_model: {path!r} has no readable config.json ({error}); it is "
                "probably truncated or corrupt."
            ) from None
    for item in _registered_objects(config):
        name = item["registered_name"]
        if name in custom_objects or item.get("class_name") in custom_objects:
            continue
        if keras.saving.get_registered_object(name) is None:
            module = item.get("module") or name.split(">")[0]
            raise TypeError(
                f"load_model: {path!r} uses the class {item.get('class_name')!r} "
                f"(registered as {name!r}, defined in module {module!r}), which is not "
                f"registered in this process. `import {module}` before loading, or pass "
                "it in `custom_objects`."
            )


def _registered_objects(config: Any) -> Iterator[dict]:
    """Every serialized object of a config registered by a package (`"package>Name"`)."""
    if isinstance(config, dict):
        name = config.get("registered_name")
        if isinstance(name, str) and ">" in name:
            yield config
        for value in config.values():
            yield from _registered_objects(value)
    elif isinstance(config, list):
        for value in config:
            yield from _registered_objects(value)
