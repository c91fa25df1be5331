"""The special tokens and their ids, owned here and nowhere else.

Every vocabulary of the example (word or SentencePiece) starts with the same
four tokens: 0 = ``[PAD]`` (so ``Embedding(mask_zero=True)`` masks padding),
1 = ``[UNK]``, 2 = ``[START]`` (the first decoder input), 3 = ``[END]`` (the
last decoder target). The source side has no special tokens.
"""

from __future__ import annotations

from typing import Any

PAD, UNK, START, END = "[PAD]", "[UNK]", "[START]", "[END]"
RESERVED = (PAD, UNK, START, END)
PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3


def content_mask(ids: Any) -> Any:
    """True on ``(..., T)`` ``ids`` before the first ``[END]``, except pads and ``[START]``.

    TensorFlow ops (the SavedModel's); the host pipeline's is ``examples.nmt.host.text.content``.
    """
    import tensorflow as tf  # noqa: PLC0415  (this module is also the host pipeline's)

    before_end = tf.cumsum(tf.cast(ids == END_ID, tf.int32), axis=-1) == 0
    return before_end & (ids != PAD_ID) & (ids != START_ID)
