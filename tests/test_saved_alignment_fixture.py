"""A `.keras` file saved while `keras_attention/layers/` was one flat folder still loads.

`tests/fixtures/alignment_layers.keras` (written by
`fixtures/make_alignment_layers.py` under TensorFlow) holds the alignment
layers (location-sensitive, Bahdanau and Luong monotonic, stepwise, GMM,
dynamic convolution), Luong's local-p attention and an `AttentionRNN` over an
`AttentionRNNCell` with two attentions, with random weights; the `.npz`
beside it holds the inputs and the outputs that code computed. Its config
records the old module paths (`keras_attention.layers.location_sensitive`,
...): Keras finds our classes by their registered names, which never change,
and a Keras that misses a name in its registry imports the recorded module
(Keras before 3.12 or so did, for any package): those paths still import.
"""

import json
import os
import subprocess
import sys
import zipfile

import keras
import numpy as np
import pytest
from backend_utils import to_numpy

import keras_attention

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
MODEL = os.path.join(FIXTURES, "alignment_layers.keras")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def test_recorded_modules_hold_their_classes_in_a_fresh_process():
    # What a Keras that misses the registered name does: import the recorded
    # module (keras_attention not imported before) and look the class up in it.
    with zipfile.ZipFile(MODEL) as archive:
        config = json.loads(archive.read("config.json"))
    pairs = sorted({(entry["module"], entry["class_name"]) for entry in _registered(config)})
    script = (
        "import importlib, sys\n"
        "assert 'keras_attention' not in sys.modules\n"
        f"for module, name in {pairs!r}:\n"
        "    cls = vars(importlib.import_module(module)).get(name)\n"
        "    assert cls is not None and cls.__name__ == name, (module, name)\n"
        "    print(module, cls.__module__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
        cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    moved = dict(line.split() for line in result.stdout.splitlines())
    assert len(moved) == len({module for module, _ in pairs})
    assert moved["keras_attention.layers.location_sensitive"] == (
        "keras_attention.layers.alignment.location_sensitive_attention"
    )


def test_former_module_paths_still_import():
    import keras_attention.layers.attention_rnn_state as former_state
    from keras_attention.layers.attention_rnn_cell import AttentionRNNState
    from keras_attention.layers.former_paths import FORMER_PATHS
    from keras_attention.layers.luong import LuongAttention

    assert AttentionRNNState is keras_attention.AttentionRNNState
    assert LuongAttention is keras_attention.LuongAttention
    assert (
        former_state.StateLayout.__module__
        == "keras_attention.layers.recurrent.attention_rnn_state"
    )
    for former, current in FORMER_PATHS.items():
        assert getattr(keras_attention.layers, former).__name__ == (
            f"keras_attention.layers.{current}"
        )
    with pytest.raises(AttributeError, match="no_such_module"):
        keras_attention.layers.no_such_module  # noqa: B018


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
