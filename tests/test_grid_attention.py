"""Attention over grids: a query over a `(B, *grid, d)` memory, and `MultiHead(attention_axes=...)`.

The grid reference normalizes over the grid axes themselves (no flattening);
the scores come from `layer_cases`, which loops over every (query, key) pair.
`MultiHead(attention_axes=...)` is checked against `keras.layers.MultiHeadAttention`
on the same weights. The grid cases of `layer_cases.REGISTRY` (`*_grid`, a
`(B, H, W, d)` memory with a `(B, H, W)` mask, and `multi_head_axes_2d`) pass
every check of `test_layer_contract.py` (step over a grid, shapes and `.keras`
files with unknown grid sizes, configs, dtypes, mask invariance, fresh weights).
"""

import keras
import numpy as np
import pytest
from backend_utils import to_numpy
from layer_cases import CASES
from layer_cases import DK
from layer_cases import DQ
from layer_cases import DV
from layer_cases import bahdanau_logits
from layer_cases import build_randomized
from layer_cases import luong_logits
from layer_cases import scaled_dot_logits

import keras_attention
from keras_attention import memory_efficient

GRID = (3, 4)
GRID_LAYERS = {
    "bahdanau": bahdanau_logits,
    "luong_dot": luong_logits,
    "luong_concat": luong_logits,
    "scaled_dot": scaled_dot_logits,
}


def _grid_inputs(rng, batch=2, tq=3):
    q = rng.normal(size=(batch, tq, DQ)).astype("float32")
    k = rng.normal(size=(batch, *GRID, DK)).astype("float32")
    v = rng.normal(size=(batch, *GRID, DV)).astype("float32")
    mask = rng.random((batch, *GRID)) > 0.4  # example 0: some cells masked
    mask[0, 0, 0] = True
    mask[1] = False  # example 1: nothing to attend to
    return q, k, v, mask


def _grid_reference(name, layer, q, k, v, mask):
    """`(context (B, Tq, dv), weights (B, Tq, *grid))`, normalized over the grid axes."""
    batch, tq = q.shape[:2]
    logits = GRID_LAYERS[name](layer, q, k.reshape(batch, -1, k.shape[-1])).reshape(
        batch, tq, *GRID
    )
    weights = np.zeros(logits.shape)
    for b in range(batch):
        for i in range(tq):
            keep = np.broadcast_to(mask[b], GRID) if mask.ndim == 3 else mask[b, i]
            if keep.any():
                scores = np.where(keep, logits[b, i], -np.inf)
                weights[b, i] = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    return np.einsum("bqhw,bhwd->bqd", weights, v), weights


@pytest.mark.parametrize("name", sorted(GRID_LAYERS))
def test_grid_memory_matches_numpy_and_masked_cells_never_matter(name, rng):
    layer = build_randomized(name, rng)
    q, k, v, mask = _grid_inputs(rng)
    want_context, want_weights = _grid_reference(name, layer, q, k, v, mask)
    poisoned = v.copy()
    poisoned[~mask] = np.nan  # masked cells may hold anything
    context, weights = layer(q, poisoned, key=k, value_mask=mask, return_attention_scores=True)
    assert tuple(weights.shape) == (2, 3, *GRID)
    np.testing.assert_allclose(to_numpy(weights), want_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), want_context, atol=1e-5)
    assert np.all(to_numpy(weights)[0][:, ~mask[0]] == 0)
    assert np.all(to_numpy(weights)[1] == 0) and np.all(to_numpy(context)[1] == 0)

    explicit = rng.random((2, 3, *GRID)) > 0.5  # (B, Tq, *grid)
    explicit[..., 0, 0] = True
    _, weights = layer(q, v, key=k, attention_mask=explicit, return_attention_scores=True)
    _, want = _grid_reference(name, layer, q, k, v, explicit)
    np.testing.assert_allclose(to_numpy(weights), want, atol=1e-5)


@pytest.mark.parametrize("name", ["bahdanau", "scaled_dot"])
def test_every_path_agrees_on_a_grid(name, rng, monkeypatch):
    layer = build_randomized(name, rng)
    q, k, v, mask = _grid_inputs(rng)
    want, _ = _grid_reference(name, layer, q, k, v, mask)
    for implementation in ("exact", "chunked"):
        layer.implementation, layer.block_size = implementation, 4
        got = layer(q, v, key=k, value_mask=mask)
        np.testing.assert_allclose(to_numpy(got), want, atol=1e-5, err_msg=implementation)
    # The fused kernel (PyTorch) takes no value mask, and head sizes of 8.
    fused = []
    original = memory_efficient.fused_dot_product_attention
    monkeypatch.setattr(
        memory_efficient,
        "fused_dot_product_attention",
        lambda *args, **kwargs: fused.append(1) or original(*args, **kwargs),
    )
    layer = keras_attention.ScaledDotProduct(implementation="auto")
    q8 = rng.normal(size=(2, 3, 8)).astype("float32")
    v8 = rng.normal(size=(2, *GRID, 8)).astype("float32")
    got = layer(q8, v8)
    want, _ = _grid_reference("scaled_dot", layer, q8, v8, v8, np.ones((2, *GRID), bool))
    np.testing.assert_allclose(to_numpy(got), want, atol=1e-5)
    assert bool(fused) == (keras.backend.backend() == "torch")


def test_fresh_layers_attend_over_a_grid(rng):
    """Default initializers (not the randomized weights): a real, finite distribution."""
    q, _, v, mask = _grid_inputs(rng)
    q = q[..., :DV]
    for layer in (
        keras_attention.BahdanauAttention(8),
        keras_attention.LuongAttention("concat", units=8),
        keras_attention.ScaledDotProduct(),
    ):
        _, weights = layer(q, v, value_mask=mask, return_attention_scores=True)
        weights = to_numpy(weights)
        np.testing.assert_allclose(weights[0].sum((-2, -1)), 1.0, rtol=1e-5)
        assert weights[0].std(axis=(-2, -1)).min() > 1e-4  # not uniform


BAD_GRID_CALLS = [  # (layer, call arguments, error, message)
    ("bahdanau", dict(value_mask=np.ones((2, 12), bool)), ValueError, r"`value_mask`.*\(2, 3, 4\)"),
    (
        "scaled_dot",
        dict(attention_mask=np.ones((2, 3, 4, 3), bool)),
        ValueError,
        r"`attention_mask`.*\(2, 3, 3, 4\).*\(2, 3, 4, 3\)",
    ),
    (
        "luong_dot",
        dict(key=np.zeros((2, 4, 3, DK), "float32")),
        ValueError,
        r"`key`.*same grid as `value` \(\(3, 4\)\)",
    ),
    ("luong_dot", dict(key=np.zeros((2, 12, DK), "float32")), ValueError, r"`key`.*same grid"),
    (
        "bahdanau",
        dict(query=np.zeros((2, 3, 4, DQ), "float32")),
        ValueError,
        r"`query`.*rank 2 or 3.*\(2, 3, 4, 6\)",
    ),
    ("scaled_dot", dict(value=np.zeros((2, 3, 4, DV), "int32")), TypeError, r"`value`.*floating"),
]


@pytest.mark.parametrize("layer,call,error,pattern", BAD_GRID_CALLS)
def test_bad_grid_inputs_name_the_argument(layer, call, error, pattern, rng):
    q, k, v, _ = _grid_inputs(rng)
    arguments = dict(query=q, value=v, key=k[..., :DK] if layer != "luong_dot" else v[..., :DK])
    if layer == "luong_dot":
        arguments["value"] = k
    arguments.update(call)
    with pytest.raises(error, match=pattern) as info:
        CASES[layer](name="grid")(**arguments)
    assert "layer 'grid'" in str(info.value) and "Received" in str(info.value)


def test_layers_of_one_axis_refuse_a_grid(rng):
    q, _, v, _ = _grid_inputs(rng)
    for layer in (
        keras_attention.LuongLocalPAttention(window_width=2),
        keras_attention.LocationSensitiveAttention(4),
    ):
        with pytest.raises(ValueError, match=r"`value`.*rank 3 \(batch, time, features\)\. "):
            layer(q, v)


# ----------------------------------------------------------------------------
# MultiHead(attention_axes=...) against keras.layers.MultiHeadAttention
# ----------------------------------------------------------------------------
def _twins(attention_axes, query, value):
    """Ours and Keras's, built on the same inputs, with Keras's weights copied to ours."""
    # Keras gets the axes as non-negative numbers (Keras 3.8 on PyTorch fails on -3); ours
    # gets them as given.
    rank = len(query.shape)
    theirs = keras.layers.MultiHeadAttention(
        2, 3, attention_axes=tuple(axis % rank for axis in attention_axes)
    )
    ours = keras_attention.MultiHead(2, 3, attention_axes=attention_axes)
    theirs(query, value)
    ours(query, value)
    for dense, einsum in (
        (ours.query_dense, theirs._query_dense),
        (ours.key_dense, theirs._key_dense),
        (ours.value_dense, theirs._value_dense),
        (ours.output_dense, theirs._output_dense),
    ):
        kernel, bias = einsum.get_weights()
        dense.set_weights([kernel.reshape(dense.kernel.shape), bias.reshape(dense.bias.shape)])
    return ours, theirs


@pytest.mark.parametrize(
    "attention_axes,query_shape,value_shape,masks",
    [
        ((1, 2), (2, 3, 4, 6), (2, 2, 5, 6), True),  # an image's rows and columns
        ((-3,), (2, 3, 4, 6), (2, 5, 4, 6), False),  # axis 1 only; axis 2 acts as a batch axis
        ((3, 1), (2, 2, 3, 4, 6), (2, 3, 3, 5, 6), True),  # rank 5, attended axes reordered
    ],
)
def test_attention_axes_match_keras_multi_head_attention(
    attention_axes, query_shape, value_shape, masks, rng
):
    query = rng.normal(size=query_shape).astype("float32")
    value = rng.normal(size=value_shape).astype("float32")
    ours, theirs = _twins(attention_axes, query, value)
    want, want_weights = theirs(query, value, return_attention_scores=True)
    got, got_weights = ours(query, value, return_attention_scores=True)
    assert tuple(got_weights.shape) == tuple(want_weights.shape)
    np.testing.assert_allclose(to_numpy(got_weights), to_numpy(want_weights), atol=1e-5)
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-5)
    symbolic = ours.compute_output_spec(
        keras.KerasTensor(query_shape), keras.KerasTensor(value_shape), return_attention_scores=True
    )
    assert [tuple(t.shape) for t in symbolic] == [query_shape, tuple(want_weights.shape)]
    if not masks:  # (kept to two cases: each eager call compiles anew on JAX)
        return

    # Masks: Keras's attention_mask (the weights' shape without H), and with it
    # our value_mask (B, *value axes), which means that mask broadcast over queries.
    rank = len(query_shape)
    axes = tuple(a % rank for a in attention_axes)
    other = tuple(a for a in range(1, rank - 1) if a not in axes)
    heads = 1 + len(other)
    attended = (0,) * len(axes)
    mask = rng.random(np.delete(want_weights.shape, heads)) > 0.3  # (B, *other, *q att, *v att)
    keras_layout = rng.random((2, *(value_shape[a] for a in (*other, *axes)))) > 0.3
    mask[(..., *attended)] = keras_layout[(..., *attended)] = True  # no query left without keys
    value_mask = np.transpose(keras_layout, np.argsort((0, *other, *axes)))  # (B, *value axes)
    both = mask & np.expand_dims(keras_layout, tuple(range(heads, heads + len(axes))))
    want = theirs(query, value, attention_mask=both, return_attention_scores=True)
    got = ours(
        query, value, attention_mask=mask, value_mask=value_mask, return_attention_scores=True
    )
    for ours_part, keras_part in zip(got, want):
        np.testing.assert_allclose(to_numpy(ours_part), to_numpy(keras_part), atol=1e-5)


def test_multi_head_query_mask_and_causal_over_axes(rng):
    """A masked query gets a zero context; causal runs in row-major order over the axes."""
    layer = keras_attention.MultiHead(2, 3)  # None: every axis but batch and features, (1, 2)
    x = rng.normal(size=(2, 2, 3, 6)).astype("float32")
    query_mask = np.ones((2, 2, 3), bool)
    query_mask[0, 1, 2] = False
    context, weights = layer(
        x, x, query_mask=query_mask, use_causal_mask=True, return_attention_scores=True
    )
    context, weights = to_numpy(context), to_numpy(weights).reshape(2, 2, 6, 6)
    assert np.all(context[0, 1, 2] == 0) and np.all(weights[0, :, 5] == 0)
    assert np.all(np.triu(weights[1], 1) == 0)  # (B, H, 6, 6): nothing after the query
    np.testing.assert_allclose(weights[1].sum(-1), 1.0, rtol=1e-5)


RANK_4 = ((2, 3, 4, 6), (2, 3, 4, 6))
BAD_AXES = [  # (attention_axes and other arguments, (query, value) shapes, error, message)
    (dict(attention_axes=(1, 1)), None, ValueError, r"`attention_axes`.*distinct.*\(1, 1\)"),
    (dict(attention_axes="1"), None, TypeError, r"`attention_axes`.*'1'"),
    (dict(attention_axes=()), None, ValueError, r"`attention_axes`"),
    (
        dict(attention_axes=(1, 3)),
        RANK_4,
        ValueError,
        r"`attention_axes` expected distinct axes in \[1, 2\].*attention_axes=\(1, 3\)",
    ),
    (dict(attention_axes=2), ((2, 3, 6), (2, 3, 6)), ValueError, r"`attention_axes`.*\[1, 1\]"),
    (
        dict(),
        ((2, 3, 6), (2, 3, 4, 6)),
        ValueError,
        r"`value` expected rank 3, the rank of `query`",
    ),
    (
        dict(attention_axes=(2,)),
        ((2, 3, 4, 6), (2, 5, 4, 6)),
        ValueError,
        r"`value` expected the sizes of `query` on the axes that do not attend \(axes 0, 1\)",
    ),
    (dict(rotary=True), RANK_4, ValueError, r"one axis with rotary=True"),
]


@pytest.mark.parametrize("arguments,shapes,error,pattern", BAD_AXES)
def test_bad_attention_axes(arguments, shapes, error, pattern):
    with pytest.raises(error, match=pattern):
        layer = keras_attention.MultiHead(2, 4, **arguments)
        layer(*(np.zeros(shape, "float32") for shape in shapes))
