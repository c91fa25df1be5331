"""`backends.matmul`: the product of every score, equal to `keras.ops.matmul`, float64 kept.

On PyTorch the backend's own form (`torch_backend.matmul`) keeps two float64
inputs in float64, which Keras 3.15's `ops.matmul` computes in float32; on
the other backends the generic `keras.ops.matmul` is the form.
"""

import keras
import numpy as np
import pytest
from backend_utils import to_numpy

from keras_attention import backends

SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 2, 3, 4), (2, 2, 4, 1))]


def _floats64_supported():
    return keras.backend.standardize_dtype(keras.ops.ones((1,), "float64").dtype) == "float64"


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matmul_equals_numpy_and_keras_ops_in_float32(shapes):
    rng = np.random.default_rng(0)
    a, b = (rng.normal(size=shape).astype("float32") for shape in shapes)
    product = backends.matmul(keras.ops.convert_to_tensor(a), keras.ops.convert_to_tensor(b))
    assert keras.backend.standardize_dtype(product.dtype) == "float32"
    np.testing.assert_allclose(to_numpy(product), a @ b, rtol=1e-5, atol=1e-5)
    plain = keras.ops.matmul(a, b)  # the definition the backend form stands for
    np.testing.assert_allclose(to_numpy(product), to_numpy(plain), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtypes", [("float64", "float64"), ("float64", "float32")], ids=str)
def test_matmul_keeps_float64(shapes, dtypes):
    if not _floats64_supported():
        pytest.skip("this backend's configuration has no float64 (JAX without x64)")
    rng = np.random.default_rng(1)
    a, b = (rng.normal(size=shape).astype(dtype) for shape, dtype in zip(shapes, dtypes))
    product = backends.matmul(keras.ops.convert_to_tensor(a), keras.ops.convert_to_tensor(b))
    assert keras.backend.standardize_dtype(product.dtype) == "float64"
    # Inputs float32-rounded would err by ~1e-7 relative: float64 agrees far closer.
    expected = a.astype("float64") @ b.astype("float64")
    np.testing.assert_allclose(to_numpy(product), expected, rtol=1e-12, atol=1e-12)


def test_only_pytorch_has_a_form_of_its_own():
    module = backends.current()
    has_own = module is not None and hasattr(module, "matmul")
    assert has_own == (keras.backend.backend() == "torch")
