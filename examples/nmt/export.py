"""A TensorFlow SavedModel that translates strings, with no Python code of ours.

``export_translator(model, vocabularies, path)`` writes a SavedModel whose
``translate`` function takes a batch of strings::

    translator = tf.saved_model.load("runs/nmt/saved_model")
    outputs = translator.translate(tf.constant(["May 9th, 1998"]))
    outputs["translation"]      # (B,) strings
    outputs["attention"]        # (B, T, Ts) float32 weights of each output token
    outputs["source_tokens"]    # (B, Ts) strings, "" on padding
    outputs["target_tokens"]    # (B, T) strings, "" after [END]
    outputs["target_length"]    # (B,) int32 output tokens, [END] included

Inside: standardization in pure TensorFlow ops, vocabulary lookup
(``tf.lookup.StaticHashTable``), the encoder, greedy decoding
(``tf.while_loop``) and detokenization. The standardization is
``vocabulary.standardize`` minus its NFKC step (which needs Python, through
``tf.numpy_function``): lower-casing and the same regular expressions. Text
that NFKC would change (full-width digits, ligatures, composed accents written
as two code points) may therefore tokenize differently from training.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf

from examples.nmt import data, decoding, vocabulary
from examples.nmt.model import Seq2SeqDecoder


def standardize_pure(texts: tf.Tensor) -> tf.Tensor:
    """``vocabulary.standardize`` without NFKC: exportable TF string ops only."""
    texts = tf.strings.lower(texts, encoding="utf-8")
    for pattern, rewrite in vocabulary._SPACING:  # noqa: SLF001  (same rules)
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return tf.strings.strip(texts)


def _table(tokens: tuple[str, ...]) -> tf.lookup.StaticHashTable:
    initializer = tf.lookup.KeyValueTensorInitializer(
        tf.constant(tokens), tf.range(len(tokens), dtype=tf.int64)
    )
    return tf.lookup.StaticHashTable(initializer, default_value=data.UNK_ID)


class Translator(tf.Module):
    """Strings in, translations and attention out; see the module doc."""

    def __init__(self, model: keras.Model, vocabularies: data.Vocabularies, max_length: int = 64):
        super().__init__(name="translator")
        self.model = model  # tracks the variables
        self.decoder = Seq2SeqDecoder(model)
        self.max_length = max_length
        self.source_table = _table(vocabularies.source.tokens)
        self.target_tokens = tf.constant(vocabularies.target.tokens)

    @tf.function(
        input_signature=[tf.TensorSpec([None], tf.string, name="texts")], autograph=False
    )
    def translate(self, texts: tf.Tensor) -> dict[str, tf.Tensor]:
        tokens = tf.strings.split(standardize_pure(texts))[:, : self.max_length]  # (B, None)
        source_ids = tf.cast(
            tf.ragged.map_flat_values(self.source_table.lookup, tokens), tf.int32
        ).to_tensor(default_value=data.PAD_ID)  # (B, Ts)
        source_tokens = tokens.to_tensor(default_value="")  # (B, Ts)
        # An empty batch or empty strings still need one source column.
        pad = tf.maximum(1 - tf.shape(source_ids)[1], 0)
        source_ids = tf.pad(source_ids, [[0, 0], [0, pad]])
        source_tokens = tf.pad(source_tokens, [[0, 0], [0, pad]])
        result = decoding.greedy_search(
            self.decoder.step, self.decoder.initial_state(source_ids),
            data.START_ID, data.END_ID, self.max_length, pad_id=data.PAD_ID,
        )
        ids, lengths = result.ids[:, 0], result.lengths[:, 0]  # (B, T), (B,)
        inside = tf.sequence_mask(lengths, tf.shape(ids)[1])
        target_tokens = tf.where(inside, tf.gather(self.target_tokens, ids), "")
        special = (ids == data.END_ID) | (ids == data.PAD_ID) | (ids == data.START_ID)
        words = tf.where(special, "", target_tokens)  # as Vocabulary.decode
        translation = tf.strings.strip(
            tf.strings.regex_replace(tf.strings.reduce_join(words, -1, separator=" "), " +", " ")
        )
        return {
            "translation": translation,
            "attention": result.attention[:, 0],
            "source_tokens": source_tokens,
            "target_tokens": target_tokens,
            "target_length": lengths,
        }


def export_translator(
    model: keras.Model, vocabularies: data.Vocabularies, path: str | os.PathLike,
    max_length: int = 64,
) -> str:
    """Writes the SavedModel; returns its path."""
    translator = Translator(model, vocabularies, max_length)
    tf.saved_model.save(
        translator, str(path), signatures={"serving_default": translator.translate}
    )
    return str(path)
