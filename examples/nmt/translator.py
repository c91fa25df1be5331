"""The one path of a sentence: strings -> ids -> search -> strings.

``translate(model, vocabularies, texts)`` is what the evaluation
(``examples.nmt.evaluation``), ``python -m examples.nmt.translate --keras`` and
the SavedModel (``examples.nmt.export``) run; on the TensorFlow backend in
TensorFlow ops only (one graph), on JAX and PyTorch with the text steps (1 and
3) as TensorFlow ops on the host and the search (2) on the backend
(``translate_fn``):

1. ``encode_sources``: the source vocabulary's ``encode`` (NFKC normalization and tokenization,
   the same ops as in training), cut at ``max_source_length`` tokens (the
   run's ``--max-length``); a batch keeps at least one source column (an
   empty batch, or only empty strings);
2. ``search``: ``model.initial_state`` / ``model.step``
   (``examples.nmt.models.decoding``) under the package's greedy search for a
   Python ``beam_size`` of 1, else its beam search (``keras_attention.decoding``,
   the same searches a user's own model on any backend gets; a tensor
   ``beam_size`` gives one graph for every beam size), GNMT length and
   coverage penalties ``alpha`` and ``beta``, with early stopping (only the
   best hypothesis is kept, so a sentence ends once no live beam can
   overtake its best);
3. ``decode_outputs``: the target vocabulary's ``decode`` (SentencePiece detokenization for
   subword and character vocabularies, words joined by spaces for word
   vocabularies).

A sentence without tokens translates to nothing (not to a guess): ``""``,
score 0, no output tokens, zero attention. ``search`` is the example's one
call into the searches. ``model`` may be an ``Ensemble`` of several runs'
models (``examples.nmt.models.ensemble``): the same three steps, the search
over the mean of their log-probabilities.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from examples.nmt import backend
from examples.nmt.host.translation import sentences  # noqa: F401  (translator.sentences)
from examples.nmt.host.vocabularies import Vocabularies
from examples.nmt.models.decoding import Decoder
from examples.nmt.models.decoding import Int
from examples.nmt.models.decoding import Real
from examples.nmt.models.decoding import search
from examples.nmt.text.special import PAD_ID
from examples.nmt.text.special import UNK_ID
from keras_attention import decoding

TEXTS = tf.TensorSpec([None], tf.string, name="texts")
# What the SavedModel's ``translate`` returns; ``translate`` adds ``ids`` and ``source_ids``.
OUTPUTS = (
    "translation",
    "scores",
    "attention",
    "source_tokens",
    "target_tokens",
    "target_length",
    "source_length",
    "unknown_tokens",
)

SearchResult = decoding.SearchResult


def encode_sources(
    vocabularies: Vocabularies, texts: tf.Tensor, max_source_length: int
) -> dict[str, tf.Tensor]:
    """Step 1 in TensorFlow ops: ``(B,)`` strings -> ``source_ids`` ``(B, Ts)`` and their facts.

    Also ``source_tokens`` ``(B, Ts)``, ``has_tokens`` ``(B,)`` bool,
    ``source_length`` ``(B,)`` tokens before the cut and ``unknown_tokens``
    ``(B,)``; ``Ts >= 1`` (an empty batch, or only empty strings, keeps a column).
    """
    all_ids = vocabularies.source.encode(texts)  # (B, None)
    kept_ids = all_ids[:, :max_source_length]  # (B, None)
    source_ids = kept_ids.to_tensor(default_value=PAD_ID)  # (B, Ts)
    source_tokens = tf.gather(tf.constant(vocabularies.source.tokens), kept_ids)
    source_tokens = source_tokens.to_tensor(default_value="")  # (B, Ts)
    pad = tf.maximum(1 - tf.shape(source_ids)[1], 0)
    source_ids = tf.pad(source_ids, [[0, 0], [0, pad]])
    return {
        "source_ids": source_ids,
        "source_tokens": tf.pad(source_tokens, [[0, 0], [0, pad]]),
        "has_tokens": kept_ids.row_lengths() > 0,
        "source_length": tf.cast(all_ids.row_lengths(), tf.int32),
        "unknown_tokens": tf.reduce_sum(tf.cast(source_ids == UNK_ID, tf.int32), axis=1),
    }


def decode_outputs(
    vocabularies: Vocabularies, sources: dict[str, Any], result: SearchResult
) -> dict[str, tf.Tensor]:
    """Step 3 in TensorFlow ops: the sources' facts and the search -> ``translate``'s dict."""
    has_tokens = tf.convert_to_tensor(sources["has_tokens"])
    # A sentence without tokens translates to nothing (not to a guess).
    ids = tf.where(has_tokens[:, None], tf.cast(result.ids, tf.int32), PAD_ID)  # (B, T)
    lengths = tf.where(has_tokens, tf.cast(result.lengths, tf.int32), 0)  # (B,)
    inside = tf.sequence_mask(lengths, tf.shape(ids)[1])  # (B, T)
    target_tokens = tf.gather(tf.constant(vocabularies.target.tokens), ids)  # (B, T)
    attention = tf.cast(result.attention, tf.float32)
    return {
        "translation": vocabularies.target.decode(ids),
        "scores": tf.where(has_tokens, tf.cast(result.scores, tf.float32), 0.0),
        "attention": attention * tf.cast(inside, tf.float32)[..., None],
        "source_tokens": sources["source_tokens"],
        "target_tokens": tf.where(inside, target_tokens, ""),
        "target_length": lengths,
        "source_length": sources["source_length"],
        "unknown_tokens": sources["unknown_tokens"],
        "ids": ids,
        "source_ids": sources["source_ids"],
    }


def translate(
    model: Decoder,
    vocabularies: Vocabularies,
    texts: tf.Tensor,
    *,
    max_length: Int = 64,
    max_source_length: int | None = None,
    beam_size: Int = 1,
    alpha: Real = 0.0,
    beta: Real = 0.0,
) -> dict[str, tf.Tensor]:
    """``(B,)`` strings -> translations, scores, tokens and attention; see the module doc.

    On the TensorFlow backend, in TensorFlow ops only (one graph: the
    SavedModel traces it); on another, ``translate_fn`` runs the same three
    steps with the search on that backend.

    Args:
        max_length: the most output tokens ``T``.
        max_source_length: source tokens kept; ``max_length`` if None.
        beam_size, alpha, beta: as in ``search``.

    Returns:
        ``translation`` ``(B,)`` strings; ``scores`` ``(B,)`` float32;
        ``attention`` ``(B, T, Ts)`` float32, zero after the output;
        ``source_tokens`` ``(B, Ts)`` strings, ``""`` on padding;
        ``target_tokens`` ``(B, T)`` strings, ``""`` after ``[END]``;
        ``target_length`` ``(B,)`` int32 output tokens, ``[END]`` included;
        ``source_length`` ``(B,)`` int32 source tokens before truncation;
        ``unknown_tokens`` ``(B,)`` int32 source tokens kept that are unknown;
        ``ids`` ``(B, T)`` and ``source_ids`` ``(B, Ts)`` int32, 0-padded.
    """
    sources = encode_sources(vocabularies, texts, max_source_length or max_length)
    result = search(
        model,
        sources["source_ids"],
        max_length=max_length,
        beam_size=beam_size,
        alpha=alpha,
        beta=beta,
    )
    return decode_outputs(vocabularies, sources, result)


def translate_fn(
    model: Decoder,
    vocabularies: Vocabularies,
    *,
    max_length: int = 64,
    max_source_length: int | None = None,
    beam_size: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
) -> Callable[[tf.Tensor], dict[str, Any]]:
    """``translate`` with fixed settings as one function of a ``(B,)`` string batch.

    On TensorFlow, one ``tf.function`` (tensors out). On JAX and PyTorch, the
    text steps run as TensorFlow ops on the host and the search on the
    backend, compiled there (``examples.nmt.backend.compile_search``;
    NumPy arrays out); the source columns are padded to a multiple of
    ``backend.LENGTH_BUCKET`` so that a compiled search is reused across batches
    (padding is masked: the same ids and scores).
    """
    max_source_length = max_source_length or max_length
    settings = dict(max_length=max_length, beam_size=beam_size, alpha=alpha, beta=beta)
    if keras.backend.backend() == "tensorflow":
        return tf.function(
            lambda texts: translate(
                model, vocabularies, texts, max_source_length=max_source_length, **settings
            ),
            input_signature=[TEXTS],
            autograph=False,  # the searches are explicit while loops (keras.ops)
        )
    encode = tf.function(
        lambda texts: encode_sources(vocabularies, texts, max_source_length),
        input_signature=[TEXTS],
        autograph=False,
    )
    run_search = backend.compile_search(model, lambda ids: search(model, ids, **settings))

    def translate_texts(texts: tf.Tensor) -> dict[str, Any]:
        sources = {name: value.numpy() for name, value in encode(texts).items()}
        source_ids = sources["source_ids"]  # (B, Ts)
        columns = -(-source_ids.shape[1] // backend.LENGTH_BUCKET) * backend.LENGTH_BUCKET
        padded = np.pad(source_ids, [(0, 0), (0, columns - source_ids.shape[1])])
        result = run_search(padded)
        result = result._replace(attention=result.attention[..., : source_ids.shape[1]])
        outputs = decode_outputs(vocabularies, sources, result)
        return {name: np.asarray(value) for name, value in outputs.items()}

    return translate_texts
