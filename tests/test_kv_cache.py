"""MultiHead's key/value cache: cached decoding equals the full causal pass."""

import keras
import numpy as np
import pytest
from backend_utils import to_numpy

from keras_attention import MultiHead

BACKEND = keras.backend.backend()

B, T, D = 2, 6, 16


def _layer(rotary, kv_heads, **kwargs):
    layer = MultiHead(num_heads=4, key_dim=4, num_key_value_heads=kv_heads, rotary=rotary, **kwargs)
    layer.build((None, None, D))
    return layer


def _decode(layer, x, chunks, max_length=T + 2, index_as_tensor=False):
    """Feed `x` through the cache in `chunks` (sizes); rank-2 steps for size 0."""
    cache, outputs, index = layer.init_cache(B, max_length), [], 0
    for size in chunks:
        step = x[:, index] if size == 0 else x[:, index : index + size]
        position = keras.ops.convert_to_tensor(index, "int32") if index_as_tensor else index
        context, cache = layer.call_with_cache(step, cache, position)
        context = to_numpy(context)
        outputs.append(context[:, None] if size == 0 else context)
        index += max(size, 1)
    return np.concatenate(outputs, axis=1), cache


@pytest.mark.parametrize("kv_heads", [None, 2])
@pytest.mark.parametrize("rotary", [False, True])
def test_step_by_step_equals_the_full_causal_call(rotary, kv_heads, rng):
    layer = _layer(rotary, kv_heads)
    x = rng.normal(size=(B, T, D)).astype("float32")
    full = to_numpy(layer(x, x, use_causal_mask=True))
    one_at_a_time, cache = _decode(layer, x, [1] * T)
    np.testing.assert_allclose(one_at_a_time, full, atol=1e-5)
    prompt_then_steps, _ = _decode(layer, x, [3, 0, 1, 0], index_as_tensor=True)
    np.testing.assert_allclose(prompt_then_steps, full, atol=1e-5)
    keys, values = (to_numpy(t) for t in cache)
    assert keys.shape == values.shape == (B, kv_heads or 4, T + 2, 4)  # per key/value head
    np.testing.assert_array_equal(keys[:, :, T:], 0.0)  # nothing written past the tokens


def test_step_by_step_equals_the_full_call_with_every_option(rng):
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4}
    options = dict(use_gate=True, qk_norm=True, logit_soft_cap=1.5, rope_scaling=yarn, window=3)
    layer = _layer(True, 2, **options)
    for variable in layer.weights:  # scales and gate away from their initial values
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    x = rng.normal(size=(B, T, D)).astype("float32")
    full = to_numpy(layer(x, x, use_causal_mask=True))
    steps, _ = _decode(layer, x, [3, 1, 1, 1])
    np.testing.assert_allclose(steps, full, atol=1e-4)


def test_cache_holds_the_projected_and_rotated_keys(rng):
    layer = _layer(True, 2)
    x = rng.normal(size=(B, T, D)).astype("float32")
    _, cache = _decode(layer, x, [T], max_length=T)
    keys, values = layer._key_value_heads(x, x)  # (B, Hkv, T, dk), keys rotated at 0..T-1
    np.testing.assert_allclose(to_numpy(cache[0]), to_numpy(keys), atol=1e-6)
    np.testing.assert_allclose(to_numpy(cache[1]), to_numpy(values), atol=1e-6)


def test_stale_cache_entries_past_the_index_never_matter(rng):
    """Positions >= index + s are masked: a reused cache's leftovers do not leak."""
    layer = _layer(True, 2)
    x = rng.normal(size=(B, T, D)).astype("float32")
    keys, values = layer.init_cache(B, T + 2)
    # NumPy on the right of a backend tensor fails on a GPU (torch cannot turn a CUDA
    # tensor into an array): the noise goes in as a tensor.
    noise = keras.ops.convert_to_tensor(1e3 * rng.normal(size=keys.shape).astype("float32"))
    stale = (keys + noise, values + 1e3)
    clean, _ = layer.call_with_cache(x[:, :3], (keys, values), 0)
    reused, _ = layer.call_with_cache(x[:, :3], stale, 0)
    np.testing.assert_allclose(to_numpy(reused), to_numpy(clean), atol=1e-5)


def test_perturbing_later_tokens_never_moves_earlier_outputs(rng):
    layer = _layer(True, None)
    x = rng.normal(size=(B, T, D)).astype("float32")
    changed = x.copy()
    changed[:, 4:] += 10.0
    before, _ = _decode(layer, x, [4, 1, 1])
    after, _ = _decode(layer, changed, [4, 1, 1])
    np.testing.assert_allclose(after[:, :4], before[:, :4], atol=1e-6)
    assert not np.allclose(after[:, 4:], before[:, 4:])


def test_cache_dtype_and_mixed_precision(rng):
    layer = MultiHead(num_heads=2, key_dim=4, dtype="mixed_bfloat16")
    layer.build((None, None, 8))
    keys, values = layer.init_cache(1, 4)
    assert keras.backend.standardize_dtype(keys.dtype) == "bfloat16"
    assert keras.backend.standardize_dtype(layer.init_cache(1, 4, dtype="float32")[1].dtype) == (
        "float32"
    )
    x = rng.normal(size=(1, 4, 8)).astype("float32")
    context, _ = layer.call_with_cache(x, (keys, values), 0)
    full = to_numpy(layer(x, x, use_causal_mask=True)).astype("float32")
    np.testing.assert_allclose(to_numpy(context).astype("float32"), full, atol=5e-2)


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda layer, cache: layer.call_with_cache(np.zeros((B, 1, D), "float32"), cache, 8),
            "index",
        ),
        (
            lambda layer, cache: layer.call_with_cache(np.zeros((B, 3, D), "float32"), cache, 6),
            "index",
        ),
        (
            lambda layer, cache: layer.call_with_cache(np.zeros((B, 1, D), "float32"), cache, -1),
            "index",
        ),
        (
            lambda layer, cache: layer.call_with_cache(np.zeros((B, 1, 5), "float32"), cache, 0),
            "query",
        ),
        (
            lambda layer, cache: layer.call_with_cache(np.zeros((B, 1, D), "float32"), cache[0], 0),
            "cache",
        ),
        (
            lambda layer, cache: layer.call_with_cache(
                np.zeros((B, 1, D), "float32"), (cache[0][:, :1], cache[1]), 0
            ),
            "cache keys",
        ),
        (lambda layer, cache: layer.init_cache(0, 4), "batch_size"),
        (lambda layer, cache: layer.init_cache(np.ones((2,), "int32"), 4), "batch_size"),
        (
            lambda layer, cache: layer.init_cache(2, keras.ops.convert_to_tensor(4.0)),
            "max_length",
        ),
    ],
)
def test_bad_cache_calls_raise(call, match):
    layer = _layer(False, 2)
    with pytest.raises(ValueError, match=match):
        call(layer, layer.init_cache(B, 8))


def test_cache_sizes_may_be_scalar_tensors(rng):
    """A search over a batch known only at run time makes its cache from tensors."""
    layer = _layer(True, 2)
    x = rng.normal(size=(B, T, D)).astype("float32")
    batch, length = (keras.ops.convert_to_tensor(n, "int32") for n in (B, T))
    cache = layer.init_cache(batch, length)
    assert tuple(cache[0].shape) == (B, 2, T, 4)
    outputs = []
    for t in range(T):
        context, cache = layer.call_with_cache(x[:, t], cache, t)
        outputs.append(to_numpy(context))
    full = to_numpy(layer(x, x, use_causal_mask=True))
    np.testing.assert_allclose(np.stack(outputs, 1), full, atol=1e-5)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="tf.function with an unknown batch size")
def test_cache_sized_inside_a_tf_function_with_an_unknown_batch(rng):
    import tensorflow as tf

    layer = _layer(False, None)
    x = rng.normal(size=(B, T, D)).astype("float32")

    @tf.function(input_signature=[tf.TensorSpec([None, T, D], tf.float32)])
    def decode(x):
        cache = layer.init_cache(tf.shape(x)[0], tf.constant(T))
        outputs = []
        for t in range(T):
            context, cache = layer.call_with_cache(x[:, t], cache, tf.constant(t))
            outputs.append(context)
        return tf.stack(outputs, 1)

    full = to_numpy(layer(x, x, use_causal_mask=True))
    np.testing.assert_allclose(decode(x).numpy(), full, atol=1e-5)


def test_unbuilt_layer_cannot_make_a_cache():
    with pytest.raises(ValueError, match="built"):
        MultiHead(num_heads=2, key_dim=4).init_cache(1, 4)


def _compiled_decode(layer, x, step_fn):
    cache, outputs = layer.init_cache(B, T), []
    for t in range(T):
        context, cache = step_fn(x[:, t], cache, keras.ops.convert_to_tensor(t, "int32"))
        outputs.append(to_numpy(context))
    return np.stack(outputs, axis=1)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="tf.function XLA runs on TensorFlow")
@pytest.mark.parametrize("rotary", [False, True])
def test_xla_compiled_step_is_traced_once_and_matches(rotary, rng):
    import tensorflow as tf

    layer = _layer(rotary, 2)
    x = rng.normal(size=(B, T, D)).astype("float32")
    step = tf.function(layer.call_with_cache, jit_compile=True)
    decoded = _compiled_decode(layer, x, step)
    np.testing.assert_allclose(decoded, to_numpy(layer(x, x, use_causal_mask=True)), atol=1e-5)
    assert step.experimental_get_tracing_count() == 1


@pytest.mark.skipif(BACKEND != "jax", reason="jax.jit runs on JAX")
@pytest.mark.parametrize("rotary", [False, True])
def test_jax_jit_step_is_traced_once_and_matches(rotary, rng):
    import jax

    layer = _layer(rotary, 2)
    x = rng.normal(size=(B, T, D)).astype("float32")
    traces = []

    def step(query, cache, index):
        traces.append(1)
        return layer.call_with_cache(query, cache, index)

    decoded = _compiled_decode(layer, x, jax.jit(step))
    np.testing.assert_allclose(decoded, to_numpy(layer(x, x, use_causal_mask=True)), atol=1e-5)
    assert len(traces) == 1
