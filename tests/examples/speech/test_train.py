"""A tiny run on every backend (a few FSDD clips, one epoch), its run folder and its commands."""

import json
import math
import os
import shutil
import wave

import numpy as np
import pytest

from examples.common import runs
from examples.speech import data
from examples.speech import evaluate
from examples.speech import train
from examples.speech import transcribe

SETS = ("validation", "test", "held_out", "long_9", "validation_long_9")
SCORES = ("digit_error_rate", "exact_match", "alignment_accuracy")


def test_a_tiny_run_writes_its_folder_and_scores(tiny_run):
    folder, values, printed = tiny_run
    assert printed.startswith("Training on: ")
    for name in ("config.json", "model.keras", "metrics.json", "history.csv", "training.json"):
        assert (folder / name).is_file(), name
    assert not (folder / "backup").exists()
    for name in SETS:
        assert (folder / f"alignment_{name}.png").is_file()
        assert values[f"{name}/utterances"] > 0
        assert 0.0 <= values[f"{name}/exact_match"] <= 1.0
        assert 0.0 <= values[f"{name}/alignment_accuracy"] <= 1.0
        assert values[f"{name}/digit_error_rate"] >= 0.0
    assert json.loads((folder / "metrics.json").read_text()) == values
    assert values["epochs"] == 1 and math.isfinite(values["train_seconds"])


def test_scores_agree_with_the_transcripts_they_count(tiny_run, fsdd):
    """The test set's scores, recounted from its transcripts with a loop of this test's own."""
    folder, values, _ = tiny_run
    config = train.recipes.load(train.Config, str(folder / "config.json"))
    datasets = data.make_datasets(data.load_clips(fsdd, config.max_clips_per_speaker), config)
    arrays = datasets["test"]
    model = runs.load_model(str(folder))
    found = evaluate.transcribe_arrays(model, arrays["waveform"], arrays["lengths"], 8)
    errors = exact = 0
    for tokens, targets, count in zip(found["tokens"], arrays["targets"], arrays["digit_count"]):
        heard = []
        for token in tokens:
            if token == 2:
                break
            heard.append(int(token) - 3)
        gold = [int(t) - 3 for t in targets[:count]]
        exact += heard == gold
        errors += _levenshtein(heard, gold)
    total = int(arrays["digit_count"].sum())
    assert values["test/digit_error_rate"] == pytest.approx(errors / total)
    assert values["test/exact_match"] == pytest.approx(exact / len(arrays["lengths"]))


def _levenshtein(a, b):
    """The edit distance by the full dynamic-programming table."""
    table = np.zeros((len(a) + 1, len(b) + 1), int)
    table[:, 0], table[0, :] = range(len(a) + 1), range(len(b) + 1)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = int(a[i - 1] != b[j - 1])
            table[i, j] = min(table[i - 1, j] + 1, table[i, j - 1] + 1, table[i - 1, j - 1] + cost)
    return int(table[-1, -1])


def test_a_finished_run_is_scored_again_and_other_settings_are_refused(
    tiny_run, fsdd, tmp_path, capsys
):
    folder, values, _ = tiny_run
    copy = tmp_path / "run"
    shutil.copytree(folder, copy)
    again = train.main(
        [
            "--config",
            str(copy / "config.json"),
            "--data",
            fsdd,
            "--output-dir",
            str(copy),
            "--no-export",
        ]
    )
    assert "Training is done" in capsys.readouterr().out
    assert again["test/digit_error_rate"] == pytest.approx(values["test/digit_error_rate"])
    with pytest.raises(SystemExit) as exit_info:
        train.main(
            ["--config", "tiny", "--set", "epochs=2", "--data", fsdd, "--output-dir", str(copy)]
        )
    assert exit_info.value.code == 2
    assert "holds a run with other settings (epochs 1 there, 2 here" in capsys.readouterr().err


def test_no_data_and_no_network_says_what_to_pass(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(data, "ORIGIN", "http://127.0.0.1:9/fsdd.tar.gz")  # nothing listens
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--config", "tiny", "--output-dir", str(tmp_path / "run")])
    assert exit_info.value.code == 2
    assert "pass --data path/to/fsdd.zip" in capsys.readouterr().err


def write_wav(path, samples, rate):
    with wave.open(str(path), "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def test_transcribe_reads_a_16_khz_file_and_names_a_bad_one(tiny_run, fsdd, tmp_path, capsys):
    pytest.importorskip("scipy")
    from scipy import signal

    folder, _, _ = tiny_run
    clips = data.load_clips(fsdd, max_per_speaker=10)[:3]
    joined, _ = data.join_clips([c.audio for c in clips], [800] * 4)
    path = tmp_path / "mine.wav"
    write_wav(path, signal.resample_poly(joined, 2, 1), 16000)
    plot = tmp_path / "mine.png"
    (text,) = transcribe.main([str(path), "--run", str(folder), "--plot", str(plot)])
    assert set(text) <= set("0123456789")
    assert f"{path}\t{text}" in capsys.readouterr().out
    assert plot.is_file()
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    with pytest.raises(SystemExit) as exit_info:
        transcribe.main([str(broken), "--run", str(folder)])
    assert exit_info.value.code == 2
    assert "broken.wav" in capsys.readouterr().err
    empty = tmp_path / "empty.wav"
    write_wav(empty, np.zeros(0), 8000)
    with pytest.raises(SystemExit):
        transcribe.main([str(empty), "--run", str(folder)])
    assert "empty.wav: an empty recording" in capsys.readouterr().err
    assert os.path.isfile(plot)
