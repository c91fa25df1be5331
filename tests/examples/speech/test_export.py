"""The SavedModel (written in a TensorFlow process) transcribes as the run's greedy search.

Once, under TensorFlow (it loads the SavedModel here); the training backend's
side is the same comparison ``train.py`` makes on every backend.
"""

import shutil

import numpy as np
import pytest

from examples.common import recipes
from examples.common import runs
from examples.speech import data
from examples.speech import evaluate
from examples.speech import metrics
from examples.speech import train
from examples.speech.config import Config

pytestmark = pytest.mark.backend_independent


def test_saved_model_transcripts_equal_the_greedy_search(tiny_run, fsdd, tmp_path):
    tf = pytest.importorskip("tensorflow")
    folder = tmp_path / "run"
    shutil.copytree(tiny_run[0], folder)
    config = recipes.load(Config, str(folder / "config.json"))
    datasets = data.make_datasets(data.load_clips(fsdd, config.max_clips_per_speaker), config)
    arrays = datasets["test"]
    model = runs.load_model(str(folder))
    report = train.export(model, arrays, str(folder))  # export.py in a TensorFlow process
    assert report == {"matches": True, "utterances": len(arrays["lengths"])}
    found = evaluate.transcribe_arrays(model, arrays["waveform"], arrays["lengths"], 8)
    expected = ["".join(map(str, metrics.digits(tokens))) for tokens in found["tokens"]]
    recognizer = tf.saved_model.load(str(folder / "saved_model"))
    outputs = recognizer.transcribe(tf.constant(arrays["waveform"]), tf.constant(arrays["lengths"]))
    assert [text.decode() for text in outputs["digits"].numpy()] == expected
    served = recognizer.signatures["serving_default"](
        waveform=tf.constant(arrays["waveform"][:2]), lengths=tf.constant(arrays["lengths"][:2])
    )
    np.testing.assert_array_equal(served["digits"].numpy(), outputs["digits"].numpy()[:2])
