"""The example's one input pipeline: plain Python and NumPy on the host, on every backend.

Every dataset is read into lists of ``(source, target)`` pairs
(``splits``: files, the bundled dictionary, the generated date task with its
gold alignments, and TFDS datasets, read through TensorFlow Datasets), cut
into ``keras.utils.PyDataset`` batches (``batches``) by the run's
vocabularies (``vocabularies``, ``text``: SentencePiece and word tokenizers
in Python, writing the files the SavedModel's TensorFlow Text tokenizers
read), and decoded by the package's searches (``translation``).
``fingerprint`` is FarmHash Fingerprint64, the splits' hash, so the splits
are those of TensorFlow's ``tf.strings.to_hash_bucket_fast``.
``tensorflow_available()`` says whether this Python can also write a
SavedModel.
"""

from __future__ import annotations


def tensorflow_available() -> bool:
    """Whether TensorFlow and TensorFlow Text import (imports them when they do)."""
    try:
        import tensorflow  # noqa: F401, PLC0415
        import tensorflow_text  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True
