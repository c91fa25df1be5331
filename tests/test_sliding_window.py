"""Sliding-window (local, banded) masks: `masks.sliding_window_mask` and `window=`.

The band is written here in NumPy, one entry at a time, from its definition:
query `i` of `Tq` sits at position `p = i + Tv - Tq` (end-aligned, like the
causal mask) and sees key `j` iff `|p - j| < w` for `window=w`, or `p - left
<= j <= p + right` for `window=(left, right)`; a causal mask also demands
`j <= p`. Layers are checked against `layer_cases.reference_call` (NumPy,
float64) with that band as the mask, on the exact path (returned weights),
the chunked path (forward and gradients), the fused rule, and `MultiHead`'s
key/value cache.
"""

import keras
import numpy as np
import pytest
from backend_utils import compiled_value_and_grad
from backend_utils import layer_value_and_grads
from backend_utils import to_numpy
from layer_cases import DK
from layer_cases import DQ
from layer_cases import DV
from layer_cases import build_randomized
from layer_cases import reference_call

from keras_attention import BahdanauAttention
from keras_attention import LocationSensitiveAttention
from keras_attention import LuongAttention
from keras_attention import LuongLocalPAttention
from keras_attention import MultiHead
from keras_attention import ScaledDotProduct
from keras_attention import masks
from keras_attention import memory_efficient
from keras_attention.memory_efficient import tiles

BACKEND = keras.backend.backend()
WINDOW_LAYERS = ["scaled_dot", "multi_head_gqa", "bahdanau", "luong_concat", "luong_general_scaled"]


def band(tq, tv, window=None, causal=False):
    """`(Tq, Tv)` boolean: the sliding window (and causal) rule, entry by entry."""
    allowed = np.zeros((tq, tv), bool)
    for i in range(tq):
        p = i + tv - tq
        for j in range(tv):
            if window is None:
                ok = True
            elif isinstance(window, int):
                ok = abs(p - j) < window
            else:
                ok = p - window[0] <= j <= p + window[1]
            allowed[i, j] = ok and (j <= p or not causal)
    return allowed


def _inputs(rng, tq, tv, batch=2):
    q = rng.normal(size=(batch, tq, DQ)).astype("float32")
    k = rng.normal(size=(batch, tv, DK)).astype("float32")
    v = rng.normal(size=(batch, tv, DV)).astype("float32")
    return q, k, v


def _padding(rng, tq, tv):
    value_mask = np.ones((2, tv), bool)
    value_mask[0, tv - 3 :] = False
    value_mask[1, :2] = False
    query_mask = np.ones((2, tq), bool)
    query_mask[0, 1] = False
    return query_mask, value_mask


# ------------------------------------------------------------------ the mask
@pytest.mark.parametrize("lengths", [(6, 6), (3, 7), (7, 3)])
@pytest.mark.parametrize("window", [1, 2, 3, (2, 0), (0, 2), (1, 3), (0, 0)])
@pytest.mark.parametrize("causal", [False, True])
def test_mask_equals_the_numpy_band(lengths, window, causal):
    tq, tv = lengths
    mask = masks.sliding_window_mask(tq, tv, window, use_causal_mask=causal)
    assert tuple(mask.shape) == (tq, tv)
    np.testing.assert_array_equal(to_numpy(mask), band(tq, tv, window, causal))


def test_mask_conventions():
    # An int w is keras MultiHeadAttention's sliding_window: |i - j| < w.
    np.testing.assert_array_equal(
        to_numpy(masks.sliding_window_mask(4, 4, 2)).astype(int),
        [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]],
    )
    # With a causal mask: the w most recent keys, itself included (Mistral's W),
    # which is the pair (w - 1, 0).
    causal = to_numpy(masks.sliding_window_mask(6, 6, 3, use_causal_mask=True))
    assert (causal.sum(-1) == [1, 2, 3, 3, 3, 3]).all()
    np.testing.assert_array_equal(causal, to_numpy(masks.sliding_window_mask(6, 6, (2, 0))))
    # End-aligned like the causal mask: 2 new queries after 3 cached keys.
    np.testing.assert_array_equal(
        to_numpy(masks.sliding_window_mask(2, 5, (1, 0))).astype(int),
        [[0, 0, 1, 1, 0], [0, 0, 0, 1, 1]],
    )
    # attention_mask_from ANDs the band with the other pieces, causal included.
    combined = masks.attention_mask_from(
        value_mask=np.array([[True, True, True, False, True]]),
        use_causal_mask=True,
        query_length=5,
        value_length=5,
        window=2,
    )
    expected = band(5, 5, 2, causal=True) & np.array([True, True, True, False, True])
    np.testing.assert_array_equal(to_numpy(combined)[0], expected)


# -------------------------------------------------- exact path, with weights
@pytest.mark.parametrize("name", WINDOW_LAYERS)
@pytest.mark.parametrize(
    "lengths,window,causal",
    [
        ((9, 9), 2, False),
        ((9, 9), 3, True),
        ((9, 9), (3, 1), False),
        ((4, 9), (2, 0), True),  # new queries over a longer history
        ((9, 4), 2, True),  # more queries than keys: the first rows see nothing
    ],
)
def test_layers_match_numpy_with_padding(name, lengths, window, causal, rng):
    tq, tv = lengths
    layer = build_randomized(name, rng, window=window, implementation="exact")
    q, k, v = _inputs(rng, tq, tv)
    query_mask, value_mask = _padding(rng, tq, tv)
    context, weights = layer(
        q,
        v,
        key=k,
        query_mask=query_mask,
        value_mask=value_mask,
        use_causal_mask=causal,
        return_attention_scores=True,
    )
    mask = band(tq, tv, window, causal)[None] & value_mask[:, None, :] & query_mask[:, :, None]
    expected_context, expected_weights = reference_call(layer, q, k, v, mask)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), expected_context, atol=1e-5)
    assert np.isfinite(to_numpy(context)).all()
    seen = to_numpy(weights)
    if seen.ndim == 4:  # (B, H, Tq, Tv): every head shares the mask
        seen = seen.max(axis=1)
    assert (seen[~np.broadcast_to(mask, seen.shape)] == 0).all()
    if not mask.all():  # the window changed something: this comparison could fail
        _, unwindowed = reference_call(layer, q, k, v, value_mask[:, None, :])
        assert not np.allclose(expected_weights, unwindowed, atol=1e-3)


def test_rows_with_nothing_in_their_window_get_zero_context(rng):
    q, k, v = _inputs(rng, 8, 3)
    for implementation in ("exact", "chunked"):
        layer = ScaledDotProduct(window=2, implementation=implementation)
        context = to_numpy(layer(q, v, key=k, use_causal_mask=True))
        # Queries 0..4 are at positions -5..-1: no key at or before them.
        np.testing.assert_array_equal(context[:, :5], 0.0)
        assert np.abs(context[:, 5:]).min(axis=-1).max() > 0


def test_a_window_covering_everything_is_no_window(rng):
    q, k, v = _inputs(rng, 7, 7)
    for window, causal in [(7, False), (50, False), ((6, 6), False), (7, True), ((6, 0), True)]:
        plain = build_randomized("multi_head_gqa", np.random.default_rng(1))
        windowed = build_randomized("multi_head_gqa", np.random.default_rng(1), window=window)
        np.testing.assert_allclose(
            to_numpy(windowed(q, v, key=k, use_causal_mask=causal)),
            to_numpy(plain(q, v, key=k, use_causal_mask=causal)),
            atol=1e-6,
        )
    narrow = build_randomized("multi_head_gqa", np.random.default_rng(1), window=6)
    assert not np.allclose(to_numpy(narrow(q, v, key=k)), to_numpy(plain(q, v, key=k)), atol=1e-4)


def test_rank_2_query_is_the_last_position(rng):
    """One decoding step (a `(B, d)` query) sits at position Tv - 1, as for causal masks."""
    layer = build_randomized("bahdanau", rng, window=(2, 0))
    q, k, v = _inputs(rng, 1, 6)
    context, weights = layer(q[:, 0], v, key=k, return_attention_scores=True)
    np.testing.assert_array_equal(to_numpy(weights)[:, :3], 0.0)
    expected, _ = reference_call(layer, q, k, v, band(1, 6, (2, 0))[None])
    np.testing.assert_allclose(to_numpy(context), expected[:, 0], atol=1e-5)


def test_non_finite_keys_reach_only_the_queries_whose_window_holds_them(rng):
    q, k, v = _inputs(rng, 8, 8)
    k[:, 2] = np.nan
    v[:, 2] = np.inf
    visible = band(8, 8, (1, 0), causal=True)[:, 2]  # queries 2 and 3
    for implementation in ("exact", "chunked"):
        layer = ScaledDotProduct(window=(1, 0), implementation=implementation, block_size=2)
        context = to_numpy(layer(q, v, key=k, use_causal_mask=True))
        assert np.isnan(context[:, visible]).all()
        assert np.isfinite(context[:, ~visible]).all()
        clean_k, clean_v = k.copy(), v.copy()
        clean_k[:, 2], clean_v[:, 2] = 0.0, 0.0
        clean = to_numpy(layer(q, clean_v, key=clean_k, use_causal_mask=True))
        np.testing.assert_allclose(context[:, ~visible], clean[:, ~visible], atol=1e-6)


# ------------------------------------------------- chunked path, gradients
TQ, TV = 37, 29


_value_and_grad = compiled_value_and_grad
_loss_and_grads = layer_value_and_grads


@pytest.mark.parametrize(
    "name,tv,window,causal,padded",
    [
        ("scaled_dot", TQ, 5, True, False),  # most tiles skipped
        ("scaled_dot", TV, (9, 2), False, True),
        ("multi_head_gqa", TQ, (12, 0), True, True),
        ("multi_head_gqa", TV, 3, False, False),
        ("bahdanau", TQ, (4, 4), False, True),
        ("luong_concat", TV, 6, True, False),
    ],
)
def test_chunked_equals_exact_forward_and_gradients(name, tv, window, causal, padded, rng):
    layers = [
        build_randomized(
            name, np.random.default_rng(3), window=window, implementation=path, block_size=8
        )
        for path in ("exact", "chunked")
    ]
    q, k, v = _inputs(rng, TQ, tv)
    call_kwargs = {"use_causal_mask": causal}
    if padded:
        call_kwargs["query_mask"], call_kwargs["value_mask"] = _padding(rng, TQ, tv)
    (value_e, grads_e), (value_c, grads_c) = (
        _loss_and_grads(layer, q, v, k, call_kwargs) for layer in layers
    )
    np.testing.assert_allclose(value_c, value_e, rtol=1e-5, atol=1e-5)
    scale = max([1.0] + [float(np.abs(g).max()) for g in grads_e])
    for grad_e, grad_c in zip(grads_e, grads_c):
        assert np.isfinite(grad_c).all()
        np.testing.assert_allclose(grad_c, grad_e, rtol=1e-5, atol=1e-5 * scale)
    # And both against NumPy, forward.
    mask = band(TQ, tv, window, causal)[None]
    if padded:
        mask = mask & call_kwargs["value_mask"][:, None, :] & call_kwargs["query_mask"][:, :, None]
    expected, _ = reference_call(layers[1], q, k, v, mask)
    np.testing.assert_allclose(to_numpy(layers[1](q, v, key=k, **call_kwargs)), expected, atol=1e-5)


def test_chunked_function_takes_a_window(rng):
    q, k, v = (rng.normal(size=(2, 3, 20, 4)).astype("float32") for _ in range(3))
    tensors = (keras.ops.convert_to_tensor(x) for x in (q, k, v))
    context = memory_efficient.chunked_dot_product_attention(
        *tensors, scale=0.5, window=(3, 1), block_size=4
    )
    logits = np.einsum("bhqd,bhkd->bhqk", q, k) * 0.5
    mask = band(20, 20, (3, 1))
    logits = np.where(mask, logits, -np.inf)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(to_numpy(context), weights @ v, atol=1e-5)


def _tiles_needed(plan, allowed):
    bq, bk = plan.bq, plan.bk
    return {
        (i, j)
        for i in range(plan.nq)
        for j in range(plan.nk)
        if allowed[i * bq : (i + 1) * bq, j * bk : (j + 1) * bk].any()
    }


@pytest.mark.parametrize(
    "tq,tv,block,causal,window",
    [
        (64, 64, 8, True, None),  # the causal triangle, as before windows
        (64, 64, 8, True, 8),
        (64, 64, 8, False, 5),
        (64, 64, 8, False, (17, 0)),
        (64, 64, 8, True, (0, 9)),  # causal wins on the right: the diagonal only
        (16, 64, 8, True, 12),  # new queries over a history
        (64, 16, 8, False, (3, 2)),  # queries past the keys see none
        (37, 29, 8, True, 6),  # ragged tiles
    ],
)
def test_tiles_outside_the_band_are_skipped(tq, tv, block, causal, window):
    plan = tiles.Plan(tq, tv, block, causal, window)
    visited = {
        (i, j) for i in range(plan.nq) for j in range(plan.first_key_block(i), plan.key_blocks(i))
    }
    by_key = {
        (i, j)
        for j in range(plan.nk)
        for i in range(plan.first_query_block(j), plan.query_blocks(j))
    }
    assert by_key == visited  # the backward pass visits the forward pass's tiles
    needed = _tiles_needed(plan, band(tq, tv, window, causal))
    if tq % block or tv % block:  # padded rows may add a tile, never lose one
        assert needed <= visited
    else:
        assert visited == needed
    if window is not None:
        assert len(visited) < plan.nq * plan.nk


# ------------------------------------------------------------ the fused path
@pytest.mark.parametrize(
    "backend, device, causal, tq, expected",
    [
        ("torch", "cpu", False, 128, True),  # a band mask on scaled_dot_product_attention
        ("torch", "gpu", True, 128, True),
        ("torch", "cpu", False, 64, True),  # Tq < Tv: every query still sees itself
        ("torch", "cpu", False, 256, False),  # Tq > Tv: rows with no key
        ("jax", "gpu", True, 128, True),  # cuDNN's left window under the causal mask
        ("jax", "gpu", False, 128, False),  # cuDNN takes no right window
    ],
)
def test_the_fused_rule_takes_a_window_where_the_kernel_does(backend, device, causal, tq, expected):
    call = dict(dtype="float16", head_dim=64, value_length=128, backend=backend, device=device)
    refusal = memory_efficient.fused_attention_refusal
    assert refusal(**call, query_length=128, use_causal_mask=causal) is None
    reason = refusal(**call, query_length=tq, use_causal_mask=causal and tq == 128, window=16)
    assert (reason is None) is expected
    assert reason is None or "window" in reason


@pytest.mark.parametrize("window", [4, (3, 2)])
@pytest.mark.parametrize("tq", [24, 16])
@pytest.mark.skipif(BACKEND != "torch", reason="the fused path is taken on PyTorch only here")
def test_the_fused_path_with_a_window_equals_the_exact_one(monkeypatch, rng, window, tq):
    calls = []
    original = memory_efficient.fused_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(kwargs["window"])
        return original(*args, **kwargs)

    monkeypatch.setattr(memory_efficient, "fused_dot_product_attention", spy)
    x = rng.normal(size=(2, 24, DQ)).astype("float32")
    fused = MultiHead(num_heads=2, key_dim=8, window=window, implementation="fused")
    exact = MultiHead(num_heads=2, key_dim=8, window=window, implementation="exact")
    fused.build(x.shape, x.shape)
    exact.build(x.shape, x.shape)
    exact.set_weights(fused.get_weights())
    for causal in (False, True) if tq == 24 else (False,):
        got = fused(x[:, -tq:], x, use_causal_mask=causal)
        expected = exact(x[:, -tq:], x, use_causal_mask=causal)
        np.testing.assert_allclose(to_numpy(got), to_numpy(expected), atol=1e-5)
    assert calls and all(w == window for w in calls)


@pytest.mark.skipif(BACKEND != "jax", reason="JAX's own windowed kernel")
@pytest.mark.parametrize("causal, window", [(True, 4), (False, (3, 2))])
def test_jax_windowed_kernel_equals_the_band_mask(rng, causal, window):
    """`backends.windowed_attention` (local_window_size) against the generic band mask."""
    from keras_attention.backends import jax_backend

    q, k, v = (rng.normal(size=(2, 12, 2, 8)).astype("float32") for _ in range(3))  # (B, T, H, d)
    left, right = masks.key_band(causal, window)
    got = jax_backend.windowed_attention(q, k, v, 0.3, left, right, causal)
    mask = masks.sliding_window_mask(12, 12, window, causal)[None, None]
    expected = keras.ops.dot_product_attention(q, k, v, mask=mask, scale=0.3)
    np.testing.assert_allclose(to_numpy(got), to_numpy(expected), atol=1e-5)


@pytest.mark.parametrize(
    "length, on_torch, on_tensorflow",
    [(8192, "chunked", "chunked"), (2048, "fused", "chunked"), (512, "fused", "exact")],
)
def test_auto_takes_the_chunked_tiles_when_the_band_is_narrow(length, on_torch, on_tensorflow):
    """Measured on CPUs (benchmarks/window_paths.py): skipping tiles outgrows the kernels."""
    choose = memory_efficient.choose_implementation
    call = dict(query_length=length, value_length=length, use_causal_mask=True, window=128)
    assert choose(backend="torch", device="cpu", fused_available=True, **call) == on_torch
    assert choose(backend="tensorflow", device="cpu", **call) == on_tensorflow
    without_window = dict(call, window=None)
    assert choose(backend="torch", device="cpu", fused_available=True, **without_window) == "fused"
    # On a GPU the fused kernel keeps a window whatever its width (cuDNN skips the tiles).
    assert choose(backend="jax", device="gpu", fused_available=True, **call) == "fused"


# ------------------------------------------------------- key/value cache
T, D = 9, 16


def _decode(layer, x, chunks):
    cache, outputs, index = layer.init_cache(x.shape[0], T + 3), [], 0
    for size in chunks:
        step = x[:, index] if size == 0 else x[:, index : index + size]
        context, cache = layer.call_with_cache(step, cache, index)
        context = to_numpy(context)
        outputs.append(context[:, None] if size == 0 else context)
        index += max(size, 1)
    return np.concatenate(outputs, axis=1)


@pytest.mark.parametrize("rotary", [False, True])
@pytest.mark.parametrize("kv_heads", [None, 2])
@pytest.mark.parametrize("window", [3, (2, 0), (1, 4)])
def test_cached_decoding_equals_the_full_causal_window_pass(rotary, kv_heads, window, rng):
    layer = MultiHead(
        num_heads=4, key_dim=4, num_key_value_heads=kv_heads, rotary=rotary, window=window
    )
    layer.build((None, None, D))
    x = rng.normal(size=(2, T, D)).astype("float32")
    full = to_numpy(layer(x, x, use_causal_mask=True))
    np.testing.assert_allclose(_decode(layer, x, [1] * T), full, atol=1e-5)
    np.testing.assert_allclose(_decode(layer, x, [4, 0, 1, 3]), full, atol=1e-5)
    if not rotary:  # the full pass itself, against NumPy
        expected, _ = reference_call(layer, x, x, x, band(T, T, window, causal=True)[None])
        np.testing.assert_allclose(full, expected, atol=1e-5)
    layer.window = None  # the window was applied: without it the cache says otherwise
    assert not np.allclose(_decode(layer, x, [1] * T), full, atol=1e-4)


def test_cached_tokens_outside_the_window_never_matter(rng):
    layer = MultiHead(num_heads=2, key_dim=4, window=3)
    layer.build((None, None, D))
    x = rng.normal(size=(1, T, D)).astype("float32")
    changed = x.copy()
    changed[:, :3] += 10.0  # tokens 0..2: outside the window of tokens 5 and on
    before, after = _decode(layer, x, [1] * T), _decode(layer, changed, [1] * T)
    np.testing.assert_allclose(after[:, 5:], before[:, 5:], atol=1e-5)
    assert not np.allclose(after[:, 4], before[:, 4], atol=1e-4)


# ------------------------------------------------------- config and saving
@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: ScaledDotProduct(**kw),
        lambda **kw: MultiHead(num_heads=2, key_dim=4, **kw),
        lambda **kw: BahdanauAttention(units=4, **kw),
        lambda **kw: LuongAttention(**kw),
    ],
)
def test_window_is_in_the_config(make):
    for window, stored in [(None, None), (3, 3), ((2, 0), (2, 0)), ([4, 1], (4, 1))]:
        layer = make(window=window)
        assert layer.window == stored
        assert layer.get_config()["window"] == stored
        assert type(layer).from_config(layer.get_config()).window == stored


def test_keras_file_round_trip(tmp_path, rng):
    x = rng.normal(size=(2, 11, 8)).astype("float32")
    inputs = keras.Input((11, 8), name="tokens")
    hidden = MultiHead(num_heads=2, key_dim=4, window=(3, 0), name="local")(
        inputs, inputs, use_causal_mask=True
    )
    outputs = ScaledDotProduct(window=2, name="banded")(hidden, hidden)
    model = keras.Model(inputs, outputs)
    expected = to_numpy(model(x))
    path = tmp_path / "window.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.get_layer("local").window == (3, 0)
    assert loaded.get_layer("banded").window == 2
    np.testing.assert_allclose(to_numpy(loaded(x)), expected, atol=1e-6)


@pytest.mark.parametrize(
    "window,error",
    [
        (0, ValueError),
        (-2, ValueError),
        ((1,), ValueError),
        ((1, 2, 3), ValueError),
        ((-1, 0), ValueError),
        ((0, -3), ValueError),
        (True, TypeError),
        (2.0, TypeError),
        ("3", TypeError),
        ((1.5, 0), TypeError),
        ((True, 1), TypeError),
        ({"left": 1}, TypeError),
    ],
)
def test_bad_windows_raise(window, error):
    for make in (
        lambda: ScaledDotProduct(window=window),
        lambda: MultiHead(num_heads=2, key_dim=4, window=window),
        lambda: BahdanauAttention(units=4, window=window),
        lambda: LuongAttention(window=window),
    ):
        with pytest.raises(error, match=r"`window` must be None, a positive int or a \(left"):
            make()
    with pytest.raises(error, match="Received: window="):
        masks.sliding_window_mask(4, 4, window)


def test_a_mask_needs_a_window_and_alignment_layers_take_none():
    with pytest.raises(ValueError, match="`window`"):
        masks.sliding_window_mask(4, 4, None)
    with pytest.raises(TypeError, match="window"):  # they choose where to look themselves
        LocationSensitiveAttention(units=4, window=3)
    with pytest.raises(TypeError, match="window"):
        LuongLocalPAttention(window=3)
    assert LuongLocalPAttention().get_config()["window"] is None  # the content base's key


# ---------------------------------------------------------- mixed precision
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("implementation", ["exact", "chunked"])
def test_half_precision_gives_no_nan(policy, implementation, rng):
    reference = build_randomized("multi_head_gqa", np.random.default_rng(5), window=3)
    layer = build_randomized(
        "multi_head_gqa",
        np.random.default_rng(5),
        window=3,
        dtype=policy,
        implementation=implementation,
        block_size=4,
    )
    q, k, v = _inputs(rng, 12, 7)  # queries 0..4 see no key
    query_mask, value_mask = _padding(rng, 12, 7)
    kwargs = dict(use_causal_mask=True, query_mask=query_mask, value_mask=value_mask)
    context = layer(q, v, key=k, **kwargs)
    assert keras.backend.standardize_dtype(context.dtype) == policy.split("_")[1]
    context = to_numpy(context).astype("float32")
    expected = to_numpy(reference(q, v, key=k, **kwargs))
    tolerance = 5e-2 if "bfloat" in policy else 1e-2
    np.testing.assert_allclose(context, expected, atol=tolerance * max(1.0, np.abs(expected).max()))
    # Logits in the hundreds, where a -1e9 fill or scores - 65504 would overflow.
    loud = to_numpy(layer(q * 30.0, v, key=k * 30.0, **kwargs)).astype("float32")
    assert np.isfinite(loud).all()
    no_key = np.broadcast_to(loud[:1, :1], loud[:, :5].shape)  # the output bias only
    np.testing.assert_array_equal(loud[:, :5], no_key)
