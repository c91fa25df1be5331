"""Small per-backend helpers the tests need: gradients and numpy conversion."""

import keras
import numpy as np


def to_numpy(x):
    if hasattr(x, "detach"):  # torch tensors that require grad
        x = x.detach()
    return np.asarray(keras.ops.convert_to_numpy(x))


def value_and_grad(fn, *args):
    """`fn(*args) -> scalar`; returns (value, [d value / d arg]) as NumPy."""
    backend = keras.backend.backend()
    tensors = [keras.ops.convert_to_tensor(a) for a in args]
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            tape.watch(tensors)
            value = fn(*tensors)
        grads = tape.gradient(value, tensors)
    elif backend == "jax":
        import jax

        value, grads = jax.value_and_grad(fn, argnums=tuple(range(len(tensors))))(*tensors)
    elif backend == "torch":
        tensors = [t.detach().clone().requires_grad_(True) for t in tensors]
        value = fn(*tensors)
        grads = list(__import__("torch").autograd.grad(value, tensors, allow_unused=True))
        grads = [
            g if g is not None else __import__("torch").zeros_like(t)
            for g, t in zip(grads, tensors)
        ]
    else:
        raise RuntimeError(f"no gradient helper for backend {backend}")
    return to_numpy(value), [to_numpy(g) for g in grads]


def compiled_value_and_grad(fn, *args):
    """`value_and_grad`, compiled on JAX (eager JAX retraces every loop)."""
    if keras.backend.backend() != "jax":
        return value_and_grad(fn, *args)
    import jax

    value, grads = jax.jit(jax.value_and_grad(fn, argnums=tuple(range(len(args)))))(*args)
    return to_numpy(value), [to_numpy(g) for g in grads]


def outputs_and_grads(fn, *args):
    """`fn(*args) -> (scalar, outputs)`; returns (outputs, [d scalar / d arg]) as NumPy.

    On JAX the forward pass and its gradient are one compiled program: run
    eagerly, JAX compiles every op of both once per shape and dtype (a layer's
    eager call and gradient compile dozens of small programs), which is most
    of a small test's time there. Any layer ``fn`` calls must be built first.
    """
    if keras.backend.backend() != "jax":
        outputs = []

        def value(*tensors):
            scalar, out = fn(*tensors)
            outputs.append(out)
            return scalar

        _, grads = value_and_grad(value, *args)
        return keras.tree.map_structure(to_numpy, outputs[0]), grads
    import jax

    argnums = tuple(range(len(args)))
    (_, outputs), grads = jax.jit(jax.value_and_grad(fn, argnums=argnums, has_aux=True))(*args)
    return keras.tree.map_structure(to_numpy, outputs), [to_numpy(g) for g in grads]


def layer_value_and_grads(layer, q, v, k, call_kwargs):
    """A fixed weighted sum of `layer(q, v, key=k)` and its gradients to inputs and weights."""
    weights = [w.value for w in layer.trainable_weights]

    def loss(q, v, k, *weights):
        out, _ = layer.stateless_call(list(weights), [], q, v, key=k, **call_kwargs)
        out = keras.ops.cast(out, "float32")
        return keras.ops.sum(out * keras.ops.cos(keras.ops.cumsum(keras.ops.ones_like(out), -2)))

    return compiled_value_and_grad(loss, q, v, k, *weights)


def compile_and_fit(model, inputs, target, batch_size=4, xla=True):
    """One epoch of `model.fit` as a user's pipeline runs it; returns the history.

    On TensorFlow: a ``tf.data`` pipeline whose batch and lengths are None, as
    a bucketed pipeline gives, under XLA (``jit_compile=True``) unless ``xla``
    is false. (Regression: a rank-3 Dense or matmul inside an RNN loop is a
    Tensordot whose gradient XLA refused to compile, "must be a compile-time
    constant".) ``xla=False`` is for layers whose step is compiled by XLA with
    its gradient in a loop elsewhere: the XLA compile of a training step is
    most of this helper's time (one alignment layer's cell: 17 s against 8 s).
    Elsewhere the backend's default compiled step over the arrays.
    """
    on_tensorflow = keras.backend.backend() == "tensorflow"
    model.compile(
        "adam",
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=xla if on_tensorflow else "auto",
    )
    if not on_tensorflow:
        return model.fit(inputs, target, batch_size=batch_size, epochs=1, verbose=0)
    import tensorflow as tf

    def forget_static_shapes(x, y):
        return tuple(tf.ensure_shape(t[:, : tf.shape(t)[1]], (None, None)) for t in x), y

    dataset = tf.data.Dataset.from_tensor_slices((tuple(inputs), target)).batch(batch_size)
    history = model.fit(dataset.map(forget_static_shapes), epochs=1, verbose=0)
    model.jit_compile = False  # predict and evaluate: no second XLA compile
    return history
