"""Joined words: training joins of 1..K words and the long test inputs with their spans."""

import collections

import pytest

from examples.nmt.data import joined_words
from examples.nmt.host import text
from examples.nmt.host.vocabularies import TokenVocabulary

PAIRS = [("to", "T UW"), ("be", "B IY"), ("or", "AO R"), ("or", "ER"), ("not", "N AA T")]


def test_join_pairs_uses_every_word_once_in_joins_of_one_to_k():
    pairs = [(f"w{i}", f"P{i} Q") for i in range(300)] + [("w0", "ALT")]
    joined = joined_words.join_pairs(pairs, max_words=3, seed=4)
    counts = collections.Counter(len(source.split()) for source, _ in joined)
    assert set(counts) == {1, 2, 3}  # every size drawn
    words = [word for source, _ in joined for word in source.split()]
    assert sorted(words) == sorted({word for word, _ in pairs})  # each word once
    for source, target in joined:
        parts = target.split(f" {joined_words.BOUNDARY} ")
        assert len(parts) == len(source.split())
        for word, phonemes in zip(source.split(), parts):
            assert (word, phonemes) in pairs  # one of its own pronunciations
    assert joined == joined_words.join_pairs(pairs, max_words=3, seed=4)  # seeded
    with pytest.raises(ValueError, match="max_words >= 1"):
        joined_words.join_pairs(pairs, 0)


def test_joins_of_one_word_keep_every_pair_of_distinct_words():
    pairs = [("to", "T UW"), ("be", "B IY"), ("not", "N AA T")]
    joined = joined_words.join_pairs(pairs, 1)
    assert sorted(joined) == [("be", "B IY"), ("not", "N AA T"), ("to", "T UW")]


def test_long_examples_carry_every_reference_and_the_letter_spans():
    examples = joined_words.long_examples(PAIRS, k=3, count=5, seed=1)
    assert len(examples) == 5
    vocabulary = TokenVocabulary(text.rank_tokens(collections.Counter("tobernt\u2581")), "letters")
    for example in examples:
        words = example.source.split()
        assert len(set(words)) == 3  # distinct words in one input
        for word, references, (start, end) in zip(words, example.references, example.spans):
            assert references == tuple(p for w, p in PAIRS if w == word)
            ids = vocabulary.encode([example.source])[0]
            letters = "".join(vocabulary.tokens[i] for i in ids[start:end])
            assert letters == word  # the span covers exactly that word's letters
    with pytest.raises(ValueError, match="at least k=9 distinct words"):
        joined_words.long_examples(PAIRS, k=9, count=1)
