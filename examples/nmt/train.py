"""Trains, evaluates and exports an attention NMT model: ``python -m examples.nmt.train``.

The defaults train the date-normalization task in a few minutes on two CPU
cores. Any other dataset gets the ``real`` recipe (``--recipe``, see
``examples.nmt.recipes``): SentencePiece subwords, a larger model, dropout
and label smoothing, tuned on Tatoeba French->English. Everything goes to
``--output-dir`` (``runs/nmt``):

* ``model.keras`` (best epoch's weights), ``saved_model/`` (``translate(strings)``,
  see ``examples.nmt.export``), the vocabularies (``{side}_vocabulary.txt``
  for words, ``{side}_sentencepiece.model`` for SentencePiece, ``side`` =
  source or target), ``config.json`` (the arguments, recipe filled in);
* ``metrics.json`` (test BLEU, chrF, exact match, alignment accuracy, best
  epoch, training time; written before the export), ``history.csv``,
  ``training_curves.png`` and ``training.json`` (best epoch and its
  ``val_loss``, written when training is done);
* ``attention_K.png`` / ``attention_K.html``: heat-maps of test sentences;
* ``backup/`` (resumes a killed run, see ``examples.nmt.checkpointing``;
  deleted when training is done), ``logs/`` (TensorBoard).

A used ``--output-dir`` is refused unless it holds a run with the same
settings (decoding, evaluation and export flags aside), which then resumes
after its last finished epoch (or, when its training is done, only
evaluates and exports again), or ``--overwrite`` is given.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import importlib.util
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from examples.nmt import data
from examples.nmt import distribution
from examples.nmt import evaluate
from examples.nmt import export
from examples.nmt import recipes
from examples.nmt import runs
from examples.nmt.checkpointing import RunCheckpoint
from examples.nmt.model import ATTENTIONS
from examples.nmt.model import DECODERS
from examples.nmt.model import RNNS
from examples.nmt.model import build_model
from examples.nmt.transformer import build_transformer

DEFAULT_OUTPUT_DIR = os.path.join("runs", "nmt")
# What a run writes into its folder; --overwrite deletes these and nothing else.
OUTPUTS = (
    runs.CONFIG,
    runs.MODEL,
    runs.METRICS,
    runs.HISTORY,
    runs.TRAINING,
    "source_vocabulary.txt",
    "target_vocabulary.txt",
    "source_sentencepiece.model",
    "target_sentencepiece.model",
    "training_curves.png",
    "attention_*.png",
    "attention_*.html",
    "saved_model",
    "backup",
    "logs",
    "checkpoint.weights.h5",
)


@keras.saving.register_keras_serializable(package="examples_nmt")
class MaskedAccuracy(keras.metrics.Metric):
    """Token accuracy over non-padding targets (``y_true != 0``)."""

    def __init__(self, name: str = "masked_accuracy", **kwargs: Any):
        super().__init__(name=name, **kwargs)
        self.correct = self.add_variable((), initializer="zeros", name="correct")
        self.count = self.add_variable((), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        del sample_weight  # the padding mask is the only weight
        y_true = tf.cast(y_true, tf.int32)
        mask = tf.cast(y_true != data.PAD_ID, tf.float32)
        hits = tf.cast(tf.argmax(y_pred, -1, output_type=tf.int32) == y_true, tf.float32)
        self.correct.assign_add(tf.reduce_sum(hits * mask))
        self.count.assign_add(tf.reduce_sum(mask))

    def result(self):
        return tf.math.divide_no_nan(self.correct, self.count)


class _Interrupt(keras.callbacks.Callback):
    """Raises after ``epoch`` finishes (tests simulate a killed run with it)."""

    def __init__(self, epoch: int):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            raise KeyboardInterrupt(f"interrupted after epoch {epoch + 1}")


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m examples.nmt.train", description=__doc__.split("\n")[0]
    )
    positive, at_least = runs.integer_at_least(1), runs.integer_at_least
    data.add_arguments(parser)
    parser.add_argument("--output-dir", default=DEFAULT_OUTPUT_DIR)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the outputs of an earlier run in --output-dir",
    )
    parser.add_argument(
        "--architecture",
        choices=("rnn", "transformer"),
        default="rnn",
        help="an RNN encoder-decoder with attention, or a Transformer (examples.nmt.transformer)",
    )
    parser.add_argument("--attention", choices=ATTENTIONS, help="(recipe, rnn)")
    parser.add_argument("--decoder", choices=DECODERS, help="(recipe, rnn)")
    parser.add_argument("--rnn", default="gru", choices=RNNS, help="(rnn)")
    parser.add_argument(
        "--recipe",
        choices=("auto", *recipes.RECIPES),
        default="auto",
        help="defaults of the flags marked (recipe): 'date' for the date task, 'real' for "
        "natural language (SentencePiece, larger model); auto: date for "
        "date_normalization, real otherwise",
    )
    tokenizers = data.TOKENIZERS
    parser.add_argument(
        "--source-tokenizer",
        choices=tokenizers,
        help="(recipe) lower-cased words, or a SentencePiece unigram/bpe/char model (cased)",
    )
    parser.add_argument("--target-tokenizer", choices=tokenizers, help="(recipe) as above")
    parser.add_argument("--embedding-dim", type=positive, help="(recipe, rnn)")
    parser.add_argument("--units", type=at_least(2), help="(recipe, rnn) even")
    parser.add_argument(
        "--num-heads",
        type=positive,
        help="(recipe) heads of the multihead attention, or of every Transformer attention",
    )
    parser.add_argument(
        "--layers", type=positive, help="(recipe, transformer) encoder and decoder blocks"
    )
    parser.add_argument(
        "--d-model", type=positive, help="(recipe, transformer) features of every token"
    )
    parser.add_argument(
        "--ff-dim", type=positive, help="(recipe, transformer) inner size of the feed-forwards"
    )
    parser.add_argument(
        "--alignment-layer",
        type=int,
        help="(recipe, transformer) the decoder block whose cross-attention, averaged over "
        "heads, is reported (alignment accuracy, coverage penalty, heat-maps); negative "
        "counts from the end",
    )
    parser.add_argument("--dropout", type=float, help="(recipe)")
    parser.add_argument("--label-smoothing", type=float, help="(recipe)")
    parser.add_argument(
        "--vocab-size",
        type=at_least(5),
        help="(recipe) most ids per side, the 4 reserved ones included",
    )
    parser.add_argument(
        "--max-length", type=at_least(2), default=64, help="most tokens per sentence"
    )
    parser.add_argument("--epochs", type=positive, help="(recipe)")
    parser.add_argument("--batch-size", type=positive, help="(recipe)")
    parser.add_argument("--learning-rate", type=float, help="(recipe) peak, after warm-up")
    parser.add_argument("--warmup-steps", type=at_least(0), help="(recipe)")
    parser.add_argument("--clipnorm", type=float, default=1.0, help="per-variable; 0 = off")
    parser.add_argument(
        "--output-bias",
        choices=("unigram", "zeros"),
        default="unigram",
        help="initial logits bias: log target-token frequencies, or zeros",
    )
    parser.add_argument("--patience", type=at_least(0), default=2, help="early stopping, in epochs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mixed-precision", action="store_true", help="mixed_float16")
    parser.add_argument("--jit-compile", action="store_true", help="XLA for the train step")
    parser.add_argument(
        "--strategy",
        choices=("default", "mirrored", "multiworker"),
        default="default",
        help="tf.distribute strategy",
    )
    parser.add_argument("--samples", type=at_least(0), default=3, help="heat-maps to draw")
    parser.add_argument("--no-export", action="store_true", help="skip the SavedModel")
    parser.add_argument(
        "--no-evaluate", action="store_true", help="skip the test-split evaluation and heat-maps"
    )
    evaluate.add_decoding_arguments(parser)
    return parser


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Applies the recipe, then the checks one flag's type cannot make (exit 2 on failure)."""
    for architecture, flags in recipes.ARCHITECTURE_FLAGS.items():
        given = [flag for flag in flags if getattr(args, flag) is not None]
        if architecture != args.architecture and given:
            parser.error(
                f"argument --{given[0].replace('_', '-')}: only for --architecture "
                f"{architecture}, received --architecture {args.architecture}"
            )
    recipes.apply_recipe(args)
    if not 0.0 <= args.label_smoothing < 1.0:
        parser.error(
            f"argument --label-smoothing: expected 0 <= value < 1, received {args.label_smoothing}"
        )
    if args.architecture == "rnn":
        if args.units % 2:
            parser.error(f"argument --units: expected an even number, received {args.units}")
        if args.attention == "multihead" and args.units % args.num_heads:
            parser.error(
                f"argument --num-heads: expected a divisor of --units {args.units}, "
                f"received {args.num_heads}"
            )
    else:
        if args.d_model % args.num_heads:
            parser.error(
                f"argument --num-heads: expected a divisor of --d-model {args.d_model}, "
                f"received {args.num_heads}"
            )
        if not -args.layers <= args.alignment_layer < args.layers:
            parser.error(
                f"argument --alignment-layer: expected {-args.layers} <= value < "
                f"{args.layers} (--layers {args.layers}), received {args.alignment_layer}"
            )
    if not 0.0 <= args.dropout < 1.0:
        parser.error(f"argument --dropout: expected 0 <= dropout < 1, received {args.dropout}")
    if not args.learning_rate > 0.0:
        parser.error(f"argument --learning-rate: expected > 0, received {args.learning_rate}")
    if args.clipnorm < 0.0:
        parser.error(f"argument --clipnorm: expected >= 0, received {args.clipnorm}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = make_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    return args


def load_splits(args: argparse.Namespace) -> data.Splits:
    """The data, with a one-line ``RunError`` for a missing file or an empty split."""
    try:
        splits = data.splits_from_args(args)
        for name, split in splits.items():
            if next(iter(split.take(1)), None) is None:
                raise runs.RunError(f"the {name} split of {args.dataset} is empty")
    except (OSError, ValueError, tf.errors.OpError) as error:
        raise runs.RunError(str(error)) from error
    return splits


def count_batches(batches: tf.data.Dataset) -> int:
    """Batches in one pass (bucketing hides the cardinality); fills the cache."""
    return int(batches.reduce(tf.constant(0, tf.int64), lambda count, _: count + 1))


def target_log_prior(batches: tf.data.Dataset, vocab_size: int) -> np.ndarray:
    """Log unigram frequencies ``(V,)`` of the target tokens of ``batches``, add-one smoothed.

    The initial bias of the logits (``--output-bias unigram``). With zeros,
    every one of ``V`` words starts at ``1 / V``; Adam moves a bias by about
    the learning rate a step, so spreading them over the ~10 nats between
    ``[END]`` and a rare word takes thousands of steps. On a large vocabulary
    the hidden layers fit the unigram distribution instead, their ``tanh``
    units saturate and the model stays a unigram model (on Tatoeba fra-eng:
    ``[END]`` everywhere, 11% token accuracy).
    """

    def add(counts: tf.Tensor, batch: tuple) -> tf.Tensor:
        target_out_ids = batch[1]
        ids = tf.boolean_mask(target_out_ids, target_out_ids != data.PAD_ID)
        return counts + tf.math.bincount(
            ids, minlength=vocab_size, maxlength=vocab_size, dtype=tf.int64
        )

    counts = batches.reduce(tf.zeros([vocab_size], tf.int64), add).numpy() + 1
    return np.log(counts / counts.sum()).astype("float32")


def learning_rate_schedule(args: argparse.Namespace, steps_per_epoch: int):
    """Linear warm-up to ``--learning-rate``, then cosine decay to 0 at the last epoch."""
    total = max(args.epochs * steps_per_epoch, 1)
    warmup = min(args.warmup_steps, total // 2)
    return keras.optimizers.schedules.CosineDecay(
        0.0,
        decay_steps=max(total - warmup, 1),
        warmup_target=args.learning_rate,
        warmup_steps=warmup,
    )


def tensorboard_callbacks(args: argparse.Namespace) -> list[keras.callbacks.Callback]:
    if importlib.util.find_spec("tensorboard") is None:  # tf.summary needs it
        print("TensorBoard is not installed: no logs/ (pip install tensorboard).")
        return []
    return [keras.callbacks.TensorBoard(os.path.join(args.output_dir, "logs"), write_graph=False)]


def save_model(model: keras.Model, path: str) -> None:
    """``model.save`` through a temporary file and a rename."""
    temporary = path.removesuffix(".keras") + ".tmp.keras"
    model.save(temporary)
    os.replace(temporary, path)


def train(
    args: argparse.Namespace,
    extra_callbacks: Sequence[keras.callbacks.Callback] = (),
    strategy: tf.distribute.Strategy | None = None,
) -> dict[str, Any]:
    """Runs the whole pipeline for parsed ``args``; returns the metrics.

    ``strategy``: made from ``args.strategy`` when training starts if None
    (too late for ``multiworker``: ``main`` makes it first).

    Raises:
        runs.RunError: a used output folder, missing or too little data, a
            failed export (after ``metrics.json`` is written).
    """
    runs.require_tensorflow_backend()
    start = time.perf_counter()
    resuming = runs.prepare_output_dir(args, OUTPUTS)
    keras.utils.set_random_seed(args.seed)
    splits = load_splits(args)
    vocabularies = run_vocabularies(args, splits["train"], resuming)
    training_path = os.path.join(args.output_dir, runs.TRAINING)
    if resuming and os.path.isfile(training_path):
        print(f"Training of the run in {args.output_dir} is done: evaluating and exporting it.")
        model, _ = runs.load_run(args.output_dir)
        with open(training_path, encoding="utf-8") as file:
            summary = json.load(file)
    else:
        model, summary = fit(args, splits, vocabularies, extra_callbacks, strategy)
    return finish(args, model, vocabularies, splits, summary, start)


def run_vocabularies(
    args: argparse.Namespace, train_split: tf.data.Dataset, resuming: bool
) -> data.Vocabularies:
    """A resumed run's saved vocabularies, or new ones from the training split (then saved)."""
    if resuming:
        try:
            return data.Vocabularies.load(args.output_dir)
        except FileNotFoundError:  # killed before they were written: build them again
            print(f"No saved vocabularies in {args.output_dir}: building them.")
    start = time.perf_counter()
    vocabularies = data.build_vocabularies(
        train_split, args.vocab_size, args.source_tokenizer, args.target_tokenizer
    )
    vocabularies.save(args.output_dir)
    print(
        f"Vocabularies: {len(vocabularies.source):,} {args.source_tokenizer} source and "
        f"{len(vocabularies.target):,} {args.target_tokenizer} target tokens "
        f"({time.perf_counter() - start:.0f} s)."
    )
    return vocabularies


def make_model(args: argparse.Namespace, vocabularies: data.Vocabularies) -> keras.Model:
    """The ``--architecture`` model, sized by the arguments and the vocabularies."""
    sizes = len(vocabularies.source), len(vocabularies.target)
    if args.architecture == "transformer":
        return build_transformer(
            *sizes,
            d_model=args.d_model,
            num_heads=args.num_heads,
            layers=args.layers,
            ff_dim=args.ff_dim,
            dropout=args.dropout,
            alignment_layer=args.alignment_layer,
        )
    return build_model(
        *sizes,
        embedding_dim=args.embedding_dim,
        units=args.units,
        attention=args.attention,
        decoder=args.decoder,
        rnn=args.rnn,
        num_heads=args.num_heads,
        dropout=args.dropout,
    )


def fit(
    args: argparse.Namespace,
    splits: data.Splits,
    vocabularies: data.Vocabularies,
    extra_callbacks: Sequence[keras.callbacks.Callback] = (),
    strategy: tf.distribute.Strategy | None = None,
) -> tuple[keras.Model, dict[str, Any]]:
    """Trains (or resumes) to the end; saves the best epoch's ``model.keras``."""
    out = args.output_dir
    batches = {
        name: data.make_batches(
            splits[name],
            vocabularies,
            args.batch_size,
            training=name == "train",
            max_length=args.max_length,
            seed=args.seed,
        )
        for name in ("train", "validation")
    }
    steps_per_epoch = count_batches(batches["train"])
    validation_steps = count_batches(batches["validation"])  # no "ran out of data" warning
    backup = os.path.join(out, "backup")
    os.makedirs(backup, exist_ok=True)
    early_stopping = keras.callbacks.EarlyStopping(patience=args.patience, verbose=1)
    checkpoint = RunCheckpoint(backup, early_stopping, os.path.join(out, runs.HISTORY))

    if args.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_float16")
    strategy = strategy or distribution.make_strategy(args.strategy)
    try:
        with strategy.scope():
            model = make_model(args, vocabularies)
            if args.output_bias == "unigram":
                model.output_layer.bias.assign(
                    target_log_prior(batches["train"], len(vocabularies.target))
                )
            optimizer = keras.optimizers.Adam(
                learning_rate_schedule(args, steps_per_epoch), clipnorm=args.clipnorm or None
            )
            model.compile(
                optimizer=optimizer,
                loss=recipes.MaskedCrossentropy(args.label_smoothing),
                metrics=[MaskedAccuracy()],
                jit_compile=args.jit_compile,
            )
            done = checkpoint.restore(model)
            if distribution.worker_count(strategy) > 1:
                distribution.prepare_multi_worker_fit(model, batches["train"])
        print(
            f"Training {model.name}: {model.count_params():,} parameters, "
            f"{steps_per_epoch} steps an epoch, on {strategy.num_replicas_in_sync} replicas."
        )
        if done:
            print(f"Resuming after epoch {done} (backup in {backup}).")
        # Repeated: bucketing makes the batch count vary a little by epoch. A
        # resumed run skips the batches of the finished epochs, so that it
        # trains on the same batches as an uninterrupted one.
        model.fit(
            batches["train"].repeat().skip(done * steps_per_epoch),
            steps_per_epoch=steps_per_epoch,
            validation_data=batches["validation"].repeat(),
            validation_steps=validation_steps,
            initial_epoch=done,
            epochs=done if checkpoint.state["stopped"] else args.epochs,
            callbacks=[early_stopping, checkpoint, *tensorboard_callbacks(args), *extra_callbacks],
            verbose=1,
            shuffle=False,
        )
    finally:
        if args.mixed_precision:
            keras.mixed_precision.set_global_policy("float32")
    state = checkpoint.state
    checkpoint.restore_best(model)
    summary = {
        "best_epoch": state["best_epoch"] + 1,
        "best_val_loss": state["best_value"],
        "epochs": state["epochs_done"],
        "train_seconds": state["train_seconds"],
    }
    print(
        f"Best epoch: {summary['best_epoch']} of {summary['epochs']} "
        f"(val_loss {summary['best_val_loss']:.4f}); model.keras holds its weights."
    )
    save_model(model, os.path.join(out, runs.MODEL))
    runs.write_json(summary, os.path.join(out, runs.TRAINING))  # training is done
    shutil.rmtree(backup)
    return model, summary


def finish(
    args: argparse.Namespace,
    model: keras.Model,
    vocabularies: data.Vocabularies,
    splits: data.Splits,
    summary: dict[str, Any],
    start: float,
) -> dict[str, Any]:
    """Evaluates on test, plots, writes ``metrics.json``, then exports."""
    out = args.output_dir
    metrics, samples = {}, []
    if not args.no_evaluate:
        metrics, samples = evaluate.evaluate(
            model,
            splits["test"],
            vocabularies,
            beam_size=args.beam_size,
            length_penalty=args.length_penalty,
            coverage_penalty=args.coverage_penalty,
            max_length=args.max_decode_length,
            max_source_length=args.max_length,
            samples=args.samples,
        )
    metrics["best_epoch"] = summary["best_epoch"]
    metrics["train_seconds"] = round(summary["train_seconds"], 1)
    outputs = [
        runs.MODEL,
        vocabularies.source.file_name("source"),
        vocabularies.target.file_name("target"),
    ]
    runs.plot_history(os.path.join(out, runs.HISTORY), os.path.join(out, "training_curves.png"))
    outputs.append("training_curves.png")
    outputs += [os.path.basename(path) for path in runs.save_heatmaps(samples, out)]
    metrics_path = os.path.join(out, runs.METRICS)
    metrics["total_seconds"] = round(time.perf_counter() - start, 1)
    runs.save_metrics(metrics, metrics_path)  # before the export, which may fail
    if not args.no_export:
        path = os.path.join(out, "saved_model")
        try:
            export.export_translator(
                model,
                vocabularies,
                path,
                args.max_decode_length,
                args.max_length,
                beam_size=args.beam_size,
                alpha=args.length_penalty,
                beta=args.coverage_penalty,
            )
        except Exception as error:  # any failure: one clear line
            raise runs.RunError(
                f"could not write the SavedModel to {path} ({type(error).__name__}: "
                f"{str(error).splitlines()[0] if str(error) else ''}); {metrics_path} and "
                "model.keras are saved: free that path and run the same command again to "
                "export without training"
            ) from error
        outputs.append("saved_model/")
        metrics["total_seconds"] = round(time.perf_counter() - start, 1)
        runs.save_metrics(metrics, metrics_path)
    outputs += [runs.METRICS, runs.HISTORY]
    print("Test:", json.dumps(metrics, sort_keys=True))
    if os.path.isdir(os.path.join(out, "logs")):
        outputs.append("logs/ (TensorBoard)")
    print(f"Outputs in {os.path.abspath(out)}: {', '.join(outputs)}")
    return metrics


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Trains with command-line arguments; see the module doc."""
    import tensorflow_datasets as tfds  # noqa: PLC0415

    parser = make_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    # Before any TensorFlow op: collective ops are configured at startup only.
    strategy = distribution.make_strategy(args.strategy)
    tfds.disable_progress_bar()
    chief = distribution.is_chief(strategy)
    if not chief:  # other workers train in step with the chief; their files are dropped
        args.output_dir = tempfile.mkdtemp(prefix="nmt-worker-")
    try:
        return train(args, strategy=strategy)
    except runs.RunError as error:
        runs.fail(parser.prog, str(error))
    finally:
        if not chief:
            shutil.rmtree(args.output_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
