"""SentencePiece vocabularies run by TensorFlow Text (the SavedModel's engine).

A run learns its unigram, BPE or character model from the training text
only, case kept, NFKC-normalized, in plain Python
(``examples.nmt.host.vocabularies``), and saves its bytes as
``{side}_sentencepiece.model``; its ``tensorflow()`` is the class here.
Encoding and decoding are
``tensorflow_text.SentencepieceTokenizer`` ops, so a SavedModel holding the
vocabulary tokenizes and detokenizes by itself, exactly as training did:
``"Let's go."`` -> ``["▁Let", "'", "s", "▁go", "."]`` -> ``"Let's go."``.

Ids follow ``examples.nmt.text.special``: the model's pad, unknown, begin and
end pieces are ``[PAD]`` = 0, ``[UNK]`` = 1, ``[START]`` = 2, ``[END]`` = 3.
A ``"char"`` model has no word-boundary piece (``add_dummy_prefix`` off), so
``"1998-05-09"`` is ten pieces, one a character.
"""

from __future__ import annotations

import hashlib

import sentencepiece
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops import sentencepiece_tokenizer as tf_text_sentencepiece

from examples.nmt.host import text as host_text
from examples.nmt.text.normalization import normalize
from examples.nmt.text.special import RESERVED
from examples.nmt.text.special import content_mask

MODEL_TYPES = host_text.MODEL_TYPES


class _SharedModelResource(tf.saved_model.experimental.TrackableResource):
    """The loaded SentencePiece model, kept in TensorFlow's resource manager.

    ``SentencepieceTokenizer``'s own resource belongs to the kernel that made
    it, and eager kernels are dropped whenever the kernel cache is cleared
    (``tf.random.set_seed``, ``keras.utils.set_random_seed``): every later call
    then fails with "Resource ... does not exist". A shared name keyed by the
    model's bytes keeps it (the same model, the same resource).
    """

    def __init__(self, model: bytes):
        super().__init__()
        self._model = model
        self._shared_name = "sentencepiece_" + hashlib.sha256(model).hexdigest()[:32]
        _ = self.resource_handle  # creates the resource

    def _create_resource(self):
        # The op SentencepieceTokenizer runs, plus a shared name.
        ops = tf_text_sentencepiece.gen_sentencepiece_tokenizer
        return ops.sentencepiece_op(model=self._model, shared_name=self._shared_name)


class SentencePieceVocabulary(tf.Module):
    """A SentencePiece model with the example's vocabulary methods (see the module doc).

    Args:
        model: the serialized SentencePiece model (``ModelProto`` bytes),
            whose first four pieces are ``special.RESERVED``.
    """

    kind = "sentencepiece"

    def __init__(self, model: bytes):
        super().__init__(name="sentencepiece_vocabulary")
        if not isinstance(model, bytes):
            raise TypeError(f"Expected `model` as bytes. Received: {type(model).__name__}")
        processor = sentencepiece.SentencePieceProcessor(model_proto=model)
        pieces = tuple(processor.id_to_piece(i) for i in range(processor.get_piece_size()))
        if pieces[: len(RESERVED)] != RESERVED:
            raise ValueError(
                f"Expected a SentencePiece model whose first pieces are {RESERVED}. "
                f"Received: {pieces[: len(RESERVED)]}"
            )
        self.model = model
        self.tokens = pieces
        self._tokenizer = tf_text.SentencepieceTokenizer(model=model, out_type=tf.int32)
        # Swapped for a resource that survives a cleared kernel cache (see its doc).
        self._tokenizer._model_resource = _SharedModelResource(model)  # noqa: SLF001

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``(B,)`` strings -> ``(B, None)`` int32 piece ids, no special ids."""
        return self._tokenizer.tokenize(normalize(texts))

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        """``(B, T)`` ids -> ``(B,)`` natural text, stopping at ``[END]``.

        Pads and ``[START]`` are dropped; SentencePiece joins the pieces.
        """
        ids = tf.convert_to_tensor(ids, dtype=tf.int32)
        return self._tokenizer.detokenize(tf.ragged.boolean_mask(ids, content_mask(ids)))
