"""A `.keras` file saved while `keras_attention/layers/` was one flat folder still loads.

`tests/fixtures/alignment_layers.keras` (written by
`fixtures/make_alignment_layers.py` under TensorFlow) holds the alignment
layers (location-sensitive, Bahdanau and Luong monotonic, stepwise, GMM,
dynamic convolution), Luong's local-p attention and an `AttentionRNN` over an
`AttentionRNNCell` with two attentions, with random weights; the `.npz`
beside it holds the inputs and the outputs that code computed. Its config
records the old module paths (`keras_attention.layers.location_sensitive`,
...): Keras finds our classes by their registered names, which never change.
"""

import json
import os
import zipfile

import keras
import numpy as np
import pytest
from backend_utils import to_numpy

import keras_attention

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
MODEL = os.path.join(FIXTURES, "alignment_layers.keras")
SAVED_WITH = (3, 15)  # Keras 3.15.1 wrote the file

needs_keras_3_15 = pytest.mark.skipif(
    tuple(int(part) for part in keras.__version__.split(".")[:2]) < SAVED_WITH,
    reason="the fixture was written by Keras 3.15 (layer configs older Keras rejects)",
)


def _registered(config):
    if isinstance(config, dict):
        if ">" in str(config.get("registered_name")):
            yield config
        for value in config.values():
            yield from _registered(value)
    elif isinstance(config, list):
        for value in config:
            yield from _registered(value)


def test_fixture_records_the_flat_module_paths_and_names_resolve_to_todays_classes():
    with zipfile.ZipFile(MODEL) as archive:
        config = json.loads(archive.read("config.json"))
    entries = list(_registered(config))
    assert {entry["class_name"] for entry in entries} == {
        "LocationSensitiveAttention", "BahdanauMonotonicAttention", "LuongMonotonicAttention",
        "StepwiseMonotonicAttention", "GMMAttention", "DynamicConvolutionAttention",
        "LuongLocalPAttention", "AttentionRNN", "AttentionRNNCell",
    }  # fmt: skip
    for entry in entries:
        # Saved before the split: one module level under keras_attention.layers.
        assert entry["module"].count(".") == 2, entry["module"]
        name = entry["registered_name"]
        assert name == f"keras_attention>{entry['class_name']}"
        assert keras.saving.get_registered_object(name) is getattr(
            keras_attention, entry["class_name"]
        )


@needs_keras_3_15
@pytest.mark.parametrize("loader", ["keras", "keras_attention"])
def test_alignment_layers_saved_before_the_split_load_and_agree(loader):
    load = keras.saving.load_model if loader == "keras" else keras_attention.saving.load_model
    model = load(MODEL)
    data = np.load(os.path.join(FIXTURES, "alignment_layers.npz"))
    outputs = model([data["query"], data["memory"]])
    assert len(outputs) == 15  # seven layers' (context, weights), the decoder's outputs
    for index, output in enumerate(outputs):
        np.testing.assert_allclose(
            to_numpy(output), data[f"output_{index}"], rtol=1e-5, atol=1e-5, err_msg=str(index)
        )
