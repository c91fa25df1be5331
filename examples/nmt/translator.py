"""The one path of a sentence: strings -> ids -> search -> strings.

``translate(model, vocabularies, texts)`` is what the evaluation
(``examples.nmt.evaluation``), ``python -m examples.nmt.translate --keras`` and
the SavedModel (``examples.nmt.export``) run, in TensorFlow ops only:

1. the source vocabulary's ``encode`` (NFKC normalization and tokenization,
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
3. the target vocabulary's ``decode`` (SentencePiece detokenization for
   subword and character vocabularies, words joined by spaces for word
   vocabularies).

A sentence without tokens translates to nothing (not to a guess): ``""``,
score 0, no output tokens, zero attention. ``search`` is the example's one
call into the searches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from examples.nmt.models.decoding import Decoder
from examples.nmt.models.decoding import search_start
from examples.nmt.text.special import END_ID
from examples.nmt.text.special import PAD_ID
from examples.nmt.text.special import START_ID
from examples.nmt.text.special import UNK_ID
from examples.nmt.text.vocabularies import Vocabularies
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
# A beam size, length or penalty may be a Python number or a scalar tensor (a graph input).
Int = int | tf.Tensor
Real = float | tf.Tensor


def search(
    model: Decoder,
    source_ids: tf.Tensor,
    *,
    max_length: Int = 64,
    beam_size: Int = 1,
    alpha: Real = 0.0,
    beta: Real = 0.0,
) -> SearchResult:
    """The best hypothesis of a search over ``(B, Ts)`` source ids; fields ``(B, ...)``.

    A ``beam_size`` of 1 (a Python int, or a tensor that holds 1 when the
    graph runs) takes the greedy search (``scores == log_probs``); anything
    else the beam search, with the GNMT length penalty ``alpha`` and coverage
    penalty ``beta``.
    """
    common = dict(start_id=START_ID, end_id=END_ID, max_length=max_length, pad_id=PAD_ID)

    def greedy() -> SearchResult:
        step, state = search_start(model, source_ids, max_length, 1)
        return decoding.greedy_search(step, state, **common)

    def beam() -> SearchResult:
        step, state = search_start(model, source_ids, max_length, beam_size)
        # Only the best hypothesis is kept: each sentence stops once its best
        # has ended for good, not when all its beams have (same translation).
        return decoding.beam_search(
            step,
            state,
            beam_size=beam_size,
            length_penalty_alpha=alpha,
            coverage_penalty_beta=beta,
            early_stopping=True,
            **common,
        )

    if tf.is_tensor(beam_size):  # a graph input (the SavedModel): checked when it runs
        tf.debugging.assert_greater_equal(
            beam_size, 1, message="Expected beam_size >= 1 (a SavedModel input)"
        )
        # One graph, both searches: a beam of 1 would gather every state
        # (the Transformer's whole key/value caches) at every step.
        result = tf.cond(tf.equal(beam_size, 1), greedy, beam)
    else:
        result = greedy() if beam_size == 1 else beam()
    return tf.nest.map_structure(lambda x: x[:, 0], result)  # best first


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
    all_ids = vocabularies.source.encode(texts)  # (B, None)
    kept_ids = all_ids[:, : max_source_length or max_length]  # (B, None)
    source_ids = kept_ids.to_tensor(default_value=PAD_ID)  # (B, Ts)
    source_tokens = tf.gather(tf.constant(vocabularies.source.tokens), kept_ids)
    source_tokens = source_tokens.to_tensor(default_value="")  # (B, Ts)
    has_tokens = kept_ids.row_lengths() > 0  # (B,)
    # An empty batch or empty strings still need one source column.
    pad = tf.maximum(1 - tf.shape(source_ids)[1], 0)
    source_ids = tf.pad(source_ids, [[0, 0], [0, pad]])
    source_tokens = tf.pad(source_tokens, [[0, 0], [0, pad]])
    result = search(
        model, source_ids, max_length=max_length, beam_size=beam_size, alpha=alpha, beta=beta
    )
    # A sentence without tokens translates to nothing (not to a guess).
    ids = tf.where(has_tokens[:, None], result.ids, PAD_ID)  # (B, T)
    lengths = tf.where(has_tokens, result.lengths, 0)  # (B,)
    inside = tf.sequence_mask(lengths, tf.shape(ids)[1])  # (B, T)
    target_tokens = tf.gather(tf.constant(vocabularies.target.tokens), ids)  # (B, T)
    return {
        "translation": vocabularies.target.decode(ids),
        "scores": tf.where(has_tokens, result.scores, 0.0),
        "attention": result.attention * tf.cast(inside, tf.float32)[..., None],
        "source_tokens": source_tokens,
        "target_tokens": tf.where(inside, target_tokens, ""),
        "target_length": lengths,
        "source_length": tf.cast(all_ids.row_lengths(), tf.int32),
        "unknown_tokens": tf.reduce_sum(tf.cast(source_ids == UNK_ID, tf.int32), axis=1),
        "ids": ids,
        "source_ids": source_ids,
    }


def translate_fn(
    model: Decoder, vocabularies: Vocabularies, **settings: Any
) -> Callable[[tf.Tensor], dict[str, tf.Tensor]]:
    """``translate`` with fixed ``settings`` as one ``tf.function`` of a ``(B,)`` string batch."""
    return tf.function(
        lambda texts: translate(model, vocabularies, texts, **settings),
        input_signature=[TEXTS],
        autograph=False,  # the searches are explicit while loops (keras.ops)
    )


def sentences(outputs: dict[str, Any]) -> list[dict[str, Any]]:
    """``translate``'s batch outputs (tensors or arrays), one dict per sentence.

    Each holds ``translation`` (str), ``score``, the ``source`` and ``target``
    tokens (``[END]`` included), the ``(T, Ts)`` ``attention`` over them,
    ``source_length`` and ``unknown_tokens``.
    """
    outputs = {name: np.asarray(value) for name, value in outputs.items()}
    results = []
    for index, text in enumerate(outputs["translation"]):
        source = [token.decode() for token in outputs["source_tokens"][index] if token]
        length = int(outputs["target_length"][index])
        results.append(
            {
                "translation": text.decode(),
                "score": float(outputs["scores"][index]),
                "source": source,
                "target": [token.decode() for token in outputs["target_tokens"][index, :length]],
                "attention": outputs["attention"][index, :length, : len(source)],
                "source_length": int(outputs["source_length"][index]),
                "unknown_tokens": int(outputs["unknown_tokens"][index]),
            }
        )
    return results
