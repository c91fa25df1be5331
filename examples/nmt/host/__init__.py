"""The input pipeline without TensorFlow: plain Python and NumPy on the host.

The example's TensorFlow pipeline (``tf.data``, TensorFlow Text, TFDS) feeds
every backend where TensorFlow is installed. Where it is not (a GPU machine
with only JAX or PyTorch), this one runs ``tsv:``, ``dict:`` and the bundled
``cmu_pronouncing_dictionary`` end to end, with the same splits, the same
vocabulary files and ids, the same batching rules (a ``keras.utils.PyDataset``)
and the same scores; the default date task and other TFDS datasets need
TensorFlow. A run folder is the same either way: a run trained here
evaluates and exports with TensorFlow, and the other way round.

``text`` (tokenizers, and what both pipelines share: token ranking, the
vocabulary files, the SentencePiece trainer), ``fingerprint`` (FarmHash
Fingerprint64, the splits' hash), ``vocabularies``, ``splits``, ``batches``,
``translation``. ``uses_host()`` says which pipeline runs:
``NMT_INPUT_PIPELINE`` (the commands' ``--input-pipeline``) ``numpy`` or
``tensorflow``, or ``auto`` (unset): this one when TensorFlow or TensorFlow
Text cannot be imported.
"""

from __future__ import annotations

import os

PIPELINES = ("auto", "numpy", "tensorflow")
ENVIRONMENT = "NMT_INPUT_PIPELINE"


def requested() -> str:
    """``NMT_INPUT_PIPELINE``, checked: ``auto`` (unset), ``numpy`` or ``tensorflow``."""
    value = os.environ.get(ENVIRONMENT, "auto") or "auto"
    if value not in PIPELINES:
        raise ValueError(f"Expected {ENVIRONMENT} in {PIPELINES}. Received: {value!r}")
    return value


def tensorflow_available() -> bool:
    """Whether TensorFlow and TensorFlow Text import (imports them when they do)."""
    try:
        import tensorflow  # noqa: F401, PLC0415
        import tensorflow_text  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def uses_host() -> bool:
    """Whether this process reads its data with this package (see the module doc)."""
    choice = requested()
    return choice == "numpy" or (choice == "auto" and not tensorflow_available())
