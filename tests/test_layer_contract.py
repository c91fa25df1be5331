"""The one contract every public layer passes, over every case of `layer_cases.REGISTRY`.

Each check runs on every case on every backend; a check that does not apply to
a case is skipped with the reason the registry gives (`Case.skips`), in one
place. The checks (issue 43; issue 45's options are cases of the registry):

- config: `get_config` / `from_config` gives the same config and attributes;
- keras_file: a model holding the layer, saved to a real `.keras` file and
  loaded in safe mode, gives the same outputs;
- shapes: `compute_output_shape` without data, and symbolic calls (sequences
  and a one-step query), give the eager call's shapes;
- float64: a float64 layer returns float64 and matches NumPy at float64 precision;
- mixed_precision: mixed_float16 and mixed_bfloat16 against float32, same weights;
- fresh_init: a fresh layer's kernels start apart, default or seeded initializer
  (one initializer instance handed to every projection once gave W_q = W_k = W_v);
- mask_invariance: values at masked positions never change the output;
- causal: perturbing the future never moves the past;
- step: one query at a time (`step`, the key/value cache, or the recurrent
  cell) equals the full call, and the full call the NumPy reference.
"""

import copy
import itertools
import os

import keras
import numpy as np
import pytest
from backend_utils import to_numpy
from layer_cases import ALL
from layer_cases import REGISTRY
from layer_cases import build_case
from layer_cases import case_inputs
from layer_cases import skip_reason

IGNORED_ATTRIBUTES = ("name", "trainable", "dtype", "kernel_initializer", "bias_initializer")


def _applies(name, check):
    reason = skip_reason(name, check)
    if reason is not None:
        pytest.skip(f"{check} does not apply to {name}: {reason}")
    return REGISTRY[name]


def _call(case, layer, q, k, v, value_mask=None, **kwargs):
    """The case's outputs as a list: `[context, weights]`, or `[outputs]` (recurrent)."""
    if case.family == "recurrent":
        return [layer(q, v, memory_mask=value_mask, **kwargs)]
    outputs = layer(q, v, key=k, value_mask=value_mask, return_attention_scores=True, **kwargs)
    return list(outputs)


def _backend_float64():
    """What the backend makes of float64 (JAX without x64: float32)."""
    return keras.backend.standardize_dtype(keras.ops.ones((), "float64").dtype)


def _float64_tolerance():
    """float64 precision where the backend's `keras.ops.matmul` keeps float64.

    Keras 3.15's PyTorch `matmul` returns float32 for two float64 tensors (its
    result type), so every float64 `Dense`, Keras's own too, computes in float32
    there; JAX without x64 computes float32 throughout.
    """
    x = keras.ops.ones((2, 2), "float64")
    exact = keras.backend.standardize_dtype(keras.ops.matmul(x, x).dtype) == "float64"
    return 1e-10 if exact and _backend_float64() == "float64" else 1e-5


# ------------------------------------------------------------------ config
@pytest.mark.parametrize("name", ALL)
def test_config_round_trip(name):
    case = _applies(name, "config")
    layer = case.make(name="attention")
    config = layer.get_config()
    clone = type(layer).from_config(copy.deepcopy(config))  # Keras's RNN pops the cell
    assert clone.get_config() == config
    if case.family == "recurrent":  # nested configs: the cell's and its attention's, above
        return
    for argument, value in config.items():
        if argument not in IGNORED_ATTRIBUTES:
            got = getattr(clone, argument)
            assert (tuple(got) if isinstance(got, (list, tuple)) else got) == (
                tuple(value) if isinstance(value, (list, tuple)) else value
            ), argument


@pytest.mark.parametrize("name", ALL)
def test_keras_file_round_trip(name, rng, tmp_path):
    case = _applies(name, "keras_file")
    dq, dk, dv = case.dims
    query = keras.Input((*(None for _ in case.query_axes), dq), name="query")
    value = keras.Input((*(None for _ in case.value_axes), dv), name="value")
    key = keras.Input((*(None for _ in case.value_axes), dk), name="key")
    layer = case.make(name="attention")
    inputs = [query, value] if case.family == "recurrent" else [query, value, key]
    model = keras.Model(inputs, _call(case, layer, query, key, value))
    for variable in model.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.7)
    q, k, v, _ = case_inputs(name, rng)
    arrays = [q, v] if case.family == "recurrent" else [q, v, k]
    expected = [to_numpy(x) for x in keras.tree.flatten(model(arrays))]
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded.get_layer("attention")) is type(layer)
    for got, want in zip(keras.tree.flatten(loaded(arrays)), expected):
        np.testing.assert_allclose(to_numpy(got), want, atol=1e-6)


# ------------------------------------------------------------------ shapes
@pytest.mark.parametrize("name", ALL)
def test_shapes_without_data_equal_the_eager_ones(name, rng):
    case = _applies(name, "shapes")
    q, k, v, value_mask = case_inputs(name, rng)
    layer = case.make()
    if case.family == "recurrent":
        shape = layer.compute_output_shape(q.shape, v.shape)
        symbolic = [layer(keras.Input(q.shape[1:]), keras.Input(v.shape[1:]))]
    else:
        shape = layer.compute_output_shape(q.shape, v.shape, k.shape)
        assert not layer.built  # no call, no weights needed
        symbolic = _call(case, layer, *(keras.Input(x.shape[1:]) for x in (q, k, v)))
    eager = _call(case, layer, q, k, v, value_mask)
    assert tuple(shape) == tuple(eager[0].shape)
    for symbolic_part, eager_part in zip(symbolic, eager, strict=True):
        assert tuple(symbolic_part.shape)[1:] == tuple(eager_part.shape)[1:]
    if case.family == "recurrent" or len(case.query_axes) > 1:
        return  # no one-step query: the RNN takes sequences; a query grid has no step
    step_shape = layer.compute_output_shape(q[:, 0].shape, v.shape, k.shape)
    step_symbolic = _call(case, layer, *(keras.Input(x.shape[1:]) for x in (q[:, 0], k, v)))
    step_eager = _call(case, layer, q[:, 0], k, v, value_mask)
    assert tuple(step_shape) == tuple(step_eager[0].shape)
    for symbolic_part, eager_part in zip(step_symbolic, step_eager, strict=True):
        assert tuple(symbolic_part.shape)[1:] == tuple(eager_part.shape)[1:]


# ------------------------------------------------------------------ dtypes
@pytest.mark.parametrize("name", ALL)
def test_a_float64_layer_computes_and_returns_float64(name, rng, request):
    case = _applies(name, "float64")
    tolerance = _float64_tolerance()
    if "float64" in case.defects and tolerance < 1e-5:  # shows where float64 is exact
        request.applymarker(pytest.mark.xfail(strict=True, reason=case.defects["float64"]))
    expected = _backend_float64()
    layer = build_case(name, rng, dtype="float64")
    q, k, v, value_mask = case_inputs(name, rng, dtype="float64")
    # Backend float64 tensors: Keras turns float64 NumPy inputs into float32 tensors on
    # PyTorch (a float64 `keras.layers.Dense` too), rounding them before any layer runs.
    tensors = (keras.ops.convert_to_tensor(x, dtype="float64") for x in (q, k, v))
    outputs = _call(case, layer, *tensors, value_mask)
    for output in outputs:
        assert keras.backend.standardize_dtype(output.dtype) == expected
    if case.reference is None:  # the recurrent layers: float64 against float32, same weights
        twin = build_case(name)
        twin.set_weights([w.astype("float32") for w in layer.get_weights()])
        want = _call(case, twin, *(x.astype("float32") for x in (q, k, v)), value_mask)
        np.testing.assert_allclose(to_numpy(outputs[0]), to_numpy(want[0]), atol=1e-5)
        return
    # float64 precision, not float32 cast up, where the backend multiplies in float64.
    ref_context, ref_weights = case.reference(layer, q, k, v, value_mask)
    np.testing.assert_allclose(to_numpy(outputs[1]), ref_weights, rtol=0, atol=tolerance)
    np.testing.assert_allclose(to_numpy(outputs[0]), ref_context, rtol=0, atol=tolerance)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", ALL)
def test_mixed_precision_matches_float32(name, policy, rng):
    case = _applies(name, "mixed_precision")
    reason = case.skips.get(f"mixed_precision[{policy}]")
    if reason is not None:
        pytest.skip(f"{policy} does not apply to {name}: {reason}")
    reference_layer = build_case(name, rng)
    layer = build_case(name, dtype=policy)
    layer.set_weights(reference_layer.get_weights())
    q, k, v, value_mask = case_inputs(name, rng)
    outputs = _call(case, layer, q, k, v, value_mask)
    assert keras.backend.standardize_dtype(outputs[0].dtype) == policy.split("_")[1]
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in layer.weights)
    want = _call(case, reference_layer, q, k, v, value_mask)
    tolerance = 3e-2 if policy == "mixed_bfloat16" else 1e-2
    if len(outputs) == 2:  # the weights, then the context (larger: a sum over Tv)
        got_weights = to_numpy(outputs[1]).astype("float32")
        np.testing.assert_allclose(got_weights, to_numpy(want[1]), atol=tolerance)
    got = to_numpy(outputs[0]).astype("float32")
    np.testing.assert_allclose(got, to_numpy(want[0]), atol=tolerance * 5)


# ------------------------------------------------------------------ fresh weights
def _kernels(layer):
    """A fresh layer's kernels and score vectors by path (biases and norm scales start constant)."""
    constant = ("bias", "/b", "_norm", "score_bias")
    return {
        w.path: to_numpy(w)
        for w in layer.weights
        if len(w.shape) >= 1 and not w.path.endswith(constant)
    }


INITIALIZERS = {
    "default": lambda: None,
    "seeded": lambda: keras.initializers.GlorotUniform(seed=1),
    "unseeded_instance": lambda: keras.initializers.GlorotUniform(),  # one, for every projection
}


@pytest.mark.parametrize("init", sorted(INITIALIZERS))
@pytest.mark.parametrize("name", ALL)
def test_fresh_kernels_start_apart(name, init):
    """Fresh layers, never randomized ones: no kernel equals another, none starts constant
    (a layer with one kernel has no pair to compare, and is still checked for the second)."""
    _applies(name, "fresh_init")
    initializer = INITIALIZERS[init]()
    kwargs = {} if initializer is None else {"kernel_initializer": initializer}
    kernels = _kernels(build_case(name, **kwargs))
    assert kernels, "a layer with no kernel skips this check in the registry"
    for (path_a, a), (path_b, b) in itertools.combinations(kernels.items(), 2):
        flat_a, flat_b = a.ravel(), b.ravel()
        size = min(flat_a.size, flat_b.size)
        # Not equal, and not even one a copy of the other's first values.
        assert not np.allclose(flat_a[:size], flat_b[:size]), (path_a, path_b)
    for path, kernel in kernels.items():
        assert np.std(kernel) > 0, f"{path} starts constant"


# ------------------------------------------------------------------ masks
@pytest.mark.parametrize("name", ALL)
def test_masked_positions_never_change_the_output(name, rng):
    case = _applies(name, "mask_invariance")
    layer = build_case(name, rng)
    q, k, v, value_mask = case_inputs(name, rng)
    before = _call(case, layer, q, k, v, value_mask)
    k2, v2 = k.copy(), v.copy()
    k2[~value_mask] = 1e3 * rng.normal(size=k2[~value_mask].shape)
    v2[~value_mask] = 1e3
    after = _call(case, layer, q, k2, v2, value_mask)
    for got, want in zip(after, before):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-5)
    assert not np.all(value_mask)  # the check masked something


# ------------------------------------------------------------------ causality
@pytest.mark.parametrize("name", ALL)
def test_perturbing_the_future_never_moves_the_past(name, rng):
    """Causal self-attention; for an alignment state or an RNN, the queries' own order."""
    reason = skip_reason(name, "causal")
    case = REGISTRY[name]
    q, k, v, value_mask = case_inputs(name, rng)
    if case.family in ("alignment", "recurrent"):
        layer = build_case(name, rng)
        if case.family == "alignment":  # the registry's reason: it refuses the causal mask
            assert reason is not None
            with pytest.raises(ValueError, match="use_causal_mask"):
                layer(q, v, key=k, use_causal_mask=True)
        changed = q.copy()
        changed[:, 2:] += 3.0
        before = _call(case, layer, q, k, v, value_mask)[0]
        after = _call(case, layer, changed, k, v, value_mask)[0]
    else:
        _applies(name, "causal")
        layer = build_case(name, rng)
        # Queries, keys and values at the same positions (row-major over a grid).
        dq, dk, dv = case.dims
        positions = case.query_axes
        q, k, v = (rng.normal(size=(1, *positions, d)).astype("float32") for d in (dq, dk, dv))
        perturbed = []
        for x in (q, k, v):
            flat = x.copy().reshape(1, -1, x.shape[-1])
            flat[:, 2:] += 3.0
            perturbed.append(flat.reshape(x.shape))
        before = layer(q, v, key=k, use_causal_mask=True)
        after = layer(perturbed[0], perturbed[2], key=perturbed[1], use_causal_mask=True)
    before = to_numpy(before).reshape(before.shape[0], -1, before.shape[-1])
    after = to_numpy(after).reshape(after.shape[0], -1, after.shape[-1])
    np.testing.assert_allclose(after[:, :2], before[:, :2], atol=1e-6)
    if getattr(layer, "mode", None) not in ("hard", "auto"):  # a hard choice may stay put
        assert not np.allclose(after[:, 2:], before[:, 2:], atol=1e-4)


# ------------------------------------------------------------------ one step at a time
def _step_by_step(name, case, rng):
    layer = build_case(name, rng)
    q, k, v, value_mask = case_inputs(name, rng)
    full_context, full_weights = (to_numpy(x) for x in _call(case, layer, q, k, v, value_mask))
    ref_context, ref_weights = case.reference(layer, q, k, v, value_mask)
    np.testing.assert_allclose(full_context, ref_context, atol=1e-5)
    np.testing.assert_allclose(full_weights, ref_weights, atol=1e-5)
    memory = layer.project_memory(k, v, value_mask)
    with pytest.raises(ValueError, match=r"`query` expected one decoding step of shape \(B, dq\)"):
        layer.step(q, *memory)
    state = layer.initial_alignment_state(memory[0], value_mask)
    assert sorted(state) == sorted(layer.alignment_state_keys)
    assert (state == {}) == (not layer.has_alignment_state)
    sizes = layer.alignment_state_sizes(k.shape[1])  # (B, n) each
    assert {key: tuple(x.shape) for key, x in state.items()} == {
        key: (q.shape[0], size) for key, size in sizes.items()
    }
    heads = 1 if layer.has_heads else 0
    for t in range(q.shape[1]):
        given = None if t == 0 else state  # None: the initial state
        context, weights, state = layer.step(
            q[:, t], *memory, value_mask=value_mask, alignment_state=given
        )
        assert sorted(state) == sorted(layer.alignment_state_keys)
        row = np.take(full_weights, t, axis=1 + heads)
        np.testing.assert_allclose(to_numpy(context), full_context[:, t], atol=1e-5)
        np.testing.assert_allclose(to_numpy(weights), row, atol=1e-5)


def _cached(case, rng):
    """Causal self-attention token by token through the key/value cache."""
    dq, _, _ = case.dims
    x = rng.normal(size=(2, 5, dq)).astype("float32")
    layer = case.make()
    layer(x, x)  # built for self-attention
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.7)
    full = to_numpy(layer(x, x, use_causal_mask=True))
    cache = layer.init_cache(2, 5)
    for t in range(5):
        context, cache = layer.call_with_cache(x[:, t : t + 1], cache, t)
        np.testing.assert_allclose(to_numpy(context)[:, 0], full[:, t], atol=1e-5)


def _cell_by_cell(name, case, rng):
    layer = build_case(name, rng)
    q, _, v, value_mask = case_inputs(name, rng)
    full = to_numpy(layer(q, v, memory_mask=value_mask))
    cell = layer.cell
    states = cell.initial_state(v, value_mask=value_mask)
    for t in range(q.shape[1]):
        output, states = cell(q[:, t], states)
        np.testing.assert_allclose(to_numpy(output), full[:, t], atol=1e-5)


@pytest.mark.parametrize("name", ALL)
def test_one_step_at_a_time_equals_the_full_call_and_numpy(name, rng):
    case = _applies(name, "step")
    if case.step == "cell":
        _cell_by_cell(name, case, rng)
    elif case.step == "cache":
        layer = build_case(name, rng)
        q, k, v, value_mask = case_inputs(name, rng)
        context, weights = _call(case, layer, q, k, v, value_mask)
        ref_context, ref_weights = case.reference(layer, q, k, v, value_mask)
        np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)
        np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-5)
        _cached(case, rng)
    else:
        _step_by_step(name, case, rng)
