"""``examples.nmt.training.distribution``: the strategies, the devices line, the batches each
process feeds (its padded, sharded batches: tests/examples/nmt/host/test_splits_and_batches.py).
Data-parallel training itself is tested in test_data_parallel.py (JAX)
and ``--strategy mirrored`` in test_fit.py (TensorFlow)."""

import pytest

tf = pytest.importorskip("tensorflow")

from examples.nmt import backend  # noqa: E402
from examples.nmt.training import distribution  # noqa: E402


def test_one_process_feeds_the_batches_as_they_are():
    data = object()  # whatever the batches are, one process feeds them unchanged
    assert distribution.shard_batches(data, distribution.Distribution("data", 2)) is data


def test_the_first_line_names_the_backend_and_devices():
    line = distribution.Distribution().describe()
    label = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}[backend.name()]
    assert line.startswith(f"Training on: {label}, ")
    assert "GPU" in line or "logical cores)" in line
    two = distribution.Distribution("data", 4, processes=2, process_id=1)
    assert two.describe().endswith("--strategy data, 4 replicas in 2 processes")
    assert not two.is_chief and distribution.Distribution().is_chief


def test_the_default_strategy_needs_nothing():
    assert distribution.setup("default") == distribution.Distribution()


def test_process_flags_need_the_data_strategy():
    with pytest.raises(distribution.RunError, match="need --strategy data"):
        distribution.setup("default", coordinator="localhost:1234", num_processes=2, process_id=0)
