"""Scoring long inputs: word error rate, exact match and word-level alignment."""

import json

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from examples.nmt import long_inputs
from examples.nmt.data.joined_words import LongExample


def one_hot(positions, width):
    attention = np.zeros((len(positions), width))
    attention[np.arange(len(positions)), positions] = 1.0
    return attention


def test_score_long_on_a_constructed_case():
    # "to be" (letters t o ▁ b e: spans (0, 2) and (3, 5)); "be" has two references.
    first = LongExample("to be", (("T UW",), ("B IY", "B EY")), ((0, 2), (3, 5)))
    second = LongExample("be to", (("B IY",), ("T UW",)), ((0, 2), (3, 5)))
    outputs = [
        # Both words right (the second against its alternate); the phonemes
        # look at 0, 1 | 4 (in span) and 2 (the boundary token: a miss).
        {
            "target": ["T", "UW", "|", "B", "EY", "[END]"],
            "attention": one_hot([0, 1, 4, 3, 2, 0], 5),
        },
        # One word only: the second is missing; one phoneme of two in span.
        {"target": ["B", "IY", "[END]"], "attention": one_hot([1, 4, 0], 5)},
    ]
    scores = long_inputs.score_long([first, second], outputs)
    assert scores["words"] == 4
    assert scores["wer"] == pytest.approx(1 / 4)
    assert scores["exact_match"] == pytest.approx(1 / 2)
    assert scores["alignment_accuracy"] == pytest.approx((3 + 1) / (4 + 2))
    assert scores["positional_wer"] == pytest.approx(1 / 4)
    # A word more than the input: one insertion; by position, no word is wrong.
    extra = {"target": ["B", "IY", "|", "T", "UW", "|", "T"], "attention": one_hot([0] * 7, 5)}
    scores = long_inputs.score_long([second], [extra])
    assert scores["wer"] == pytest.approx(1 / 2) and scores["exact_match"] == 0.0
    assert scores["positional_wer"] == 0.0
    with pytest.raises(ValueError, match="one output per example"):
        long_inputs.score_long([first], [])


def test_a_missing_boundary_costs_two_edits_not_every_later_word():
    # "a b c d" (spans (0, 1), (2, 3), (4, 5), (6, 7)); the output merges b and
    # c into one word, and its attention follows the letters exactly.
    example = LongExample(
        "a b c d", (("A",), ("B",), ("C",), ("D",)), ((0, 1), (2, 3), (4, 5), (6, 7))
    )
    output = {
        "target": ["A", "|", "B", "C", "|", "D", "[END]"],
        "attention": one_hot([0, 1, 2, 4, 5, 6, 6], 7),
    }
    scores = long_inputs.score_long([example], [output])
    assert scores["wer"] == pytest.approx(2 / 4)  # one substitution, one deletion
    assert scores["positional_wer"] == pytest.approx(3 / 4)  # b, c and d by position
    # A and D in their words; of B C (aligned with one of b, c) one phoneme is.
    assert scores["alignment_accuracy"] == pytest.approx(3 / 4)


def test_align_words_against_hand_counted_edits():
    refs = (("A",), ("B", "BB"), ("C",))
    assert long_inputs.align_words([["A"], ["BB"], ["C"]], refs) == (0, [(0, 0), (1, 1), (2, 2)])
    assert long_inputs.align_words([["A"], ["C"]], refs) == (1, [(0, 0), (1, 2)])
    assert long_inputs.align_words([["X"], ["A"], ["B"], ["C"]], refs) == (
        1,
        [(1, 0), (2, 1), (3, 2)],
    )
    assert long_inputs.align_words([], refs) == (3, [])
    assert long_inputs.align_words([["A"]], ()) == (1, [])


def test_split_words_cuts_at_boundaries():
    assert long_inputs.split_words(["A", "|", "B", "C", "|"]) == [["A"], ["B", "C"], []]


def test_compare_draws_runs_together_and_names_a_missing_one(tmp_path, capsys):
    results = {
        "1": {"wer": 0.3, "alignment_accuracy": 1.0},
        "5": {"wer": 0.4, "alignment_accuracy": 0.9},
    }
    for name in ("gmm", "dca"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "long_inputs.json").write_text(json.dumps(results))
    figure = tmp_path / "both.png"
    argv = [
        "--compare",
        f"GMM={tmp_path / 'gmm'}",
        f"DCA={tmp_path / 'dca'}",
        "--figure",
        str(figure),
    ]
    curves = long_inputs.main(argv)
    assert set(curves) == {"GMM", "DCA"} and curves["GMM"][5]["wer"] == 0.4
    assert figure.stat().st_size > 0
    with pytest.raises(SystemExit) as exit_info:
        long_inputs.main(["--compare", f"X={tmp_path / 'missing'}", "--figure", str(figure)])
    assert exit_info.value.code == 2 and "long_inputs.json" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        long_inputs.main(["--compare", "no-label"])
