"""Text normalization and word standardization, as TensorFlow ops.

Text is NFKC-normalized by ``normalize`` (a TensorFlow Text op), the same in
training, evaluation and the SavedModel. ``standardize`` (word vocabularies)
also lower-cases and spaces tokens apart; it never produces a reserved token
(it lower-cases and splits brackets off).
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

# Control characters become spaces; spaces go around every character that is
# not a letter, mark, digit or space, and between digits and letters.
# (One pattern matching every token is 10-20x slower.)
_SPACING = (
    (r"\p{Cc}", " "),
    (r"([^\pL\pM\pN\pZ\s])", r" \1 "),
    (r"(\pN)([\pL\pM])", r"\1 \2"),
    (r"([\pL\pM])(\pN)", r"\1 \2"),
    (r"[\pZ\s]+", " "),
)


def normalize(texts: tf.Tensor) -> tf.Tensor:
    """Unicode NFKC (``"\uff21"`` -> ``"A"``, ``"\ufb01"`` -> ``"fi"``), as a graph op."""
    return tf_text.normalize_utf8(tf.convert_to_tensor(texts, dtype=tf.string), "NFKC")


def standardize(texts: tf.Tensor) -> tf.Tensor:
    """NFKC-normalizes, lower-cases and space-separates tokens of ``texts``.

    Tokens are digit runs, letter runs and single other characters:
    ``"May 9th, 1998"`` -> ``"may 9 th , 1998"``. TensorFlow ops only: works
    on string tensors of any shape, eagerly, in ``tf.data`` and in a SavedModel.
    """
    texts = tf.strings.lower(normalize(texts), encoding="utf-8")
    for pattern, rewrite in _SPACING:
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return tf.strings.strip(texts)


def tokenize(texts: tf.Tensor) -> tf.RaggedTensor | tf.Tensor:
    """Standardized tokens: a ``(...,)`` string tensor gives ``(..., None)``."""
    return tf.strings.split(standardize(texts))
