"""Decoding a split and scoring it: BLEU, chrF, exact match, alignment accuracy, WER, PER.

``evaluate`` translates the source strings of a split greedily or with beam
search through ``examples.nmt.translator`` (the path of ``translate.py`` and
the SavedModel: the target vocabulary's ``decode`` gives natural text) and
scores the outputs against
the raw reference sentences, as WMT results are reported: corpus BLEU
(``sacrebleu.metrics.BLEU()``: cased, 13a tokenization) and chrF
(``sacrebleu.metrics.CHRF()``), with their sacreBLEU signatures; exact-match
accuracy (outputs equal to the stripped reference); and, for data with gold
alignments (the date task), attention alignment accuracy: the share of
output tokens whose highest-weight source token is one the gold alignment
names, over the output tokens that have gold links. (A date is one 13a
token, so the date task's BLEU says little; exact match is its score.)
For pronunciations (``pronunciation=True``), also the G2P papers' word and
phoneme error rates over the distinct source words (``pronunciation_scores``).

``python -m examples.nmt.evaluate --model runs/nmt`` scores a saved run.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any

import numpy as np
import sacrebleu
from keras import ops

from examples.nmt.host import translation
from examples.nmt.host.vocabularies import Vocabularies as HostVocabularies
from examples.nmt.models.decoding import Decoder
from examples.nmt.text.special import START_ID


def alignment_accuracy(
    attention: np.ndarray, gold: np.ndarray, lengths: np.ndarray | None = None
) -> tuple[int, int]:
    """Counts output tokens whose argmax source token is a gold link.

    Args:
        attention: ``(B, T, Ts)`` weights of each output step.
        gold: ``(B, Tg, Ts)`` 0/1 gold links, row ``t`` for output token ``t``.
        lengths: ``(B,)`` output tokens per example (rows past it are skipped);
            all rows if None.

    Returns:
        ``(correct, total)`` over rows ``t < min(T, Tg, length)`` with a gold link.
    """
    attention, gold = np.asarray(attention), np.asarray(gold)
    rows = min(attention.shape[1], gold.shape[1])
    columns = min(attention.shape[2], gold.shape[2])
    attention, gold = attention[:, :rows, :columns], gold[:, :rows, :columns] > 0
    linked = gold.any(-1)  # (B, rows)
    if lengths is not None:
        linked &= np.arange(rows)[None, :] < np.asarray(lengths)[:, None]
    best = attention.argmax(-1)  # (B, rows)
    hit = np.take_along_axis(gold, best[..., None], axis=-1)[..., 0]
    return int((hit & linked).sum()), int(linked.sum())


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, Any]:
    """SacreBLEU corpus BLEU and chrF of natural-text ``hypotheses`` against raw ``references``.

    Returns ``bleu``, ``chrf`` and their signatures ``bleu_signature``,
    ``chrf_signature`` (e.g. ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.5.1``).
    """
    if len(hypotheses) != len(references):
        raise ValueError(
            f"Expected one hypothesis per reference. Received: {len(hypotheses)} hypotheses, "
            f"{len(references)} references"
        )
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    return {
        "bleu": bleu.corpus_score(list(hypotheses), [list(references)]).score,
        "bleu_signature": str(bleu.get_signature()),
        "chrf": chrf.corpus_score(list(hypotheses), [list(references)]).score,
        "chrf_signature": str(chrf.get_signature()),
    }


def edit_alignment(
    hypothesis: Sequence[Any],
    reference: Sequence[Any],
    same: Callable[[Any, Any], bool] = operator.eq,
) -> tuple[int, list[tuple[int, int]]]:
    """Levenshtein distance and the alignment that attains it.

    Returns ``(distance, pairs)``: the fewest substitutions, insertions and
    deletions between the two sequences (``same(h, r)`` says whether a
    hypothesis item matches a reference item), and the ``(hypothesis index,
    reference index)`` pairs the alignment puts side by side (matches and
    substitutions), in order; ties prefer pairing, then dropping a
    hypothesis item.
    """
    rows, columns = len(hypothesis), len(reference)
    cost = [[i + j if i == 0 or j == 0 else 0 for j in range(columns + 1)] for i in range(rows + 1)]
    for i in range(1, rows + 1):
        for j in range(1, columns + 1):
            substitute = cost[i - 1][j - 1] + (not same(hypothesis[i - 1], reference[j - 1]))
            cost[i][j] = min(substitute, cost[i - 1][j] + 1, cost[i][j - 1] + 1)
    pairs = []
    i, j = rows, columns
    while i > 0 and j > 0:
        if cost[i][j] == cost[i - 1][j - 1] + (not same(hypothesis[i - 1], reference[j - 1])):
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif cost[i][j] == cost[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
    return cost[rows][columns], pairs[::-1]


def edit_distance(hypothesis: Sequence[str], reference: Sequence[str]) -> int:
    """Levenshtein distance between two token sequences (substitutions, insertions, deletions)."""
    return edit_alignment(hypothesis, reference)[0]


def pronunciation_scores(
    sources: Sequence[str], hypotheses: Sequence[str], references: Sequence[str]
) -> dict[str, Any]:
    """Word and phoneme error rates, as the G2P papers report them.

    The examples are grouped by source word: every reference of a word (its
    alternate pronunciations, one example each) counts, and each distinct
    word is scored once, on its first hypothesis, against its closest
    reference: the fewest edits, the shorter reference on a tie. A word is
    wrong if its phoneme sequence differs from every reference (``wer``:
    wrong words / words); ``per`` is the sum over words of the edit distance
    to the closest reference over the sum of the lengths of those
    references. Phonemes are the white-space-separated tokens. Returns
    ``wer``, ``per`` (fractions), ``words`` and ``references`` (the distinct
    references of all words).
    """
    if not len(sources) == len(hypotheses) == len(references):
        raise ValueError(
            f"Expected one source and hypothesis per reference. Received: {len(sources)} "
            f"sources, {len(hypotheses)} hypotheses, {len(references)} references"
        )
    words: dict[str, tuple[list[str], list[list[str]]]] = {}
    for source, hypothesis, reference in zip(sources, hypotheses, references):
        entry = words.setdefault(source, (hypothesis.split(), []))
        if reference.split() not in entry[1]:
            entry[1].append(reference.split())
    wrong = errors = length = 0
    for hypothesis, options in words.values():
        distance, size = min((edit_distance(hypothesis, ref), len(ref)) for ref in options)
        wrong += distance > 0
        errors, length = errors + distance, length + size
    return {
        "wer": wrong / max(len(words), 1),
        "per": errors / max(length, 1),
        "words": len(words),
        "references": sum(len(options) for _, options in words.values()),
    }


def translate_fn(model: Decoder, vocabularies: Any, **settings: Any) -> Callable:
    """``translator.translate_fn`` (TensorFlow text ops) or, for host vocabularies, the host one.

    Either takes a batch of strings and returns ``translator.translate``'s outputs.
    """
    if isinstance(vocabularies, HostVocabularies):
        return translation.translate_fn(model, vocabularies, **settings)
    from examples.nmt import translator  # noqa: PLC0415  (TensorFlow)

    return translator.translate_fn(model, vocabularies, **settings)


def gold_alignments(pairs: Sequence[Any], vocabularies: Any, max_length: int) -> np.ndarray:
    """The gold links of ``AlignedPair``s as 0/1 ``(B, Tt, Ts)`` matrices (row ``t``: output ``t``).

    ``Ts`` counts each source's tokens cut at ``max_length``, ``Tt`` its
    target tokens cut at ``max_length - 1`` and ``[END]``; links outside
    those lengths are dropped.
    """
    sources = vocabularies.source.encode([pair[0] for pair in pairs])
    targets = vocabularies.target.encode([pair[1] for pair in pairs])
    source_lengths = [min(len(ids), max_length) for ids in sources]
    target_lengths = [min(len(ids), max_length - 1) + 1 for ids in targets]
    gold = np.zeros((len(pairs), max(target_lengths), max([1, *source_lengths])), "float32")
    for row, pair in enumerate(pairs):
        links = pair.alignment
        inside = (links[:, 0] < target_lengths[row]) & (links[:, 1] < source_lengths[row])
        gold[row, links[inside, 0], links[inside, 1]] = 1.0
    return gold


def text_batches(
    split: Sequence[Any], vocabularies: Any, batch_size: int, max_length: int, with_alignment: bool
) -> Iterator[dict[str, Any]]:
    """A split's ``source`` and ``target`` strings (``str`` lists) in order, ``batch_size`` a batch.

    With ``with_alignment`` (a split of ``AlignedPair``s), also each batch's
    gold ``alignment`` (``gold_alignments``).
    """
    for start in range(0, len(split), batch_size):
        pairs = split[start : start + batch_size]
        batch = {"source": [pair[0] for pair in pairs], "target": [pair[1] for pair in pairs]}
        if with_alignment:
            batch["alignment"] = gold_alignments(pairs, vocabularies, max_length)
        yield batch


def evaluate(
    model: Decoder,
    split: Any,
    vocabularies: Any,
    *,
    batch_size: int = 256,
    beam_size: int = 1,
    length_penalty: float = 0.0,
    coverage_penalty: float = 0.0,
    max_length: int = 64,
    max_source_length: int | None = None,
    samples: int = 3,
    pronunciation: bool = False,
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Translates ``split`` and scores it.

    Returns:
        ``(metrics, samples)``: metrics ``bleu``, ``chrf`` and their
        signatures (``corpus_scores``), ``exact_match``, ``examples``;
        with gold alignments, ``alignment_accuracy``; with
        ``pronunciation``, ``wer``, ``per``, ``words`` and ``references``
        (``pronunciation_scores``);
        the first ``samples`` translations with their source tokens, output
        tokens and ``(T, Ts)`` attention, for plots (``sample``). Sources are
        cut at ``max_source_length`` tokens (``max_length`` if None), outputs
        at ``max_length``.
    """
    with_alignment = bool(split) and all(hasattr(pair, "alignment") for pair in split)
    max_source_length = max_source_length or max_length
    translate = translate_fn(
        model,
        vocabularies,
        max_length=max_length,
        max_source_length=max_source_length,
        beam_size=beam_size,
        alpha=length_penalty,
        beta=coverage_penalty,
    )
    batches = text_batches(split, vocabularies, batch_size, max_source_length, with_alignment)
    hypotheses: list[str] = []
    references: list[str] = []
    source_texts: list[str] = []
    correct = total = 0
    kept: list[dict[str, Any]] = []
    for batch in batches:
        outputs = {name: np.asarray(value) for name, value in translate(batch["source"]).items()}
        hypotheses.extend(text.decode("utf-8") for text in outputs["translation"])
        references.extend(text.strip() for text in batch["target"])
        source_texts.extend(text.strip() for text in batch["source"])
        if with_alignment:
            hits, count = alignment_accuracy(
                outputs["attention"], batch["alignment"], outputs["target_length"]
            )
            correct, total = correct + hits, total + count
        for index in range(min(samples - len(kept), len(outputs["translation"]))):
            kept.append(sample(outputs, index, model))
    metrics = {
        "examples": len(hypotheses),
        **corpus_scores(hypotheses, references),
        "exact_match": float(np.mean([h == r for h, r in zip(hypotheses, references)])),
    }
    if with_alignment:
        metrics["alignment_accuracy"] = correct / max(total, 1)
    if pronunciation:
        metrics.update(pronunciation_scores(source_texts, hypotheses, references))
    return metrics, kept


def sample(outputs: dict[str, np.ndarray], index: int, model: Any = None) -> dict[str, Any]:
    """Sentence ``index`` of ``translator.translate``'s outputs, for the heat-maps.

    Its ``source`` and ``target`` tokens and ``(T, Ts)`` ``attention``
    (``translator.sentences``). For a model with ``cross_attention`` (the
    Transformer), also ``heads``: the ``(H, T, Ts)`` weights of every head of
    its alignment layer, from a teacher-forced pass over the output (their
    mean is ``attention``).
    """
    one = {name: value[index : index + 1] for name, value in outputs.items()}
    kept = translation.sentences(one)[0]
    length, source_length = len(kept["target"]), len(kept["source"])
    if hasattr(model, "cross_attention") and length:
        ids = outputs["ids"][index, :length]
        target_in = np.concatenate([[START_ID], ids[:-1]]).astype("int32")[None]
        source_ids = outputs["source_ids"][index : index + 1, :source_length]
        layers = model.cross_attention(source_ids, target_in)
        kept["heads"] = ops.convert_to_numpy(layers[model.alignment_layer][0])  # (H, T, Ts)
    return kept
