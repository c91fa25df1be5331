"""NumPy arrays -> ``keras.utils.PyDataset`` batches, the one input pipeline on every backend.

``ArrayBatches(arrays, batch_size)`` cuts a structure of NumPy arrays that
share their first axis (a tuple ``(inputs, targets)``, a dict, or nested
ones) into batches. With ``shuffle_seed`` it lays out ``passes`` passes one
after another, each shuffled by NumPy's generator from its own seed
(``seed * 1_000_003 + pass``): the order of pass ``p`` depends on ``p``
alone, whatever was iterated before, so a resumed run that ``skip``s the
batches of its finished epochs trains on an uninterrupted run's batches.
Without it, one pass in order (validation, test). ``sorted_passes`` lays
out the first passes in the order of a ``sort_key`` instead (SortaGrad,
Amodei et al. 2016: the shortest utterances first). ``pad_rows`` gives a
compiling backend (JAX) one batch shape: the last batch is padded with
copies of row 0 and a ``sample_weight`` of 0 where the rows are padding.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np


def _rows(arrays: Any) -> int:
    counts = {len(array) for array in keras.tree.flatten(arrays)}
    if len(counts) != 1:
        raise ValueError(
            f"Expected arrays that share their first axis. Received first axes {sorted(counts)}"
        )
    return counts.pop()


def pass_order(rows: int, seed: int, index: int) -> np.ndarray:
    """The row order of pass ``index``: a permutation from seed ``seed * 1_000_003 + index``."""
    return np.random.default_rng(seed * 1_000_003 + index).permutation(rows)


class ArrayBatches(keras.utils.PyDataset):
    """Batches of ``arrays`` (see the module doc); ``len`` counts every pass's batches.

    Args:
        arrays: a structure (tuple, list, dict) of NumPy arrays with one first axis.
        batch_size: rows a batch.
        shuffle_seed: None for one pass in order; else each pass shuffled.
        passes: how many passes (epochs) to lay out, with ``shuffle_seed``.
        drop_remainder: leave out each pass's last, partial batch.
        pad_rows: pad each pass's last batch to ``batch_size`` rows, and add a
            sample weight (1 on real rows, 0 on padding) as the third element
            of an ``(inputs, targets)`` pair, shaped as the targets when they
            are one array (a per-token loss then weighs each token of a row).
        sorted_passes: how many of the first passes (with ``shuffle_seed``)
            take the rows in increasing ``sort_key`` (ties in row order).
        sort_key: ``(rows,)`` numbers, with ``sorted_passes``.
    """

    def __init__(
        self,
        arrays: Any,
        batch_size: int,
        shuffle_seed: int | None = None,
        passes: int = 1,
        drop_remainder: bool = False,
        pad_rows: bool = False,
        sorted_passes: int = 0,
        sort_key: np.ndarray | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"Expected batch_size an integer >= 1. Received: {batch_size!r}")
        self.arrays = arrays
        self.rows = _rows(arrays)
        self.batch_size = batch_size
        self.shuffle_seed = shuffle_seed
        self.passes = passes if shuffle_seed is not None else 1
        self.drop_remainder = drop_remainder
        self.pad_rows = pad_rows
        full, partial = divmod(self.rows, batch_size)
        self.per_pass = full + (1 if partial and not drop_remainder else 0)
        if self.per_pass == 0:
            raise ValueError(
                f"Expected at least {batch_size} rows for one full batch. Received: {self.rows}"
            )
        if not isinstance(sorted_passes, int) or sorted_passes < 0:
            raise ValueError(f"Expected sorted_passes an integer >= 0. Received: {sorted_passes!r}")
        if sorted_passes and (sort_key is None or np.shape(sort_key) != (self.rows,)):
            raise ValueError(
                f"Expected a sort_key of shape ({self.rows},) with sorted_passes. Received: "
                f"{None if sort_key is None else np.shape(sort_key)}"
            )
        self.sorted_passes = sorted_passes
        self.sort_key = sort_key
        self.offset = 0
        self._orders: dict[int, np.ndarray] = {}

    def _order(self, index: int) -> np.ndarray:
        if self.shuffle_seed is None:
            return np.arange(self.rows)
        if index not in self._orders:
            if index < self.sorted_passes:
                order = np.argsort(np.asarray(self.sort_key), kind="stable")
            else:
                order = pass_order(self.rows, self.shuffle_seed, index)
            self._orders = {index: order}
        return self._orders[index]

    def __len__(self) -> int:
        return self.passes * self.per_pass - self.offset

    def __getitem__(self, index: int) -> Any:
        position = index + self.offset
        if not 0 <= position < self.passes * self.per_pass:
            raise IndexError(index)
        which, batch = divmod(position, self.per_pass)
        rows = self._order(which)[batch * self.batch_size : (batch + 1) * self.batch_size]
        real = len(rows)
        if self.pad_rows and real < self.batch_size:
            rows = np.concatenate([rows, np.full(self.batch_size - real, rows[0])])
        picked = keras.tree.map_structure(lambda array: array[rows], self.arrays)
        if self.pad_rows and isinstance(picked, tuple) and len(picked) == 2:
            weights = (np.arange(len(rows)) < real).astype("float32")  # (B,)
            targets = picked[1]
            if isinstance(targets, np.ndarray) and targets.ndim > 1:
                extra = (1,) * (targets.ndim - 1)
                weights = np.broadcast_to(weights.reshape(-1, *extra), targets.shape).copy()
            return (*picked, weights)
        return picked

    def skip(self, count: int) -> ArrayBatches:
        """These batches less the first ``count`` (a resumed run's finished epochs)."""
        skipped = ArrayBatches(
            self.arrays,
            self.batch_size,
            self.shuffle_seed,
            self.passes,
            self.drop_remainder,
            self.pad_rows,
            self.sorted_passes,
            self.sort_key,
        )
        skipped.offset = self.offset + count
        return skipped


def for_fit(batches: keras.utils.PyDataset, repeat: bool = False) -> Any:
    """``batches`` as ``fit`` and ``evaluate`` should take them on this backend.

    JAX and PyTorch take the ``PyDataset`` as it is. On TensorFlow, Keras
    turns a ``PyDataset`` into a ``tf.data.Dataset`` whose shapes it infers
    from the first two batches alone (Keras 3.15), so a later batch of
    another sequence length fails there ("generator yielded an element of
    shape (7, 7) where an element of shape (None, 11) was expected"). Here
    TensorFlow gets the same generator over the same batches, with every
    dimension left unknown; with ``repeat`` (validation batches, read once
    an epoch through one iterator kept by ``fit``), over and over.
    """
    if keras.backend.backend() != "tensorflow":
        return batches
    import tensorflow as tf  # noqa: PLC0415  (the TensorFlow backend's own package)

    def spec(array: Any) -> Any:
        array = np.asarray(array)
        return tf.TensorSpec([None] * array.ndim, tf.as_dtype(array.dtype))

    signature = keras.tree.map_structure(spec, batches[0])

    def generate() -> Any:
        for index in range(len(batches)):
            yield batches[index]

    dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
    return dataset.repeat() if repeat else dataset
