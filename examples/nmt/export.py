"""A TensorFlow SavedModel that translates strings, with no Python code of ours.

``export_translator(model, vocabularies, path)`` writes a SavedModel whose
``translate`` function takes a batch of strings and, optionally, the most
output tokens (an int32 scalar; the run's ``--max-decode-length`` if left
out)::

    import tensorflow_text  # registers the normalization and SentencePiece ops

    translator = tf.saved_model.load("runs/nmt/saved_model")
    outputs = translator.translate(tf.constant(["May 9th, 1998"]))
    outputs = translator.translate(tf.constant(["May 9th, 1998"]), tf.constant(20))
    outputs["translation"]  # (B,) strings; "" for a sentence without tokens
    outputs["attention"]  # (B, T, Ts) float32 weights of each output token
    outputs["source_tokens"]  # (B, Ts) strings, "" on padding
    outputs["target_tokens"]  # (B, T) strings, "" after [END]
    outputs["target_length"]  # (B,) int32 output tokens, [END] included
    outputs["source_length"]  # (B,) int32 source tokens before truncation
    outputs["unknown_tokens"]  # (B,) int32 source tokens kept that are not in the vocabulary

Inside: the run's source vocabulary's ``encode`` (NFKC normalization and
tokenization as TensorFlow ops, ``examples.nmt.vocabulary``/``tokenizer``:
the same ops as in training), ``model.initial_state``/``model.step`` under
greedy decoding (``tf.while_loop``) and the target vocabulary's ``decode``
(SentencePiece detokenization to natural text for subword and character
vocabularies, words joined by spaces for word vocabularies).
"""

from __future__ import annotations

import os

import tensorflow as tf

from examples.nmt import data
from examples.nmt import decoding
from examples.nmt.model import Seq2Seq
from examples.nmt.model import step_fn

_TEXTS = tf.TensorSpec([None], tf.string, name="texts")
_MAX_LENGTH = tf.TensorSpec([], tf.int32, name="max_length")


class Translator(tf.Module):
    """Strings in, translations and attention out; see the module doc."""

    def __init__(
        self,
        model: Seq2Seq,
        vocabularies: data.Vocabularies,
        max_length: int = 64,
        max_source_length: int | None = None,
    ):
        super().__init__(name="translator")
        self.model = model  # tracks the variables
        self.max_length = max_length
        self.max_source_length = max_source_length or max_length
        self.source_vocabulary = vocabularies.source  # tracks the tokenizer's tables
        self.target_vocabulary = vocabularies.target
        self.source_tokens = tf.constant(vocabularies.source.tokens)
        self.target_tokens = tf.constant(vocabularies.target.tokens)

    @tf.function(autograph=False)
    def translate(self, texts: tf.Tensor, max_length: tf.Tensor | None = None) -> dict:
        if max_length is None:
            max_length = tf.constant(self.max_length, tf.int32)
        all_ids = self.source_vocabulary.encode(texts)  # (B, None)
        kept_ids = all_ids[:, : self.max_source_length]  # (B, None)
        source_ids = kept_ids.to_tensor(default_value=data.PAD_ID)  # (B, Ts)
        source_tokens = tf.gather(self.source_tokens, kept_ids).to_tensor(default_value="")
        has_tokens = kept_ids.row_lengths() > 0  # (B,)
        # An empty batch or empty strings still need one source column.
        pad = tf.maximum(1 - tf.shape(source_ids)[1], 0)
        source_ids = tf.pad(source_ids, [[0, 0], [0, pad]])
        source_tokens = tf.pad(source_tokens, [[0, 0], [0, pad]])
        result = decoding.greedy_search(
            step_fn(self.model),
            self.model.initial_state(source_ids),
            data.START_ID,
            data.END_ID,
            max_length,
            pad_id=data.PAD_ID,
        )
        # A sentence without tokens translates to nothing (not to a guess).
        ids = tf.where(has_tokens[:, None], result.ids[:, 0], data.PAD_ID)  # (B, T)
        lengths = tf.where(has_tokens, result.lengths[:, 0], 0)  # (B,)
        inside = tf.sequence_mask(lengths, tf.shape(ids)[1])
        attention = result.attention[:, 0] * tf.cast(inside, tf.float32)[..., None]
        return {
            "translation": self.target_vocabulary.decode(ids),
            "attention": attention,
            "source_tokens": source_tokens,
            "target_tokens": tf.where(inside, tf.gather(self.target_tokens, ids), ""),
            "target_length": lengths,
            "source_length": tf.cast(all_ids.row_lengths(), tf.int32),
            "unknown_tokens": tf.reduce_sum(tf.cast(source_ids == data.UNK_ID, tf.int32), axis=1),
        }


def export_translator(
    model: Seq2Seq,
    vocabularies: data.Vocabularies,
    path: str | os.PathLike,
    max_length: int = 64,
    max_source_length: int | None = None,
) -> str:
    """Writes the SavedModel; returns its path.

    Args:
        max_length: the default most output tokens of ``translate``.
        max_source_length: source tokens kept (the run's ``--max-length``);
            ``max_length`` if None.
    """
    translator = Translator(model, vocabularies, max_length, max_source_length)
    serve = translator.translate.get_concrete_function(_TEXTS)
    translator.translate.get_concrete_function(_TEXTS, _MAX_LENGTH)
    tf.saved_model.save(translator, str(path), signatures={"serving_default": serve})
    return str(path)
