"""Scoring: sacreBLEU corpus scores and attention alignment accuracy."""

import keras
import numpy as np
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based", allow_module_level=True)

tf = pytest.importorskip("tensorflow")
sacrebleu = pytest.importorskip("sacrebleu")

from examples.nmt import evaluation  # noqa: E402


def test_corpus_scores_are_cased_13a_bleu_on_raw_references_with_signatures():
    references = ["Am I fat?", "Let's go to the beach.", "Tom isn't here yet."]
    scores = evaluation.corpus_scores(references, references)
    assert scores["bleu"] == pytest.approx(100.0) and scores["chrf"] == pytest.approx(100.0)
    for part in ("case:mixed", "tok:13a", "nrefs:1", f"version:{sacrebleu.__version__}"):
        assert part in scores["bleu_signature"]
    assert scores["chrf_signature"].startswith("nrefs:1|case:mixed")
    # Lower-cased, pre-tokenized outputs no longer score as natural text.
    tokenized = ["am i fat ?", "let ' s go to the beach .", "tom isn ' t here yet ."]
    lowered = evaluation.corpus_scores(tokenized, references)
    expected = sacrebleu.corpus_bleu(tokenized, [references]).score
    assert lowered["bleu"] == pytest.approx(expected) and lowered["bleu"] < 50.0
    with pytest.raises(ValueError, match="one hypothesis per reference"):
        evaluation.corpus_scores(["a"], references)


def test_alignment_accuracy_on_a_constructed_case():
    gold = np.zeros((2, 3, 4), "float32")
    gold[0, 0, 1] = gold[0, 1, 2] = gold[0, 1, 3] = 1  # row 2 has no link: not counted
    gold[1, 0, 0] = gold[1, 1, 1] = gold[1, 2, 2] = 1
    attention = np.zeros((2, 4, 4), "float32")  # one more output step than gold rows
    attention[0, 0] = [0.1, 0.7, 0.1, 0.1]  # hit
    attention[0, 1] = [0.1, 0.1, 0.1, 0.7]  # hit: any linked source token counts
    attention[0, 2] = [0.7, 0.1, 0.1, 0.1]  # no gold link: skipped
    attention[1, 0] = [0.1, 0.7, 0.1, 0.1]  # miss
    attention[1, 1] = [0.1, 0.7, 0.1, 0.1]  # hit
    attention[1, 2] = [0.1, 0.1, 0.7, 0.1]  # hit, but past the output length 2: skipped
    assert evaluation.alignment_accuracy(attention, gold) == (4, 5)
    assert evaluation.alignment_accuracy(attention, gold, lengths=np.array([3, 2])) == (3, 4)


@pytest.mark.parametrize(
    "hypothesis, reference, distance",
    [("", "", 0), ("a b c", "a b c", 0), ("a b", "a b c", 1), ("a x c", "a b c", 1),
     ("b c d", "a b c", 2), ("", "a b", 2), ("k i t t e n", "s i t t i n g", 3)],
)  # fmt: skip
def test_edit_distance_counts_substitutions_insertions_deletions(hypothesis, reference, distance):
    assert evaluation.edit_distance(hypothesis.split(), reference.split()) == distance


def test_pronunciation_scores_count_each_word_once_against_all_its_references():
    # "tomato" has two references and is right against the second; "potato" is
    # one substitution off (4 phonemes); "rose" is a deletion and an insertion
    # off its closer reference (3 phonemes), farther from the other (4).
    sources = ["tomato", "tomato", "potato", "rose", "rose"]
    hypotheses = ["T AH M AA T OW"] * 2 + ["P AH T OW", "R OW S Z", "R OW S Z"]
    references = ["T AH M EY T OW", "T AH M AA T OW", "P AH T EY", "R OW Z", "R AO Z IH"]
    scores = evaluation.pronunciation_scores(sources, hypotheses, references)
    assert scores["words"] == 3
    assert scores["wer"] == pytest.approx(2 / 3)
    assert scores["per"] == pytest.approx((0 + 1 + 1) / (6 + 4 + 3))
    with pytest.raises(ValueError, match="one source and hypothesis per reference"):
        evaluation.pronunciation_scores(sources[:2], hypotheses, references)
