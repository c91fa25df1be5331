"""A `.keras` file saved by keras-attention 0.1.0 still loads and computes the same.

`tests/fixtures/keras_attention_0.1.0.keras` holds every layer of the package
(Bahdanau with weight normalization, Luong general and concat, ScaledDotProduct,
grouped-query MultiHead and an AttentionRNN decoder) with random weights, saved
with the code of commit 95584b0 under TensorFlow; the `.npz` beside it holds
the inputs and the outputs that code computed. Refactors must keep both.
"""

import os

import keras
import numpy as np
import pytest
from backend_utils import to_numpy

import keras_attention  # noqa: F401  (registers the classes)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


SAVED_WITH = (3, 15)  # Keras 3.15.1 wrote the file; older Keras cannot read its Dense configs


@pytest.mark.skipif(
    tuple(int(part) for part in keras.__version__.split(".")[:2]) < SAVED_WITH,
    reason="the fixture was written by Keras 3.15 (Dense configs older Keras rejects)",
)
def test_model_saved_by_0_1_0_loads_and_agrees():
    model = keras.saving.load_model(os.path.join(FIXTURES, "keras_attention_0.1.0.keras"))
    data = np.load(os.path.join(FIXTURES, "keras_attention_0.1.0.npz"))
    outputs = model([data["query"], data["memory"]])
    assert len(outputs) == 6
    for index, output in enumerate(outputs):
        np.testing.assert_allclose(
            to_numpy(output), data[f"output_{index}"], rtol=1e-5, atol=1e-5, err_msg=str(index)
        )


@pytest.mark.skipif(
    tuple(int(part) for part in keras.__version__.split(".")[:2]) < SAVED_WITH,
    reason="the fixture was written by Keras 3.15 (Conv1D and Dense configs older Keras rejects)",
)
def test_location_sensitive_model_saved_before_the_windowed_product_agrees():
    # tests/fixtures/make_location_sensitive.py wrote both files with the code that
    # still ran the location filters as a Conv1D and then a Dense.
    model = keras.saving.load_model(os.path.join(FIXTURES, "location_sensitive.keras"))
    data = np.load(os.path.join(FIXTURES, "location_sensitive.npz"))
    outputs = model([data["query"], data["memory"]])
    assert len(outputs) == 6
    for index, output in enumerate(outputs):
        np.testing.assert_allclose(
            to_numpy(output), data[f"output_{index}"], rtol=1e-5, atol=1e-6, err_msg=str(index)
        )
