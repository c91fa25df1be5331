"""Bad input raises a ValueError that names the layer, the argument, the
expectation and what was received, before any backend op runs."""

import keras
import numpy as np
import pytest
from layer_cases import CASES

from keras_attention import BahdanauAttention
from keras_attention import LuongAttention
from keras_attention import MultiHead
from keras_attention import ScaledDotProduct
from keras_attention import decoding

Q = np.zeros((2, 3, 6), "float32")
V = np.zeros((2, 4, 6), "float32")


@pytest.mark.parametrize(
    "make,pattern",
    [
        (lambda: BahdanauAttention(0), r"`units`.*positive integer.*Received: units=0"),
        (lambda: BahdanauAttention("8"), r"`units`.*Received: units='8'"),
        (
            lambda: LuongAttention("cosine"),
            r"`score_mode`.*\('dot', 'general', 'concat'\).*'cosine'",
        ),
        (lambda: LuongAttention("concat"), r"`units`.*score_mode='concat'.*units=None"),
        (lambda: ScaledDotProduct(probability_fn="entmax"), r"`probability_fn`.*'entmax'"),
        (lambda: ScaledDotProduct(scale="big"), r"`scale`.*'big'"),
        (lambda: ScaledDotProduct(dropout=1.5), r"`dropout`.*\[0, 1\).*1.5"),
        (
            lambda: MultiHead(8, 4, num_key_value_heads=3),
            r"`num_key_value_heads` must divide.*num_heads=8.*num_key_value_heads=3",
        ),
        (lambda: MultiHead(0, 4), r"`num_heads`.*num_heads=0"),
        (lambda: MultiHead(2, None), r"`key_dim`.*key_dim=None"),
    ],
)
def test_constructor_arguments_are_validated(make, pattern):
    with pytest.raises(ValueError, match=pattern):
        make()


def _call_error(name, *args, **kwargs):
    layer = CASES[name](name="att")
    with pytest.raises(ValueError) as info:
        layer(*args, **kwargs)
    message = str(info.value)
    assert "layer 'att'" in message and type(layer).__name__ in message
    assert "expected" in message and "Received" in message
    return message


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrong_ranks(name):
    assert "`query`" in _call_error(name, np.zeros((2, 3, 4, 6), "float32"), V)
    assert "`value`" in _call_error(name, Q, np.zeros((2, 6), "float32"))
    assert "`key`" in _call_error(name, Q, V, key=np.zeros((4, 6), "float32"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_key_value_length_mismatch(name):
    message = _call_error(name, Q, V, key=np.zeros((2, 5, 6), "float32"))
    assert "`key`" in message and "(2, 5, 6)" in message and "(2, 4, 6)" in message


@pytest.mark.parametrize("name", ["luong_dot", "scaled_dot"])
def test_dot_score_feature_mismatch(name):
    message = _call_error(name, Q, V, key=np.zeros((2, 4, 5), "float32"))
    assert "6" in message and "5" in message


@pytest.mark.parametrize(
    "argument,mask,fragment",
    [
        ("value_mask", np.ones((2, 5), bool), "(2, 5)"),
        ("value_mask", np.ones((2, 4, 1), bool), "(2, 4, 1)"),
        ("query_mask", np.ones((2, 4), bool), "(2, 4)"),
        ("attention_mask", np.ones((2, 4, 3), bool), "(2, 4, 3)"),
        ("value_mask", np.ones((2, 4), "float32"), "float32"),
        ("attention_mask", np.zeros((2, 3, 4), "float32") - 1e9, "float32"),
    ],
)
@pytest.mark.parametrize("name", ["bahdanau", "multi_head"])
def test_bad_masks(name, argument, mask, fragment):
    message = _call_error(name, Q, V, **{argument: mask})
    assert f"`{argument}`" in message and fragment in message


def test_integer_masks_are_accepted():
    layer = ScaledDotProduct()
    _, weights = layer(
        Q[:, :, :6], V, value_mask=np.array([[1, 1, 0, 0]] * 2), return_attention_scores=True
    )
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(weights)[..., 2:], 0.0)


def test_errors_come_from_symbolic_calls_too():
    layer = LuongAttention(name="att")
    with pytest.raises(ValueError, match="score_mode='dot'"):
        layer(keras.Input((3, 6)), keras.Input((4, 5)))


def test_project_memory_needs_a_built_layer():
    with pytest.raises(ValueError, match="project_memory.*build"):
        BahdanauAttention(4).project_memory(V, V)


def test_scaled_dot_product_default_scale_needs_a_static_feature_size():
    keras_version = tuple(int(part) for part in keras.version().split(".")[:2])
    backend = keras.backend.backend()
    if backend == "torch" or (backend == "jax" and keras_version < (3, 12)):
        # Keras < 3.12 on JAX also traces symbolic calls with sample sizes.
        pytest.skip("the backend traces symbolic calls with concrete sizes")
    with pytest.raises(ValueError, match=r"ScaledDotProduct \(layer 'att'\).*`query`.*1/sqrt"):
        ScaledDotProduct(name="att")(keras.Input((3, None)), keras.Input((4, None)))
    # An explicit scale needs no feature size.
    assert ScaledDotProduct(scale=0.5)(keras.Input((3, None)), keras.Input((4, None))).shape[1] == 3


@pytest.mark.parametrize("search", [decoding.greedy_search, decoding.beam_search, decoding.sample])
@pytest.mark.parametrize("step", [None, "step"])
def test_a_search_names_a_step_that_is_not_a_function(search, step):
    """Regression: the searches failed with Python's "'NoneType' object is not callable"."""
    name = search.__name__
    with pytest.raises(TypeError, match=rf"^{name}: `step` must be a function step\(ids, state"):
        search(step, np.zeros((2, 1), "float32"), 2, 1, 3)
