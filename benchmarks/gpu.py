"""Accelerator benchmark: our layers against their Keras counterparts, per backend.

    python benchmarks/gpu.py                        # JAX, PyTorch, TensorFlow on the GPU
    python benchmarks/gpu.py --backends jax --json results.json
    python benchmarks/gpu.py --quick                # tiny shapes, runs on a CPU

Each backend runs in its own subprocess (`KERAS_BACKEND` is fixed per
process). Two tables:

- pairs: `LuongAttention("dot")` vs `keras.layers.Attention`,
  `BahdanauAttention(units=d)` vs `keras.layers.AdditiveAttention`,
  `ScaledDotProduct` vs `keras.ops.dot_product_attention`, `MultiHead(8 heads)`
  vs `keras.layers.MultiHeadAttention`, at B32/T64/d256 and B32/T256/d512,
  ours with `implementation="auto"` (the default), `"exact"` and `"chunked"`;
- long sequences: bfloat16, batch 1, 8 heads of 64, self-attention at
  T = 16,384 and 65,536, `MultiHead` (auto) vs `keras.layers.MultiHeadAttention`,
  with peak device memory. Each measurement is a fresh subprocess, so its peak
  is its own.

A step is one forward + backward pass, loss `sum(out**2)`, gradients for the
query and every trainable weight: under `jax.jit` on JAX, eager on PyTorch,
in `tf.function` on TensorFlow. Times are medians of `--steps` steps after
`--warmup`, each ended by a device synchronization (`block_until_ready`,
`torch.cuda.synchronize`, fetching a scalar that depends on every gradient on
TensorFlow); the sides of a pair alternate step by step. Peak memory: JAX
`memory_stats()["peak_bytes_in_use"]`, `torch.cuda.max_memory_allocated`,
TensorFlow `get_memory_info("GPU:0")["peak"]`; on a CPU, the growth of the
resident set (Linux `VmHWM`) instead. Ratios are ours / Keras: below 1, ours is
faster or smaller.

Without a GPU the script stops unless given `--allow-cpu` (or `--quick`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import measure  # this folder's helper
from layers import PAIRS  # this folder's helper
from layers import make_pair  # this folder's helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
BACKENDS = ("jax", "torch", "tensorflow")
SIDES = ("keras", "auto", "exact", "chunked")
FULL = dict(
    shapes=[(32, 64, 256), (32, 256, 512)],
    heads=8,
    lengths=[16384, 65536],
    long_heads=8,
    head_dim=64,
    steps=20,
    warmup=3,
)
QUICK = dict(
    shapes=[(2, 8, 16), (2, 16, 32)],
    heads=8,
    lengths=[128],
    long_heads=8,
    head_dim=8,
    steps=3,
    warmup=1,
)


# ----------------------------------------------------------------------------
# Child side: devices, steps, measurements
# ----------------------------------------------------------------------------
def _device(backend: str) -> tuple[bool, str]:
    """(is a GPU, its name) of the device this backend computes on."""
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        return device.platform == "gpu", device.device_kind
    if backend == "torch":
        import torch

        if torch.cuda.is_available():
            return True, torch.cuda.get_device_name()
        return False, "cpu"
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        return True, tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
    return False, "cpu"


def _inputs(shape, dtype, seed=0):
    import keras
    import numpy as np

    rng = np.random.default_rng(seed)
    return [keras.ops.cast(rng.normal(size=shape).astype("float32"), dtype) for _ in range(2)]


def make_step(backend: str, fn, layers, q, v, on_gpu: bool):
    """A zero-argument function: one forward+backward step, finished on the device."""
    variables = [w for layer in layers for w in layer.trainable_variables]
    if backend == "jax":
        import jax
        import keras

        def loss(values, q, v):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                out = fn(q, v)
            return jax.numpy.sum(jax.numpy.square(out.astype("float32")))

        grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
        values = [w.value for w in variables]
        return lambda: jax.block_until_ready(grad(values, q, v))
    if backend == "torch":
        import torch

        params = [w.value for w in variables]
        q = q.detach().requires_grad_(True)

        def step():
            for tensor in params + [q]:
                tensor.grad = None
            loss = torch.sum(torch.square(fn(q, v).float()))
            loss.backward()
            if on_gpu:
                torch.cuda.synchronize()

        return step
    import tensorflow as tf

    @tf.function
    def tf_step(q, v):
        with tf.GradientTape() as tape:
            tape.watch(q)
            loss = tf.reduce_sum(tf.square(tf.cast(fn(q, v), "float32")))
        grads = tape.gradient(loss, [q] + variables)
        # One scalar that depends on every gradient: fetching it waits for all.
        return loss + tf.add_n([tf.reduce_sum(tf.cast(g, "float32")) * 0.0 for g in grads])

    return lambda: tf_step(q, v).numpy()


def _median_times(steps: dict, warmup: int, count: int) -> dict:
    """Median ms per side; sides alternate step by step. A failing side gets its error."""
    times = measure.alternate(steps, warmup, count, keep_errors=True)
    return {
        side: {"error": _short(ms)} if isinstance(ms, Exception) else {"ms": ms}
        for side, ms in times.items()
    }


def _short(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    if "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower() or "OOM" in text:
        return "out of memory"
    return text.splitlines()[0][:160]


def _emit(record: dict) -> None:
    print("RESULT " + json.dumps(record), flush=True)


def child_pairs(spec: dict) -> None:
    backend = spec["backend"]
    for batch, length, d in spec["shapes"]:
        q, v = _inputs((batch, length, d), "float32")
        for name in spec["pairs"]:
            print(f"[{backend}] pairs B{batch}/T{length}/d{d} {name}", file=sys.stderr, flush=True)
            steps = {}
            for side in SIDES:
                impl = "auto" if side == "keras" else side
                ours, theirs, layers = make_pair(name, d, spec["heads"], implementation=impl)
                fn, used = (theirs, layers[1:]) if side == "keras" else (ours, layers[:1])
                fn(q[:, :4], v[:, :4])  # build the weights on a short input
                steps[side] = make_step(backend, fn, used, q, v, spec["on_gpu"])
            times = _median_times(steps, spec["warmup"], spec["steps"])
            _emit({"pair": name, "shape": [batch, length, d], "times": times})


def _peak_bytes(backend: str, on_gpu: bool, rss_baseline: int):
    if not on_gpu:
        return (measure.status_kib("VmHWM") - rss_baseline) * 1024, "rss"
    if backend == "jax":
        import jax

        return jax.devices()[0].memory_stats()["peak_bytes_in_use"], "device"
    if backend == "torch":
        import torch

        return torch.cuda.max_memory_allocated(), "device"
    import tensorflow as tf

    return tf.config.experimental.get_memory_info("GPU:0")["peak"], "device"


def child_long(spec: dict) -> None:
    backend, length, side = spec["backend"], spec["length"], spec["side"]
    d = spec["long_heads"] * spec["head_dim"]
    measure.reset_peak()
    baseline = measure.status_kib("VmRSS")
    ours, theirs, layers = make_pair("multi_head", d, spec["long_heads"], dtype="bfloat16")
    fn, used = (theirs, layers[1:]) if side == "keras" else (ours, layers[:1])
    x = _inputs((1, length, d), "bfloat16")[0]
    fn(x[:, :8], x[:, :8])  # build on a short input
    times = _median_times(
        {side: make_step(backend, fn, used, x, x, spec["on_gpu"])}, spec["warmup"], spec["steps"]
    )
    result = times[side]
    if "error" not in result:
        result["peak_bytes"], result["memory"] = _peak_bytes(backend, spec["on_gpu"], baseline)
    _emit({"length": length, "side": side, **result})


def child(spec: dict) -> None:
    on_gpu, name = _device(spec["backend"])
    if spec["job"] == "probe":
        import keras

        _emit({"on_gpu": on_gpu, "device": name, "keras": keras.__version__})
        return
    spec["on_gpu"] = on_gpu
    (child_pairs if spec["job"] == "pairs" else child_long)(spec)


# ----------------------------------------------------------------------------
# Parent side: one subprocess per backend (pairs) and per long measurement
# ----------------------------------------------------------------------------
def run_child(spec: dict, timeout: float) -> list[dict]:
    """RESULT records of one child; a timeout or crash appends an error record."""
    env = dict(os.environ, KERAS_BACKEND=spec["backend"], TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    command = [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", json.dumps(spec)]
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        stdout, failure = done.stdout, done.returncode and _last_error(done.stderr)
    except subprocess.TimeoutExpired as expired:
        stdout = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout
        failure = f"timed out after {timeout:.0f} s"
    records = [
        json.loads(line[7:]) for line in (stdout or "").splitlines() if line.startswith("RESULT ")
    ]
    return records + ([{"error": failure}] if failure else [])


def _last_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "error" in line]
    return (errors or lines or ["exit code != 0"])[-1][:200]


def _ms(result) -> str:
    if result is None:
        return "—"
    return result["error"] if "error" in result else f"{result['ms']:.2f}"


def _ratio(a, b, key="ms") -> str:
    if a is None or b is None or "error" in a or "error" in b or not b.get(key):
        return "—"
    return f"{a[key] / b[key]:.2f}"


def pair_table(report: dict) -> str:
    lines = [
        (
            "| backend | B/T/d | pair | keras ms | auto ms | exact ms | chunked ms "
            "| auto/keras | exact/keras | chunked/keras | auto/best ours |"
        ),
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for backend, info in report.items():
        for record in info.get("pairs", []):
            t = record["times"]
            timed = [t[s] for s in ("exact", "chunked") if "ms" in t.get(s, {})]
            best = min(timed, key=lambda r: r["ms"]) if timed else None
            shape = "/".join(str(n) for n in record["shape"])
            cells = [_ms(t.get(s)) for s in SIDES]
            ratios = [_ratio(t.get(s), t.get("keras")) for s in SIDES[1:]]
            lines.append(
                f"| {backend} | {shape} | {record['pair']} | "
                + " | ".join(cells)
                + " | "
                + " | ".join(ratios)
                + f" | {_ratio(t.get('auto'), best)} |"
            )
    return "\n".join(lines)


def long_table(report: dict) -> str:
    lines = [
        (
            "| backend | T | keras ms | keras peak GiB | MultiHead auto ms | auto peak GiB "
            "| time ours/keras | memory ours/keras |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for backend, info in report.items():
        by_length = {}
        for record in info.get("long", []):
            by_length.setdefault(record["length"], {})[record["side"]] = record
        for length, sides in sorted(by_length.items()):
            keras_r, ours_r = sides.get("keras"), sides.get("auto")

            def gib(r):
                if r is None or "peak_bytes" not in r:
                    return "—"
                return f"{r['peak_bytes'] / 2**30:.3f}" + (" (RSS)" if r["memory"] == "rss" else "")

            lines.append(
                f"| {backend} | {length} | {_ms(keras_r)} | {gib(keras_r)} "
                f"| {_ms(ours_r)} | {gib(ours_r)} | {_ratio(ours_r, keras_r)} "
                f"| {_ratio(ours_r, keras_r, 'peak_bytes')} |"
            )
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--pairs", nargs="+", default=list(PAIRS), choices=PAIRS)
    parser.add_argument("--quick", action="store_true", help="tiny shapes; runs on a CPU")
    parser.add_argument("--allow-cpu", action="store_true", help="run even without a GPU")
    parser.add_argument("--no-long", action="store_true", help="skip the long-sequence table")
    parser.add_argument(
        "--lengths",
        type=int,
        nargs="+",
        default=None,
        help="long-sequence T (16384 65536; quick: 128)",
    )
    parser.add_argument("--steps", type=int, default=None, help="timed steps (20; quick: 3)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed steps (3; quick: 1)")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="whole run, seconds (290; quick: 900, for a busy CPU)",
    )
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    config = dict(QUICK if args.quick else FULL)
    config.update({k: getattr(args, k) for k in ("steps", "warmup", "lengths") if getattr(args, k)})
    allow_cpu = args.quick or args.allow_cpu
    deadline = time.monotonic() + (args.budget_s or (900.0 if args.quick else 290.0))
    report, notes = {}, []
    for index, backend in enumerate(args.backends):
        module = {"torch": "torch"}.get(backend, backend)
        if importlib.util.find_spec(module) is None:
            notes.append(f"{backend}: not installed, skipped")
            continue
        share = (deadline - time.monotonic()) / (len(args.backends) - index)
        probe = run_child({"job": "probe", "backend": backend}, max(share, 30))[0]
        if "error" in probe or (not probe["on_gpu"] and not allow_cpu):
            notes.append(f"{backend}: {probe.get('error') or 'no GPU found'}, skipped")
            continue
        info = report[backend] = {"device": probe["device"], "keras": probe["keras"]}
        print(f"[{backend}] on {probe['device']}", file=sys.stderr, flush=True)
        spec = dict(config, backend=backend, pairs=args.pairs)
        long_runs = (
            [] if args.no_long else [(t, s) for t in config["lengths"] for s in ("keras", "auto")]
        )
        # Without the long-sequence runs the pairs get the backend's whole share.
        pairs_share = share * 0.6 if long_runs else share
        info["pairs"] = run_child(dict(spec, job="pairs"), max(pairs_share, 10))
        info["errors"] = [r["error"] for r in info["pairs"] if "pair" not in r]
        info["pairs"] = [r for r in info["pairs"] if "pair" in r]
        info["long"] = []
        for length, side in long_runs:
            print(f"[{backend}] long T={length} {side}", file=sys.stderr, flush=True)
            left = deadline - time.monotonic() - (len(args.backends) - index - 1) * 20
            if left < 10:
                info["long"].append({"length": length, "side": side, "error": "over budget"})
                continue
            record = run_child(dict(spec, job="long", length=length, side=side), left)[-1]
            info["long"].append({"length": length, "side": side, **record})
    if not report:
        print(
            "No GPU found (" + "; ".join(notes) + "). Pass --allow-cpu to run on the CPU, "
            "or --quick for tiny shapes."
        )
        return 1
    steps = f"median of {config['steps']} steps after {config['warmup']} warm-up"
    print(f"\n## Pairs (fwd+bwd, {steps}; ratios ours/keras)\n\n{pair_table(report)}")
    if not args.no_long:
        heads = f"{config['long_heads']} heads of {config['head_dim']}"
        print(f"\n## Long sequences (bfloat16, batch 1, {heads}, {steps})\n\n{long_table(report)}")
    for backend, info in report.items():
        for error in info["errors"]:
            notes.append(f"{backend}: {error}")
    print(
        "\n"
        + "\n".join(
            f"- {note}"
            for note in notes
            + [f"{b}: {i['device']}, keras {i['keras']}" for b, i in report.items()]
        )
    )
    if args.json:
        pathlib.Path(args.json).write_text(
            json.dumps({"config": config, "notes": notes, "backends": report}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
