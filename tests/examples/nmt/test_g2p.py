"""Pronunciations end to end: a tiny G2P run on joined words of a dictionary file, scored by
WER and PER, then on long inputs."""

import json

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based", allow_module_level=True)

tf = pytest.importorskip("tensorflow")

import tiny  # noqa: E402

from examples.nmt import evaluate  # noqa: E402
from examples.nmt import long_inputs  # noqa: E402
from examples.nmt import train  # noqa: E402
from examples.nmt import translate  # noqa: E402

LETTERS = "abcdefghij"
PHONEMES = ("AA", "B", "K", "D", "EH", "F", "G", "HH", "IY", "JH")


def write_dictionary(path, count=400, one_line=False):
    """Made-up words whose phonemes spell their letters; a third have an alternate.

    CMU Sphinx format (``word(2)`` lines), or with ``one_line`` the standard
    split's test reference format (a word's pronunciations tab-separated on its line).
    """
    lines = [";;; a made-up dictionary"]
    for i in range(count):
        word = "".join(LETTERS[int(d)] for d in f"{i:03d}")
        phones = " ".join(f"{PHONEMES[int(d)]}1" for d in f"{i:03d}")
        options = [phones] + ([f"{phones} S"] if i % 3 == 0 else [])
        if one_line:
            lines.append("\t".join([word, *options]))
        else:
            lines += [f"{word} {options[0]}", *(f"{word}(2) {o}" for o in options[1:])]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_g2p_run_scores_wer_and_per_and_answers_phonemes(tmp_path):
    dictionary = write_dictionary(tmp_path / "words.dict")
    test_file = write_dictionary(tmp_path / "test.dict", count=12, one_line=True)
    out = tmp_path / "run"
    argv = tiny.tiny_args(
        out, "--test", str(test_file), "--join-words", "2", dataset=f"dict:{dictionary}",
        examples=600, max_decode_length=24,
    )  # fmt: skip
    metrics = train.main(argv)
    config = json.loads((out / "config.json").read_text())
    assert config["recipe"] == "g2p" and config["beam_size"] == 4
    assert (out / "source_letters.txt").exists() and (out / "target_symbols.txt").exists()
    saved = json.loads((out / "metrics.json").read_text())
    keys = ("wer", "per", "words", "references")
    assert saved == {**saved, **{key: metrics[key] for key in keys}}
    assert saved["words"] == 12 and saved["examples"] == 16  # 4 of the 12 have alternates
    assert saved["references"] == 16  # read from tab-separated fields, one example each
    assert 0.0 <= saved["wer"] <= 1.0 and 0.0 <= saved["per"]
    # evaluate.py takes the run's dataset, test file and beam size from its config.
    again = evaluate.main(["--model", str(out)])
    assert again["words"] == 12 and again["examples"] == 16
    assert again["wer"] == pytest.approx(metrics["wer"]) and again["per"] == pytest.approx(
        metrics["per"]
    )
    # Both translators answer with upper-case, stress-free phoneme symbols.
    for keras_model in (False, True):
        argv = ["--model", str(out), "--beam-size", "2", "abc", "Jihad"]
        argv += ["--keras"] if keras_model else []
        results = translate.main(argv)
        for result in results:
            tokens = result["translation"].split()
            assert all(token in PHONEMES + ("S", "[UNK]") for token in tokens), result
    # Long inputs: joins of k test words, scored per k, a JSON file and a plot.
    results = long_inputs.main(["--model", str(out), "--ks", "1", "3", "--count", "4"])
    assert sorted(results) == [1, 3]
    saved = json.loads((out / "long_inputs.json").read_text())
    assert saved["3"]["words"] == 12 and 0.0 <= saved["3"]["alignment_accuracy"] <= 1.0
    assert (out / "long_inputs.png").exists()
