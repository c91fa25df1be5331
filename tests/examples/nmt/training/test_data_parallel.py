"""``--strategy data`` on JAX: the batch is sharded over devices and processes, and the
weights after training equal a one-device run's with the same global batch.

Each case runs in new processes: JAX fixes its devices when it starts
(``--xla_force_host_platform_device_count=2`` gives a CPU two devices), and
several processes meet through ``keras.distribution.initialize`` with CPU
collectives (gloo). Tolerance: 1e-5 absolute on every weight; the two
devices' gradients are summed in another order than one device's, which
moves float32 sums by a few ulps a step.
"""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest

if keras.backend.backend() != "jax":
    pytest.skip("--strategy data is JAX's keras.distribution", allow_module_level=True)

import tiny

ROOT = tiny.ROOT
TOLERANCE = 1e-5
# 3 steps of 24 rows (odd last batches included: the padding rows must not count).
# No test-split evaluation: these runs compare weights. The finished run's rerun
# (the chief evaluates alone) evaluates.
RUN = ["--max-examples", "80", "--batch-size", "24", "--no-export", "--samples", "0"]
NO_EVALUATE = ["--no-evaluate"]
# The suite's own XLA flags (CI: backend optimisation level 0, which compiles
# faster and changes no result) reach every process; each case adds its devices.
XLA_FLAGS = os.environ.get("XLA_FLAGS", "")
TWO_DEVICES = f"{XLA_FLAGS} --xla_force_host_platform_device_count=2".strip()
ONE_DEVICE = {"XLA_FLAGS": XLA_FLAGS}  # a process of a two-process run

SCRIPT = """
import json, sys
from examples.nmt import train

args = json.loads(sys.argv[1])
train.main(args)
"""

# The run, printing the data layout its distribution gives a (24, 16) batch as
# soon as it is set up (one process for both: each new process imports JAX,
# Keras and TensorFlow again).
SCRIPT_AND_LAYOUT = """
import json, sys
import keras
from examples.nmt import train
from examples.nmt.training import distribution

setup = distribution.setup


def setup_and_print_the_layout(*args, **kwargs):
    distributed = setup(*args, **kwargs)
    sharding = keras.distribution.distribution().get_data_layout((24, 16)).backend_layout
    print("LAYOUT", json.dumps({
        "replicas": distributed.replicas,
        "devices": len(sharding.mesh.devices.flat),
        "shard_shape": list(sharding.shard_shape((24, 16))),
    }), flush=True)
    return distributed


distribution.setup = setup_and_print_the_layout
train.main(json.loads(sys.argv[1]))
"""


# Set by `_one_compilation_cache` for this module's processes.
COMPILATION_CACHE = {}


@pytest.fixture(scope="module", autouse=True)
def _one_compilation_cache(tmp_path_factory):
    """One persistent XLA cache for the module's processes, new for each test session.

    The cases start a dozen processes that compile the same programs again (the
    one-device run and its resumed twin, the two-process runs before and after
    the kill); a later process loads what an earlier one compiled. The same
    program and flags give the same executable: no result changes.
    """
    COMPILATION_CACHE["JAX_COMPILATION_CACHE_DIR"] = str(tmp_path_factory.mktemp("xla_cache"))
    COMPILATION_CACHE["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    yield
    COMPILATION_CACHE.clear()


def run_python(code, *args, env_extra=None, timeout=600):
    env = {
        **os.environ,
        "KERAS_BACKEND": "jax",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "XLA_FLAGS": TWO_DEVICES,
        **COMPILATION_CACHE,
        **(env_extra or {}),
    }
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(process, timeout=600):
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output[-4000:]
    return output


def weights(run):
    model = keras.saving.load_model(pathlib.Path(run) / "model.keras", compile=False)
    return [np.asarray(weight) for weight in model.get_weights()]


def free_port():
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def one_device_run(date_data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("one") / "run"
    argv = tiny.tiny_args(out, *RUN, *NO_EVALUATE, data_dir=date_data_dir)
    finish(run_python(SCRIPT, json.dumps(argv)))
    return out


def test_two_devices_train_to_the_weights_of_one(one_device_run, date_data_dir, tmp_path):
    """The batch axis is sharded over both devices, and the weights are one device's."""
    out = tmp_path / "run"
    argv = tiny.tiny_args(out, *RUN, *NO_EVALUATE, "--strategy", "data", data_dir=date_data_dir)
    output = finish(run_python(SCRIPT_AND_LAYOUT, json.dumps(argv)))
    assert "--strategy data, 2 replicas" in output
    assert "on 2 replicas" in output
    layout = json.loads(output.split("LAYOUT ", 1)[1].splitlines()[0])
    assert layout == {"replicas": 2, "devices": 2, "shard_shape": [12, 16]}
    expected, found = weights(one_device_run), weights(out)
    assert len(found) == len(expected)
    for want, got in zip(expected, found):
        np.testing.assert_allclose(got, want, atol=TOLERANCE, rtol=0)


KILLED = """
import json, os, sys
import keras
from examples.nmt import train
from examples.nmt.training import fit


class Kill(keras.callbacks.Callback):  # after RunCheckpoint has committed the epoch
    def on_epoch_end(self, epoch, logs=None):
        os._exit(3)


fit.tensorboard_callbacks = lambda args: [Kill()]
train.main(json.loads(sys.argv[1]))
"""


def two_processes(code, out, extra, port):
    processes = []
    for index in range(2):
        argv = tiny.tiny_args(
            out if index == 0 else out.parent / f"{out.name}_other",
            *RUN, *extra,
            "--strategy", "data", "--coordinator", f"localhost:{port}",
            "--num-processes", "2", "--process-id", str(index),
        )  # fmt: skip
        processes.append(run_python(code, json.dumps(argv), env_extra=ONE_DEVICE))
    return processes


def test_two_processes_resume_the_chiefs_killed_run_and_rerun_a_finished_one(
    date_data_dir, tmp_path
):
    """Only the chief keeps the run: the other process takes its epoch, counters and weights.

    The reference is the same killed run resumed by one process on one device:
    the two processes' steps of epoch 2 give its weights (as two devices of
    one process give one device's, above). Only the chief writes the run.
    """
    finished = ["--epochs", "2", "--data-dir", str(date_data_dir)]
    extra = [*finished, *NO_EVALUATE]  # the finished run's rerun below evaluates
    out = tmp_path / "run"
    for process in two_processes(KILLED, out, extra, free_port()):  # killed after epoch 1
        process.communicate(timeout=600)
    assert (out / "backup" / "state.json").is_file() and not (out / "model.keras").exists()
    one = tmp_path / "one"
    shutil.copytree(out, one)
    argv = tiny.tiny_args(one, *RUN, *extra)
    assert "Resuming after epoch 1" in finish(run_python(SCRIPT, json.dumps(argv)))

    outputs = [finish(p) for p in two_processes(SCRIPT, out, extra, free_port())]
    assert "Resuming after epoch 1" in outputs[0] and "Resuming after epoch 1" in outputs[1]
    assert "2 replicas in 2 processes" in outputs[0]
    for want, got in zip(weights(one), weights(out)):
        np.testing.assert_allclose(got, want, atol=TOLERANCE, rtol=0)

    # Training done: the chief evaluates, the other waits for it; neither trains.
    outputs = [finish(p, timeout=300) for p in two_processes(SCRIPT, out, finished, free_port())]
    assert "Training of the run" in outputs[0] and "Epoch 1/" not in outputs[1]
    assert (out / "model.keras").is_file() and (out / "metrics.json").is_file()
    assert not (tmp_path / "run_other").exists()  # process 1 wrote to a temporary folder
