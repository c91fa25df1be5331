"""Averaged checkpoints and ensembles: ``--average-checkpoints N``, ``--model A --model B``.

The run folders are made by hand, without training: a tiny model's
``model.keras``, the vocabularies, a ``config.json`` and three epochs'
weights in ``checkpoints/`` (other tiny models of the same architecture).
"""

import json

import keras
import numpy as np
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt's command lines run under tensorflow", allow_module_level=True)

tf = pytest.importorskip("tensorflow")

import tiny  # noqa: E402

from examples.nmt import evaluate  # noqa: E402
from examples.nmt import export  # noqa: E402
from examples.nmt import runs  # noqa: E402
from examples.nmt import translate  # noqa: E402
from examples.nmt import translator  # noqa: E402
from examples.nmt.models.ensemble import Ensemble  # noqa: E402

SIZES = (len(tiny.TOKENS), len(tiny.TOKENS))
LINES = ["May 9th, 1998", "june a 9 9 a", "9", "a june", "1998 , may"]
SETTINGS = {"max_length": 6, "max_decode_length": 5, "beam_size": 2, "length_penalty": 0.5}


def make_run(directory, architecture, seed, vocabularies=None, sizes=SIZES, epochs=3):
    """A run folder: model.keras (the "best" epoch), vocabularies, config, kept epochs."""
    options = {"layers": 1} if architecture == "transformer" else {"decoder": "luong"}

    def model(offset):
        return tiny.tiny_model(
            architecture, seed=seed + offset, sizes=sizes, output_scale=8.0, **options
        )

    model(0).save(directory / runs.MODEL)
    (vocabularies or tiny.tiny_vocabularies()).save(directory)
    (directory / runs.CONFIG).write_text(json.dumps(SETTINGS))
    (directory / runs.CHECKPOINTS).mkdir()
    for epoch in range(1, epochs + 1):
        runs.save_weights(model(10 * epoch), runs.checkpoint_path(str(directory), epoch))
    return directory


@pytest.fixture(scope="module")
def run_a(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("a"), "rnn", seed=3)


@pytest.fixture(scope="module")
def run_b(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("b"), "rnn", seed=4, epochs=2)


def epoch_arrays(run, epoch):
    """The arrays of ``checkpoints/epoch_N.weights.npz``, read with NumPy alone."""
    with np.load(run / runs.CHECKPOINTS / f"epoch_{epoch}.weights.npz") as arrays:
        return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]


# ----------------------------------------------------------------------------
# Averaged checkpoints
# ----------------------------------------------------------------------------
def test_averaging_one_epoch_is_the_last_epoch_and_two_the_numpy_mean(run_a):
    best = runs.load_run(str(run_a))[0].get_weights()
    last = runs.load_run(str(run_a), average_checkpoints=1)[0].get_weights()
    two = runs.load_run(str(run_a), average_checkpoints=2)[0].get_weights()
    assert runs.kept_epochs(str(run_a)) == [1, 2, 3]
    assert len(last) == len(best) == len(epoch_arrays(run_a, 3))
    for got, epoch_3 in zip(last, epoch_arrays(run_a, 3)):
        np.testing.assert_array_equal(got, epoch_3)
    for got, epoch_2, epoch_3 in zip(two, epoch_arrays(run_a, 2), epoch_arrays(run_a, 3)):
        np.testing.assert_allclose(got, (epoch_2 + epoch_3) / 2, rtol=1e-6, atol=1e-7)
    assert not np.allclose(last[0], best[0])  # not model.keras's weights


def test_averaging_more_epochs_than_the_run_kept_is_a_one_line_error(run_a, capsys):
    with pytest.raises(SystemExit) as exit_info:
        translate.main(["--model", str(run_a), "--average-checkpoints", "4", "9"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "--average-checkpoints 4" in error and "keeps the weights of 3 epochs" in error
    assert "--keep-checkpoints 4" in error and len(error.splitlines()) == 1


def _mismatched_run(directory, edit):
    """``run_a``'s layout with epoch 2's arrays changed by ``edit(arrays) -> arrays``."""
    run = make_run(directory, "rnn", seed=3)
    path = runs.checkpoint_path(str(run), 2)
    arrays = edit(epoch_arrays(run, 2))
    with open(path, "wb") as file:
        np.savez(file, *arrays)
    return run, path


def test_averaging_a_checkpoint_with_one_array_fewer_names_it_and_the_weight(tmp_path):
    run, path = _mismatched_run(tmp_path, lambda arrays: arrays[:-1])
    count = len(epoch_arrays(run, 3))
    with pytest.raises(runs.RunError) as info:
        runs.averaged_weights(str(run), 2)
    message = str(info.value)
    assert path in message and "epoch_3.weights.npz" in message
    assert f"weight {count - 1} is absent (it holds {count - 1} arrays)" in message
    with pytest.raises(runs.RunError):  # not only when it is the first of the epochs averaged
        runs.averaged_weights(str(run), 3)


def test_averaging_a_checkpoint_with_an_array_of_another_shape_names_it_and_the_weight(tmp_path):
    def widen(arrays):
        arrays[1] = np.zeros((arrays[1].shape[0] + 1, *arrays[1].shape[1:]), arrays[1].dtype)
        return arrays

    run, path = _mismatched_run(tmp_path, widen)
    expected = epoch_arrays(run, 3)[1]
    with pytest.raises(runs.RunError) as info:
        runs.averaged_weights(str(run), 2)
    message = str(info.value)
    assert path in message and "--average-checkpoints 2" in message
    wide = (expected.shape[0] + 1, *expected.shape[1:])
    assert f"weight 1 is shape {wide} {expected.dtype} in the first" in message
    assert f"shape {expected.shape} {expected.dtype} in the second" in message


def test_averaging_a_checkpoint_with_an_array_of_another_dtype_names_it(tmp_path):
    def halve(arrays):
        arrays[0] = arrays[0].astype("float16")
        return arrays

    run, path = _mismatched_run(tmp_path, halve)
    with pytest.raises(runs.RunError, match=r"weight 0 is shape \(.*\) float16 in the first"):
        runs.averaged_weights(str(run), 2)
    assert len(runs.averaged_weights(str(run), 1)) == len(epoch_arrays(run, 3))  # epoch 3 alone


# ----------------------------------------------------------------------------
# Ensembles
# ----------------------------------------------------------------------------
def test_an_ensemble_of_a_run_with_itself_translates_as_the_run(run_a, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    greedy = ["--beam-size", "1", "--input", str(source)]  # (beam search: the export test)
    alone = translate.main(["--model", str(run_a), "--keras", *greedy])
    twice = translate.main(["--model", str(run_a), "--model", str(run_a), *greedy])
    assert [r["translation"] for r in twice] == [r["translation"] for r in alone]
    assert any(len(r["target"]) > 1 for r in alone)  # not only [END]
    for one, two in zip(alone, twice):
        assert one["score"] == pytest.approx(two["score"], abs=1e-5)
        np.testing.assert_allclose(one["attention"], two["attention"], atol=1e-6)


def test_evaluate_scores_an_averaged_ensemble_as_its_one_member(run_a, tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    words = tiny.TOKENS[4:]  # 7 words: 150 distinct sources (second) of three, for three splits
    lines = [
        f"{words[i % 3]} {words[i % 6]}\t{words[i % 7]} {words[i // 7 % 7]} {words[i // 49]}"
        for i in range(150)
    ]
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    common = ["--dataset", f"tsv:{pairs}", "--average-checkpoints", "2", "--beam-size", "1"]
    alone = evaluate.main(["--model", str(run_a), *common])
    ensemble = evaluate.main(["--model", str(run_a), "--model", str(run_a), *common])
    assert ensemble == alone and alone["examples"] > 0


def test_runs_of_another_target_vocabulary_are_refused_by_name(run_a, tmp_path, capsys):
    other = make_run(
        tmp_path, "rnn", 5, tiny.tiny_vocabularies(target=10), sizes=(SIZES[0], 10), epochs=1
    )
    with pytest.raises(SystemExit) as exit_info:
        translate.main(["--model", str(run_a), "--model", str(other), "9"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "share the target vocabulary" in error and str(other) in error


def test_an_exported_averaged_ensemble_translates_as_the_python_search(run_a, run_b, tmp_path):
    """Two runs, each averaged over its last two epochs, in one SavedModel."""
    with pytest.raises(SystemExit):  # the runs' own saved_model stays theirs
        export.main(["--model", str(run_a), "--model", str(run_b)])
    output = tmp_path / "ensemble"
    folders = ["--model", str(run_a), "--model", str(run_b), "--average-checkpoints", "2"]
    export.main([*folders, "--output", str(output)])
    saved = tf.saved_model.load(str(output))  # kept: its variables live as long as it does
    members = [runs.load_run(str(run), average_checkpoints=2)[0] for run in (run_a, run_b)]
    vocabularies = tiny.tiny_vocabularies().tensorflow()
    settings = {"max_length": 5, "max_source_length": 6, "alpha": 0.5}  # the runs' config
    for beam_size in (3,):  # one graph holds both searches
        theirs = saved.translate(tf.constant(LINES), beam_size=tf.constant(beam_size))
        ours = translator.translate_fn(
            Ensemble(members), vocabularies, beam_size=beam_size, **settings
        )(tf.constant(LINES))
        np.testing.assert_array_equal(theirs["translation"].numpy(), ours["translation"].numpy())
        np.testing.assert_allclose(theirs["scores"].numpy(), ours["scores"].numpy(), atol=1e-5)
