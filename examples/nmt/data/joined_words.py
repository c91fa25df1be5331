"""Long inputs from a pronouncing dictionary: several words joined into one example.

Chorowski et al. (2015) and Battenberg et al. (2020) test attention on inputs
much longer than those seen in training; on pronunciations the same test is
built by joining words. A joined example's source is its words separated by
spaces (the ``letters`` vocabulary's ``▁`` boundary token) and its target
their phonemes separated by ``BOUNDARY``:
``"to be"`` -> ``"T UW | B IY"``.

* ``join_split`` (``--join-words K``): training and validation examples
  become joins of 1 to K words (the count drawn uniformly, each word of the
  split once, one of its pronunciations at random), seeded;
* ``long_examples``: test examples of exactly ``k`` distinct words each,
  with every reference of every word and each word's span in the source
  tokens, for ``examples.nmt.long_inputs``.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

BOUNDARY = "|"


class LongExample(NamedTuple):
    """``k`` words joined: the source text, each word's references and source span.

    ``references[i]`` lists the phoneme strings of word ``i`` (its
    alternates); ``spans[i]`` is ``(start, end)``, the positions of its
    letters among the source's ``letters`` tokens (a ``▁`` between words).
    """

    source: str
    references: tuple[tuple[str, ...], ...]
    spans: tuple[tuple[int, int], ...]


def group_references(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """``(word, phonemes)`` pairs -> word -> its pronunciations, in first-seen order."""
    words: dict[str, list[str]] = {}
    for word, phonemes in pairs:
        options = words.setdefault(word, [])
        if phonemes not in options:
            options.append(phonemes)
    return words


def join_pairs(
    pairs: Sequence[tuple[str, str]], max_words: int, seed: int = 0
) -> list[tuple[str, str]]:
    """Each word of ``pairs`` once, in joins of 1 to ``max_words`` words; see the module doc."""
    if max_words < 1:
        raise ValueError(f"Expected max_words >= 1. Received: {max_words}")
    rng = random.Random(seed)
    words = list(group_references(pairs).items())
    rng.shuffle(words)
    joined, start = [], 0
    while start < len(words):
        count = rng.randint(1, max_words)
        chosen = words[start : start + count]
        start += count
        source = " ".join(word for word, _ in chosen)
        target = f" {BOUNDARY} ".join(rng.choice(options) for _, options in chosen)
        joined.append((source, target))
    return joined


def long_examples(
    pairs: Sequence[tuple[str, str]], k: int, count: int, seed: int = 0
) -> list[LongExample]:
    """Up to ``count`` examples of ``k`` distinct words each, no word used twice in one.

    Words are drawn without replacement from a shuffled list, which is
    shuffled again when it runs out, so ``count * k`` may exceed the words.
    Words must be white-space-free (dictionary words are).
    """
    if k < 1 or count < 1:
        raise ValueError(f"Expected k >= 1 and count >= 1. Received: k={k}, count={count}")
    references = group_references(pairs)
    words = sorted(references)
    if len(words) < k:
        raise ValueError(f"Expected at least k={k} distinct words. Received: {len(words)}")
    rng = random.Random(seed)
    pool: list[str] = []
    examples = []
    for _ in range(count):
        if len(pool) < k:
            pool = words[:]
            rng.shuffle(pool)
        chosen, pool = pool[:k], pool[k:]
        spans, start = [], 0
        for word in chosen:
            length = len(unicodedata.normalize("NFKC", word).lower())  # its letters tokens
            spans.append((start, start + length))
            start += length + 1  # the boundary token
        examples.append(
            LongExample(
                " ".join(chosen),
                tuple(tuple(references[word]) for word in chosen),
                tuple(spans),
            )
        )
    return examples
