"""A Functional model that names its layers before it exists, on every backend.

Both translation models create their layers as attributes, call them to
build the teacher-forced graph, then call ``keras.Model.__init__`` with it
(KerasHub's "=== Layers === / === Functional Model ===" order). On PyTorch a
Keras layer is a ``torch.nn.Module``, which refuses a submodule before its
own ``Module.__init__`` has run ("cannot assign module before
Module.__init__() call"). ``LayersFirstModel`` keeps such attributes plain
until the model exists, then assigns them again, so Keras and PyTorch track
them as usual.
"""

from __future__ import annotations

from typing import Any

import keras


class LayersFirstModel(keras.Model):
    """``keras.Model`` whose subclasses may set layers before ``super().__init__``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if keras.backend.backend() == "torch" and "_modules" not in self.__dict__:
            self.__dict__.setdefault("_staged", []).append(name)
            object.__setattr__(self, name, value)  # before torch.nn.Module.__init__
            return
        super().__setattr__(name, value)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        for name in self.__dict__.pop("_staged", []):
            setattr(self, name, self.__dict__.pop(name))
