"""One decoding step for every attention layer: `initial_alignment_state` and `step`.

Both families, content attention (`layer_cases`, local-p) and attention with
an alignment state (`alignment_cases`), through the same loop and without
asking which family a layer belongs to: from `initial_alignment_state`,
`step` one query at a time equals the full call row by row and the NumPy
reference each family's tests already have.
"""

import alignment_cases
import keras
import layer_cases
import numpy as np
import pytest
import test_luong_local_p as local_p_cases
from backend_utils import to_numpy


def _content(name):
    def build(rng):
        layer = layer_cases.build_randomized(name, rng)
        return layer, layer_cases.make_inputs(rng, tq=3, tv=5)

    def reference(layer, q, k, v, value_mask):
        mask = np.broadcast_to(value_mask[:, None], (q.shape[0], q.shape[1], k.shape[1]))
        return layer_cases.reference_call(layer, q, k, v, mask)

    return build, reference


def _local_p(name):
    def build(rng):
        layer = local_p_cases.build_randomized(name, rng)
        return layer, local_p_cases.make_inputs(layer, rng, tq=3)

    return build, local_p_cases.reference_local_p


def _alignment(name):
    def build(rng):
        layer = alignment_cases.build_randomized(name, rng)
        return layer, alignment_cases.make_inputs(rng)

    return build, alignment_cases.reference_run


# Every public attention layer's cases: name -> (build, NumPy reference).
LAYERS = {
    **{name: _content(name) for name in layer_cases.CASES},
    **{f"local_p_{name}": _local_p(name) for name in local_p_cases.CASES},
    **{name: _alignment(name) for name in alignment_cases.CASES},
}
ALL = sorted(LAYERS)
CONTENT = sorted(set(ALL) - set(alignment_cases.CASES))


def _value_mask(k):
    length = k.shape[1]
    return np.arange(length)[None] < np.array([[length], [length - 2]])  # (B, Tv)


def _row(weights, t):
    """Query `t` of `(B, [H,] Tq, Tv)` weights."""
    return np.take(weights, t, axis=-2)


@pytest.mark.parametrize("name", ALL)
def test_step_by_step_equals_the_full_call_and_the_numpy_reference(name, rng):
    build, reference = LAYERS[name]
    layer, (q, k, v) = build(rng)
    value_mask = _value_mask(k)
    full_context, full_weights = layer(
        q, v, key=k, value_mask=value_mask, return_attention_scores=True
    )
    full_context, full_weights = to_numpy(full_context), to_numpy(full_weights)
    ref_context, ref_weights = reference(layer, q, k, v, value_mask)
    np.testing.assert_allclose(full_context, ref_context, atol=1e-5)
    np.testing.assert_allclose(full_weights, ref_weights, atol=1e-5)
    key_features, value_features = layer.project_memory(k, v, value_mask)
    state = layer.initial_alignment_state(key_features, value_mask)
    assert sorted(state) == sorted(layer.alignment_state_keys)
    for t in range(q.shape[1]):
        context, weights, state = layer.step(
            q[:, t], key_features, value_features, value_mask=value_mask, alignment_state=state
        )
        assert sorted(state) == sorted(layer.alignment_state_keys)
        np.testing.assert_allclose(to_numpy(context), full_context[:, t], atol=1e-5)
        np.testing.assert_allclose(to_numpy(weights), _row(full_weights, t), atol=1e-5)
        np.testing.assert_allclose(to_numpy(weights), _row(ref_weights, t), atol=1e-5)


@pytest.mark.parametrize("name", CONTENT)
def test_content_step_equals_attend_on_a_rank_2_query_and_keeps_no_state(name, rng):
    build, _ = LAYERS[name]
    layer, (q, k, v) = build(rng)
    value_mask = _value_mask(k)
    memory = layer.project_memory(k, v, value_mask)
    assert layer.initial_alignment_state(memory[0], value_mask) == {}
    assert layer.alignment_state_keys == () and not layer.has_alignment_state
    expected = layer.attend(q[:, 1], *memory, value_mask=value_mask, return_attention_scores=True)
    for given in (None, {}):
        context, weights, state = layer.step(
            q[:, 1], *memory, value_mask=value_mask, alignment_state=given
        )
        assert state == {}
        np.testing.assert_allclose(to_numpy(context), to_numpy(expected[0]), atol=1e-6)
        np.testing.assert_allclose(to_numpy(weights), to_numpy(expected[1]), atol=1e-6)


@pytest.mark.parametrize("name", sorted(alignment_cases.CASES))
def test_alignment_step_equals_attend_and_starts_from_the_initial_state(name, rng):
    build, _ = LAYERS[name]
    layer, (q, k, v) = build(rng)
    value_mask = _value_mask(k)
    memory = layer.project_memory(k, v, value_mask)
    state = layer.initial_alignment_state(memory[0], value_mask)
    sizes = layer.alignment_state_sizes(k.shape[1])
    assert {key: tuple(tensor.shape) for key, tensor in state.items()} == {
        key: (2, size) for key, size in sizes.items()
    }
    expected = layer.attend(
        q[:, 0], *memory, value_mask=value_mask, alignment_state=state,
        return_attention_scores=True,
    )  # fmt: skip
    got = layer.step(q[:, 0], *memory, value_mask=value_mask)  # None: the initial state
    for got_part, expected_part in zip(keras.tree.flatten(got), keras.tree.flatten(expected)):
        np.testing.assert_allclose(to_numpy(got_part), to_numpy(expected_part), atol=1e-6)


@pytest.mark.parametrize("name", ALL)
def test_step_takes_one_query_only(name, rng):
    build, _ = LAYERS[name]
    layer, (q, k, v) = build(rng)
    memory = layer.project_memory(k, v)
    with pytest.raises(ValueError, match=r"`query` expected one decoding step of shape \(B, dq\)"):
        layer.step(q, *memory)
