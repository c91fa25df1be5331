"""Long inputs: word error rate and alignment against input length, for a G2P run.

``python -m examples.nmt.long_inputs --model runs/g2p-joined`` joins k test
words into one input (``examples.nmt.data.joined_words.long_examples``;
k = 1, 5, 10, 20, 40 by default, up to ~400 characters), decodes them with
the run's model, and scores each k (``score_long``):

* ``wer``: the word error rate, (substitutions + deletions + insertions) /
  input words, from a minimal edit alignment of the output's words with the
  input's. The output is cut at its ``|`` boundary symbols into words; an
  output word matches input word ``i`` if it equals one of ``i``'s
  references (``align_words``);
* ``positional_wer``: the share of input words ``i`` whose output word ``i``
  is not one of their references: a missing or extra boundary shifts every
  later word, so one merged pair of words counts all the words after it
  (the first table in docs/pronunciation.md used this one);
* ``exact_match``: the share of inputs whose every word is right, with no
  word more;
* ``alignment_accuracy``: the share of output phonemes (boundaries aside)
  whose highest-weight source token lies inside the span of the input word
  their output word is aligned with by ``align_words`` (a phoneme of an
  inserted word is a miss): word-level alignment from gold word boundaries.

The run must have been trained on joins (``--join-words``, so that it
writes boundaries); the test split is the run's own (``--dataset``,
``--test`` as in training). Writes ``long_inputs.json`` and
``long_inputs.png`` (WER and alignment against k) into ``--model``.

``--compare LABEL=RUN ...`` draws several runs' ``long_inputs.json`` into
one figure (``--figure``) instead of scoring.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from examples.nmt import cli
from examples.nmt import evaluation
from examples.nmt import runs
from examples.nmt.data.arguments import is_pronunciation
from examples.nmt.data.joined_words import BOUNDARY
from examples.nmt.data.joined_words import LongExample
from examples.nmt.data.joined_words import long_examples
from examples.nmt.host import splits
from examples.nmt.host.translation import sentences

DEFAULT_KS = (1, 5, 10, 20, 40)


def split_words(tokens: Sequence[str]) -> list[list[str]]:
    """Output tokens (``[END]`` excluded) cut at ``BOUNDARY`` into words."""
    words: list[list[str]] = [[]]
    for token in tokens:
        if token == BOUNDARY:
            words.append([])
        else:
            words[-1].append(token)
    return words


def align_words(
    hypothesis: Sequence[Sequence[str]], references: Sequence[Sequence[str]]
) -> tuple[int, list[tuple[int, int]]]:
    """A minimal edit alignment of output words with input words.

    Args:
        hypothesis: the output's words, each a list of phonemes.
        references: for each input word, its pronunciations (strings of
            space-separated phonemes).

    Returns:
        ``(edits, pairs)``: the fewest substitutions, deletions and
        insertions turning the input words into the output's, and the
        ``(output word, input word)`` pairs that alignment puts side by side
        (matches and substitutions), in order.
    """
    from examples.nmt.evaluation import edit_alignment  # noqa: PLC0415  (TensorFlow)

    words = [" ".join(word) for word in hypothesis]
    return edit_alignment(words, references, lambda word, options: word in options)


def score_long(
    examples: Sequence[LongExample],
    outputs: Sequence[dict[str, Any]],
) -> dict[str, float]:
    """``wer``, ``positional_wer``, ``exact_match``, ``alignment_accuracy`` and ``words``.

    See the module doc.

    Args:
        examples: the inputs (``long_examples``).
        outputs: one per example: ``target`` tokens (a final ``[END]``
            ignored) and their ``(T, Ts)`` ``attention`` over the source
            tokens (``examples.nmt.translator.sentences``).
    """
    if len(examples) != len(outputs):
        raise ValueError(
            f"Expected one output per example. Received: {len(examples)} examples, "
            f"{len(outputs)} outputs"
        )
    edits = shifted = words = exact = hits = phonemes = 0
    for example, output in zip(examples, outputs):
        tokens = [token for token in output["target"] if token != "[END]"]
        hypothesis = split_words(tokens)
        right = [
            index < len(hypothesis) and " ".join(hypothesis[index]) in options
            for index, options in enumerate(example.references)
        ]
        shifted += right.count(False)
        words += len(right)
        exact += all(right) and len(hypothesis) == len(example.references)
        distance, pairs = align_words(hypothesis, example.references)
        edits += distance
        input_word = dict(pairs)  # output word -> the input word it is aligned with
        attention = np.asarray(output["attention"])
        word = 0
        for step, token in enumerate(tokens):
            if token == BOUNDARY:
                word += 1
                continue
            phonemes += 1
            if word in input_word and step < len(attention):
                start, end = example.spans[input_word[word]]
                hits += start <= int(attention[step].argmax()) < end
    return {
        "wer": edits / max(words, 1),
        "positional_wer": shifted / max(words, 1),
        "exact_match": exact / max(len(examples), 1),
        "alignment_accuracy": hits / max(phonemes, 1),
        "words": words,
    }


def evaluate_long(
    model: Any,
    vocabularies: Any,
    pairs: Sequence[tuple[str, str]],
    ks: Sequence[int] = DEFAULT_KS,
    count: int = 200,
    beam_size: int = 1,
    batch_size: int = 64,
    seed: int = 0,
) -> dict[int, dict[str, float]]:
    """Scores of ``count`` joins of ``k`` words of ``pairs``, for each ``k`` in ``ks``.

    Sources and outputs are allowed as many tokens as the longest join
    needs (its letters; three tokens a letter, one a boundary, for the
    output).
    """
    results = {}
    for k in ks:
        examples = long_examples(pairs, k, count, seed)
        max_source = max(example.spans[-1][1] for example in examples)
        max_output = 3 * max_source + k + 1
        translate = evaluation.translate_fn(
            model,
            vocabularies,
            max_length=max_output,
            max_source_length=max_source,
            beam_size=beam_size,
        )
        outputs: list[dict[str, Any]] = []
        for start in range(0, len(examples), batch_size):
            batch = [example.source for example in examples[start : start + batch_size]]
            outputs += sentences(translate(batch))
        results[k] = {**score_long(examples, outputs), "max_source_tokens": max_source}
        print(f"k={k}: " + json.dumps(results[k], sort_keys=True))
    return results


def plot_long(results: dict[int, dict[str, float]], path: str, title: str = "") -> str:
    """WER and alignment accuracy against k, one figure."""
    from examples.nmt.plots import _pyplot  # noqa: PLC0415

    plt = _pyplot()
    ks = sorted(results)
    figure, axis = plt.subplots(figsize=(5, 3.2))
    axis.plot(ks, [100 * results[k]["wer"] for k in ks], "o-", label="WER %")
    axis.plot(ks, [100 * results[k]["alignment_accuracy"] for k in ks], "s--", label="alignment %")
    axis.set_xscale("log")
    axis.set_xticks(ks, [str(k) for k in ks])
    axis.set_xlabel("words per input (k)")
    top = max([100.0] + [100 * results[k]["wer"] for k in ks])  # insertions: WER over 100%
    axis.set_ylim(0, top * 1.05)
    axis.legend()
    axis.set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def plot_comparison(curves: dict[str, dict[int, dict[str, float]]], path: str) -> str:
    """WER (left) and word-level alignment (right) against k, one line per labelled run."""
    from examples.nmt.plots import _pyplot  # noqa: PLC0415

    plt = _pyplot()
    figure, (wer_axis, alignment_axis) = plt.subplots(1, 2, figsize=(9, 3.4))
    top = 100.0
    for label, results in curves.items():
        ks = sorted(results)
        wers = [100 * results[k]["wer"] for k in ks]
        top = max([top, *wers])
        wer_axis.plot(ks, wers, "o-", label=label)
        longer = [k for k in ks if k > 1]  # one word is trivially aligned
        alignment = [100 * results[k]["alignment_accuracy"] for k in longer]
        alignment_axis.plot(longer, alignment, "s--", label=label)
    for axis, name in ((wer_axis, "WER %"), (alignment_axis, "word-level alignment %")):
        axis.set_xscale("log")
        ks = sorted({k for results in curves.values() for k in results})
        axis.set_xticks(ks, [str(k) for k in ks])
        axis.set_xlabel("words per input (k)")
        axis.set_ylabel(name)
    wer_axis.set_ylim(0, top * 1.05)
    alignment_axis.set_ylim(0, 102)
    wer_axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _labelled(text: str) -> tuple[str, str]:
    label, separator, directory = text.partition("=")
    if not separator or not label or not directory:
        raise argparse.ArgumentTypeError(f"expected LABEL=RUN_DIR, got {text!r}")
    return label, directory


def compare(pairs: Sequence[tuple[str, str]], path: str) -> dict[str, dict[int, dict]]:
    """Reads each run's ``long_inputs.json`` and draws them together (``plot_comparison``)."""
    curves = {}
    for label, directory in pairs:
        with open(os.path.join(directory, "long_inputs.json"), encoding="utf-8") as file:
            curves[label] = {int(k): value for k, value in json.load(file).items()}
    plot_comparison(curves, path)
    return curves


def main(argv: Sequence[str] | None = None) -> dict[int, dict[str, float]]:
    """Scores a G2P run trained on joined words on inputs of k test words."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.nmt.long_inputs", description=main.__doc__
    )
    parser.add_argument("--model", default="runs/nmt", help="a train.py output dir")
    parser.add_argument(
        "--compare",
        type=_labelled,
        nargs="+",
        metavar="LABEL=RUN",
        help="instead of scoring: draw these runs' long_inputs.json together into --figure",
    )
    parser.add_argument("--figure", default="long_inputs_comparison.png")
    parser.add_argument("--ks", type=cli.integer_at_least(1), nargs="+", default=DEFAULT_KS)
    parser.add_argument(
        "--count", type=cli.integer_at_least(1), default=200, help="inputs for each k"
    )
    parser.add_argument("--beam-size", type=cli.integer_at_least(1), default=1)
    parser.add_argument("--batch-size", type=cli.integer_at_least(1), default=64)
    args = parser.parse_args(argv)
    if args.compare:
        try:
            curves = compare(args.compare, args.figure)
        except (OSError, ValueError, KeyError) as error:
            cli.fail(parser.prog, f"cannot read a run's long_inputs.json: {error}")
        print(f"Outputs: {args.figure}")
        return curves
    config = runs.load_config(args.model)
    if config is None:
        cli.fail(parser.prog, f"no run in {args.model} (no {runs.CONFIG})")
    if not is_pronunciation(config["dataset"]):
        cli.fail(parser.prog, f"the run in {args.model} is not a pronunciation run")
    try:
        model, vocabularies = runs.load_run(args.model)
        run_args = argparse.Namespace(**{**config, "join_words": None})
        pairs = splits.splits_from_args(run_args)["test"]
    except (OSError, ValueError, cli.RunError) as error:
        cli.fail(parser.prog, str(error))
    results = evaluate_long(
        model, vocabularies, pairs, args.ks, args.count, args.beam_size, args.batch_size
    )
    runs.write_json(
        {str(k): value for k, value in results.items()},
        os.path.join(args.model, "long_inputs.json"),
    )
    title = config.get("attention") or config["architecture"]
    path = plot_long(results, os.path.join(args.model, "long_inputs.png"), title)
    print(f"Outputs: {os.path.join(args.model, 'long_inputs.json')}, {path}")
    return results


if __name__ == "__main__":
    main()
