"""The example on the backend the suite runs (CI: TensorFlow, JAX and PyTorch).

A tiny run trains, evaluates and exports on this backend; its SavedModel
(written by TensorFlow, in a process of its own on JAX and PyTorch, from the
backend-neutral ``model.keras``) translates the test split as this backend's
own search does: the same tokens greedily, beam-4 scores within 1e-4. A run
resumes only on the backend it started on.
"""

import json

import keras
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import tiny  # noqa: E402

from examples.common.recipes import to_dict  # noqa: E402
from examples.nmt import backend  # noqa: E402
from examples.nmt import evaluation  # noqa: E402
from examples.nmt import runs  # noqa: E402
from examples.nmt import train  # noqa: E402
from examples.nmt.host import splits  # noqa: E402

SCORE_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def run_of_this_backend(date_data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("backend") / "run"
    argv = tiny.tiny_args(out, "--max-examples", "400", "--units", "32", data_dir=date_data_dir)
    metrics = train.main(argv)
    return out, metrics, argv


def test_the_run_records_its_backend_and_scores(run_of_this_backend):
    out, metrics, _ = run_of_this_backend
    assert json.loads((out / runs.CONFIG).read_text())[runs.BACKEND_KEY] == backend.name()
    assert metrics["examples"] > 0 and 0.0 <= metrics["exact_match"] <= 1.0
    assert (out / "saved_model" / "saved_model.pb").is_file()


@pytest.mark.parametrize("beam_size", [1, 4])
def test_the_saved_model_translates_the_test_split_as_this_backend_does(
    run_of_this_backend, beam_size
):
    out, _, argv = run_of_this_backend
    split = splits.splits_from_args(train.parse_args(argv))["test"]
    texts = [source for source, _ in split[:64]]
    model, vocabularies = runs.load_run(out)  # the backend's own search, as evaluation runs it
    ours = evaluation.translate_fn(
        model, vocabularies, max_length=12, max_source_length=24, beam_size=beam_size
    )(texts)
    saved = tf.saved_model.load(str(out / "saved_model"))
    theirs = saved.translate(tf.constant(texts), beam_size=tf.constant(beam_size))
    ours = {name: np.asarray(value) for name, value in ours.items()}
    np.testing.assert_array_equal(np.asarray(theirs["translation"]), ours["translation"])
    np.testing.assert_array_equal(np.asarray(theirs["target_length"]), ours["target_length"])
    np.testing.assert_array_equal(np.asarray(theirs["target_tokens"]), ours["target_tokens"])
    np.testing.assert_allclose(np.asarray(theirs["scores"]), ours["scores"], atol=SCORE_TOLERANCE)
    assert np.any(ours["target_length"] > 1)  # translations, not only [END]


def test_a_run_resumes_only_on_its_own_backend(tmp_path):
    other = next(name for name in backend.BACKENDS if name != backend.name())
    out = tmp_path / "run"
    out.mkdir()
    args = train.parse_args(["--output-dir", str(out)])
    (out / runs.CONFIG).write_text(json.dumps({**to_dict(args), runs.BACKEND_KEY: other}))
    with pytest.raises(runs.RunError, match=f"KERAS_BACKEND={other}.*resume it with"):
        runs.prepare_output_dir(args)
    (out / runs.TRAINING).write_text("{}")  # a finished run evaluates anywhere
    assert runs.prepare_output_dir(args) is True
    assert json.loads((out / runs.CONFIG).read_text())[runs.BACKEND_KEY] == other


def test_a_strategy_of_another_backend_is_refused_by_name():
    from examples.nmt.training import distribution

    for strategy, needed in distribution.STRATEGY_BACKENDS.items():
        if needed != keras.backend.backend():
            with pytest.raises(runs.RunError, match=f"--strategy {strategy} needs"):
                distribution.setup(strategy)


def test_multiworker_is_refused_with_keras_own_reason(capsys):
    with pytest.raises(SystemExit) as error:
        train.parse_args(["--strategy", "multiworker"])
    assert error.value.code == 2
    assert "keras-team/keras#20585" in capsys.readouterr().err
