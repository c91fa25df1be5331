"""What the NMT example's tests share: tiny models and vocabularies, tiny training runs.

``tiny_model`` is the one untrained tiny model (RNN or Transformer) of the
tests; ``tiny_args`` the command line of a one-epoch training run.
"""

from __future__ import annotations

import csv
import os
import pathlib
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from examples.nmt import backend
from examples.nmt import translator
from examples.nmt.host.vocabularies import TokenVocabulary
from examples.nmt.host.vocabularies import Vocabularies
from examples.nmt.models.rnn import build_model
from examples.nmt.models.transformer import build_transformer

ROOT = pathlib.Path(__file__).resolve().parents[2]  # the repository

TOKENS = ("[PAD]", "[UNK]", "[START]", "[END]", "may", "9", "th", ",", "1998", "june", "a")
# Source ids (0 pads) and teacher-forced decoder inputs ([START] = 2) of three sentences.
SOURCE = np.array([[5, 6, 7, 0, 0], [4, 5, 6, 7, 8], [9, 0, 0, 0, 0]], "int32")
TARGET_IN = np.array([[2, 5, 6, 7], [2, 9, 4, 0], [2, 4, 0, 0]], "int32")
HEADS = 2


def tiny_vocabularies(source: int = len(TOKENS), target: int = len(TOKENS)):
    """Word vocabularies of the first ``source`` and ``target`` of ``TOKENS``
    (``.tensorflow()``: their TensorFlow engine)."""
    return Vocabularies(TokenVocabulary(TOKENS[:source]), TokenVocabulary(TOKENS[:target]))


def tiny_model(
    architecture: str = "rnn",
    *,
    seed: int = 0,
    sizes: tuple[int, int] = (12, 10),
    output_scale: float = 1.0,
    **options: Any,
) -> keras.Model:
    """An untrained tiny ``Seq2Seq`` (8 units) or ``Transformer`` (``d_model`` 8, 2 layers).

    ``options`` override the builder's arguments; ``output_scale`` multiplies
    the output kernel (a flat random model ends at once; larger output
    weights give varied, longer outputs).
    """
    keras.utils.set_random_seed(seed)
    if architecture == "transformer":
        options = {"d_model": 8, "num_heads": HEADS, "layers": 2, "ff_dim": 16, **options}
        model = build_transformer(*sizes, **options)
    else:
        options = {"embedding_dim": 8, "units": 8, "num_heads": HEADS, **options}
        model = build_model(*sizes, **options)
    if output_scale != 1.0:
        kernel = model.output_layer.kernel
        kernel.assign(kernel * output_scale)
    return model


def search(model: keras.Model, source_ids: Any, **settings: Any):
    """``translator.search`` over source ids, compiled: best hypothesis first.

    On TensorFlow, one ``tf.function`` (tensors out, as the export tests
    compare them with a SavedModel's); elsewhere ``backend.compile_search``
    (``jax.jit`` on JAX, eager under ``no_grad`` on PyTorch; NumPy arrays out).
    ``keras.ops.convert_to_numpy`` reads either.
    """
    if keras.backend.backend() == "tensorflow":
        run = tf.function(lambda ids: translator.search(model, ids, **settings), autograph=False)
        return run(tf.convert_to_tensor(source_ids, tf.int32))
    run = backend.compile_search(model, lambda ids: translator.search(model, ids, **settings))
    return run(np.asarray(source_ids, "int32"))


class Interrupt(keras.callbacks.Callback):
    """Raises after ``epoch`` finishes: a killed run, for the resume tests."""

    def __init__(self, epoch: int):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            raise KeyboardInterrupt(f"interrupted after epoch {epoch + 1}")


def history_epochs(out: pathlib.Path) -> list[int]:
    """The epochs that ``history.csv`` of run folder ``out`` lists."""
    with open(out / "history.csv", encoding="utf-8") as file:
        return [int(row["epoch"]) for row in csv.DictReader(file)]


def write_tfds_metadata(
    data_dir: str | os.PathLike, name: str, split_names=("train", "validation", "test")
) -> None:
    """TFDS metadata of ``name`` with these splits (40 examples each) in ``data_dir``.

    The dataset then counts as prepared, and ``tfds.testing.mock_data`` knows its
    splits offline.
    """
    import tensorflow_datasets as tfds

    builder = tfds.builder(name, data_dir=str(data_dir))
    infos = [
        tfds.core.SplitInfo(name=split, shard_lengths=[40], num_bytes=0) for split in split_names
    ]
    builder.info.set_splits(tfds.core.SplitDict(infos))
    os.makedirs(builder.data_dir)
    builder.info.write_to_directory(builder.data_dir)


def finished_run_args(
    output_dir: str | os.PathLike, *extra: str, data_dir: str | os.PathLike
) -> list[str]:
    """The arguments of ``finished_tiny_run`` (tests/examples/conftest.py), ``extra`` last.

    A rerun in a copy of that run with these arguments has the same settings.
    ``--max-length 24``: test_runs truncates a 30-token sentence.
    """
    return tiny_args(output_dir, *extra, data_dir=data_dir, max_length=24)


def tiny_args(
    output_dir: str | os.PathLike,
    *extra: str,
    dataset: str = "date_normalization/small",
    data_dir: str | os.PathLike | None = None,
    examples: int = 96,
    units: int = 16,
    embedding_dim: int = 8,
    batch_size: int = 32,
    max_decode_length: int = 12,
    max_length: int | None = None,
) -> list[str]:
    """``train.py`` arguments: one epoch of a tiny RNN on a few examples; ``extra`` last."""
    # The RNN whatever the dataset's recipe would pick (the `real` recipe's is the Transformer).
    argv = ["--architecture", "rnn", "--dataset", dataset, "--max-examples", str(examples)]
    if data_dir is not None:
        argv += ["--data-dir", str(data_dir)]
    argv += ["--units", str(units), "--embedding-dim", str(embedding_dim)]
    argv += ["--batch-size", str(batch_size), "--epochs", "1", "--samples", "1"]
    if max_length is not None:
        argv += ["--max-length", str(max_length)]
    argv += ["--max-decode-length", str(max_decode_length), "--output-dir", str(output_dir)]
    return [*argv, *extra]
