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


def numpy_levenshtein(hypothesis, reference):
    """Edit distance by rows of a NumPy table: deletions, insertions, substitutions."""
    row = np.arange(len(reference) + 1)
    for i, token in enumerate(hypothesis, 1):
        substitute = row[:-1] + (np.asarray(reference, dtype=object) != token)
        new = np.empty_like(row)
        new[0] = i
        for j in range(1, len(row)):
            new[j] = min(substitute[j - 1], row[j] + 1, new[j - 1] + 1)
        row = new
    return int(row[-1])


def reference_scores(hypothesis_of, references_of):
    """WER and PER of one hypothesis a word against its closest reference (ties: shorter)."""
    wrong = errors = length = 0
    for word, options in references_of.items():
        hypothesis = hypothesis_of[word].split()
        wrong += hypothesis not in [option.split() for option in options]
        distances = np.array([numpy_levenshtein(hypothesis, o.split()) for o in options])
        lengths = np.array([len(option.split()) for option in options])
        best = np.lexsort((lengths, distances))[0]
        errors, length = errors + distances[best], length + lengths[best]
    return wrong / len(references_of), errors / length


def test_pronunciation_scores_take_the_closest_reference_as_a_numpy_reference_does():
    rng = np.random.default_rng(0)
    phonemes = np.array(["AA", "B", "K", "D"])  # few symbols: near and exact hits happen

    def pronunciation():
        return " ".join(rng.choice(phonemes, size=rng.integers(1, 7)))

    references_of, hypothesis_of = {}, {}
    for index in range(300):
        word = f"w{index}"
        options = list(dict.fromkeys(pronunciation() for _ in range(rng.integers(1, 4))))
        references_of[word] = options
        kind = rng.integers(3)  # one of the references, a changed one, or any other
        reference = options[rng.integers(len(options))].split()
        if kind == 1:
            reference[rng.integers(len(reference))] = str(rng.choice(phonemes))
        hypothesis_of[word] = " ".join(reference) if kind < 2 else pronunciation()
    examples = [(word, option) for word, options in references_of.items() for option in options]
    order = rng.permutation(len(examples))  # a word's references need not be adjacent
    sources = [examples[i][0] for i in order]
    references = [examples[i][1] for i in order]
    hypotheses = [hypothesis_of[word] for word in sources]
    scores = evaluation.pronunciation_scores(sources, hypotheses, references)
    wer, per = reference_scores(hypothesis_of, references_of)
    assert scores["words"] == 300 and scores["references"] == len(examples)
    assert scores["wer"] == pytest.approx(wer) and scores["per"] == pytest.approx(per)
    assert 0.3 < wer < 0.8  # both right and wrong words, from several references
    assert sum(len(options) > 1 for options in references_of.values()) > 100


def test_a_multi_reference_test_file_is_scored_against_each_words_closest_reference(tmp_path):
    from examples.nmt.host.splits import load_splits

    train = tmp_path / "train.dict"
    train.write_text("".join(f"w{i}\tW ER1 D {'D ' * (i % 7)}\n" for i in range(300)))
    test = tmp_path / "cmudict.dic.test"  # the standard split's format: all references a line
    test.write_text(
        "tomato\tT AH0 M EY1 T OW2\tT AH0 M AA1 T OW2\n"
        "either\tIY1 DH ER0\tAY1 DH ER0\n"
        "potato\tP AH0 T EY1 T OW2\n"
    )
    examples = load_splits(f"dict:{train}", test=str(test))["test"]
    answers = {"tomato": "T AH M AA T OW", "either": "AY DH ER", "potato": "P AH T EY T"}
    sources, references = zip(*examples, strict=True)
    hypotheses = [answers[word] for word in sources]
    scores = evaluation.pronunciation_scores(sources, hypotheses, references)
    assert scores["words"] == 3 and scores["references"] == 5
    # Right against a second reference twice; potato one deletion off its only reference.
    assert scores["wer"] == pytest.approx(1 / 3)
    assert scores["per"] == pytest.approx((0 + 0 + 1) / (6 + 3 + 6))
