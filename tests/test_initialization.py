"""Fresh layers: every projection starts from its own initial weights.

A Keras 3 initializer without a seed draws the same values on every call for
the same shape, so one instance handed to several projections made them equal
(`W_q = W_k = W_v` in every `MultiHead` before 0.2). These tests look at fresh
layers, never randomized ones, on every backend. One layer's kernels pairwise,
default, seeded or one unseeded instance, is the contract's check over every
public layer (`test_layer_contract.py`); here: two layers built alike, one
seeded layer built twice, the global seed, the config, the cell, positional
tables, and the score vector under any initializer.
"""

import itertools

import keras
import numpy as np
import pytest
from backend_utils import to_numpy

from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import DynamicConvolutionAttention
from keras_attention import LearnedPositionalEmbedding
from keras_attention import LuongAttention
from keras_attention import MultiHead
from keras_attention import StepwiseMonotonicAttention

FEATURES = 16  # every projection below maps 16 -> 16 features: same shapes
X = np.random.default_rng(0).normal(size=(2, 5, FEATURES)).astype("float32")

LAYERS = {
    "multi_head": lambda **kw: MultiHead(num_heads=4, key_dim=4, **kw),
    "multi_head_gqa": lambda **kw: MultiHead(num_heads=4, key_dim=4, num_key_value_heads=4, **kw),
    "bahdanau": lambda **kw: BahdanauAttention(FEATURES, **kw),
    "luong_concat": lambda **kw: LuongAttention("concat", units=FEATURES, **kw),
    "stepwise_monotonic": lambda **kw: StepwiseMonotonicAttention(FEATURES, **kw),
    "dynamic_convolution": lambda **kw: DynamicConvolutionAttention(
        units=FEATURES, dynamic_units=FEATURES, **kw
    ),
}


def _fresh(name, initializer):
    kwargs = {} if initializer is None else {"kernel_initializer": initializer}
    layer = LAYERS[name](**kwargs)
    layer(X, X)
    return layer


def _kernels(layer):
    """The layer's kernels and score vectors, by path (biases start at zero)."""
    return {
        w.path: to_numpy(w)
        for w in layer.weights
        if len(w.shape) >= 1 and not w.path.endswith(("bias", "/b"))
    }


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_two_unseeded_layers_built_alike_differ(name):
    shared = keras.initializers.GlorotUniform()  # one instance for both layers, even
    first, second = _fresh(name, shared), _fresh(name, shared)
    for a, b in zip(_kernels(first).values(), _kernels(second).values()):
        assert not np.allclose(a, b)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_a_seeded_layer_builds_the_same_weights_twice(name):
    first = _fresh(name, keras.initializers.GlorotUniform(seed=3))
    keras.utils.set_random_seed(99)  # the global seed must not matter
    second = _fresh(name, keras.initializers.GlorotUniform(seed=3))
    other = _fresh(name, keras.initializers.GlorotUniform(seed=4))
    for a, b, c in zip(
        _kernels(first).values(), _kernels(second).values(), _kernels(other).values()
    ):
        np.testing.assert_array_equal(a, b)
        assert not np.allclose(a, c)


def test_unseeded_layers_follow_the_global_seed():
    keras.utils.set_random_seed(5)
    first = _kernels(_fresh("multi_head", None))
    keras.utils.set_random_seed(5)
    second = _kernels(_fresh("multi_head", None))
    for a, b in zip(first.values(), second.values()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_the_config_keeps_the_initializer_the_user_gave(name):
    layer = _fresh(name, keras.initializers.GlorotUniform(seed=1))
    config = layer.get_config()
    assert config["kernel_initializer"]["config"]["seed"] == 1
    clone = type(layer).from_config(config)
    clone(X, X)
    for a, b in zip(_kernels(layer).values(), _kernels(clone).values()):
        np.testing.assert_array_equal(a, b)


def test_the_cell_and_its_attention_start_apart():
    cell = AttentionRNNCell(
        keras.layers.GRUCell(FEATURES), MultiHead(4, 4), attention_layer_size=FEATURES
    )
    states = cell.initial_state(X)
    cell(X[:, 0], states)
    kernels = _kernels(cell.attention)
    kernels["attention_dense"] = to_numpy(cell.attention_dense.kernel)
    square = [k for k in kernels.values() if k.shape == (FEATURES, FEATURES)]
    assert len(square) == 4
    for a, b in itertools.combinations(square, 2):
        assert not np.allclose(a, b)


@pytest.mark.parametrize("seed", [None, 2])
def test_positional_tables_built_alike_differ_unless_seeded(seed):
    shared = keras.initializers.GlorotUniform(seed=seed)
    first = LearnedPositionalEmbedding(8, embeddings_initializer=shared)
    second = LearnedPositionalEmbedding(8, embeddings_initializer=shared)
    first(X), second(X)
    same = np.array_equal(to_numpy(first.embeddings), to_numpy(second.embeddings))
    assert same == (seed is not None)


@pytest.mark.parametrize(
    "initializer", ["orthogonal", "he_normal", "lecun_uniform", "glorot_normal"]
)
@pytest.mark.parametrize("make", [LAYERS["bahdanau"], LAYERS["luong_concat"]])
def test_any_kernel_initializer_builds_the_score_vector(make, initializer):
    layer = make(kernel_initializer=initializer)
    layer(X, X)
    v = to_numpy(layer.v)
    assert v.shape == (FEATURES,) and np.std(v) > 0
    if initializer == "orthogonal":  # the kernel of a Dense(units -> 1): a unit vector
        np.testing.assert_allclose(np.linalg.norm(v), 1.0, atol=1e-5)
