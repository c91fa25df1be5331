"""The translator's text steps on the host: ``examples.nmt.translator`` without TensorFlow.

``translate_fn`` runs ``translator.translate``'s three steps for a run whose
vocabularies are the host pipeline's (``examples.nmt.host.vocabularies``):
``encode_sources`` and ``decode_outputs`` in NumPy (the same outputs as
their TensorFlow ops, compared by the tests), the search between them on
the backend, compiled there (``backend.compile_search`` over
``models.decoding.search``). ``sentences`` reads either translator's outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import numpy as np

from examples.nmt import backend
from examples.nmt.models.decoding import Decoder
from examples.nmt.models.decoding import search
from examples.nmt.text.special import PAD_ID
from examples.nmt.text.special import UNK_ID


def _strings(texts: Sequence[str], shape: tuple[int, ...]) -> np.ndarray:
    """UTF-8 ``bytes`` in an object array, as TensorFlow's strings come out in NumPy."""
    array = np.empty(len(texts), object)
    array[:] = [text.encode("utf-8") for text in texts]
    return array.reshape(shape)


def encode_sources(vocabularies: Any, texts: Sequence[Any], max_source_length: int) -> dict:
    """``translator.encode_sources`` in NumPy: ``source_ids`` ``(B, Ts >= 1)`` and their facts."""
    texts = [text.decode("utf-8") if isinstance(text, bytes) else str(text) for text in texts]
    all_ids = vocabularies.source.encode(texts)
    kept = [ids[:max_source_length] for ids in all_ids]
    columns = max([1, *(len(ids) for ids in kept)])
    source_ids = np.full((len(kept), columns), PAD_ID, "int32")
    tokens = [""] * (len(kept) * columns)
    for row, ids in enumerate(kept):
        source_ids[row, : len(ids)] = ids
        for column, index in enumerate(ids):
            tokens[row * columns + column] = vocabularies.source.tokens[index]
    return {
        "source_ids": source_ids,
        "source_tokens": _strings(tokens, (len(kept), columns)),
        "has_tokens": np.array([len(ids) > 0 for ids in kept], bool),
        "source_length": np.array([len(ids) for ids in all_ids], "int32"),
        "unknown_tokens": (source_ids == UNK_ID).sum(axis=1).astype("int32"),
    }


def decode_outputs(vocabularies: Any, sources: dict, result: Any) -> dict:
    """``translator.decode_outputs`` in NumPy: the sources' facts and the search -> outputs."""
    has_tokens = np.asarray(sources["has_tokens"], bool)
    ids = np.where(has_tokens[:, None], np.asarray(result.ids, "int32"), PAD_ID)  # (B, T)
    lengths = np.where(has_tokens, np.asarray(result.lengths, "int32"), 0)  # (B,)
    inside = np.arange(ids.shape[1])[None, :] < lengths[:, None]  # (B, T)
    tokens = _strings(vocabularies.target.tokens, (-1,))
    attention = np.asarray(result.attention, "float32")
    return {
        "translation": _strings(vocabularies.target.decode(ids.tolist()), (len(ids),)),
        "scores": np.where(has_tokens, np.asarray(result.scores, "float32"), 0.0).astype("float32"),
        "attention": attention * inside[..., None].astype("float32"),
        "source_tokens": sources["source_tokens"],
        "target_tokens": np.where(inside, tokens[ids], b""),
        "target_length": lengths.astype("int32"),
        "source_length": sources["source_length"],
        "unknown_tokens": sources["unknown_tokens"],
        "ids": ids,
        "source_ids": sources["source_ids"],
    }


def translate_fn(
    model: Decoder,
    vocabularies: Any,
    *,
    max_length: int = 64,
    max_source_length: int | None = None,
    beam_size: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
) -> Callable[[Sequence[Any]], dict[str, np.ndarray]]:
    """``translator.translate_fn`` for host vocabularies: strings (or bytes) -> NumPy outputs.

    The source columns are padded to a multiple of ``backend.LENGTH_BUCKET``
    (masked: the same ids and scores), so a compiled search is reused.
    """
    max_source_length = max_source_length or max_length
    settings = dict(max_length=max_length, beam_size=beam_size, alpha=alpha, beta=beta)
    run_search = backend.compile_search(model, lambda ids: search(model, ids, **settings))

    def translate_texts(texts: Sequence[Any]) -> dict[str, np.ndarray]:
        sources = encode_sources(vocabularies, list(texts), max_source_length)
        source_ids = sources["source_ids"]  # (B, Ts)
        columns = -(-source_ids.shape[1] // backend.LENGTH_BUCKET) * backend.LENGTH_BUCKET
        result = run_search(np.pad(source_ids, [(0, 0), (0, columns - source_ids.shape[1])]))
        result = result._replace(attention=np.asarray(result.attention)[..., : source_ids.shape[1]])
        return decode_outputs(vocabularies, sources, result)

    return translate_texts


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
