"""Trains, evaluates and exports an attention NMT model: ``python -m examples.nmt.train``.

The defaults train the date-normalization task in a few minutes on two CPU
cores. Everything goes to ``--output-dir`` (``runs/nmt``):

* ``model.keras`` (best weights), ``saved_model/`` (``translate(strings)``,
  see ``examples.nmt.export``), ``source_vocabulary.txt`` /
  ``target_vocabulary.txt``, ``config.json`` (the arguments);
* ``metrics.json`` (test BLEU, chrF, exact match, alignment accuracy,
  training time), ``history.csv`` and ``training_curves.png``;
* ``attention_K.png`` / ``attention_K.html``: heat-maps of test sentences;
* ``checkpoint.weights.h5`` (best so far), ``backup/`` (resumes a killed run;
  deleted when training completes), ``logs/`` (TensorBoard).
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import argparse
import csv
import importlib.util
import json
import time
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from examples.nmt import data, evaluate, export
from examples.nmt.model import ATTENTIONS, DECODERS, RNNS, build_model

DEFAULT_OUTPUT_DIR = os.path.join("runs", "nmt")


def require_tensorflow_backend() -> None:
    """The example runs on TensorFlow (tf.data, tf.distribute, SavedModel)."""
    if keras.backend.backend() != "tensorflow":
        raise SystemExit(
            "examples.nmt needs the TensorFlow Keras backend. Received: "
            f"KERAS_BACKEND={keras.backend.backend()!r}; run with KERAS_BACKEND=tensorflow."
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


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data.add_arguments(parser)
    parser.add_argument("--output-dir", default=DEFAULT_OUTPUT_DIR)
    parser.add_argument("--attention", default="bahdanau", choices=ATTENTIONS)
    parser.add_argument("--decoder", default="bahdanau", choices=DECODERS)
    parser.add_argument("--rnn", default="gru", choices=RNNS)
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--vocab-size", type=int, default=20_000, help="most ids per side")
    parser.add_argument("--max-length", type=int, default=64, help="most tokens per sentence")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=3e-3, help="peak, after warm-up")
    parser.add_argument("--warmup-steps", type=int, default=100)
    parser.add_argument("--clipnorm", type=float, default=1.0, help="per-variable; 0 = off")
    parser.add_argument("--output-bias", choices=("unigram", "zeros"), default="unigram",
                        help="initial logits bias: log target-token frequencies, or zeros")
    parser.add_argument("--patience", type=int, default=2, help="early stopping, in epochs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mixed-precision", action="store_true", help="mixed_float16")
    parser.add_argument("--jit-compile", action="store_true", help="XLA for the train step")
    parser.add_argument("--strategy", choices=("default", "mirrored", "multiworker"),
                        default="default", help="tf.distribute strategy")
    parser.add_argument("--samples", type=int, default=3, help="heat-maps to draw")
    parser.add_argument("--no-export", action="store_true", help="skip the SavedModel")
    parser.add_argument("--no-evaluate", action="store_true",
                        help="skip the test-split evaluation and heat-maps")
    evaluate.add_decoding_arguments(parser)
    return parser.parse_args(argv)


def make_strategy(name: str) -> tf.distribute.Strategy:
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multiworker":  # workers from the TF_CONFIG environment variable
        return tf.distribute.MultiWorkerMirroredStrategy()
    return tf.distribute.get_strategy()


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
        0.0, decay_steps=max(total - warmup, 1), warmup_target=args.learning_rate,
        warmup_steps=warmup,
    )


def make_callbacks(args: argparse.Namespace) -> list[keras.callbacks.Callback]:
    out = args.output_dir
    callbacks = [
        keras.callbacks.BackupAndRestore(os.path.join(out, "backup")),
        keras.callbacks.ModelCheckpoint(
            os.path.join(out, "checkpoint.weights.h5"), save_best_only=True,
            save_weights_only=True,
        ),
        keras.callbacks.EarlyStopping(
            patience=args.patience, restore_best_weights=True, verbose=1
        ),
        keras.callbacks.CSVLogger(os.path.join(out, "history.csv"), append=True),
    ]
    if importlib.util.find_spec("tensorboard") is not None:  # tf.summary needs it
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(out, "logs"), write_graph=False))
    else:
        print("TensorBoard is not installed: no logs/ (pip install tensorboard).")
    return callbacks


def plot_history(path: str, output: str) -> None:
    """Loss and token accuracy per epoch, train and validation, as a PNG."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    with open(path, encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    epochs = [int(row["epoch"]) + 1 for row in rows]
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, key in zip(axes, ("loss", "masked_accuracy")):
        for prefix in ("", "val_"):
            if rows and prefix + key in rows[0]:
                ax.plot(epochs, [float(row[prefix + key]) for row in rows], marker="o",
                        label=(prefix or "train_").rstrip("_"))
        ax.set_xlabel("epoch")
        ax.set_title(key)
        ax.legend()
    figure.tight_layout()
    figure.savefig(output, dpi=100)
    plt.close(figure)


def save_heatmaps(samples: list[dict[str, Any]], directory: str) -> list[str]:
    """``attention_K.png`` (plot_attention) and ``attention_K.html`` per sample."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    import keras_attention  # noqa: PLC0415

    paths = []
    for index, sample in enumerate(samples):
        stem = os.path.join(directory, f"attention_{index}")
        ax = keras_attention.plot_attention(
            sample["attention"], sample["source"], sample["target"],
            title=" ".join(sample["source"]),
        )
        ax.figure.savefig(stem + ".png", dpi=100, bbox_inches="tight")
        plt.close(ax.figure)
        keras_attention.save_attention_html(
            sample["attention"], sample["source"], sample["target"], stem + ".html",
            title=" ".join(sample["source"]),
        )
        paths += [stem + ".png", stem + ".html"]
    return paths


def load_run(directory: str) -> tuple[keras.Model, data.Vocabularies]:
    """``model.keras`` and the vocabularies of a train.py output dir."""
    model = keras.saving.load_model(os.path.join(directory, "model.keras"), compile=False)
    return model, data.Vocabularies.load(directory)


def train(
    args: argparse.Namespace, extra_callbacks: Sequence[keras.callbacks.Callback] = ()
) -> dict[str, Any]:
    """Runs the whole pipeline for parsed ``args``; returns the metrics."""
    require_tensorflow_backend()
    start = time.perf_counter()
    keras.utils.set_random_seed(args.seed)
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, "config.json"), "w", encoding="utf-8") as file:
        json.dump(vars(args), file, indent=2)

    splits = data.splits_from_args(args)
    vocabularies = data.build_vocabularies(splits["train"], max_size=args.vocab_size)
    vocabularies.save(args.output_dir)
    batches = {
        name: data.make_batches(
            splits[name], vocabularies, args.batch_size, training=name == "train",
            max_length=args.max_length, seed=args.seed,
        )
        for name in ("train", "validation")
    }
    steps_per_epoch = count_batches(batches["train"])
    validation_steps = count_batches(batches["validation"])  # no "ran out of data" warning

    if args.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_float16")
    strategy = make_strategy(args.strategy)
    try:
        with strategy.scope():
            model = build_model(
                len(vocabularies.source), len(vocabularies.target),
                embedding_dim=args.embedding_dim, units=args.units,
                attention=args.attention, decoder=args.decoder, rnn=args.rnn,
                num_heads=args.num_heads, dropout=args.dropout,
            )
            if args.output_bias == "unigram":
                model.get_layer("logits").bias.assign(
                    target_log_prior(batches["train"], len(vocabularies.target))
                )
            optimizer = keras.optimizers.Adam(
                learning_rate_schedule(args, steps_per_epoch), clipnorm=args.clipnorm or None
            )
            model.compile(
                optimizer=optimizer,
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
                metrics=[MaskedAccuracy()],
                jit_compile=args.jit_compile,
            )
        print(f"Training {model.name}: {model.count_params():,} parameters, "
              f"{steps_per_epoch} steps an epoch, on {strategy.num_replicas_in_sync} replicas.")
        model.fit(  # repeated: bucketing makes the batch count vary a little by epoch
            batches["train"].repeat(), steps_per_epoch=steps_per_epoch,
            validation_data=batches["validation"].repeat(), validation_steps=validation_steps,
            epochs=args.epochs,
            callbacks=[*make_callbacks(args), *extra_callbacks], verbose=1, shuffle=False,
        )
    finally:
        if args.mixed_precision:
            keras.mixed_precision.set_global_policy("float32")
    train_seconds = time.perf_counter() - start
    return finish(args, model, vocabularies, splits, train_seconds, start)


def finish(
    args: argparse.Namespace, model: keras.Model, vocabularies: data.Vocabularies,
    splits: data.Splits, train_seconds: float, start: float,
) -> dict[str, Any]:
    """Saves, evaluates on test, plots and exports a trained model."""
    out = args.output_dir
    model.save(os.path.join(out, "model.keras"))
    metrics, samples = {}, []
    if not args.no_evaluate:
        metrics, samples = evaluate.evaluate(
            model, splits["test"], vocabularies, beam_size=args.beam_size,
            length_penalty=args.length_penalty, coverage_penalty=args.coverage_penalty,
            max_length=args.max_decode_length, samples=args.samples,
        )
    metrics["train_seconds"] = round(train_seconds, 1)
    outputs = ["model.keras", "source_vocabulary.txt", "target_vocabulary.txt"]
    plot_history(os.path.join(out, "history.csv"), os.path.join(out, "training_curves.png"))
    outputs.append("training_curves.png")
    outputs += [os.path.basename(path) for path in save_heatmaps(samples, out)]
    if not args.no_export:
        export.export_translator(
            model, vocabularies, os.path.join(out, "saved_model"), args.max_decode_length
        )
        outputs.append("saved_model/")
    metrics["total_seconds"] = round(time.perf_counter() - start, 1)
    evaluate.save_metrics(metrics, os.path.join(out, "metrics.json"))
    outputs.append("metrics.json")
    print("Test:", json.dumps(metrics, sort_keys=True))
    outputs.append("history.csv")
    if os.path.isdir(os.path.join(out, "logs")):
        outputs.append("logs/ (TensorBoard)")
    print(f"Outputs in {os.path.abspath(out)}: {', '.join(outputs)}")
    return metrics


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Trains with command-line arguments; see the module doc."""
    import tensorflow_datasets as tfds  # noqa: PLC0415

    tfds.disable_progress_bar()
    return train(parse_args(argv))


if __name__ == "__main__":
    main()
