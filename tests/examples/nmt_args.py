"""Command lines of tiny training runs, shared by the NMT example's tests."""

from __future__ import annotations

import os


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
    argv = ["--dataset", dataset, "--max-examples", str(examples)]
    if data_dir is not None:
        argv += ["--data-dir", str(data_dir)]
    argv += ["--units", str(units), "--embedding-dim", str(embedding_dim)]
    argv += ["--batch-size", str(batch_size), "--epochs", "1", "--samples", "1"]
    if max_length is not None:
        argv += ["--max-length", str(max_length)]
    argv += ["--max-decode-length", str(max_decode_length), "--output-dir", str(output_dir)]
    return [*argv, *extra]
