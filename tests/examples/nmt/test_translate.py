"""``translate.py`` on files and stdin, through the SavedModel and ``--keras``."""

import io
import json

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based (SavedModel)", allow_module_level=True)

tf = pytest.importorskip("tensorflow")

import tiny  # noqa: E402

from examples.nmt import export  # noqa: E402
from examples.nmt import translate  # noqa: E402

TOKENS = tiny.TOKENS
LINES = ["May 9th, 1998", "", "june a 9 9 9 a a a 9", "9", "zzz", "a june", "1998 , may"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run folder (untrained tiny model): model.keras, vocabularies, config, SavedModel."""
    directory = tmp_path_factory.mktemp("run")
    vocabularies = tiny.tiny_vocabularies()
    sizes = len(TOKENS), len(TOKENS)
    # A larger output kernel: varied outputs rather than [END] at once.
    model = tiny.tiny_model(seed=3, sizes=sizes, output_scale=8.0, decoder="luong")
    model.save(directory / "model.keras")
    vocabularies.save(directory)
    settings = {"max_length": 6, "max_decode_length": 5, "beam_size": 2}
    settings |= {"length_penalty": 0.5, "coverage_penalty": 0.2}
    (directory / "config.json").write_text(json.dumps(settings))
    export.export_translator(
        model, vocabularies, directory / "saved_model", 5, 6, beam_size=2, alpha=0.5, beta=0.2
    )
    return directory


def one_by_one(run_dir, lines, beam_size=None, alpha=None):
    """Each line translated alone (a batch of one) by the run's SavedModel, loaded once.

    The reference for batched file input: what ``translate.py`` does with one
    sentence on its command line, less the heat-maps and a load per line
    (seven loads took ~30 s of this module's time).
    """
    alone = translate.saved_model_translator(
        str(run_dir / "saved_model"), beam_size=beam_size, alpha=alpha
    )
    return [alone([line])[0]["translation"] for line in lines]


def test_file_in_file_out_keeps_order_with_length_sorted_batches(run_dir, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("\r\n".join(LINES) + "\r\n", encoding="utf-8")
    target = tmp_path / "out.txt"
    argv = ["--model", str(run_dir), "--input", str(source), "--output", str(target)]
    translate.main([*argv, "--batch-size", "2"])
    err = capsys.readouterr().err
    assert "100%" in err and "7/7" in err  # the progress bar
    assert "1 lines have no tokens" in err and "(lines 2)" in err
    assert "were cut at the run's --max-length 6 (lines 3)" in err
    assert "only words the model does not know" in err and "(lines 5)" in err
    written = target.read_text(encoding="utf-8").split("\n")
    assert written[-1] == "" and len(written) == len(LINES) + 1
    expected = one_by_one(run_dir, LINES)
    assert written[:-1] == expected
    assert expected[1] == "" and len(set(expected)) > 2  # a check that can fail


def test_stdin_to_stdout_when_no_sentences_are_given(run_dir, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(LINES[:4]) + "\n"))
    results = translate.main(["--model", str(run_dir), "--beam-size", "3", "--alpha", "0"])
    out = capsys.readouterr().out
    assert out.split("\n")[:-1] == [result["translation"] for result in results]
    assert out.split("\n")[:-1] == one_by_one(run_dir, LINES[:4], beam_size=3, alpha=0.0)


@pytest.mark.parametrize("flags", [[], ["--beam-size", "3", "--beta", "0.4"], ["--beam-size", "1"]])
def test_keras_and_saved_model_translate_a_file_alike(run_dir, tmp_path, flags):
    source = tmp_path / "in.txt"
    source.write_text("\n".join(LINES), encoding="utf-8")
    outputs = {}
    for path, extra in (("saved.txt", []), ("keras.txt", ["--keras"])):
        argv = ["--model", str(run_dir), "--input", str(source), "--output", str(tmp_path / path)]
        translate.main([*argv, *extra, *flags])
        outputs[path] = (tmp_path / path).read_text(encoding="utf-8")
    assert outputs["saved.txt"] == outputs["keras.txt"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--output", "x.txt", "a"], "--output: only with --input"),
        (["--input", "in.txt", "a"], "--input: not allowed with sentences"),
        (["--input", "missing.txt"], "cannot read 'missing.txt'"),
        (["--batch-size", "0", "a"], "--batch-size"),
    ],
)
def test_bad_file_arguments_are_one_line_usage_errors(
    run_dir, tmp_path, monkeypatch, capsys, argv, needle
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("may\n")
    with pytest.raises(SystemExit) as exit_info:
        translate.main(["--model", str(run_dir), *argv])
    assert exit_info.value.code == 2
    assert needle in capsys.readouterr().err


def test_no_sentences_and_a_terminal_is_a_usage_error(run_dir, monkeypatch, capsys):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdin", Terminal())
    with pytest.raises(SystemExit):
        translate.main(["--model", str(run_dir)])
    assert "give sentences, --input FILE, or pipe" in capsys.readouterr().err
