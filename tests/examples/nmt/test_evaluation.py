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
