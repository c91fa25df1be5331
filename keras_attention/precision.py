"""The dtype attention's sensitive math runs in: float32, or float64 for float64 inputs.

Softmax normalizers, RMS norms, gates, rotary angles and local-p positions
lose precision in float16/bfloat16, so they run in float32 and cast back;
a float64 layer (a reference computation, a gradient check) keeps float64
all the way, or its outputs would carry float32's ~1e-7 error.
"""

from __future__ import annotations

import keras


def math_dtype(dtype) -> str:
    """`"float64"` for a float64 `dtype` (a dtype or a tensor), else `"float32"`.

    Example:

    >>> from keras_attention.precision import math_dtype
    >>> math_dtype("float16"), math_dtype("bfloat16"), math_dtype("float64")
    ('float32', 'float32', 'float64')
    """
    dtype = getattr(dtype, "dtype", dtype)
    return "float64" if keras.backend.standardize_dtype(dtype) == "float64" else "float32"
