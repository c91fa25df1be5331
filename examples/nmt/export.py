"""A TensorFlow SavedModel that translates strings, with no Python code of ours.

``export_translator(model, vocabularies, path)`` writes a SavedModel whose
``translate`` function takes a batch of strings and, optionally, the most
output tokens ``max_length`` (int32 scalar), the ``beam_size`` (int32 scalar,
1 = greedy) and the GNMT length and coverage penalties ``alpha`` and ``beta``
(float32 scalars), each defaulting to the run's ``--max-decode-length``,
``--beam-size``, ``--length-penalty``, ``--coverage-penalty``::

    import tensorflow_text  # registers the normalization and SentencePiece ops

    translator = tf.saved_model.load("runs/nmt/saved_model")
    outputs = translator.translate(tf.constant(["May 9th, 1998"]))
    outputs = translator.translate(tf.constant(["May 9th, 1998"]), tf.constant(20))
    outputs = translator.translate(texts, beam_size=4, alpha=0.6, beta=0.2)
    outputs["translation"]  # (B,) strings; "" for a sentence without tokens
    outputs["scores"]  # (B,) float32 GNMT score of the best hypothesis; 0 without tokens
    outputs["attention"]  # (B, T, Ts) float32 weights of each output token
    outputs["source_tokens"]  # (B, Ts) strings, "" on padding
    outputs["target_tokens"]  # (B, T) strings, "" after [END]
    outputs["target_length"]  # (B,) int32 output tokens, [END] included
    outputs["source_length"]  # (B,) int32 source tokens before truncation
    outputs["unknown_tokens"]  # (B,) int32 source tokens kept that are not in the vocabulary

Inside: ``examples.nmt.translator.translate``, the path evaluation and
``translate.py --keras`` take too (the run's vocabularies as TensorFlow ops,
``model.initial_state``/``model.step`` under ``keras_attention.decoding``'s searches, the
beam size a graph input), traced into the SavedModel.

The SavedModel comes from a run of any backend: a ``.keras`` file is
backend-neutral, so a JAX or PyTorch run ends by running
``python -m examples.nmt.export --model DIR`` in a TensorFlow process
(``export_in_tensorflow``), which loads ``DIR/model.keras`` and the
vocabularies and writes ``DIR/saved_model`` with the run's decoding settings.

``--model A --model B --output DIR`` exports the ensemble of several runs
(``examples.nmt.models.ensemble``: one SavedModel holding every run's
weights, searching the mean of their log-probabilities), and
``--average-checkpoints N --output DIR`` each run with the mean of its last N
epochs' weights; both need ``--output``, so that a run's own
``saved_model`` stays its best epoch alone.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
from collections.abc import Sequence

import tensorflow as tf

from examples.common import export as common_export
from examples.nmt import translator as translation
from examples.nmt.host.vocabularies import Vocabularies
from examples.nmt.models.decoding import Decoder

_TEXTS = translation.TEXTS
_MAX_LENGTH = tf.TensorSpec([], tf.int32, name="max_length")
_BEAM_SIZE = tf.TensorSpec([], tf.int32, name="beam_size")
_ALPHA = tf.TensorSpec([], tf.float32, name="alpha")
_BETA = tf.TensorSpec([], tf.float32, name="beta")


class _Untracked:
    """Holds the model out of the SavedModel's object graph (a plain object, not trackable)."""

    def __init__(self, model: Decoder):
        self.model = model


class Translator(tf.Module):
    """Strings in, translations, scores and attention out; see the module doc.

    ``translate`` is one ``tf.function`` with a fixed input signature whose
    optional inputs default to this translator's settings: the defaults are
    tensors stored with the SavedModel, so a loaded ``translate`` accepts any
    subset of ``max_length``, ``beam_size``, ``alpha``, ``beta`` by keyword.
    The beam size is a graph input: one traced graph runs every beam size
    (the greedy search for 1, else the beam search with a tensor ``beam_size``).
    """

    def __init__(
        self,
        model: Decoder,
        vocabularies: Vocabularies,
        max_length: int = 64,
        max_source_length: int | None = None,
        beam_size: int = 1,
        alpha: float = 0.0,
        beta: float = 0.0,
    ):
        super().__init__(name="translator")
        if beam_size < 1:
            raise ValueError(f"Expected beam_size >= 1. Received: beam_size={beam_size}")
        # The model's variables are tracked, not the model: saving a tracked
        # Keras model traces its layers' calls once more for the SavedModel
        # (a tiny Transformer's export 15 s -> 6 s without that and the
        # concrete serving function below).
        self._decoder = _Untracked(model)
        self.model_variables = [variable.value for variable in model.variables]
        self.max_length = max_length
        self.max_source_length = max_source_length or max_length
        self.beam_size, self.alpha, self.beta = beam_size, alpha, beta
        engines = vocabularies.tensorflow()  # the same vocabularies as graph ops
        self.source_vocabulary = engines.source  # tracks the tokenizer's tables
        self.target_vocabulary = engines.target

        # Tensor defaults: saved with the function and used when an input is left out.
        default_max_length = tf.constant(max_length, tf.int32)
        default_beam_size = tf.constant(beam_size, tf.int32)
        default_alpha = tf.constant(alpha, tf.float32)
        default_beta = tf.constant(beta, tf.float32)

        def translate(
            texts: tf.Tensor,
            max_length: tf.Tensor = default_max_length,
            beam_size: tf.Tensor = default_beam_size,
            alpha: tf.Tensor = default_alpha,
            beta: tf.Tensor = default_beta,
        ) -> dict:
            return self._translate(texts, max_length, beam_size, alpha, beta)

        self.translate = tf.function(
            translate,
            input_signature=[_TEXTS, _MAX_LENGTH, _BEAM_SIZE, _ALPHA, _BETA],
            autograph=False,
        )

    def _translate(
        self,
        texts: tf.Tensor,
        max_length: tf.Tensor,
        beam_size: tf.Tensor,
        alpha: tf.Tensor,
        beta: tf.Tensor,
    ) -> dict:
        outputs = translation.translate(
            self._decoder.model,
            Vocabularies(self.source_vocabulary, self.target_vocabulary),  # TensorFlow's
            texts,
            max_length=max_length,
            max_source_length=self.max_source_length,
            beam_size=beam_size,
            alpha=alpha,
            beta=beta,
        )
        return {name: outputs[name] for name in translation.OUTPUTS}


def export_translator(
    model: Decoder,
    vocabularies: Vocabularies,
    path: str | os.PathLike,
    max_length: int = 64,
    max_source_length: int | None = None,
    beam_size: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
) -> str:
    """Writes the SavedModel; returns its path.

    Args:
        max_length: the default most output tokens of ``translate``.
        max_source_length: source tokens kept (the run's ``--max-length``);
            ``max_length`` if None.
        beam_size, alpha, beta: the default beam size (1: greedy), GNMT
            length penalty ``alpha`` and coverage penalty ``beta``.
    """
    translator = Translator(
        model, vocabularies, max_length, max_source_length, beam_size, alpha, beta
    )
    # Serving signatures take no optional inputs: strings only, run's defaults.
    # The function, not a concrete function: saving traces it (and
    # `translate`) in its own context, so tracing it before would be lost work.
    serve = tf.function(
        lambda texts: translator.translate(texts), input_signature=[_TEXTS], autograph=False
    )
    tf.saved_model.save(translator, str(path), signatures={"serving_default": serve})
    return str(path)


SAVED_MODEL = "saved_model"


def export_run(
    directory: str | Sequence[str],
    path: str | None = None,
    average_checkpoints: int | None = None,
) -> str:
    """Exports the run in ``directory`` (``model.keras``, vocabularies, ``config.json``).

    The decoding defaults are the run's (``--max-decode-length``,
    ``--max-length``, ``--beam-size``, ``--length-penalty``,
    ``--coverage-penalty``); ``path`` defaults to ``directory/saved_model``.
    Several folders export their ensemble (``runs.load_runs``) with the first
    run's defaults; ``average_checkpoints`` N, each run's last N epochs'
    weights averaged. Both need a ``path``.

    Raises:
        RunError: no run, runs with other vocabularies, too few kept
            epochs, or no ``path`` for an ensemble or an average.
    """
    from examples.nmt import runs  # noqa: PLC0415  (registers the models for loading)

    folders = [directory] if isinstance(directory, (str, os.PathLike)) else list(directory)
    if path is None and (len(folders) > 1 or average_checkpoints is not None):
        raise runs.RunError(
            "an ensemble or --average-checkpoints needs --output: the run's own "
            f"{SAVED_MODEL}/ stays its best epoch alone (translate.py uses it)"
        )
    model, vocabularies = runs.load_runs(folders, average_checkpoints)
    config = runs.load_config(folders[0]) or {}
    return export_translator(
        model,
        vocabularies,
        path or os.path.join(folders[0], SAVED_MODEL),
        config.get("max_decode_length") or 64,
        config.get("max_length"),
        beam_size=config.get("beam_size") or 1,
        alpha=config.get("length_penalty") or 0.0,
        beta=config.get("coverage_penalty") or 0.0,
    )


def export_in_tensorflow(directory: str, path: str | None = None) -> str:
    """``export_run`` in a new TensorFlow process: the export of a JAX or PyTorch run.

    Raises:
        RuntimeError: the export failed; its last lines of output.
    """
    arguments = ["--model", directory, *(["--output", path] if path is not None else [])]
    try:
        common_export.export_in_tensorflow("examples.nmt.export", arguments)
    except RuntimeError as error:
        raise RuntimeError(str(error).removeprefix("examples.nmt.export failed: ")) from None
    return path or os.path.join(directory, SAVED_MODEL)


def main(argv: Sequence[str] | None = None) -> str:
    """Writes a run's (or an ensemble's) SavedModel from ``model.keras``, of any backend."""
    from examples.nmt import cli  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m examples.nmt.export", description=main.__doc__)
    cli.add_model_arguments(parser)
    parser.add_argument(
        "--output",
        help="the SavedModel's folder (default: MODEL/saved_model; needed for several "
        "--model or --average-checkpoints)",
    )
    args = parser.parse_args(argv)
    import keras  # noqa: PLC0415

    if keras.backend.backend() != "tensorflow":
        cli.fail(
            parser.prog,
            "a SavedModel is written by TensorFlow: run with KERAS_BACKEND=tensorflow "
            f"(received {keras.backend.backend()!r})",
        )
    try:
        path = export_run(cli.model_folders(args.model), args.output, args.average_checkpoints)
    except cli.RunError as error:
        cli.fail(parser.prog, str(error))
    print(f"SavedModel: {path}")
    return path


if __name__ == "__main__":
    main()
