"""Bad and awkward inputs: the one place that documents what each one does.

Every case either gives the right numbers (checked against NumPy, `reference.py`)
or raises a `ValueError`/`TypeError` whose message names the layer, the
argument, what was expected and what was received. Only the public API is used.

Decisions recorded here:

- Masked-out keys and values never matter, even when they hold NaN or Inf: a
  weight of 0 must not meet a NaN (`0 * NaN = NaN`), forward or backward.
- float16 dot products that only fit once scaled (or only in float32) give
  finite weights: the score is computed where it cannot overflow.
- Integer (or boolean) queries, keys and values are a TypeError: they are
  almost always token ids fed without an embedding, and a silent cast would
  hide that (Keras's own `Attention` gives a raw backend error on TensorFlow
  and PyTorch, float results on JAX).
- Batch sizes of query, key and value must agree (no silent broadcast of 1).
- `layer(x)` is self-attention with `x`'s Keras mask on both sides.
- An empty key sequence gives a zero context (a query with nothing to attend
  to), an empty query sequence an empty output, on every path.
- NumPy integers are integers, booleans are not.
- `keras_attention.saving.load_model` loads `.keras` files with clear errors
  for a truncated file and for a class whose package was not imported.

Found the same way later (issue 18), tested in their own modules:

- A fresh layer's projections start apart, seeded or not, and any kernel
  initializer (orthogonal) builds the additive score vector
  (`test_initialization.py`).
- Shapes without data (`compute_output_shape`, symbolic calls, `Sequential`),
  padded decoder steps skipped by `AttentionRNN` and by `keras.layers.RNN`
  over an `AttentionRNNCell` on every backend, float64 layers returning
  float64 (`test_keras_conventions.py`).
- NaN weights: plots keep a finite color scale and mark the NaN cells
  (`test_plotting.py`); the HTML page writes strict JSON with `null` cells
  and draws them as marked empty cells (`test_plotting_html.py`).
"""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import reference
from backend_utils import to_numpy
from backend_utils import value_and_grad
from hypothesis import Phase
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from layer_cases import CASES
from layer_cases import DQ
from layer_cases import DV
from layer_cases import build_randomized
from layer_cases import make_inputs
from layer_cases import reference_call

import keras_attention
from keras_attention import AttentionRNN
from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import LuongAttention
from keras_attention import MultiHead
from keras_attention import ScaledDotProduct
from keras_attention.memory_efficient import chunked_additive_attention
from keras_attention.memory_efficient import chunked_dot_product_attention

BACKEND = keras.backend.backend()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
Q = np.zeros((2, 3, 6), "float32")
V = np.zeros((2, 4, 6), "float32")
# Few small examples, no shrinking: a failure is reported as generated.
FEW = settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
)


def _assert_finite(x):
    bad = ~np.isfinite(np.asarray(x, "float64"))
    assert not bad.any(), f"{bad.sum()} of {bad.size} entries are not finite"


def _message(info, layer_name, argument, *received):
    """The error's text, checked to name the layer, the argument and what was received."""
    message = str(info.value)
    assert layer_name in message, message
    assert f"`{argument}`" in message, message
    assert "Received" in message, message
    for fragment in received:
        assert fragment in message, message
    return message


# ----------------------------------------------------------------------------
# 1. Non-finite values in masked-out positions never reach unmasked outputs.
# ----------------------------------------------------------------------------
NAN_CASES = [
    "bahdanau",
    "luong_dot",
    "luong_general_scaled",
    "luong_concat",
    "scaled_dot",
    "multi_head_gqa",
]
_LAYERS = {}


def _randomized(name, implementation):
    """One randomized layer per case and path, shared by a property's examples."""
    key = (name, implementation)
    if key not in _LAYERS:
        kwargs = {"implementation": implementation}
        if implementation == "chunked":
            kwargs["block_size"] = 2  # several tiles, a ragged last one
        _LAYERS[key] = build_randomized(name, np.random.default_rng(7), **kwargs)
    return _LAYERS[key]


def _poison(x, masked, value):
    """`x` with `value` in the masked time steps `masked` (B, T)."""
    x = x.copy()
    x[masked] = value
    return x


# Every layer on the exact path; one case per blockwise score on the chunked one.
BLOCKWISE_CASES = ("bahdanau", "luong_general_scaled", "scaled_dot", "multi_head_gqa")
NAN_PATHS = [(name, "exact") for name in NAN_CASES] + [
    (name, "chunked") for name in BLOCKWISE_CASES
]


@FEW
@given(
    lengths=st.lists(st.integers(1, 4), min_size=2, max_size=2),
    poison=st.sampled_from([np.nan, np.inf, -np.inf]),
    target=st.sampled_from(["value", "key", "both"]),
    causal=st.booleans(),
)
@pytest.mark.parametrize("name,implementation", NAN_PATHS)
def test_non_finite_masked_memory_never_reaches_the_output(
    name, implementation, lengths, poison, target, causal
):
    """NaN/Inf in value-masked keys or values, with or without a causal mask.

    (A causal mask alone cannot protect earlier queries from a non-finite
    future value: that value is visible to later queries, so it cannot be
    zeroed, and `0 * NaN` in `weights @ value` is NaN. Only positions masked
    for every query, by `value_mask`, are covered.)
    """
    layer = _randomized(name, implementation)
    q, k, v = make_inputs(np.random.default_rng(len(lengths)), tv=5)
    value_mask = np.arange(5)[None] < np.array(lengths)[:, None]  # (B, Tv)
    masked = ~value_mask
    k_bad = _poison(k, masked, poison) if target in ("key", "both") else k
    v_bad = _poison(v, masked, poison) if target in ("value", "both") else v
    context = to_numpy(layer(q, v_bad, key=k_bad, value_mask=value_mask, use_causal_mask=causal))
    mask = np.broadcast_to(value_mask[:, None], (2, 3, 5))
    if causal:
        mask = mask & reference.causal(3, 5)
    expected, _ = reference_call(layer, q, _poison(k, masked, 0.0), _poison(v, masked, 0.0), mask)
    _assert_finite(context)
    np.testing.assert_allclose(context, expected, atol=1e-4)


@pytest.mark.parametrize("name,implementation", NAN_PATHS)
def test_query_gradients_stay_finite_with_non_finite_masked_memory(name, implementation):
    layer = _randomized(name, implementation)
    q, k, v = make_inputs(np.random.default_rng(3), tv=5)
    value_mask = np.array([[True] * 3 + [False] * 2, [True] + [False] * 4])
    k_bad, v_bad = _poison(k, ~value_mask, np.nan), _poison(v, ~value_mask, np.inf)
    k_zero, v_zero = _poison(k, ~value_mask, 0.0), _poison(v, ~value_mask, 0.0)

    def loss(query):
        return keras.ops.sum(layer(query, v_bad, key=k_bad, value_mask=value_mask))

    def clean_loss(query):
        return keras.ops.sum(layer(query, v_zero, key=k_zero, value_mask=value_mask))

    _, (grad,) = value_and_grad(loss, q)
    _, (clean_grad,) = value_and_grad(clean_loss, q)
    _assert_finite(grad)
    np.testing.assert_allclose(grad, clean_grad, atol=1e-4)


@pytest.mark.parametrize("kind", ["dot", "additive"])
def test_public_chunked_functions_ignore_non_finite_masked_positions(kind, rng):
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    k = rng.normal(size=(2, 5, 4)).astype("float32")
    v = rng.normal(size=(2, 5, 3)).astype("float32")
    w = rng.normal(size=(4,)).astype("float32")
    value_mask = np.arange(5)[None] < np.array([[2], [4]])

    def run(key, value):
        if kind == "dot":
            out = chunked_dot_product_attention(q, key, value, value_mask=value_mask, block_size=2)
        else:
            out = chunked_additive_attention(q, key, value, w, value_mask=value_mask, block_size=2)
        return to_numpy(out)

    clean = run(_poison(k, ~value_mask, 0.0), _poison(v, ~value_mask, 0.0))
    poisoned = run(_poison(k, ~value_mask, np.nan), _poison(v, ~value_mask, -np.inf))
    _assert_finite(poisoned)
    np.testing.assert_allclose(poisoned, clean, atol=1e-5)


RNN_ATTENTIONS = {
    "bahdanau": lambda: BahdanauAttention(8),
    "luong_general": lambda: LuongAttention("general"),
    "scaled_dot": lambda: ScaledDotProduct(),
    "multi_head": lambda: MultiHead(2, 4),
}


@pytest.mark.parametrize("name", sorted(RNN_ATTENTIONS))
def test_attention_rnn_cell_ignores_non_finite_masked_memory(name, rng):
    cell = AttentionRNNCell(
        keras.layers.GRUCell(8), RNN_ATTENTIONS[name](), return_attention_weights=True
    )
    memory = rng.normal(size=(2, 6, 8)).astype("float32")
    mask = np.ones((2, 6), bool)
    mask[1, 3:] = False
    inputs = rng.normal(size=(2, 4, 3)).astype("float32")
    rnn = keras.layers.RNN(cell, return_sequences=True)
    clean = to_numpy(rnn(inputs, initial_state=cell.initial_state(memory, value_mask=mask)))
    poisoned_memory = _poison(memory, ~mask, np.nan)
    poisoned = to_numpy(
        rnn(inputs, initial_state=cell.initial_state(poisoned_memory, value_mask=mask))
    )
    _assert_finite(poisoned)
    np.testing.assert_allclose(poisoned, clean, atol=1e-5)


# ----------------------------------------------------------------------------
# 2. float16: q·k of 65,536 (over the float16 maximum 65,504).
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("implementation", ["exact", "chunked"])
@pytest.mark.parametrize("dtype", ["float16", "mixed_float16"])
@pytest.mark.parametrize("name", ["scaled_dot", "luong_dot"])
def test_float16_large_dot_products_give_finite_weights(name, dtype, implementation, rng):
    q = np.full((2, 3, 64), 32.0)
    k = np.full((2, 4, 64), 32.0)
    k[:, 2:] = 31.0  # keys 0 and 1 win by 256 (scaled) or 2,048 (unscaled)
    v = rng.normal(size=(2, 4, 5))
    layer = CASES[name](dtype=dtype, implementation=implementation)
    scale = 1 / 8 if name == "scaled_dot" else 1.0
    ref_context, ref_weights = reference.attend(reference.dot_scores(q, k) * scale, v)
    args = (q.astype("float32"), v.astype("float32"))
    if implementation == "exact":
        context, weights = layer(*args, key=k.astype("float32"), return_attention_scores=True)
        weights = to_numpy(weights).astype("float64")
        _assert_finite(weights)
        np.testing.assert_allclose(weights, ref_weights, atol=1e-2)
    else:
        context = layer(*args, key=k.astype("float32"))
    context = to_numpy(context).astype("float64")
    _assert_finite(context)
    np.testing.assert_allclose(context, ref_context, atol=2e-2)


# ----------------------------------------------------------------------------
# 3. Integer and boolean inputs are a TypeError.
# ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name,argument,dtype",
    [
        (name, argument, dtype)
        for name in ("bahdanau", "multi_head")
        for argument, dtype in (
            ("query", "int32"),
            ("value", "int32"),
            ("key", "int32"),
            ("query", "int64"),
            ("value", "bool"),
        )
    ]
    + [("luong_dot", "query", "int32"), ("scaled_dot", "value", "int32")],
)
def test_non_float_inputs_raise_a_type_error(name, argument, dtype, rng):
    q, k, v = make_inputs(rng)
    tensors = {"query": q, "key": k, "value": np.concatenate([v, v[..., :1]], -1)}
    tensors[argument] = (tensors[argument] * 3).astype(dtype)
    layer = CASES[name](name="att")
    with pytest.raises(TypeError) as info:
        layer(tensors["query"], tensors["value"], key=tensors["key"])
    # JAX without x64 receives int64 as int32.
    received = keras.ops.convert_to_tensor(tensors[argument]).dtype
    _message(info, type(layer).__name__, argument, keras.backend.standardize_dtype(received))


def test_integer_symbolic_inputs_raise_a_type_error():
    layer = ScaledDotProduct(name="att")
    with pytest.raises(TypeError) as info:
        layer(keras.Input((3, 6), dtype="int32"), keras.Input((4, 6)))
    _message(info, "ScaledDotProduct", "query", "int32")


def test_float64_inputs_are_cast_to_the_compute_dtype(rng):
    layer = build_randomized("bahdanau", rng)
    q, k, v = (x.astype("float64") for x in make_inputs(rng))
    context = layer(q, v, key=k)
    assert keras.backend.standardize_dtype(context.dtype) == "float32"
    expected, _ = reference_call(layer, q, k, v, None)
    np.testing.assert_allclose(to_numpy(context), expected, atol=1e-5)


# ----------------------------------------------------------------------------
# 4. Batch sizes must agree.
# ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "q_shape,v_shape,k_shape,argument,received",
    [
        ((1, 3, 6), (3, 4, 6), None, "value", "(3, 4, 6)"),
        ((3, 3, 6), (1, 4, 6), None, "value", "(1, 4, 6)"),
        ((2, 3, 6), (3, 4, 6), None, "value", "(3, 4, 6)"),
        ((1, 6), (3, 4, 6), None, "value", "(3, 4, 6)"),  # one decoding step
        ((3, 3, 6), (3, 4, 6), (2, 4, 6), "key", "(2, 4, 6)"),
        ((3, 3, 6), (3, 4, 6), (1, 4, 6), "key", "(1, 4, 6)"),
    ],
)
@pytest.mark.parametrize("name", ["bahdanau", "multi_head"])
def test_batch_size_mismatch_is_a_value_error(name, q_shape, v_shape, k_shape, argument, received):
    layer = CASES[name](name="att")
    key = None if k_shape is None else np.zeros(k_shape, "float32")
    with pytest.raises(ValueError) as info:
        layer(np.zeros(q_shape, "float32"), np.zeros(v_shape, "float32"), key=key)
    assert "batch" in _message(info, type(layer).__name__, argument, received).lower()


# ----------------------------------------------------------------------------
# 5. Self-attention `layer(x)` honours the Keras mask of `x`.
# ----------------------------------------------------------------------------
IDS = np.array([[3, 5, 2, 0, 0], [4, 1, 7, 6, 0]], "int32")
SELF_CASES = ["bahdanau", "luong_dot", "scaled_dot", "multi_head"]


def _key_padding(weights):
    """Boolean mask of `weights` entries that fall on padded keys of `IDS`."""
    padded = (IDS == 0).reshape(IDS.shape[0], *(1,) * (weights.ndim - 2), IDS.shape[1])
    return np.broadcast_to(padded, weights.shape)


@pytest.mark.parametrize("name", SELF_CASES)
def test_self_attention_in_a_functional_model_honours_the_embedding_mask(name):
    ids = keras.Input((5,), dtype="int32")
    x = keras.layers.Embedding(10, 6, mask_zero=True)(ids)
    layer = CASES[name]()
    self_context, self_weights = layer(x, return_attention_scores=True)
    cross_context, cross_weights = layer(x, x, return_attention_scores=True)
    model = keras.Model(ids, [self_context, self_weights, cross_context, cross_weights])
    self_context, self_weights, cross_context, cross_weights = map(to_numpy, model(IDS))
    np.testing.assert_array_equal(self_weights[_key_padding(self_weights)], 0.0)
    np.testing.assert_allclose(self_weights, cross_weights, atol=1e-6)
    np.testing.assert_allclose(self_context, cross_context, atol=1e-6)


@pytest.mark.parametrize("name", SELF_CASES)
def test_self_attention_in_a_sequential_model_honours_the_embedding_mask(name):
    layer = CASES[name]()
    embedding = keras.layers.Embedding(10, 6, mask_zero=True)
    model = keras.Sequential([keras.Input((5,), dtype="int32"), embedding, layer])
    output = to_numpy(model(IDS))
    x = embedding(IDS)
    keep = IDS != 0
    expected = to_numpy(layer(x, x, query_mask=keep, value_mask=keep))
    unmasked = to_numpy(layer(x, x, query_mask=np.ones_like(keep), value_mask=np.ones_like(keep)))
    assert not np.allclose(unmasked, expected, atol=1e-3)  # the padding matters here
    np.testing.assert_allclose(output, expected, atol=1e-6)


# ----------------------------------------------------------------------------
# 6. Empty sequences: zero context for no keys, an empty output for no queries.
# ----------------------------------------------------------------------------
def _output_dim(layer):
    return (layer.output_dim or DQ) if isinstance(layer, MultiHead) else DV


EMPTY = [
    (name, implementation, tq, tv)
    for name in BLOCKWISE_CASES
    for implementation in ("exact", "chunked")
    for tq, tv in ((3, 0), (0, 4))
] + [("scaled_dot", "exact", 0, 0), ("multi_head_gqa", "chunked", 0, 0)]


@pytest.mark.parametrize("name,implementation,tq,tv", EMPTY)
def test_empty_sequences(name, implementation, tq, tv, rng):
    layer = build_randomized(name, rng, implementation=implementation)
    q, k, v = make_inputs(rng, tq=tq, tv=tv)
    context = to_numpy(layer(q, v, key=k))
    assert context.shape == (2, tq, _output_dim(layer))
    expected = np.zeros(context.shape)
    if isinstance(layer, MultiHead):  # the zero context goes through the output projection
        expected = expected + to_numpy(layer.output_dense.bias)
    np.testing.assert_allclose(context, expected, atol=1e-6)
    if implementation == "exact" and tq:
        _, weights = layer(q, v, key=k, return_attention_scores=True)
        heads = (layer.num_heads,) if isinstance(layer, MultiHead) else ()
        assert tuple(weights.shape) == (2, *heads, tq, tv)


@pytest.mark.parametrize("tq,tv", [(3, 0), (0, 4)])
def test_public_chunked_function_with_empty_sequences(tq, tv, rng):
    q, k, v = make_inputs(rng, tq=tq, tv=tv)
    context = to_numpy(chunked_dot_product_attention(q, k, v, block_size=2))
    np.testing.assert_array_equal(context, np.zeros((2, tq, DV)))


# ----------------------------------------------------------------------------
# 7. Constructor argument types: NumPy integers are integers, booleans are not.
# ----------------------------------------------------------------------------
def test_attention_rnn_cell_rejects_a_non_attention_layer_at_construction():
    with pytest.raises(TypeError) as info:
        AttentionRNNCell(keras.layers.GRUCell(4), keras.layers.Dense(4))
    _message(info, "AttentionRNNCell", "attention", "Dense")


def test_attention_rnn_cell_rejects_a_layer_that_is_not_a_cell():
    with pytest.raises(TypeError) as info:
        AttentionRNNCell(keras.layers.Dense(4), BahdanauAttention(4))
    _message(info, "AttentionRNNCell", "cell", "Dense")


def test_attention_rnn_rejects_a_plain_cell():
    with pytest.raises(TypeError, match=r"AttentionRNN: `cell`.*GRUCell"):
        AttentionRNN(keras.layers.GRUCell(4))


def _two_attentions():
    return AttentionRNNCell(keras.layers.GRUCell(4), [BahdanauAttention(4), BahdanauAttention(4)])


def test_attention_rnn_names_its_memory_when_the_memories_do_not_match_the_attentions(rng):
    memory = rng.normal(size=(2, 7, 6)).astype("float32")
    targets = rng.normal(size=(2, 3, 5)).astype("float32")
    with pytest.raises(ValueError) as info:
        AttentionRNN(_two_attentions())(targets, [memory] * 3)
    message = _message(info, "AttentionRNN", "memory", "3 entries")
    assert "one entry per attention (2)" in message and "`value`" not in message
    with pytest.raises(ValueError) as info:  # the cell's own method keeps its own names
        _two_attentions().initial_state([memory] * 3)
    _message(info, "AttentionRNNCell", "value", "3 entries")


def test_attention_rnn_names_its_memory_mask(rng):
    memory = rng.normal(size=(2, 7, 6)).astype("float32")
    targets = rng.normal(size=(2, 3, 5)).astype("float32")
    mask = np.ones((2, 7), bool)
    with pytest.raises(ValueError) as info:
        AttentionRNN(_two_attentions())(targets, [memory] * 2, memory_mask=[mask] * 3)
    message = _message(info, "AttentionRNN", "memory_mask", "3 entries")
    assert "value_mask" not in message
    with pytest.raises(ValueError) as info:  # a mask of another length than its memory
        AttentionRNN(_two_attentions())(targets, [memory] * 2, memory_mask=[mask, mask[:, :6]])
    message = _message(info, "AttentionRNN", "memory_mask[1]", "(2, 7)", "(2, 6)")
    cell = AttentionRNNCell(keras.layers.GRUCell(4), BahdanauAttention(4))
    with pytest.raises(ValueError) as info:  # one memory: a mask (B, Tv, 1)
        AttentionRNN(cell)(targets, memory, memory_mask=mask[..., None])
    _message(info, "AttentionRNN", "memory_mask", "(2, 7)", "(2, 7, 1)")
    with pytest.raises(ValueError) as info:
        cell.initial_state(memory, value_mask=mask[:, :6])
    _message(info, "AttentionRNNCell", "value_mask", "(2, 7)", "(2, 6)")


NUMPY_SIZES = [
    ("units", lambda n: BahdanauAttention(n)),
    ("units", lambda n: LuongAttention("concat", units=n)),
    ("num_heads", lambda n: MultiHead(n, 3)),
    ("key_dim", lambda n: MultiHead(2, n)),
    ("value_dim", lambda n: MultiHead(2, 3, value_dim=n)),
    ("output_dim", lambda n: MultiHead(2, 3, output_dim=n)),
    ("num_key_value_heads", lambda n: MultiHead(4, 3, num_key_value_heads=n)),
    ("block_size", lambda n: ScaledDotProduct(block_size=n)),
    ("block_size", lambda n: BahdanauAttention(4, implementation="chunked", block_size=n)),
    (
        "attention_layer_size",
        lambda n: AttentionRNNCell(
            keras.layers.GRUCell(4), BahdanauAttention(4), attention_layer_size=n
        ),
    ),
]


SIZE_IDS = [f"{argument}-{i}" for i, (argument, _) in enumerate(NUMPY_SIZES)]


@pytest.mark.parametrize("argument,make", NUMPY_SIZES, ids=SIZE_IDS)
def test_numpy_integers_are_accepted_and_stored_as_int(argument, make):
    layer = make(np.int64(4))
    stored = getattr(layer, argument)
    assert type(stored) is int, type(stored)
    assert stored == 4
    json.dumps(layer.get_config())  # a NumPy scalar would not serialize


@pytest.mark.parametrize("argument,make", NUMPY_SIZES, ids=SIZE_IDS)
def test_booleans_are_not_sizes(argument, make):
    with pytest.raises(ValueError, match=rf"`{argument}`.*Received: {argument}=True"):
        make(True)


@pytest.mark.parametrize(
    "argument,make",
    [
        ("dropout", lambda x: ScaledDotProduct(dropout=x)),
        ("dropout", lambda x: MultiHead(2, 3, dropout=x)),
        ("scale", lambda x: ScaledDotProduct(scale=x)),
    ],
)
def test_numpy_floats_are_accepted_and_stored_as_float(argument, make):
    layer = make(np.float32(0.25))
    assert type(getattr(layer, argument)) is float
    assert getattr(layer, argument) == 0.25
    json.dumps(layer.get_config())


def test_a_numpy_int_sized_layer_runs_and_round_trips(rng):
    layer = MultiHead(np.int64(2), np.int64(3), output_dim=np.int64(4))
    x = rng.normal(size=(2, 3, 5)).astype("float32")
    assert tuple(layer(x, x).shape) == (2, 3, 4)
    clone = MultiHead.from_config(json.loads(json.dumps(layer.get_config())))
    assert clone.get_config() == layer.get_config()


# ----------------------------------------------------------------------------
# 8. Loading `.keras` files: clear errors from `keras_attention.saving.load_model`.
# ----------------------------------------------------------------------------
def _small_model():
    query, value = keras.Input((3, 6), name="query"), keras.Input((4, 6), name="value")
    return keras.Model([query, value], LuongAttention("general")(query, value))


def test_loading_a_truncated_file_names_the_file_and_the_problem(tmp_path):
    path = str(tmp_path / "model.keras")
    _small_model().save(path)
    with open(path, "rb") as f:
        content = f.read()
    with open(path, "wb") as f:
        f.write(content[: len(content) // 2])
    with pytest.raises(ValueError) as info:
        keras_attention.saving.load_model(path)
    message = str(info.value)
    assert path in message and "File not found" not in message, message
    assert any(word in message.lower() for word in ("truncated", "corrupt", "not a valid")), message


def test_loading_a_missing_file_names_the_file(tmp_path):
    path = str(tmp_path / "missing.keras")
    with pytest.raises((FileNotFoundError, ValueError), match=path):
        keras_attention.saving.load_model(path)


PROBE_MODULE = """
import keras


@keras.saving.register_keras_serializable(package="ka_probe")
class Doubler(keras.layers.Layer):
    def call(self, x):
        return 2.0 * x
"""

LOADER = """
import json, sys
import keras
import numpy as np
from keras_attention.saving import load_model

folder = sys.argv[1]
model = load_model(folder + "/attention.keras")
q, v = np.load(folder + "/query.npy"), np.load(folder + "/value.npy")
output = keras.ops.convert_to_numpy(model([q, v]))
same = bool(np.allclose(output, np.load(folder + "/output.npy"), atol=1e-6))
try:
    load_model(folder + "/probe.keras")
    error = None
except Exception as e:
    error = [type(e).__name__, str(e)]
print(json.dumps({"same": same, "error": error}))
"""


def test_loading_in_a_fresh_process_through_the_package_loader(tmp_path, rng):
    """A script that imports only the loader reloads our layers; an unimported package's
    class is named, with its module and a hint, in a short message."""
    (tmp_path / "ka_probe_layers.py").write_text(PROBE_MODULE)
    sys.path.insert(0, str(tmp_path))
    try:
        import ka_probe_layers
    finally:
        sys.path.remove(str(tmp_path))
    probe = keras.Sequential([keras.Input((3,)), ka_probe_layers.Doubler()])
    probe.save(str(tmp_path / "probe.keras"))
    model = _small_model()
    q = rng.normal(size=(2, 3, 6)).astype("float32")
    v = rng.normal(size=(2, 4, 6)).astype("float32")
    model.save(str(tmp_path / "attention.keras"))
    for name, array in (("query", q), ("value", v), ("output", to_numpy(model([q, v])))):
        np.save(str(tmp_path / f"{name}.npy"), array)
    (tmp_path / "loader.py").write_text(textwrap.dedent(LOADER))
    # The repo first, then whatever PYTHONPATH this run had (where keras may be installed).
    pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=pythonpath, KERAS_BACKEND=BACKEND, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, str(tmp_path / "loader.py"), str(tmp_path)],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["same"]
    assert result["error"] is not None, "loading a class of an unimported package must fail"
    kind, message = result["error"]
    assert kind in ("TypeError", "ValueError"), result["error"]
    for fragment in ("Doubler", "ka_probe_layers", "import"):
        assert fragment in message, message
    assert len(message) < 1000, message


# ----------------------------------------------------------------------------
# The long-standing kinds, briefly.
# ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make,argument,received",
    [
        (lambda: BahdanauAttention(-3), "units", "units=-3"),
        (lambda: LuongAttention("cosine"), "score_mode", "'cosine'"),
        (lambda: LuongAttention("concat", units=0), "units", "units=0"),
        (lambda: ScaledDotProduct(probability_fn="relu"), "probability_fn", "'relu'"),
        (lambda: ScaledDotProduct(dropout=1.0), "dropout", "dropout=1.0"),
        (lambda: ScaledDotProduct(dropout=-0.1), "dropout", "dropout=-0.1"),
        (lambda: ScaledDotProduct(implementation="flash"), "implementation", "'flash'"),
        (lambda: ScaledDotProduct(block_size=0), "block_size", "block_size=0"),
        (lambda: MultiHead(2, 0), "key_dim", "key_dim=0"),
        (lambda: MultiHead(2, 3, output_dim=-1), "output_dim", "output_dim=-1"),
        (
            lambda: AttentionRNNCell(
                keras.layers.GRUCell(4), BahdanauAttention(4), attention_layer_size=0
            ),
            "attention_layer_size",
            "attention_layer_size=0",
        ),
    ],
)
def test_bad_constructor_values(make, argument, received):
    with pytest.raises(ValueError) as info:
        make()
    message = str(info.value)
    assert f"`{argument}`" in message and received in message and "Received" in message, message


def test_chunked_with_sparsemax_is_refused_at_construction():
    with pytest.raises(ValueError, match=r"implementation='chunked'.*probability_fn='sparsemax'"):
        ScaledDotProduct(implementation="chunked", probability_fn="sparsemax")


def test_chunked_cannot_return_the_weights():
    with pytest.raises(ValueError, match=r"return_attention_scores=True"):
        ScaledDotProduct(implementation="chunked")(Q, V, return_attention_scores=True)


@pytest.mark.parametrize(
    "args,kwargs,argument,received",
    [
        ((np.zeros((2, 3, 4, 6), "float32"), V), {}, "query", "(2, 3, 4, 6)"),
        ((Q, np.zeros((2, 6), "float32")), {}, "value", "(2, 6)"),
        ((Q, V), {"key": np.zeros((2, 5, 6), "float32")}, "key", "(2, 5, 6)"),
        ((Q, V), {"value_mask": np.ones((2, 4), "float32")}, "value_mask", "float32"),
        ((Q, V), {"value_mask": np.ones((2, 5), bool)}, "value_mask", "(2, 5)"),
        ((Q, V), {"query_mask": np.ones((2, 4), bool)}, "query_mask", "(2, 4)"),
        ((Q, V), {"attention_mask": np.ones((2, 4, 3), bool)}, "attention_mask", "(2, 4, 3)"),
    ],
)
@pytest.mark.parametrize("name", ["luong_concat", "multi_head"])
def test_bad_call_arguments(name, args, kwargs, argument, received):
    layer = CASES[name](name="att")
    with pytest.raises(ValueError) as info:
        layer(*args, **kwargs)
    _message(info, type(layer).__name__, argument, received)
