"""The chunked (memory-efficient) path equals the exact path, and "auto" picks well.

Small ragged shapes (Tq=37, Tv=29 or 37, block_size=8) exercise partial
tiles, fully masked rows, end-aligned causal masks and skipped future tiles.
"""

import keras
import numpy as np
import pytest
from backend_utils import compiled_value_and_grad
from backend_utils import layer_value_and_grads
from backend_utils import to_numpy

from keras_attention import BahdanauAttention
from keras_attention import LuongAttention
from keras_attention import MultiHead
from keras_attention import ScaledDotProduct
from keras_attention import memory_efficient
from keras_attention import ops as attention_ops
from keras_attention.memory_efficient import dropout as dropout_lib
from keras_attention.memory_efficient import paths
from keras_attention.memory_efficient import tiles

BACKEND = keras.backend.backend()
TQ, TV, DQ, DK, DV = 37, 29, 6, 6, 5

LAYERS = {
    "scaled_dot": lambda **kw: ScaledDotProduct(**kw),
    "multi_head_gqa": lambda **kw: MultiHead(
        num_heads=4, key_dim=3, value_dim=2, num_key_value_heads=2, output_dim=7, **kw
    ),
    "bahdanau_normalized": lambda **kw: BahdanauAttention(units=7, normalize=True, **kw),
    "luong_general_scaled": lambda **kw: LuongAttention("general", use_scale=True, **kw),
    "luong_concat_scaled": lambda **kw: LuongAttention("concat", units=5, use_scale=True, **kw),
}


def _pair(name, rng, **kwargs):
    """The same random weights in an exact and a chunked layer."""
    layers = []
    for implementation in ("exact", "chunked"):
        layer = LAYERS[name](implementation=implementation, block_size=8, **kwargs)
        layer.build((None, None, DQ), (None, None, DV), (None, None, DK))
        layers.append(layer)
    for exact, chunked in zip(layers[0].weights, layers[1].weights):
        value = rng.normal(size=exact.shape).astype("float32") * 0.7
        exact.assign(value)
        chunked.assign(value)
    return layers


def _masks(kind, rng, tq, tv):
    if kind == "none":
        return {}
    if kind == "padding":  # batch row 1 has no keys at all; one query is masked
        value_mask = np.ones((2, tv), bool)
        value_mask[0, tv - 5 :] = False
        value_mask[1] = False
        query_mask = np.ones((2, tq), bool)
        query_mask[0, 3] = False
        return {"value_mask": value_mask, "query_mask": query_mask}
    if kind == "causal":  # end-aligned: with tq > tv, the first queries see nothing
        return {"use_causal_mask": True}
    if kind == "explicit_causal":  # every mask piece at once; batch row 1 has no keys
        value_mask = np.ones((2, tv), bool)
        value_mask[1] = False
        return {
            "attention_mask": rng.random((2, tq, tv)) > 0.3,
            "value_mask": value_mask,
            "use_causal_mask": True,
        }
    raise AssertionError(kind)


_value_and_grad = compiled_value_and_grad
_value_and_grads = layer_value_and_grads


def _assert_same(exact, chunked):
    """Loss and every gradient within 1e-5, relative to the largest gradient entry."""
    (value_e, grads_e), (value_c, grads_c) = exact, chunked
    np.testing.assert_allclose(value_c, value_e, rtol=1e-5, atol=1e-5)
    scale = max([1.0] + [float(np.abs(g).max()) for g in grads_e])
    for grad_e, grad_c in zip(grads_e, grads_c):
        np.testing.assert_allclose(grad_c, grad_e, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize(
    "name,kind",
    [
        ("scaled_dot", "padding"),
        ("scaled_dot", "causal"),
        ("multi_head_gqa", "explicit_causal"),
        ("bahdanau_normalized", "padding"),
        ("luong_general_scaled", "none"),
        ("luong_concat_scaled", "causal"),
    ],
)
def test_chunked_equals_exact_forward_and_gradients(name, kind, rng):
    tv = TQ if kind == "explicit_causal" else TV
    exact, chunked = _pair(name, rng)
    q = rng.normal(size=(2, TQ, DQ)).astype("float32")
    k = rng.normal(size=(2, tv, DK)).astype("float32")
    v = rng.normal(size=(2, tv, DV)).astype("float32")
    call_kwargs = _masks(kind, rng, TQ, tv)
    _assert_same(
        _value_and_grads(exact, q, v, k, call_kwargs),
        _value_and_grads(chunked, q, v, k, call_kwargs),
    )
    context = to_numpy(chunked(q, v, key=k, **call_kwargs))
    assert np.isfinite(context).all()
    if kind == "padding" and not isinstance(chunked, MultiHead):  # no output projection
        # No keys, or a masked query: a zero context, never NaN.
        np.testing.assert_array_equal(context[1], 0.0)
        np.testing.assert_array_equal(context[0, 3], 0.0)


@pytest.mark.parametrize("name", ["multi_head_gqa", "bahdanau_normalized"])
def test_rank_2_query_chunked_equals_exact(name, rng):
    exact, chunked = _pair(name, rng)
    q = rng.normal(size=(2, DQ)).astype("float32")
    k = rng.normal(size=(2, TV, DK)).astype("float32")
    v = rng.normal(size=(2, TV, DV)).astype("float32")
    call_kwargs = {"value_mask": np.arange(TV)[None] < np.array([[TV], [11]])}
    _assert_same(
        _value_and_grads(exact, q, v, k, call_kwargs),
        _value_and_grads(chunked, q, v, k, call_kwargs),
    )


def test_dropout_uses_one_mask_in_both_passes(rng):
    """Chunked dropout equals exact attention with the same keep mask, with gradients."""
    q, k, v = (rng.normal(size=(2, 3, n, 4)).astype("float32") for n in (TQ, TV, TV))
    rate, seed = 0.3, 11
    plan = tiles.Plan(TQ, TV, max(TQ, TV), causal=False)  # one tile, no padding
    multiplier = dropout_lib.TileDropout(plan, rate, seed, (2, 3)).multiplier(0, 0)
    kept = (to_numpy(multiplier) > 0).mean()
    assert abs(kept - (1 - rate)) < 0.03

    def exact(q, k, v):
        weights = attention_ops.masked_softmax(attention_ops.dot_product_scores(q, k, 0.5))
        context = attention_ops.weighted_sum(weights * multiplier, v)
        return keras.ops.sum(context * keras.ops.cos(context))

    def chunked(q, k, v):
        context = memory_efficient.chunked_dot_product_attention(
            q, k, v, scale=0.5, dropout_rate=rate, seed=seed, block_size=8
        )
        return keras.ops.sum(context * keras.ops.cos(context))

    _assert_same(_value_and_grad(exact, q, k, v), _value_and_grad(chunked, q, k, v))


def test_dropout_in_a_layer_acts_in_training_only(rng):
    layer = MultiHead(
        num_heads=2, key_dim=4, dropout=0.5, seed=3, implementation="chunked", block_size=8
    )
    x = rng.normal(size=(2, TQ, DQ)).astype("float32")
    inference = to_numpy(layer(x, x, training=False))
    exact = MultiHead(num_heads=2, key_dim=4, implementation="exact")
    exact.build(x.shape, x.shape)
    exact.set_weights(layer.get_weights())
    np.testing.assert_allclose(inference, to_numpy(exact(x, x)), atol=1e-5)
    first, second = (to_numpy(layer(x, x, training=True)) for _ in range(2))
    assert np.isfinite(first).all()
    assert not np.allclose(first, inference, atol=1e-3)
    assert not np.allclose(first, second, atol=1e-3)  # a new mask each call


@pytest.mark.parametrize(
    "name,policy",
    [
        ("multi_head_gqa", "mixed_float16"),
        ("multi_head_gqa", "mixed_bfloat16"),
        ("bahdanau_normalized", "mixed_float16"),
    ],
)
def test_mixed_precision_chunked_matches_float32(name, policy, rng):
    reference, _ = _pair(name, rng)
    layer = LAYERS[name](dtype=policy, implementation="chunked", block_size=8)
    layer.build((None, None, DQ), (None, None, DV), (None, None, DK))
    layer.set_weights(reference.get_weights())
    q = rng.normal(size=(2, TQ, DQ)).astype("float32")
    k = rng.normal(size=(2, TQ, DK)).astype("float32")
    v = rng.normal(size=(2, TQ, DV)).astype("float32")
    context = layer(q, v, key=k, use_causal_mask=True)
    assert keras.backend.standardize_dtype(context.dtype) == policy.split("_")[1]
    tolerance = 5e-2 if policy == "mixed_bfloat16" else 1e-2
    expected = to_numpy(reference(q, v, key=k, use_causal_mask=True))
    np.testing.assert_allclose(to_numpy(context).astype("float32"), expected, atol=tolerance * 5)


def test_compiled_chunked_call_equals_eager(rng):
    """jit_compile=True on TensorFlow, jax.jit on JAX, plain eager on PyTorch."""
    _, layer = _pair("scaled_dot", rng)
    q = rng.normal(size=(2, TQ, DQ)).astype("float32")
    value_mask = np.arange(TQ)[None] < np.array([[TQ], [20]])
    eager = to_numpy(layer(q, q, value_mask=value_mask, use_causal_mask=True))

    def fn(q, value_mask):
        return layer(q, q, value_mask=value_mask, use_causal_mask=True)

    if BACKEND == "tensorflow":
        import tensorflow as tf

        fn = tf.function(fn, jit_compile=True)
    elif BACKEND == "jax":
        import jax

        fn = jax.jit(fn)
    np.testing.assert_allclose(to_numpy(fn(q, value_mask)), eager, atol=1e-5)


def test_functional_model_trains_and_reloads_with_chunked_layer(rng, tmp_path):
    inputs = keras.Input((TQ, DQ))
    layer = LAYERS["multi_head_gqa"](implementation="chunked", block_size=16, name="attention")
    outputs = keras.layers.Dense(1)(layer(inputs, inputs, use_causal_mask=True))
    model = keras.Model(inputs, outputs)
    model.compile("sgd", "mse")
    x = rng.normal(size=(4, TQ, DQ)).astype("float32")
    history = model.fit(x, np.zeros((4, TQ, 1), "float32"), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.get_layer("attention").implementation == "chunked"
    assert loaded.get_layer("attention").block_size == 16
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-5)


def test_causal_tiles_in_the_future_are_skipped():
    plan = tiles.Plan(32, 32, 8, causal=True)
    visited = [(i, j) for i in range(plan.nq) for j in range(plan.key_blocks(i))]
    assert len(visited) == 10  # the 4 x 4 lower triangle, diagonal included
    by_key = [(i, j) for j in range(plan.nk) for i in range(plan.first_query_block(j), plan.nq)]
    assert sorted(by_key) == sorted(visited)
    shifted = tiles.Plan(8, 32, 8, causal=True)  # 8 new queries after 24 cached keys
    assert shifted.key_blocks(0) == 4 and shifted.first_query_block(3) == 0
    later = tiles.Plan(32, 8, 8, causal=True)  # queries 0..23 see no key
    assert [later.key_blocks(i) for i in range(4)] == [0, 0, 0, 1]


# ---------------------------------------------------------------- dispatch
@pytest.mark.parametrize(
    "kwargs,expected",
    [
        (dict(implementation="exact", query_length=8192, value_length=8192), "exact"),
        (dict(query_length=8192, value_length=8192), "chunked"),
        (dict(query_length=4096, value_length=4096, heads=8), "chunked"),
        (dict(query_length=2048, value_length=2048, heads=8), "exact"),
        (dict(query_length=2048, value_length=2048, heads=8, batch_size=2), "chunked"),
        (dict(query_length=64, value_length=64), "exact"),
        (dict(query_length=1, value_length=100_000), "exact"),
        (dict(query_length=None, value_length=8192), "exact"),
        (dict(query_length=8192, value_length=8192, return_attention_scores=True), "exact"),
        (dict(query_length=8192, value_length=8192, probability_fn="sparsemax"), "exact"),
        (dict(query_length=8192, value_length=8192, fused_available=True), "fused"),
        (dict(implementation="chunked", query_length=4, value_length=4), "chunked"),
        (dict(implementation="chunked", query_length=None, value_length=4), "exact"),
        (
            dict(score="additive", units=128, query_length=512, value_length=512, batch_size=8),
            "chunked",
        ),
        (dict(score="additive", units=128, query_length=512, value_length=512), "exact"),
        (dict(score=None, query_length=8192, value_length=8192), "exact"),
    ],
)
def test_choose_implementation(kwargs, expected):
    choose = memory_efficient.choose_implementation
    assert choose(backend="tensorflow", device="cpu", **kwargs) == expected


def test_auto_goes_chunked_sooner_on_jax_cpus():
    sizes = dict(query_length=512, value_length=512, heads=8, device="cpu")
    assert memory_efficient.choose_implementation(backend="jax", **sizes) == "chunked"
    assert memory_efficient.choose_implementation(backend="torch", **sizes) == "exact"


GIB = 2**30


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
@pytest.mark.parametrize(
    "kwargs,expected",
    [
        # Issue 10's shape: 2**21 weights, chunked on a JAX CPU, exact on any GPU.
        (dict(query_length=256, value_length=256, batch_size=32), "exact"),
        (
            dict(score="additive", units=512, query_length=256, value_length=256, batch_size=32),
            "exact",
        ),  # a 4 GiB tanh: its ~16 GiB step fits in half of 40 GiB
        (
            dict(
                score="additive",
                units=512,
                query_length=256,
                value_length=256,
                batch_size=32,
                free_memory=16 * GIB,
            ),
            "chunked",
        ),
        # T = 65,536, 8 heads: 128 GiB of float32 weights never fit.
        (dict(query_length=65536, value_length=65536, heads=8), "chunked"),
        (dict(query_length=65536, value_length=65536, heads=8, fused_available=True), "fused"),
        (
            dict(query_length=16384, value_length=16384, heads=8, itemsize=2, free_memory=24 * GIB),
            "chunked",
        ),  # a 16 GiB step, 12 GiB allowed
        (
            dict(
                query_length=16384, value_length=16384, heads=8, itemsize=2, free_memory=140 * GIB
            ),
            "exact",
        ),
        (
            dict(query_length=4096, value_length=4096, heads=8, return_attention_scores=True),
            "exact",
        ),
    ],
)
def test_choose_implementation_on_accelerators(backend, kwargs, expected):
    kwargs = {"free_memory": 40 * GIB, **kwargs}
    for device in ("gpu", "tpu"):
        got = memory_efficient.choose_implementation(backend=backend, device=device, **kwargs)
        assert got == expected, (device, got)


def test_unknown_device_raises():
    with pytest.raises(ValueError, match="device.*'npu'"):
        memory_efficient.choose_implementation(query_length=8, value_length=8, device="npu")


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(return_attention_scores=True),
        dict(probability_fn="hardmax"),
        dict(score=None),
    ],
)
def test_chunked_refuses_what_it_cannot_do(kwargs):
    with pytest.raises(ValueError, match="chunked"):
        memory_efficient.choose_implementation(
            "chunked", query_length=64, value_length=64, **kwargs
        )


FUSED_OK = dict(backend="torch", dtype="float32", head_dim=64, query_length=4096, value_length=4096)


@pytest.mark.parametrize(
    "change,expected",
    [
        ({}, True),
        (dict(backend="jax", device="gpu", dtype="bfloat16"), True),
        (dict(use_causal_mask=True), True),
        (dict(backend="tensorflow"), False),
        (dict(backend="jax", device="cpu", dtype="bfloat16"), False),
        (dict(backend="jax", device="gpu"), False),  # float32: XLA's quadratic path
        (dict(head_dim=60), False),
        (dict(head_dim=256), False),
        (dict(dropout=0.1), False),
        (dict(has_value_mask=True), False),
        (dict(has_attention_mask=True), False),
        (dict(use_causal_mask=True, query_length=1), False),  # top-left vs end-aligned
    ],
)
def test_fused_attention_available(change, expected):
    assert memory_efficient.fused_attention_available(**{**FUSED_OK, **change}) is expected
    reason = memory_efficient.fused_attention_refusal(**{**FUSED_OK, **change})
    assert (reason is None) is expected


def test_no_fused_kernel_takes_a_soft_cap():
    reason = memory_efficient.fused_attention_refusal(**FUSED_OK, soft_cap=True)
    assert "soft cap" in reason


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(fused_available=False, fused_refusal="the tensorflow backend"), "tensorflow"),
        (dict(fused_available=True, score="additive"), "dot-product score"),
        (dict(fused_available=True, return_attention_scores=True), "never materializes"),
        (dict(fused_available=True, probability_fn="sparsemax"), "softmax"),
    ],
)
def test_an_explicit_fused_request_says_why_it_cannot_run(kwargs, match):
    with pytest.raises(ValueError, match=match):
        memory_efficient.choose_implementation("fused", query_length=64, value_length=64, **kwargs)


def test_an_explicit_fused_request_runs_where_the_kernel_can():
    choose = memory_efficient.choose_implementation
    assert choose("fused", query_length=None, value_length=64, fused_available=True) == "fused"


@pytest.mark.parametrize("device", [None, "cpu", "gpu"])
def test_auto_takes_the_chunked_path_only_when_it_pays(monkeypatch, rng, device):
    """On this machine's device (None) and on each rule, whatever device this runs on."""
    if device is not None:
        monkeypatch.setattr(paths.backends, "device_kind", lambda tensor=None: device)
    calls = []
    original = memory_efficient.chunked_attention

    def spy(*args, **kwargs):
        calls.append(kwargs["block_size"])
        return original(*args, **kwargs)

    monkeypatch.setattr(memory_efficient, "chunked_attention", spy)
    monkeypatch.setattr(paths, "AUTO_CHUNKED_MIN_ELEMENTS", 50 * 50)
    monkeypatch.setattr(paths, "AUTO_CHUNKED_MIN_ELEMENTS_JAX", 50 * 50)
    # On a GPU the rule is memory: an exact step is 4 float32 copies of the logits,
    # 25,600 bytes at 40 x 40 and 57,600 at 60 x 60, against half of 80,000 free.
    monkeypatch.setattr(paths.backends, "free_memory", lambda: 80_000)
    layer = ScaledDotProduct(block_size=16)
    x = rng.normal(size=(1, 60, 4)).astype("float32")
    layer(x[:, :40], x[:, :40])  # 40 * 40 logits: exact
    assert calls == []
    context = layer(x, x, use_causal_mask=True)  # 60 * 60 logits: chunked
    assert calls == [16]
    _, weights = layer(x, x, return_attention_scores=True)  # weights requested: exact
    assert calls == [16] and tuple(weights.shape) == (1, 60, 60)
    exact = ScaledDotProduct(implementation="exact")(x, x, use_causal_mask=True)
    np.testing.assert_allclose(to_numpy(context), to_numpy(exact), atol=1e-5)


def test_fused_wrapper_equals_exact(rng):
    """`fused_dot_product_attention` keeps our layout, scale and query mask."""
    q, k, v = (rng.normal(size=(2, 3, 24, 8)).astype("float32") for _ in range(3))
    query_mask = rng.random((2, 24)) > 0.2

    def fused(q, k, v):
        context = memory_efficient.fused_dot_product_attention(
            q, k, v, scale=0.3, query_mask=query_mask, use_causal_mask=True
        )
        return keras.ops.sum(context * keras.ops.cos(context))

    def exact(q, k, v):
        mask = np.tril(np.ones((24, 24), bool))[None, None] & query_mask[:, None, :, None]
        weights = attention_ops.masked_softmax(attention_ops.dot_product_scores(q, k, 0.3), mask)
        context = attention_ops.weighted_sum(weights, v)
        return keras.ops.sum(context * keras.ops.cos(context))

    _assert_same(_value_and_grad(exact, q, k, v), _value_and_grad(fused, q, k, v))


@pytest.mark.skipif(BACKEND != "torch", reason="the fused path is taken on PyTorch only here")
def test_auto_takes_the_fused_path_on_torch(monkeypatch, rng):
    calls = []
    original = memory_efficient.fused_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(memory_efficient, "fused_dot_product_attention", spy)
    exact = MultiHead(num_heads=2, key_dim=8, implementation="exact")
    auto = MultiHead(num_heads=2, key_dim=8)
    x = rng.normal(size=(2, 24, DQ)).astype("float32")
    exact.build(x.shape, x.shape)
    auto.build(x.shape, x.shape)
    auto.set_weights(exact.get_weights())
    query_mask = rng.random((2, 24)) > 0.2
    kwargs = dict(use_causal_mask=True, query_mask=query_mask)
    np.testing.assert_allclose(
        to_numpy(auto(x, x, **kwargs)), to_numpy(exact(x, x, **kwargs)), atol=1e-5
    )
    assert calls == [1]
    auto(x, x, value_mask=query_mask)  # a key mask rules the kernel out
    assert calls == [1]


# -------------------------------------------------------------- arguments
def test_implementation_and_block_size_are_in_the_config():
    layer = BahdanauAttention(units=4, implementation="chunked", block_size=32)
    config = layer.get_config()
    assert config["implementation"] == "chunked" and config["block_size"] == 32
    clone = BahdanauAttention.from_config(config)
    assert clone.implementation == "chunked" and clone.block_size == 32
    assert ScaledDotProduct().get_config()["implementation"] == "auto"


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(implementation="flash"), "implementation"),
        (dict(block_size=0), "block_size"),
        (dict(block_size=True), "block_size"),
        (dict(implementation="chunked", probability_fn="sparsemax"), "softmax"),
    ],
)
def test_invalid_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ScaledDotProduct(**kwargs)


def test_chunked_with_returned_weights_raises(rng):
    x = rng.normal(size=(1, 5, 4)).astype("float32")
    with pytest.raises(ValueError, match="return_attention_scores"):
        ScaledDotProduct(implementation="chunked")(x, x, return_attention_scores=True)


# ---------------------------------------------------------------- backends
def test_backend_module_answers_for_this_machine(rng):
    import sys

    from keras_attention import backends

    x = keras.ops.convert_to_tensor(rng.normal(size=(2, 3)).astype("float32"))
    kind = backends.device_kind(x)
    assert kind in backends.DEVICE_KINDS
    assert kind == backends.device_kind()  # a new tensor lands where calls run
    if kind == "cpu":
        assert backends.free_memory() is None
    else:
        assert backends.free_memory() is None or backends.free_memory() > 0
    loaded = {name for name in sys.modules if name.startswith("keras_attention.backends.")}
    assert loaded == {f"keras_attention.backends.{BACKEND}_backend"}, loaded


@pytest.mark.skipif(BACKEND != "jax", reason="the JAX backend's own form")
def test_jax_multiply_reduce_matches_the_matrix_product_form(rng):
    """The GPU form of the additive projection against NumPy and the generic form."""
    from keras_attention.backends import jax_backend
    from keras_attention.scores import AdditiveScore

    hidden = np.tanh(rng.normal(size=(2, 3, 5, 7))).astype("float32")
    vector = rng.normal(size=(7,)).astype("float32")
    expected = np.einsum("bqku,u->bqk", hidden.astype("float64"), vector.astype("float64"))
    got = jax_backend.multiply_reduce(keras.ops.convert_to_tensor(hidden), vector)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-6)
    half = jax_backend.multiply_reduce(keras.ops.cast(hidden, "float16"), vector)
    assert half.dtype == "float16"
    np.testing.assert_allclose(np.asarray(half, "float32"), expected, rtol=2e-2, atol=2e-2)
    # What the score computes on this device: the matrix product on a CPU.
    here = AdditiveScore.project(keras.ops.convert_to_tensor(hidden), vector)
    np.testing.assert_allclose(np.asarray(here), expected, rtol=1e-5, atol=1e-6)
    on_this_device = jax_backend.additive_projection(keras.ops.convert_to_tensor(hidden), vector)
    assert (on_this_device is None) == (jax_backend.device_kind() != "gpu")


def test_default_dot_tiles_grow_with_what_fits():
    from keras_attention.memory_efficient import chunked

    sides = [chunked.dot_block_size(n, False, "torch") for n in (1, 8, 16, 64)]
    assert sides == [1024, 1024, 512, 512]  # never below the former 512
    for backend in ("tensorflow", "jax"):
        assert [chunked.dot_block_size(n, False, backend) for n in (1, 64)] == [512, 512]
    assert chunked.dot_block_size(1, True, "torch") == 512  # the band's tiles stay 512
    assert chunked.dot_block_size(None, False, "torch") == 512  # an unknown batch


def test_default_1024_wide_tiles_equal_the_exact_path(rng):
    """B * H = 2 takes 1024-wide tiles on PyTorch, 512 elsewhere: whole and padded tiles."""
    q, k, v = (rng.normal(size=(1, 2, n, 8)).astype("float32") for n in (1100, 1100, 1100))
    mask = np.arange(1100)[None] < 1050  # the last keys padding

    def chunked(q, k, v):
        return memory_efficient.chunked_dot_product_attention(q, k, v, value_mask=mask)

    def exact(q, k, v):
        logits = keras.ops.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(8.0)
        logits = keras.ops.where(mask[:, None, None], logits, -1e9)
        return keras.ops.einsum("bhqk,bhkd->bhqd", keras.ops.softmax(logits), v)

    results = [
        compiled_value_and_grad(lambda *x, fn=fn: keras.ops.sum(fn(*x) ** 2), q, k, v)
        for fn in (chunked, exact)
    ]
    (value, grads), (expected_value, expected_grads) = results
    np.testing.assert_allclose(to_numpy(value), to_numpy(expected_value), rtol=1e-4)
    for got, want in zip(grads, expected_grads):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-3, atol=1e-4)
