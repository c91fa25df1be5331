"""Decoding a split and scoring it: BLEU, chrF, exact match, alignment accuracy.

``evaluate`` translates a split greedily or with beam search (through
``examples.nmt.decoding`` and ``Seq2Seq.step`` or ``Transformer.step``), detokenizes the outputs to
natural text (the target vocabulary's ``decode``) and scores them against
the raw reference sentences, as WMT results are reported: corpus BLEU
(``sacrebleu.metrics.BLEU()``: cased, 13a tokenization) and chrF
(``sacrebleu.metrics.CHRF()``), with their sacreBLEU signatures; exact-match
accuracy (outputs equal to the stripped reference); and, for data with gold
alignments (the date task), attention alignment accuracy: the share of
output tokens whose highest-weight source token is one the gold alignment
names, over the output tokens that have gold links. (A date is one 13a
token, so the date task's BLEU says little; exact match is its score.)

Run ``python -m examples.nmt.evaluate --model runs/nmt`` to score a saved run.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import sacrebleu
import tensorflow as tf

from examples.nmt import data
from examples.nmt import decoding
from examples.nmt import runs
from examples.nmt.model import Seq2Seq
from examples.nmt.model import step_fn
from examples.nmt.transformer import Transformer


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


def make_translate_fn(
    model: Seq2Seq | Transformer,
    *,
    beam_size: int = 1,
    length_penalty: float = 0.0,
    coverage_penalty: float = 0.0,
    max_length: int = 64,
) -> Any:
    """A ``tf.function``: ``(B, Ts)`` source ids -> ``SearchResult`` of the best hypothesis."""

    @tf.function(reduce_retracing=True, autograph=False)  # explicit tf.while_loop
    def translate(source_ids: tf.Tensor) -> decoding.SearchResult:
        state = model.initial_state(source_ids, max_length)
        common = dict(start_id=data.START_ID, end_id=data.END_ID, max_length=max_length)
        if beam_size == 1:
            result = decoding.greedy_search(step_fn(model), state, **common)
        else:
            result = decoding.beam_search(
                step_fn(model),
                state,
                beam_size=beam_size,
                length_penalty_alpha=length_penalty,
                coverage_penalty_beta=coverage_penalty,
                **common,
            )
        return tf.nest.map_structure(lambda x: x[:, 0], result)  # best first

    return translate


def _texts(split: tf.data.Dataset, key: str) -> list[str]:
    """The raw ``key`` strings of a split, stripped of surrounding white space."""
    texts = split.map(lambda example: example[key]).batch(4096)
    return [text.decode("utf-8").strip() for batch in texts for text in batch.numpy()]


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


def evaluate(
    model: Seq2Seq | Transformer,
    split: tf.data.Dataset,
    vocabularies: data.Vocabularies,
    *,
    batch_size: int = 256,
    beam_size: int = 1,
    length_penalty: float = 0.0,
    coverage_penalty: float = 0.0,
    max_length: int = 64,
    max_source_length: int | None = None,
    samples: int = 3,
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Translates ``split`` and scores it.

    Returns:
        ``(metrics, samples)``: metrics ``bleu``, ``chrf`` and their
        signatures (``corpus_scores``), ``exact_match``, ``examples`` and,
        with gold alignments, ``alignment_accuracy``;
        the first ``samples`` translations with their source tokens, output
        tokens and ``(T, Ts)`` attention, for plots. Sources are cut at
        ``max_source_length`` tokens (``max_length`` if None), outputs at
        ``max_length``.
    """
    with_alignment = "alignment" in split.element_spec
    translate = make_translate_fn(
        model,
        beam_size=beam_size,
        length_penalty=length_penalty,
        coverage_penalty=coverage_penalty,
        max_length=max_length,
    )
    batches = data.make_batches(
        split,
        vocabularies,
        batch_size,
        with_alignment=with_alignment,
        cache=False,
        max_length=max_source_length or max_length,
    )
    hypotheses: list[str] = []
    correct = total = 0
    kept: list[dict[str, Any]] = []
    for batch in batches:
        (source_ids, _), _ = batch[:2]  # a third element: the gold alignment
        result = translate(source_ids)
        texts = vocabularies.target.decode(result.ids).numpy()
        hypotheses.extend(text.decode("utf-8") for text in texts)
        if with_alignment:
            hits, count = alignment_accuracy(
                result.attention.numpy(), batch[2].numpy(), result.lengths.numpy()
            )
            correct, total = correct + hits, total + count
        for index in range(min(samples - len(kept), len(texts))):
            kept.append(sample(source_ids[index], result, index, vocabularies, model))
    references = _texts(split, "target")
    metrics = {
        "examples": len(hypotheses),
        **corpus_scores(hypotheses, references),
        "exact_match": float(np.mean([h == r for h, r in zip(hypotheses, references)])),
    }
    if with_alignment:
        metrics["alignment_accuracy"] = correct / max(total, 1)
    return metrics, kept


def sample(
    source_ids: tf.Tensor,
    result: decoding.SearchResult,
    index: int,
    vocabularies: data.Vocabularies,
    model: Any = None,
) -> dict[str, Any]:
    """Example ``index`` of a search result: source and output tokens, ``(T, Ts)`` attention.

    For a model with ``cross_attention`` (the Transformer), also ``heads``:
    the ``(H, T, Ts)`` weights of every head of its alignment layer, from a
    teacher-forced pass over the output (their mean is ``attention``).
    """
    source_ids = source_ids.numpy()
    source = [vocabularies.source.tokens[i] for i in source_ids if i != data.PAD_ID]
    length = int(result.lengths[index])
    ids = result.ids[index, :length].numpy()
    target = [vocabularies.target.tokens[i] for i in ids]
    attention = result.attention[index, :length, : len(source)].numpy()
    kept = {"source": source, "target": target, "attention": attention}
    if hasattr(model, "cross_attention") and length:
        target_in = np.concatenate([[data.START_ID], ids[:-1]]).astype("int32")[None]
        layers = model.cross_attention(source_ids[None, : len(source)], target_in)
        kept["heads"] = np.asarray(layers[model.alignment_layer][0])  # (H, T, Ts)
    return kept


def add_decoding_arguments(parser: argparse.ArgumentParser, default_max_length: Any = 64) -> None:
    at_least_one = runs.integer_at_least(1)
    parser.add_argument("--beam-size", type=at_least_one, default=1, help="1 = greedy search")
    parser.add_argument("--length-penalty", type=float, default=0.0, help="GNMT alpha")
    parser.add_argument("--coverage-penalty", type=float, default=0.0, help="GNMT beta")
    parser.add_argument(
        "--max-decode-length",
        type=at_least_one,
        default=default_max_length,
        help="most output tokens",
    )


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    """Scores a saved run (``model.keras`` + vocabularies) on a split."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.nmt.evaluate", description=main.__doc__
    )
    parser.add_argument("--model", default="runs/nmt", help="a train.py output dir")
    parser.add_argument("--split", default="test", choices=data.SPLITS)
    parser.add_argument("--batch-size", type=runs.integer_at_least(1), default=256)
    data.add_arguments(parser)
    add_decoding_arguments(parser)
    args = parser.parse_args(argv)
    runs.require_tensorflow_backend()
    try:
        model, vocabularies = runs.load_run(args.model)
        split = data.splits_from_args(args)[args.split]
    except (OSError, ValueError, runs.RunError) as error:
        runs.fail(parser.prog, str(error))
    metrics, _ = evaluate(
        model,
        split,
        vocabularies,
        batch_size=args.batch_size,
        beam_size=args.beam_size,
        length_penalty=args.length_penalty,
        coverage_penalty=args.coverage_penalty,
        max_length=args.max_decode_length,
    )
    print(json.dumps(metrics, indent=2, sort_keys=True))
    print(f"BLEU {metrics['bleu']:.1f} ({metrics['bleu_signature']})")
    return metrics


if __name__ == "__main__":
    main()
