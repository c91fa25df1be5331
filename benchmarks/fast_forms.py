"""Study: backend fast forms of the additive core, against keras.layers.AdditiveAttention.

The core is `softmax(v · tanh(q_i + k_j)) value` on projected queries and keys
(the bias `b` is added to the projected queries first). Two spellings of the
score: the matrix product `reshape(tanh, (N, U)) @ v` (this package's
`ops.additive_scores`) and Keras's multiply-and-reduce `sum(v * tanh, -1)`.

    KERAS_BACKEND=tensorflow python benchmarks/fast_forms.py   # (a), (b), (c) below
    KERAS_BACKEND=jax python benchmarks/fast_forms.py          # the two forms under jax.jit

TensorFlow, each a forward+backward step (gradients for the query, the value
and every weight), times against `AdditiveAttention` in a non-XLA
`tf.function`, measured in this process, the variants alternating step by
step: (a) `BahdanauAttention(implementation="exact")` in a non-XLA
`tf.function`; (b) the projections in plain TensorFlow and the core as a
`tf.function(jit_compile=True)`, called from a non-XLA `tf.function` step and
from an eager `GradientTape`; (c) both score forms with and without XLA, and
the whole step under XLA. Gradients of (b) are checked against the same math
uncompiled; `tf.__internal__.get_enclosing_xla_context()` is checked in each
calling context.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from layers import SCOPE  # this folder's helpers
from layers import compiled_step  # this folder's helpers
from measure import alternate  # this folder's helpers


# ----------------------------------------------------------------------------
# TensorFlow
# ----------------------------------------------------------------------------
def tf_core(form: str):
    """(qp, kp, value, v) -> context, with the score in the named form."""
    import tensorflow as tf

    @tf.custom_gradient
    def logits_by_hand(qp, kp, v):  # the reduce form with a hand-written backward pass
        hidden = tf.tanh(qp[:, :, None, :] + kp[:, None, :, :])  # (B, Tq, Tv, U)

        def grad(upstream):  # (B, Tq, Tv)
            d_hidden = upstream[..., None] * v * (1.0 - tf.square(hidden))  # (B, Tq, Tv, U)
            d_v = tf.reduce_sum(upstream[..., None] * hidden, axis=(0, 1, 2))  # (U,)
            return tf.reduce_sum(d_hidden, 2), tf.reduce_sum(d_hidden, 1), d_v

        return tf.reduce_sum(v * hidden, axis=-1), grad

    def core(qp, kp, value, v):
        if form == "by_hand":
            logits = logits_by_hand(qp, kp, v)
            weights = tf.nn.softmax(tf.cast(logits, "float32"), axis=-1)
            return tf.cast(weights, value.dtype) @ value
        hidden = tf.tanh(qp[:, :, None, :] + kp[:, None, :, :])  # (B, Tq, Tv, U)
        if form == "matmul":
            units = tf.shape(v)[0]
            logits = tf.reshape(tf.reshape(hidden, (-1, units)) @ v[:, None], tf.shape(hidden)[:-1])
        else:
            logits = tf.reduce_sum(v * hidden, axis=-1)  # (B, Tq, Tv)
        weights = tf.nn.softmax(tf.cast(logits, "float32"), axis=-1)
        return tf.cast(weights, value.dtype) @ value  # (B, Tq, dv)

    return core


def study_tensorflow(args) -> None:
    import keras
    import numpy as np
    import tensorflow as tf

    import keras_attention as ka

    tf.get_logger().setLevel("ERROR")  # retracing warnings: each step is its own function
    b, t, d = args.batch, args.length, args.dim
    rng = np.random.default_rng(0)
    q, value = (tf.constant(rng.normal(size=(b, t, d)).astype("float32")) for _ in range(2))
    ours = ka.BahdanauAttention(units=d, implementation="exact", name=SCOPE)
    theirs = keras.layers.AdditiveAttention(name=SCOPE)
    ours(q, value), theirs([q, value])
    rng_b = rng.normal(size=(d,)).astype("float32") * 0.1
    ours.b.assign(rng_b)  # a nonzero bias, so its gradient is checked too

    cores = {
        (form, xla): (tf.function(tf_core(form), jit_compile=True) if xla else tf_core(form))
        for form in ("matmul", "reduce", "by_hand")
        for xla in (False, True)
    }

    def fast(form: str, xla: bool):
        core = cores[form, xla]

        def call(q, value):
            with keras.name_scope(SCOPE):
                qp = ours.query_dense(q)
                # The bias outside the core, broadcast as `ones @ b` as in ops._add_bias:
                # under a whole-step XLA a plain `qp + b` doubles the backward pass.
                rows = tf.reshape(qp, (-1, d))  # (B*Tq, U)
                qp = qp + tf.reshape(tf.ones_like(rows[:, :1]) @ ours.b[None], tf.shape(qp))
                v = tf.convert_to_tensor(ours.v)  # a tensor: a variable cannot cross the call
                return core(qp, ours.key_dense(value), value, v)

        return call

    # Same math, same weights: every form equals the layer's own output.
    reference = ours(q, value).numpy()
    for key in cores:
        error = np.max(np.abs(fast(*key)(q, value).numpy() - reference))
        print(f"forward {key}: max |fast - layer| = {error:.2e}")

    ours_step = compiled_step(lambda q, v: ours(q, v), [ours], jit=False)
    steps = {
        "keras AdditiveAttention, tf.function": compiled_step(
            lambda q, v: theirs([q, v]), [theirs], jit=False
        ),
        "(a) ours exact layer, tf.function": ours_step,
    }
    for form in ("matmul", "reduce"):
        for xla in (False, True):
            label = f"{form} core{' XLA' if xla else ''}, tf.function step"
            step = compiled_step(fast(form, xla), [ours], False)
            steps[f"({'b' if xla else 'c'}) {label}"] = step
    steps["(c) reduce form, hand-written backward, XLA core"] = compiled_step(
        fast("by_hand", True), [ours], False
    )
    steps["(c) ours exact layer, whole step XLA"] = compiled_step(
        lambda q, v: ours(q, v), [ours], jit=True
    )
    steps["(c) reduce core, whole step XLA"] = compiled_step(fast("reduce", False), [ours], True)
    steps["(c) XLA core nested in whole-step XLA"] = compiled_step(
        fast("matmul", True), [ours], True
    )
    steps["(b) matmul core XLA, eager tape"] = eager_step(fast("matmul", True), ours)
    steps["(b) reduce core XLA, eager tape"] = eager_step(fast("reduce", True), ours)
    steps["keras AdditiveAttention, eager tape"] = eager_step(lambda q, v: theirs([q, v]), theirs)
    check_gradients(fast, ours, q, value)
    first_call_seconds(cores, ours, q, value)
    detection()

    run = {name: (lambda s=s: s(q, value)[0].numpy()) for name, s in steps.items()}
    times = alternate(run, args.warmup, args.steps)
    base = times["keras AdditiveAttention, tf.function"]
    print(
        f"\nB={b} Tq=Tv={t} d=units={d}, {os.cpu_count()} CPUs, load "
        f"{os.getloadavg()[0]:.1f}, median of {args.steps} fwd+bwd steps"
    )
    print("| variant | ms | vs AdditiveAttention (tf.function, no XLA) |\n|---|---:|---:|")
    for name, ms in times.items():
        print(f"| {name} | {ms:.1f} | {ms / base:.2f} |")


def eager_step(fn, layer):
    import tensorflow as tf

    def step(q, value):
        with tf.GradientTape() as tape:
            tape.watch([q, value])
            loss = tf.reduce_sum(tf.square(fn(q, value)))
        return loss, tape.gradient(loss, [q, value] + layer.trainable_weights)

    return step


def check_gradients(fast, ours, q, value) -> None:
    """The XLA core's gradients, from eager and from a non-XLA tf.function, against plain TF."""
    import numpy as np
    import tensorflow as tf

    def grads(step):
        return [np.asarray(g) for g in step(q, value)[1]]

    expected = grads(eager_step(fast("matmul", False), ours))
    names = ["query", "value"] + [w.path for w in ours.trainable_weights]
    for label, step in (
        ("eager tape", eager_step(fast("matmul", True), ours)),
        ("tf.function step", tf.function(eager_step(fast("matmul", True), ours))),
        ("reduce form, tf.function", tf.function(eager_step(fast("reduce", True), ours))),
        ("hand-written backward", tf.function(eager_step(fast("by_hand", True), ours))),
    ):
        worst = max(
            (np.max(np.abs(g - e)) / (np.max(np.abs(e)) + 1e-30), n)
            for g, e, n in zip(grads(step), expected, names)
        )
        print(f"gradients, XLA core from {label}: worst relative error {worst[0]:.1e} ({worst[1]})")


def first_call_seconds(cores, ours, q, value) -> None:
    """Compile cost of the XLA core (forward+backward) at a length it has not seen."""
    import tensorflow as tf

    for length in (q.shape[1] - 1, q.shape[1] - 2):
        qs, vs = q[:, :length], value[:, :length]
        with tf.GradientTape() as tape:
            tape.watch(qs)
            start = time.perf_counter()
            v = tf.convert_to_tensor(ours.v)
            out = cores["matmul", True](ours.query_dense(qs), ours.key_dense(vs), vs, v)
            loss = tf.reduce_sum(out)
        tape.gradient(loss, qs).numpy()
        print(
            f"first call of the XLA core at T={length} (trace+compile, fwd+bwd): "
            f"{time.perf_counter() - start:.2f} s"
        )


def detection() -> None:
    """What `tf.__internal__.get_enclosing_xla_context()` says in each calling context."""
    import keras
    import numpy as np
    import tensorflow as tf

    def compiling() -> bool:
        return tf.__internal__.get_enclosing_xla_context() is not None

    seen = {"eager": compiling()}

    @tf.function
    def plain():
        seen["tf.function"] = compiling()
        return tf.constant(0)

    @tf.function(jit_compile=True)
    def xla():
        seen["tf.function(jit_compile=True)"] = compiling()

        def body(i):
            seen["tf.while_loop inside jit_compile=True"] = compiling()
            return i + 1

        return tf.while_loop(lambda i: i < 2, body, [tf.constant(0)])

    @tf.function
    def inner():
        seen["plain tf.function called inside jit_compile=True"] = compiling()
        return tf.constant(0)

    @tf.function(jit_compile=True)
    def xla_outer():
        return inner()

    plain(), xla(), xla_outer()

    class Probe(keras.layers.Layer):
        def call(self, x):
            seen[f"Model.fit(jit_compile={self.jit})"] = compiling()
            return x * self.w

        def build(self, shape):
            self.w = self.add_weight(shape=(), initializer="ones")

    for jit in (False, True, "auto"):
        probe = Probe()
        probe.jit = jit
        model = keras.Sequential([keras.Input((2,)), probe])
        model.compile(loss="mse", optimizer="sgd", jit_compile=jit)
        model.fit(np.ones((4, 2)), np.ones((4, 2)), epochs=1, verbose=0)
    tf.config.run_functions_eagerly(True)
    plain()
    seen["tf.function with run_functions_eagerly(True)"] = seen.pop("tf.function")
    tf.config.run_functions_eagerly(False)
    for where, value in seen.items():
        print(f"get_enclosing_xla_context() is not None in {where}: {value}")


# ----------------------------------------------------------------------------
# JAX
# ----------------------------------------------------------------------------
def study_jax(args) -> None:
    import jax
    import jax.numpy as jnp
    import keras
    import numpy as np

    import keras_attention as ka

    def core(form):
        def fn(qp, kp, value, v):
            hidden = jnp.tanh(qp[:, :, None, :] + kp[:, None, :, :])  # (B, Tq, Tv, U)
            if form == "matmul":
                logits = (hidden.reshape(-1, v.shape[0]) @ v[:, None]).reshape(hidden.shape[:-1])
            else:
                logits = jnp.sum(v * hidden, axis=-1)
            weights = jax.nn.softmax(logits.astype("float32"), axis=-1)
            return jnp.sum(jnp.square(weights.astype(value.dtype) @ value))

        return jax.jit(jax.value_and_grad(fn, argnums=(0, 1, 2, 3)))

    b, t, d = args.batch, args.length, args.dim
    rng = np.random.default_rng(0)
    qp, kp, value = (jnp.asarray(rng.normal(size=(b, t, d)), "float32") for _ in range(3))
    v = jnp.asarray(rng.normal(size=(d,)), "float32")
    steps = {
        f"{form} core, jax.jit": (lambda f=core(form): jax.block_until_ready(f(qp, kp, value, v)))  # noqa: B008
        for form in ("matmul", "reduce")
    }
    out = {f: core(f)(qp, kp, value, v) for f in ("matmul", "reduce")}
    diff = max(
        float(jnp.max(jnp.abs(a - c)) / jnp.max(jnp.abs(c)))
        for a, c in zip(
            jax.tree_util.tree_leaves(out["matmul"]), jax.tree_util.tree_leaves(out["reduce"])
        )
    )
    print(f"matmul vs reduce form, value and gradients: max relative difference {diff:.1e}")

    for label, layer, call in (
        ("keras AdditiveAttention", keras.layers.AdditiveAttention(), lambda f, q, x: f([q, x])),
        (
            "ours exact layer",
            ka.BahdanauAttention(units=d, implementation="exact"),
            lambda f, q, x: f(q, x),
        ),
    ):
        call(layer, qp, value)
        variables = layer.trainable_variables

        def loss(values, q, x, layer=layer, call=call, variables=variables):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return jnp.sum(jnp.square(call(layer, q, x)))

        grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))
        values = [w.value for w in variables]
        steps[f"{label}, jax.jit"] = lambda g=grad, w=values: jax.block_until_ready(g(w, qp, value))
    times = alternate(steps, args.warmup, args.steps)
    base = times["keras AdditiveAttention, jax.jit"]
    print(
        f"\nB={b} Tq=Tv={t} d=units={d}, {os.cpu_count()} CPUs, load "
        f"{os.getloadavg()[0]:.1f}, median of {args.steps} fwd+bwd steps "
        f"(JAX, {jax.default_backend().upper()})"
    )
    print("| variant | ms | vs AdditiveAttention (jax.jit) |\n|---|---:|---:|")
    for name, ms in times.items():
        print(f"| {name} | {ms:.1f} | {ms / base:.2f} |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--dim", type=int, default=256, help="features and units")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)
    import keras

    (study_jax if keras.backend.backend() == "jax" else study_tensorflow)(args)


if __name__ == "__main__":
    main()
