"""Long sequences: time and peak memory of our layers against the Keras built-ins.

One forward + backward step (gradients for the inputs and all weights,
compiled: `tf.function` / `jax.jit`; eager on PyTorch), for

- `mha`: `MultiHead(8 heads, key_dim 32)` against
  `keras.layers.MultiHeadAttention(8, 32)`, self-attention, batch 1,
  256 features, at each `--lengths` T;
- `additive`: `BahdanauAttention(units=128)` against
  `keras.layers.AdditiveAttention()`, batch 8, Tq = Tv = 512, 128 features.

Every measurement runs in its own subprocess, so its peak RSS is its own:
the child resets the kernel's high-water mark (`/proc/self/clear_refs`)
after building inputs and weights, and reports `VmHWM - VmRSS_then`. The
parent polls the child's RSS and kills it above `--memory-cap-gib` (a run
that needs more than the machine has would otherwise invite the OOM killer
onto other processes). Results are printed as Markdown tables with ratios
against Keras and written to `--output-dir` as JSON.

    python benchmarks/long_sequences.py                       # T = 1024, 2048
    python benchmarks/long_sequences.py --lengths 1024 2048 4096 8192 16384 \\
        --plot docs/img/long_sequences_memory.png
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

from measure import reset_peak  # this folder's helpers
from measure import status_kib  # this folder's helpers

IMPLEMENTATIONS = ("keras", "exact", "chunked", "auto")
ROOT = pathlib.Path(__file__).resolve().parent.parent


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument(
        "--cases", nargs="+", default=["mha", "additive"], choices=["mha", "additive"]
    )
    parser.add_argument(
        "--implementations",
        nargs="+",
        default=["keras", "exact", "chunked"],
        choices=IMPLEMENTATIONS,
    )
    parser.add_argument(
        "--block-size", type=int, default=None, help="chunked tiles (layer default if unset)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed steps after the first")
    parser.add_argument("--backend", default=os.environ.get("KERAS_BACKEND", "tensorflow"))
    parser.add_argument("--jit-compile", action="store_true", help="XLA on TensorFlow")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="intra-op threads on TensorFlow/PyTorch (steadier on a shared machine)",
    )
    parser.add_argument("--memory-cap-gib", type=float, default=14.0)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per measurement")
    parser.add_argument("--output-dir", default="benchmarks/results")
    parser.add_argument("--plot", default=None, help="write a log-log memory plot (PNG) here")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# ----------------------------------------------------------------------------
# Child: one measurement
# ----------------------------------------------------------------------------
def _status_gib(field: str) -> float:
    return status_kib(field) / 2**20


def _build(case, implementation, length, block_size):
    """(layer, inputs, call) for one case; `call(layer_fn, inputs)` returns the output."""
    import keras
    import numpy as np

    import keras_attention

    rng = np.random.default_rng(0)
    if case == "mha":
        x = rng.normal(size=(1, length, 256)).astype("float32")
        if implementation == "keras":
            layer = keras.layers.MultiHeadAttention(num_heads=8, key_dim=32)
        else:
            layer = keras_attention.MultiHead(
                num_heads=8, key_dim=32, implementation=implementation, block_size=block_size
            )
        return layer, [x], lambda fn, x: fn(x, x)
    q, v = (rng.normal(size=(8, 512, 128)).astype("float32") for _ in range(2))
    if implementation == "keras":
        return keras.layers.AdditiveAttention(), [q, v], lambda fn, q, v: fn([q, v])
    layer = keras_attention.BahdanauAttention(
        units=128, implementation=implementation, block_size=block_size
    )
    return layer, [q, v], lambda fn, q, v: fn(q, v)


def _step_fn(backend, layer, inputs, call, jit_compile):
    """A zero-argument function running one forward + backward step to completion."""
    import keras

    call(layer, *[x[:, :8] for x in inputs])  # build the weights on a short input
    if backend == "tensorflow":
        import tensorflow as tf

        tensors = [tf.constant(x) for x in inputs]

        @tf.function(jit_compile=jit_compile)
        def step(*xs):
            with tf.GradientTape() as tape:
                tape.watch(xs)
                loss = tf.reduce_sum(tf.square(call(layer, *xs)))
            return loss, tape.gradient(loss, list(xs) + layer.trainable_weights)

        return lambda: [t.numpy() for t in tf.nest.flatten(step(*tensors))]
    if backend == "jax":
        import jax

        trainable = [w.value for w in layer.trainable_variables]
        frozen = [w.value for w in layer.non_trainable_variables]

        def loss(trainable, *xs):
            out, _ = layer.stateless_call(trainable, frozen, *call(lambda *a: a, *xs))
            return jax.numpy.sum(jax.numpy.square(out))

        grad = jax.jit(jax.value_and_grad(loss, argnums=tuple(range(len(inputs) + 1))))
        return lambda: jax.block_until_ready(grad(trainable, *inputs))
    import torch

    tensors = [torch.tensor(x, requires_grad=True) for x in inputs]

    def step():
        loss = torch.sum(torch.square(call(layer, *tensors)))
        loss.backward()
        return keras.ops.convert_to_numpy(loss.detach())

    return step


def _set_threads(backend: str, threads) -> None:
    if not threads:
        return
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
    elif backend == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)


def _child(spec: dict) -> dict:
    _set_threads(spec["backend"], spec.get("threads"))
    layer, inputs, call = _build(
        spec["case"], spec["implementation"], spec["length"], spec["block_size"]
    )
    step = _step_fn(spec["backend"], layer, inputs, call, spec["jit_compile"])
    reset_peak()  # VmHWM back to the current RSS
    baseline = _status_gib("VmRSS")
    start = time.perf_counter()
    step()
    first = time.perf_counter() - start
    walls, cpus = [], []
    for _ in range(spec["repeats"]):
        wall, cpu = time.perf_counter(), time.process_time()
        step()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {
        "first_s": first,
        "step_ms": 1000 * statistics.median(walls),
        "step_min_ms": 1000 * min(walls),
        "cpu_ms": 1000 * statistics.median(cpus),
        "peak_gib": _status_gib("VmHWM") - baseline,
    }


# ----------------------------------------------------------------------------
# Parent: one subprocess per measurement
# ----------------------------------------------------------------------------
def _rss_gib(pid: int) -> float:
    try:
        text = pathlib.Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 2**20
    return 0.0


def measure(spec: dict, args) -> dict:
    """Run one measurement in a subprocess; a result dict, or {"error": why}."""
    env = dict(os.environ, KERAS_BACKEND=spec["backend"], TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    command = [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", json.dumps(spec)]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    start, peak, killed = time.monotonic(), 0.0, None
    while process.poll() is None:
        peak = max(peak, _rss_gib(process.pid))
        if peak > args.memory_cap_gib:
            killed = f"killed above the {args.memory_cap_gib:g} GiB cap"
        elif time.monotonic() - start > args.timeout:
            killed = f"killed after {args.timeout:g} s"
        if killed:
            process.kill()
            break
        time.sleep(0.05)
    stdout, stderr = process.communicate()
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return {"error": killed or _failure(stderr, process.returncode), "rss_seen_gib": peak}


def _failure(stderr: str, returncode: int) -> str:
    """The most telling line of a failed child's stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "error" in line]
    return (errors or lines or [f"exit code {returncode}"])[-1][:200]


def _cell(result: dict, key: str, fmt: str) -> str:
    return "—" if "error" in result else format(result[key], fmt)


def _ratio(result: dict, keras_result: dict, key: str) -> str:
    if "error" in result:
        return "—"
    if keras_result is None or "error" in keras_result:
        return "Keras failed"
    return f"{result[key] / keras_result[key]:.2f}x"


def table(case: str, results: dict, implementations) -> str:
    """Markdown table of one case: one row per length and implementation."""
    lines = [
        f"| {case} T | implementation | step (ms, median) | CPU (ms) | first call (s) "
        "| peak above baseline (GiB) | time vs Keras | memory vs Keras |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for length, by_impl in sorted(results.items()):
        for impl in implementations:
            result = by_impl.get(impl)
            if result is None:
                continue
            keras_result = by_impl.get("keras")
            note = f" ({result['error']})" if "error" in result else ""
            lines.append(
                f"| {length} | {impl}{note} | {_cell(result, 'step_ms', '.0f')} "
                f"| {_cell(result, 'cpu_ms', '.0f')} | {_cell(result, 'first_s', '.1f')} "
                f"| {_cell(result, 'peak_gib', '.3f')} "
                f"| {'—' if impl == 'keras' else _ratio(result, keras_result, 'step_ms')} "
                f"| {'—' if impl == 'keras' else _ratio(result, keras_result, 'peak_gib')} |"
            )
    return "\n".join(lines)


def plot(results: dict, path: str, implementations) -> None:
    """Log-log peak memory against T; failed runs as crosses where they stopped."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {
        "keras": "keras.layers.MultiHeadAttention",
        "exact": "MultiHead (exact)",
        "chunked": "MultiHead (chunked)",
        "auto": "MultiHead (auto)",
    }
    results = {int(length): by_impl for length, by_impl in results.items()}
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    failures = {}  # failed runs so far at each length, to stack their labels
    for impl in implementations:
        runs = [(t, r[impl]) for t, r in sorted(results.items()) if impl in r]
        done = [(t, r["peak_gib"]) for t, r in runs if "error" not in r]
        (line,) = axes.plot(*zip(*done), marker="o", label=labels[impl]) if done else (None,)
        for t, r in runs:
            if "error" in r:
                color = line.get_color() if line else "black"
                seen = max(r.get("rss_seen_gib", 0.0), 0.05)
                axes.plot([t], [seen], marker="x", markersize=10, color=color)
                why = "killed at the cap" if "cap" in r["error"] else "out of memory"
                stacked = failures[t] = failures.get(t, -1) + 1
                axes.annotate(
                    f"{impl}: {why}",
                    (t, seen),
                    textcoords="offset points",
                    xytext=(-95, 6 + 10 * stacked),
                    fontsize=7,
                    color=color,
                )
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks(sorted(results), [str(t) for t in sorted(results)])
    axes.axhline(24, color="grey", linestyle="--", linewidth=1)
    axes.text(max(results), 26, "machine RAM (24 GiB)", fontsize=7, color="grey", ha="right")
    axes.set_xlabel("sequence length T")
    axes.set_ylabel("peak RSS above baseline (GiB)")
    axes.set_title("One forward + backward step, batch 1, d=256, 8 heads", fontsize=10)
    axes.grid(True, which="both", linewidth=0.3)
    axes.legend(fontsize=8, loc="center left")
    figure.tight_layout()
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(_child(json.loads(args.child))), flush=True)
        return None
    results = {case: {} for case in args.cases}
    for case in args.cases:
        lengths = args.lengths if case == "mha" else [512]
        for length in lengths:
            for impl in args.implementations:
                spec = dict(
                    case=case,
                    implementation=impl,
                    length=length,
                    backend=args.backend,
                    block_size=args.block_size,
                    repeats=args.repeats,
                    jit_compile=args.jit_compile,
                    threads=args.threads,
                )
                load = os.getloadavg()[0]
                print(
                    f"[{case} T={length} {impl}] load average {load:.1f} ...",
                    file=sys.stderr,
                    flush=True,
                )
                result = measure(spec, args)
                result["load_average"] = load
                results[case].setdefault(length, {})[impl] = result
                print(f"    {result}", file=sys.stderr, flush=True)
    output = pathlib.Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    (output / f"long_sequences_{args.backend}.json").write_text(json.dumps(results, indent=1))
    for case in args.cases:
        print(f"\n{table(case, results[case], args.implementations)}")
    if args.plot and "mha" in results:
        plot(results["mha"], args.plot, args.implementations)
    return results


if __name__ == "__main__":
    main()
