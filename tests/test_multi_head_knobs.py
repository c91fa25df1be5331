"""MultiHead's options of today's Transformers, against NumPy written from the papers.

RoPE scaling (linear, dynamic NTK, YaRN), QK-norm, logit soft-capping and the
output gate: on every path, with masks, in low precision, fresh, saved and
loaded, and in the key/value cache (tests/test_kv_cache.py).
"""

import math

import keras
import numpy as np
import pytest
import reference
from backend_utils import layer_value_and_grads
from backend_utils import to_numpy

from keras_attention import MultiHead
from keras_attention import memory_efficient
from keras_attention import rotary

BACKEND = keras.backend.backend()
KNOBS = dict(use_gate=True, qk_norm=True, logit_soft_cap=2.0)
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512}
SCALINGS = [
    {"rope_type": "linear", "factor": 4.0},
    {"rope_type": "dynamic", "factor": 4.0},
    YARN,
]


def _randomized(rng, x_shape=(2, 6, 8), **kwargs):
    layer = MultiHead(num_heads=4, key_dim=8, num_key_value_heads=2, **kwargs)
    layer.build(x_shape, x_shape)
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.6)
    return layer


def _clone(layer, **changes):
    config = {**layer.get_config(), **changes}
    config.pop("name")
    twin = MultiHead.from_config(config)
    twin.build((None, None, 8), (None, None, 8))
    twin.set_weights(layer.get_weights())
    return twin


# ------------------------------------------------------------- RoPE scaling
@pytest.mark.parametrize("rope_scaling", SCALINGS, ids=lambda s: s["rope_type"])
def test_rope_scaling_matches_the_papers(rope_scaling, rng):
    x = rng.normal(size=(2, 4, 16)).astype("float32")  # d = 16: 8 pairs
    positions = np.array([0, 7, 300, 2000])
    got = rotary.rotary_embedding(x, positions, base=100.0, rope_scaling=rope_scaling)
    thetas, magnitude = reference.rope_scaled_frequencies(
        16, 100.0, rope_scaling["rope_type"], 4.0, 512
    )
    expected = reference.rotate_half(x, positions, inverse_frequencies=thetas, magnitude=magnitude)
    np.testing.assert_allclose(to_numpy(got), expected, rtol=1e-4, atol=1e-4)


def test_yarn_keeps_fast_pairs_and_interpolates_slow_ones():
    """YaRN: a pair turning > 32 times over L keeps θ, one turning < once takes θ / s."""
    plain = to_numpy(rotary.rotary_inverse_frequencies(16, 100.0))
    scaled = to_numpy(rotary.rotary_inverse_frequencies(16, 100.0, YARN))
    turns = 512 * plain / (2 * math.pi)
    np.testing.assert_allclose(scaled[turns > 32], plain[turns > 32], rtol=1e-6)
    np.testing.assert_allclose(scaled[turns < 1], plain[turns < 1] / 4.0, rtol=1e-6)
    middle = (turns >= 1) & (turns <= 32)
    assert middle.any() and np.all((scaled[middle] < plain[middle]) & (scaled[middle] > 0))
    low, high = rotary.yarn_correction_range(
        16, 100.0, {**YARN, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": True}
    )
    assert low == int(low) and high == int(high)  # truncate rounds the ramp's ends


def test_linear_scaling_is_position_interpolation(rng):
    x = rng.normal(size=(3, 8)).astype("float32")
    scaled = rotary.rotary_embedding(x, np.arange(3), rope_scaling=SCALINGS[0])
    interpolated = rotary.rotary_embedding(x, np.arange(3) / 4.0)
    np.testing.assert_allclose(to_numpy(scaled), to_numpy(interpolated), atol=1e-6)


# ------------------------------------------------- the layer against NumPy
def _numpy_multi_head(layer, q, kv, mask):
    """Every option, from the papers: norm, rotate, scale, cap, mask, softmax, gate."""

    def dense(sub, x):
        return reference.dense(x, to_numpy(sub.kernel), to_numpy(sub.bias))

    def heads(x, count):
        return x.reshape(*x.shape[:2], count, -1).transpose(0, 2, 1, 3)  # (B, count, T, d)

    h, hkv, tq, tv = layer.num_heads, layer.num_key_value_heads, q.shape[1], kv.shape[1]
    qh, kh = heads(dense(layer.query_dense, q), h), heads(dense(layer.key_dense, kv), hkv)
    qh = reference.rms_norm(qh, to_numpy(layer.query_norm))
    kh = reference.rms_norm(kh, to_numpy(layer.key_norm))
    scaling = layer.rope_scaling
    thetas, magnitude = reference.rope_scaled_frequencies(
        layer.key_dim, layer.rotary_base, scaling["rope_type"], scaling["factor"], 512
    )
    rotate = dict(inverse_frequencies=thetas, magnitude=magnitude)
    qh = reference.rotate_half(qh, np.arange(tq) + tv - tq, **rotate)
    kh = reference.rotate_half(kh, np.arange(tv), **rotate)
    vh = heads(dense(layer.value_dense, kv), hkv)
    kh, vh = np.repeat(kh, h // hkv, axis=1), np.repeat(vh, h // hkv, axis=1)
    logits = reference.soft_cap(reference.dot_scores(qh, kh) / math.sqrt(layer.key_dim), 2.0)
    context, weights = reference.attend(logits, vh, mask)
    merged = context.transpose(0, 2, 1, 3).reshape(q.shape[0], tq, -1)
    merged = merged * reference.sigmoid(dense(layer.gate_dense, q))
    return dense(layer.output_dense, merged), weights


def test_every_option_matches_numpy(rng):
    """YaRN here; every `rope_type` against the papers in `test_rope_scaling_matches_the_papers`."""
    layer = _randomized(rng, rotary=True, rope_scaling=YARN, **KNOBS)
    kv = rng.normal(size=(2, 6, 8)).astype("float32")
    value_mask = np.arange(6)[None] < np.array([[6], [4]])
    context, weights = layer(
        kv[:, 2:], kv, use_causal_mask=True, value_mask=value_mask, return_attention_scores=True
    )
    mask = (reference.causal(4, 6)[None] & value_mask[:, None])[:, None]  # (B, 1, Tq, Tv)
    ref_context, ref_weights = _numpy_multi_head(layer, kv[:, 2:], kv, mask)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-4)


def test_the_soft_cap_bounds_what_one_key_can_take(rng):
    """With logits in (-c, c) no key gets more than e^c / (e^c + (n - 1) e^-c)."""
    layer = _randomized(rng, logit_soft_cap=1.0)
    x = 50.0 * rng.normal(size=(2, 6, 8)).astype("float32")
    _, weights = layer(x, x, return_attention_scores=True)
    bound = math.e / (math.e + 5 / math.e)
    assert to_numpy(weights).max() <= bound + 1e-6
    _, uncapped = _clone(layer, logit_soft_cap=None)(x, x, return_attention_scores=True)
    assert to_numpy(uncapped).max() > 0.99  # without the cap one key takes it all


# ------------------------------------------------------------- every path
def test_chunked_path_equals_exact_with_gradients(rng):
    exact = _randomized(rng, rotary=True, rope_scaling=YARN, implementation="exact", **KNOBS)
    chunked = _clone(exact, implementation="chunked", block_size=4)
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    call = dict(use_causal_mask=True)
    (value, grads), (chunked_value, chunked_grads) = (
        layer_value_and_grads(layer, x, x, x, call) for layer in (exact, chunked)
    )
    np.testing.assert_allclose(chunked_value, value, rtol=1e-5)
    for got, expected in zip(chunked_grads, grads):
        np.testing.assert_allclose(got, expected, atol=1e-4)


def test_the_fused_path_takes_what_its_kernel_can(monkeypatch, rng):
    calls = []
    fused = memory_efficient.fused_dot_product_attention
    monkeypatch.setattr(
        memory_efficient,
        "fused_dot_product_attention",
        lambda *a, **k: calls.append(1) or fused(*a, **k),
    )
    options = dict(rotary=True, rope_scaling=YARN, use_gate=True, qk_norm=True)
    exact = _randomized(rng, implementation="exact", **options)
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    explicit = _clone(exact, implementation="fused")
    if BACKEND != "torch":  # no fused kernel on this CPU: an explicit request says why
        with pytest.raises(ValueError, match="fused.*(tensorflow backend|JAX cpu)"):
            explicit(x, x, use_causal_mask=True)
        return
    expected = to_numpy(exact(x, x, use_causal_mask=True))
    np.testing.assert_allclose(to_numpy(explicit(x, x, use_causal_mask=True)), expected, atol=1e-5)
    assert calls == [1]
    capped = _clone(exact, logit_soft_cap=2.0)  # "auto" leaves the kernel for another path
    exact_capped = _clone(exact, logit_soft_cap=2.0, implementation="exact")
    np.testing.assert_allclose(
        to_numpy(capped(x, x, use_causal_mask=True)),
        to_numpy(exact_capped(x, x, use_causal_mask=True)),
        atol=1e-5,
    )
    assert calls == [1]


# ------------------------------------------------------------ masks, dtypes
def test_masked_keys_never_matter(rng):
    """The exact path (the chunked one is checked with NaN memory in test_long_sequences)."""
    layer = _randomized(rng, rotary=True, implementation="exact", **KNOBS)
    q, kv = (rng.normal(size=(2, 6, 8)).astype("float32") for _ in range(2))
    value_mask = np.array([[True] * 6, [True, True, False, True, False, False]])
    before = to_numpy(layer(q, kv, value_mask=value_mask))
    poisoned = kv.copy()
    poisoned[~value_mask] = np.nan
    poisoned[1, 2] = 1e4
    after = to_numpy(layer(q, poisoned, value_mask=value_mask))
    np.testing.assert_allclose(after, before, atol=1e-5)
    _, weights = layer(q, kv, value_mask=value_mask, return_attention_scores=True)
    np.testing.assert_array_equal(to_numpy(weights)[1][..., ~value_mask[1]], 0.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_stays_finite_and_close(dtype, rng):
    reference_layer = _randomized(rng, rotary=True, rope_scaling=YARN, **KNOBS)
    layer = _clone(reference_layer, dtype=dtype)
    x = 20.0 * rng.normal(size=(2, 6, 8)).astype("float32")  # large logits
    value_mask = np.array([[True] * 6, [False] * 6])  # one sentence with no keys
    context, weights = layer(x, x, value_mask=value_mask, return_attention_scores=True)
    context = to_numpy(context).astype("float32")
    assert np.isfinite(context).all() and np.isfinite(to_numpy(weights).astype("float32")).all()
    bias = to_numpy(layer.output_dense.bias).astype("float32")  # no keys: W_o 0 + b
    np.testing.assert_allclose(context[1], np.broadcast_to(bias, context[1].shape), rtol=1e-2)
    expected = to_numpy(reference_layer(x, x, value_mask=value_mask))
    scale = np.abs(expected).max()
    np.testing.assert_allclose(context[0], expected[0], atol=0.05 * scale)


# ------------------------------------------------------------ fresh, saved
def test_a_fresh_layer_starts_where_the_papers_start(rng):
    layer = MultiHead(num_heads=4, key_dim=8, num_key_value_heads=2, **KNOBS)
    plain = MultiHead(num_heads=4, key_dim=8, num_key_value_heads=2)
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    layer.build(x.shape, x.shape)
    plain.build(x.shape, x.shape)
    np.testing.assert_array_equal(to_numpy(layer.query_norm), 1.0)  # RMSNorm scales start at 1
    np.testing.assert_array_equal(to_numpy(layer.key_norm), 1.0)
    gate, query = to_numpy(layer.gate_dense.kernel), to_numpy(layer.query_dense.kernel)
    assert not np.allclose(gate, query)  # its own initializer
    for name in ("query", "key", "value", "output"):
        getattr(plain, f"{name}_dense").set_weights(getattr(layer, f"{name}_dense").get_weights())
    # A zero query: zero logits, uniform weights, and a gate of sigmoid(0) = 1/2.
    zeros = np.zeros_like(x)
    gated, ungated = to_numpy(layer(zeros, x)), to_numpy(plain(zeros, x))
    np.testing.assert_allclose(gated, 0.5 * ungated, atol=1e-6)
    assert np.abs(ungated).max() > 1e-3


def test_keras_file_round_trip(tmp_path, rng):
    inputs = keras.Input((6, 8))
    options = dict(rotary=True, rope_scaling={"rope_type": "dynamic", "factor": 2.0}, window=3)
    outputs = MultiHead(num_heads=4, key_dim=8, num_key_value_heads=2, **KNOBS, **options)(
        inputs, inputs, use_causal_mask=True
    )
    model = keras.Model(inputs, outputs)
    for variable in model.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    path = str(tmp_path / "knobs.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-6)
    config = loaded.layers[-1].get_config()
    assert config["rope_scaling"] == {"rope_type": "dynamic", "factor": 2.0}
    assert (config["use_gate"], config["qk_norm"], config["logit_soft_cap"]) == (True, True, 2.0)


# -------------------------------------------------------------- bad values
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(logit_soft_cap=0.0), ValueError, "logit_soft_cap"),
        (dict(logit_soft_cap=-3), ValueError, "logit_soft_cap"),
        (dict(logit_soft_cap="50"), ValueError, "logit_soft_cap"),
        (dict(logit_soft_cap=50.0, implementation="fused"), ValueError, "logit_soft_cap"),
        (dict(use_gate="yes"), TypeError, "use_gate"),
        (dict(qk_norm=1), TypeError, "qk_norm"),
        (dict(rope_scaling={"rope_type": "linear", "factor": 2.0}), ValueError, "rotary=True"),
        (dict(rotary=True, rope_scaling="yarn"), TypeError, "rope_scaling"),
        (dict(rotary=True, rope_scaling={"factor": 2.0}), ValueError, "rope_type"),
        (
            dict(rotary=True, rope_scaling={"rope_type": "ntk", "factor": 2.0}),
            ValueError,
            "rope_type",
        ),
        (dict(rotary=True, rope_scaling={"rope_type": "linear"}), ValueError, "'factor'"),
        (
            dict(rotary=True, rope_scaling={"rope_type": "linear", "factor": 0.5}),
            ValueError,
            "factor",
        ),
        (
            dict(rotary=True, rope_scaling={"rope_type": "yarn", "factor": 2.0}),
            ValueError,
            "original_max_position_embeddings",
        ),
        (dict(rotary=True, rope_scaling={**YARN, "beta_fast": 0.5}), ValueError, "beta_fast"),
        (
            dict(rotary=True, rope_scaling={"rope_type": "linear", "factor": 2.0, "beta_fast": 3}),
            ValueError,
            "beta_fast",
        ),
    ],
)
def test_bad_values_name_their_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        MultiHead(num_heads=2, key_dim=4, **kwargs)
