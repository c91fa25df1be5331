"""``--strategy multiworker``: two worker processes on localhost train one run together."""

import json
import os
import socket
import subprocess
import sys
import time

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based (tf.distribute)", allow_module_level=True)

tf = pytest.importorskip("tensorflow")

import tiny  # noqa: E402

from examples.nmt.training import distribution  # noqa: E402

ROOT = tiny.ROOT


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("localhost", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


@pytest.mark.slow
def test_two_workers_train_and_the_chief_writes_the_run(date_data_dir, tmp_path):
    workers = [f"localhost:{port}" for port in free_ports(2)]
    argv = [
        "--dataset", "date_normalization/small", "--data-dir", str(date_data_dir),
        "--max-examples", "64", "--units", "16", "--embedding-dim", "8", "--batch-size", "16",
        "--epochs", "1", "--samples", "1", "--max-decode-length", "12",
        "--strategy", "multiworker", "--output-dir",
    ]  # fmt: skip
    processes = []
    for index in range(2):
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        env = {
            **os.environ,
            "KERAS_BACKEND": "tensorflow",
            "PYTHONPATH": str(ROOT),
            "TF_CONFIG": json.dumps(config),
        }
        log = open(tmp_path / f"worker_{index}.log", "w")  # closed below
        command = [
            sys.executable,
            "-m",
            "examples.nmt.train",
            *argv,
            str(tmp_path / f"run_{index}"),
        ]
        processes.append(
            (subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log), log)
        )
    start = time.perf_counter()
    try:
        codes = [process.wait(timeout=600) for process, _ in processes]
    finally:
        for process, log in processes:
            if process.poll() is None:
                process.kill()
            log.close()
    logs = [(tmp_path / f"worker_{index}.log").read_text() for index in range(2)]
    assert codes == [0, 0], "\n".join(log[-3000:] for log in logs)
    assert "on 2 replicas" in logs[0] and "on 2 replicas" in logs[1]
    chief = tmp_path / "run_0"
    for name in ("model.keras", "metrics.json", "saved_model/saved_model.pb", "history.csv"):
        assert (chief / name).exists(), name
    assert not (tmp_path / "run_1").exists()  # worker 1 wrote to a temporary folder, removed
    print(f"two workers: {time.perf_counter() - start:.0f} s")


class _Strategy:
    """A strategy's cluster as ``is_chief`` and ``worker_count`` read it."""

    def __init__(self, cluster, task_type, task_id):
        self.cluster_resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id
        )


@pytest.mark.parametrize(
    ("cluster", "task_type", "task_id", "chief", "count"),
    [
        ({"worker": ["a:1", "b:1"]}, "worker", 0, True, 2),
        ({"worker": ["a:1", "b:1"]}, "worker", 1, False, 2),
        ({"chief": ["c:1"], "worker": ["a:1", "b:1"]}, "worker", 0, False, 3),
        ({"chief": ["c:1"], "worker": ["a:1"]}, "chief", 0, True, 2),
    ],
)
def test_the_chief_is_the_chief_task_or_else_worker_zero(cluster, task_type, task_id, chief, count):
    strategy = _Strategy(cluster, task_type, task_id)
    assert distribution.is_chief(strategy) is chief
    assert distribution.worker_count(strategy) == count


def test_without_a_cluster_this_process_is_the_chief():
    assert distribution.is_chief(tf.distribute.get_strategy())
    assert distribution.worker_count(tf.distribute.get_strategy()) == 1


def test_describe_names_the_devices_and_the_replicas():
    line = distribution.describe(tf.distribute.get_strategy())
    if tf.config.list_physical_devices("GPU"):
        assert line.startswith("Training on: ") and "GPU" in line
    else:
        assert line.startswith("Training on: CPU (") and line.endswith("logical cores)")
    two = _Strategy({"worker": ["a:1", "b:1"]}, "worker", 0)
    two.num_replicas_in_sync = 2
    assert distribution.describe(two).endswith("replicas on 2 workers")
