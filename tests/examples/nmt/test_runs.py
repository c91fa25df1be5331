"""The NMT scripts' reliability: bad flags and data, used folders, resumption, export failures.

Every refusal is one line on stderr and exit status 2, before any training.
The fault-injection test (``--run-slow``) kills a run at random points and
checks that the resumed run ends like an uninterrupted one.
"""

import json
import shutil

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based", allow_module_level=True)

tf = pytest.importorskip("tensorflow")

import tiny  # noqa: E402

from examples.nmt import cli  # noqa: E402
from examples.nmt import runs  # noqa: E402
from examples.nmt import train  # noqa: E402
from examples.nmt import translate  # noqa: E402
from examples.nmt.data import tsv  # noqa: E402

ROOT = tiny.ROOT


def tiny_args(data_dir, output_dir, *extra):
    """The settings of the shared finished run, so that reruns in its copies resume."""
    return tiny.finished_run_args(output_dir, *extra, data_dir=data_dir)


def exits_with_usage_error(capsys, function, argv, *needles):
    with pytest.raises(SystemExit) as raised:
        function(argv)
    assert raised.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "error:" in error, error
    for needle in needles:
        assert needle in error, error
    return error


@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--epochs", "0"], "--epochs: expected an integer >= 1, received 0"),
        (["--epochs", "-3"], "--epochs"),
        (["--batch-size", "0"], "--batch-size"),
        (["--batch-size", "-5"], "--batch-size"),
        (["--num-heads", "0"], "--num-heads"),
        (["--attention", "multihead", "--num-heads", "3"], "divisor of --units"),
        (["--max-length", "0"], "--max-length"),
        (["--max-length", "1"], "--max-length: expected an integer >= 2"),
        (["--vocab-size", "0"], "--vocab-size"),
        (["--max-examples", "0"], "--max-examples"),
        (["--beam-size", "0"], "--beam-size"),
        (["--units", "7"], "--units: expected an even number"),
        (["--dropout", "1.5"], "--dropout"),
        (
            ["--length-bucket-step", "1"],
            "--length-bucket-step: expected a finite number > 1.0, received 1",
        ),
        (["--length-bucket-step", "nan"], "--length-bucket-step: expected a finite number"),
        (["--length-bucket-step", "x"], "--length-bucket-step: expected a number, received 'x'"),
    ],
)
def test_bad_flags_exit_2_before_any_work(flags, needle, tmp_path, capsys):
    out = tmp_path / "run"
    exits_with_usage_error(capsys, train.main, ["--output-dir", str(out), *flags], needle)
    assert not out.exists()


def test_translate_rejects_bad_flags_and_missing_runs(tmp_path, capsys):
    exits_with_usage_error(capsys, translate.main, ["--beam-size", "0", "x"], "--beam-size")
    exits_with_usage_error(
        capsys, translate.main, ["--model", str(tmp_path), "x"], "no trained run", str(tmp_path)
    )


def test_tsv_problems_are_one_line_errors(tmp_path, capsys):
    missing = tmp_path / "missing.tsv"
    exits_with_usage_error(
        capsys,
        train.main,
        ["--dataset", f"tsv:{missing}", "--output-dir", str(tmp_path / "a")],
        str(missing),
    )
    small = tmp_path / "small.tsv"
    small.write_text("".join(f"word{i}\tmot{i}\n" for i in range(5)), encoding="utf-8")
    error = exits_with_usage_error(
        capsys,
        train.main,
        ["--dataset", f"tsv:{small}", "--output-dir", str(tmp_path / "b")],
        str(small),
        "5 sentence pairs give",
        "every split needs one",
    )
    assert len(error.splitlines()) == 1


def test_tsv_byte_order_mark_is_not_part_of_the_first_word(tmp_path):
    path = tmp_path / "bom.tsv"
    path.write_bytes("\ufeffHello.\tBonjour.\nBye.\tSalut.\n".encode())
    assert list(tsv.read_pairs(path)) == [("Hello.", "Bonjour."), ("Bye.", "Salut.")]


def test_used_output_dir_is_refused_unless_same_settings_or_overwrite(
    date_data_dir, tmp_path, capsys
):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    exits_with_usage_error(
        capsys, train.main, tiny_args(date_data_dir, out), "--overwrite", "no config.json"
    )
    (out / "config.json").write_text(json.dumps({"epochs": 5}))
    exits_with_usage_error(
        capsys, train.main, tiny_args(date_data_dir, out), "--epochs 5 there, 1 here", "--overwrite"
    )
    assert (out / "config.json").read_text() == json.dumps({"epochs": 5})  # untouched


def test_a_config_from_before_architecture_existed_resumes_as_an_rnn_run(tmp_path):
    """A key an older config.json lacks takes its default, as in any --config file: the date
    recipe's RNN here (no table of added flags)."""
    out = tmp_path / "run"
    args = train.parse_args(["--output-dir", str(out)])
    assert runs.prepare_output_dir(args, runs.OUTPUTS) is False  # a new run
    saved = json.loads((out / "config.json").read_text())
    del saved["architecture"]
    (out / "config.json").write_text(json.dumps(saved))
    assert runs.prepare_output_dir(args, runs.OUTPUTS) is True  # resumes
    transformer = train.parse_args(["--output-dir", str(out), "--architecture", "transformer"])
    with pytest.raises(cli.RunError, match="--architecture 'rnn' there, 'transformer' here"):
        runs.prepare_output_dir(transformer, runs.OUTPUTS)


@pytest.fixture
def finished_run(finished_tiny_run):
    """The shared finished tiny run (tests/examples/conftest.py), exported: read it or copy it."""
    return finished_tiny_run[0]


def test_blocked_export_keeps_metrics_and_a_rerun_exports_without_training(
    finished_run, date_data_dir, tmp_path, capsys
):
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    first = json.loads((out / "metrics.json").read_text())
    (out / "metrics.json").unlink()
    shutil.rmtree(out / "saved_model")
    (out / "saved_model").write_text("in the way")
    argv = tiny_args(date_data_dir, out, "--no-evaluate")  # same settings
    exits_with_usage_error(
        capsys, train.main, argv, "could not write the SavedModel", str(out / "saved_model")
    )
    again = json.loads((out / "metrics.json").read_text())  # written before the export
    for key in ("best_epoch", "train_seconds"):
        assert again[key] == first[key], key
    (out / "saved_model").unlink()
    train.main(argv)
    assert (out / "saved_model" / "saved_model.pb").exists()
    assert tiny.history_epochs(out) == [0]  # not trained again, no duplicate rows
    assert "is done: evaluating and exporting" in capsys.readouterr().out


def test_overwrite_replaces_an_earlier_run(finished_run, date_data_dir, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    (out / "notes.txt").write_text("mine")
    train.main(
        tiny_args(
            date_data_dir, out, "--no-export", "--no-evaluate", "--batch-size", "16", "--overwrite"
        )
    )
    assert tiny.history_epochs(out) == [0]
    assert json.loads((out / "config.json").read_text())["batch_size"] == 16
    assert not (out / "saved_model").exists()
    assert (out / "notes.txt").read_text() == "mine"  # only the run's own outputs go


def test_translate_empty_truncated_and_unknown_sentences(
    finished_run, date_data_dir, tmp_path, capsys
):
    out = finished_run
    long = " ".join(["9 may 1998"] * 10)  # 30 tokens > --max-length 24
    sentences = ["", "may 9 1998", long, "zzz qqq"]
    for flags in ([], ["--keras"]):
        results = translate.main(
            ["--model", str(out), "--plots-dir", str(tmp_path), *flags, *sentences]
        )
        assert results[0]["translation"] == "" and results[0]["target"] == []
        err = capsys.readouterr().err
        assert "sentence 1 ('') has no tokens" in err
        assert "sentence 3 has 30 tokens: only the first 24" in err
        assert "sentence 4 ('zzz qqq') has only words the model does not know" in err
        assert "sentence 2" not in err
        if not flags:
            exported = [r["translation"] for r in results]
        else:
            assert [r["translation"] for r in results] == exported
    # --max-decode-length reaches the SavedModel.
    short = translate.main(["--model", str(out), "--max-decode-length", "2", "may 9 1998"])
    assert len(short[0]["target"]) <= 2
