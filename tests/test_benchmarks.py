"""benchmarks/gpu.py runs end to end (tiny shapes), once, under the JAX backend."""

import json
import os
import pathlib
import subprocess
import sys

import keras
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu.py"

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="runs its own subprocesses; once, under JAX"
)


def _run(*flags):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run(
        [sys.executable, str(SCRIPT), *flags],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
        check=False,
    )


def test_quick_run_measures_every_side_and_writes_json(tmp_path):
    out = tmp_path / "results.json"
    done = _run(
        "--quick",
        "--backends",
        "jax",
        "--pairs",
        "luong_dot",
        "--steps",
        "1",
        "--lengths",
        "64",
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())["backends"]["jax"]
    shapes = [record["shape"] for record in report["pairs"]]
    assert shapes == [[2, 8, 16], [2, 16, 32]]
    for record in report["pairs"]:
        assert set(record["times"]) == {"keras", "auto", "exact", "chunked"}
        assert all(side["ms"] > 0 for side in record["times"].values()), record
    sides = {record["side"]: record for record in report["long"]}
    assert set(sides) == {"keras", "auto"}
    assert all(record["peak_bytes"] > 0 for record in sides.values()), sides
    assert "| jax | 2/8/16 | luong_dot |" in done.stdout
    assert "| jax | 64 |" in done.stdout


def test_refuses_a_cpu_only_machine_without_allow_cpu():
    if any("cpu" not in str(device).lower() for device in keras.distribution.list_devices()):
        pytest.skip("this machine has an accelerator")
    done = _run("--backends", "jax")
    assert done.returncode == 1
    assert "No GPU found" in done.stdout and "--allow-cpu" in done.stdout
