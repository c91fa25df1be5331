"""Translates sentences or files with a trained run and draws their attention.

    python -m examples.nmt.translate --model runs/nmt "May 9th, 1998" "the 3rd of june 2001"
    python -m examples.nmt.translate --model runs/nmt --input in.txt --output out.txt
    cat in.txt | python -m examples.nmt.translate --model runs/nmt --beam-size 4 > out.txt
    python -m examples.nmt.translate --model runs/a --model runs/b --average-checkpoints 5 "..."

Uses the exported SavedModel (``DIR/saved_model``, needs no model code) when
there is one, else (or with ``--keras``, several ``--model`` runs decoded as
an ensemble, or ``--average-checkpoints``) ``DIR/model.keras``; both run greedy
or beam search, by default with the run's ``--beam-size``,
``--length-penalty`` (``--alpha``) and ``--coverage-penalty`` (``--beta``).
Sentences on the command line: prints ``sentence<TAB>translation`` lines and
writes ``translation_K.png`` (``plots.plot_translations``) into ``--plots-dir``
(default: the model dir). ``--input FILE`` (``-`` or a pipe: stdin): one
sentence a line, translated in batches of ``--batch-size`` sentences of
similar lengths with a progress bar on stderr, one translation a line to
``--output`` (default: stdout), in input order; no heat-maps. A sentence without tokens
translates to the empty string on both paths (they run the same
``examples.nmt.translator.translate``); warnings on stderr name the
sentences cut at the run's ``--max-length`` and those made only of words the
model does not know.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import sys
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

from examples.nmt import backend
from examples.nmt import cli
from examples.nmt import evaluation
from examples.nmt import host
from examples.nmt import plots
from examples.nmt import runs
from examples.nmt.host.translation import sentences as output_sentences

DEFAULT_MAX_LENGTH = 64


Translate = Callable[[Sequence[str]], list[dict[str, Any]]]


def saved_model_translator(
    path: str,
    max_length: int | None = None,
    beam_size: int | None = None,
    alpha: float | None = None,
    beta: float | None = None,
) -> Translate:
    """Loads an exported SavedModel once; returns a function of a batch of sentences.

    Each setting left None takes the SavedModel's default (the run's
    ``--max-decode-length``, ``--beam-size``, ``--length-penalty``,
    ``--coverage-penalty``). The function returns, per sentence, the
    translation, its score, tokens and ``(T, Ts)`` attention
    (``translator.sentences``).
    """
    backend.keep_tensorflow_on_the_host()  # on JAX or PyTorch the GPUs are theirs
    import tensorflow as tf  # noqa: PLC0415  (a SavedModel is TensorFlow's)
    import tensorflow_text  # noqa: F401, PLC0415  (registers the ops a SavedModel may hold)

    saved = tf.saved_model.load(path)
    options = {
        name: tf.constant(value, dtype)
        for name, value, dtype in (
            ("max_length", max_length, tf.int32),
            ("beam_size", beam_size, tf.int32),
            ("alpha", alpha, tf.float32),
            ("beta", beta, tf.float32),
        )
        if value is not None
    }

    def translate(sentences: Sequence[str]) -> list[dict[str, Any]]:
        texts = tf.constant(list(sentences), tf.string)
        return output_sentences(saved.translate(texts, **options))

    return translate


def keras_translator(
    directory: str | Sequence[str],
    beam_size: int | None = None,
    length_penalty: float | None = None,
    coverage_penalty: float | None = None,
    max_length: int | None = None,
    average_checkpoints: int | None = None,
) -> Translate:
    """Loads ``model.keras`` once; as ``saved_model_translator``, None = the run's setting.

    The same ``translator.translate`` as in the SavedModel, run from the code.
    Several folders decode as an ensemble (``runs.load_runs``), with the
    first run's settings; ``average_checkpoints`` N: each run with the mean of
    its last N epochs' weights.
    """
    folders = [directory] if isinstance(directory, (str, os.PathLike)) else list(directory)
    model, vocabularies = runs.load_runs(folders, average_checkpoints)
    config = runs.load_config(folders[0]) or {}

    def setting(value: Any, name: str, default: Any) -> Any:
        return config.get(name, default) if value is None else value

    translate_texts = evaluation.translate_fn(
        model,
        vocabularies,
        max_length=setting(max_length, "max_decode_length", DEFAULT_MAX_LENGTH),
        max_source_length=config.get("max_length", DEFAULT_MAX_LENGTH),
        beam_size=setting(beam_size, "beam_size", 1),
        alpha=setting(length_penalty, "length_penalty", 0.0),
        beta=setting(coverage_penalty, "coverage_penalty", 0.0),
    )

    def translate(sentences: Sequence[str]) -> list[dict[str, Any]]:
        return output_sentences(translate_texts(list(sentences)))

    return translate


def translate_lines(
    translate: Translate, lines: Sequence[str], batch_size: int, progress: bool = True
) -> list[dict[str, Any]]:
    """Translates many sentences in batches of similar lengths; results in input order.

    ``progress``: a progress bar on stderr (tqdm).
    """
    from tqdm import tqdm  # noqa: PLC0415  (installed with tensorflow-datasets)

    # Sorted by length: a batch pads to its longest sentence.
    order = sorted(range(len(lines)), key=lambda index: len(lines[index].split()))
    results: list[dict[str, Any] | None] = [None] * len(lines)
    with tqdm(total=len(lines), unit="sentence", file=sys.stderr, disable=not progress) as bar:
        for start in range(0, len(order), batch_size):
            indices = order[start : start + batch_size]
            for index, result in zip(indices, translate([lines[i] for i in indices])):
                results[index] = result
            bar.update(len(indices))
    return results  # type: ignore[return-value]


def warn_about(
    sentences: Sequence[str], results: Sequence[dict[str, Any]], max_source_length: int | None
) -> None:
    """Warnings on stderr: empty, truncated and all-unknown sentences."""
    for number, (sentence, result) in enumerate(zip(sentences, results), start=1):
        length = result.get("source_length")
        if length == 0:
            cli.warn(f"sentence {number} ({sentence!r}) has no tokens: empty translation")
        elif max_source_length is not None and length is not None and length > max_source_length:
            cli.warn(
                f"sentence {number} has {length} tokens: only the first "
                f"{max_source_length} (the run's --max-length) were translated"
            )
        kept = min(length or 0, max_source_length or length or 0)
        if kept and result.get("unknown_tokens") == kept:
            cli.warn(
                f"sentence {number} ({sentence!r}) has only words the model does not "
                "know: its translation is a guess"
            )


def warn_about_lines(
    results: Sequence[dict[str, Any]], max_source_length: int | None, shown: int = 5
) -> None:
    """For file input: one warning per kind of problem, with the first line numbers."""
    problems: dict[str, list[int]] = {"empty": [], "cut": [], "unknown": []}
    for number, result in enumerate(results, start=1):
        length = result["source_length"]
        if length == 0:
            problems["empty"].append(number)
        elif max_source_length is not None and length > max_source_length:
            problems["cut"].append(number)
        kept = min(length, max_source_length or length)
        if kept and result["unknown_tokens"] == kept:
            problems["unknown"].append(number)
    what = {
        "empty": "have no tokens: empty translations",
        "cut": f"were cut at the run's --max-length {max_source_length}",
        "unknown": "have only words the model does not know: their translations are guesses",
    }
    for kind, numbers in problems.items():
        if numbers:
            listed = ", ".join(map(str, numbers[:shown])) + (
                ", ..." if len(numbers) > shown else ""
            )
            cli.warn(f"{len(numbers)} lines {what[kind]} (lines {listed})")


def read_lines(path: str) -> list[str]:
    """One sentence a line (UTF-8, ``\\n`` or ``\\r\\n``); ``-`` reads stdin."""
    if path == "-":
        return sys.stdin.read().splitlines()
    with open(path, encoding="utf-8") as file:
        return file.read().splitlines()


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m examples.nmt.translate", description=main.__doc__
    )
    parser.add_argument("sentences", nargs="*", help="sentences to translate (else --input)")
    cli.add_model_arguments(parser)
    parser.add_argument(
        "--input", help="a UTF-8 file, one sentence a line; '-' (or a pipe) reads stdin"
    )
    parser.add_argument("--output", help="where translations of --input go (default: stdout)")
    at_least_one = cli.integer_at_least(1)
    parser.add_argument("--batch-size", type=at_least_one, default=64, help="sentences a batch")
    parser.add_argument("--plots-dir", help="where heat-maps go (default: the first --model)")
    parser.add_argument(
        "--keras", action="store_true", help="use model.keras even if a SavedModel exists"
    )
    parser.add_argument("--beam-size", type=at_least_one, help="1 = greedy (default: the run's)")
    parser.add_argument(
        "--alpha", "--length-penalty", dest="length_penalty", type=float, help="GNMT alpha"
    )
    parser.add_argument(
        "--beta", "--coverage-penalty", dest="coverage_penalty", type=float, help="GNMT beta"
    )
    parser.add_argument("--max-decode-length", type=at_least_one, help="most output tokens")
    return parser


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Translates sentences given on the command line, or a file one line at a time."""
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.input is None and not args.sentences and not sys.stdin.isatty():
        args.input = "-"
    if args.input is None and not args.sentences:
        parser.error("give sentences, --input FILE, or pipe sentences to stdin")
    if args.input is not None and args.sentences:
        parser.error(f"argument --input: not allowed with sentences {args.sentences[:2]!r}")
    if args.output is not None and args.input is None:
        parser.error("argument --output: only with --input")
    folders = cli.model_folders(args.model)
    saved_model = os.path.join(folders[0], "saved_model")
    # A run's SavedModel is its best epoch alone: an ensemble or an average needs the code.
    alone = len(folders) == 1 and args.average_checkpoints is None
    # Without TensorFlow, model.keras translates.
    use_saved_model = alone and os.path.isdir(saved_model) and not args.keras
    use_saved_model = use_saved_model and host.tensorflow_available()
    for folder in folders:
        if not use_saved_model and not os.path.isfile(os.path.join(folder, runs.MODEL)):
            found = "" if alone else " (an ensemble or --average-checkpoints needs it)"
            parser.error(
                f"argument --model: no trained run in {folder!r} (neither "
                f"{os.path.join(folder, 'saved_model')} nor {runs.MODEL}{found})"
            )
    try:
        lines = args.sentences if args.input is None else read_lines(args.input)
    except (OSError, UnicodeDecodeError) as error:
        parser.error(f"argument --input: cannot read {args.input!r} ({error})")
    settings = (args.beam_size, args.length_penalty, args.coverage_penalty)
    if use_saved_model:
        translate = saved_model_translator(saved_model, args.max_decode_length, *settings)
    else:
        try:
            translate = keras_translator(
                folders, *settings, args.max_decode_length, args.average_checkpoints
            )
        except cli.RunError as error:
            cli.fail(parser.prog, str(error))
    config = runs.load_config(folders[0]) or {}
    max_source_length = config.get("max_length", DEFAULT_MAX_LENGTH)
    if args.input is None:
        results = translate(lines)
        warn_about(lines, results, max_source_length)
        paths = plots.plot_translations(results, args.plots_dir or folders[0])
        for sentence, result in zip(lines, results):
            print(f"{sentence}\t{result['translation']}")
        print(f"Heat-maps: {', '.join(paths)}")
        return results
    results = translate_lines(translate, lines, args.batch_size)
    warn_about_lines(results, max_source_length)
    text = "".join(f"{result['translation']}\n" for result in results)
    if args.output is None:
        sys.stdout.write(text)
        return results
    try:
        with open(args.output, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
    except OSError as error:
        cli.fail(parser.prog, f"cannot write --output {args.output!r} ({error})")
    print(f"{len(results)} translations in {args.output}", file=sys.stderr)
    return results


if __name__ == "__main__":
    main()
