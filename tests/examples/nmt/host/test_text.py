"""The host pipeline's text against TensorFlow's: the hash, the tokenizers, the vocabularies.

Where TensorFlow is installed, the plain-Python definitions must give what
the TensorFlow ops give: FarmHash Fingerprint64 (the splits), every
tokenizer, the vocabulary files byte for byte, and the same ids and texts.
"""

import random

import numpy as np
import pytest

pytestmark = pytest.mark.backend_independent

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from examples.nmt.host import text  # noqa: E402
from examples.nmt.host import vocabularies as host_vocabularies  # noqa: E402
from examples.nmt.host.fingerprint import fingerprint64  # noqa: E402
from examples.nmt.text import normalization  # noqa: E402
from examples.nmt.text import words as tf_words  # noqa: E402

# Characters that tell the definitions apart: ASCII and Unicode white space (RE2's \s has
# no \v; \pZ; control characters), case mappings (final sigma, dotted I, sharp s), NFKC
# (ligatures, full-width, superscripts), marks, digits of other scripts, CJK, emoji.
POOL = (
    "abcXYZ019 .,;:!?'\"-()[]#\t\n\v\f\r\x1c\x1f\x85\xa0\u1680\u2003\u2028\u2029\u202f\u3000"
    "ΣΟΔΟΣσςİIıßẞÅﬁﬀ２ｂＢ¹½ⅷé\u0301\u0308٣३日本語😀▁"
)


def random_strings(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(POOL) for _ in range(rng.randrange(0, 24))) for _ in range(count)]


def test_fingerprint64_is_tensorflows_hash_at_every_length():
    rng = random.Random(0)
    strings = [bytes(rng.randrange(256) for _ in range(n)) for n in range(0, 200) for _ in (0, 1)]
    strings += [("é日😀 " * n).encode() for n in range(40)]  # multi-byte text past 64 bytes
    for buckets in (10_000, 2**62 + 1):
        expected = tf.strings.to_hash_bucket_fast(tf.constant(strings), buckets).numpy()
        assert [fingerprint64(s) % buckets for s in strings] == expected.tolist()


def test_source_key_and_hash_bucket_are_tensorflows():
    """The splits' key and bucket are those the former tf.data pipeline computed with
    TensorFlow ops (NFKC, lower-casing, space folding; ``to_hash_bucket_fast``), so
    every run's splits hold the same examples as before."""
    strings = random_strings(300) + ["  Hello\u3000World\v", "ΟΔΟΣ", "ﬁne  Day"]
    lowered = tf.strings.lower(normalization.normalize(tf.constant(strings)), encoding="utf-8")
    keys = tf.strings.strip(tf.strings.regex_replace(lowered, r"\s+", " "))
    assert [text.source_key(s).encode() for s in strings] == keys.numpy().tolist()
    buckets = tf.strings.to_hash_bucket_fast(keys, text.HASH_BUCKETS).numpy()
    assert [text.hash_bucket(s) for s in strings] == buckets.tolist()


@pytest.mark.parametrize("kind", ["letters", "symbols", "words"])
def test_tokenizers_are_the_tensorflow_ones(kind):
    strings = random_strings(400, seed=1) + ["May 9th, 1998", "a1b2 ÅB", "x\vy"]
    split = tf_words.KINDS[kind].split
    expected = split(tf.constant(strings)).to_list()
    ours = [[token.encode() for token in text.SPLITTERS[kind](s)] for s in strings]
    assert ours == expected


CORPUS = [
    "Il fait beau aujourd'hui.",
    "Où est la gare ?",
    "C'est l'été, ﬁnalement !",
    "Je m'appelle Marie.",
    "Nous avons 3 chats et 2 chiens.",
] * 20


@pytest.mark.parametrize("kind", ["letters", "symbols", "words", "unigram", "bpe", "char"])
def test_both_engines_give_the_same_ids_and_texts(kind, tmp_path):
    corpus = [f"{line} {i % 7}" for i, line in enumerate(CORPUS)]
    built = host_vocabularies.build_vocabulary(corpus, kind, 60)
    built.save(tmp_path / built.file_name("source"))
    ours = host_vocabularies.load_vocabulary(tmp_path, "source")  # from its file
    theirs = ours.tensorflow()
    assert ours.tokens == theirs.tokens == built.tokens
    sentences = [*corpus[:5], "Unseen wörds ½ here", ""]
    ids = ours.encode(sentences)
    assert ids == theirs.encode(tf.constant(sentences)).to_list()
    rows = [[2, *row, 3, 5] for row in ids]  # [START] ... [END] then anything
    width = max(len(row) for row in rows)
    padded = np.array([row + [0] * (width - len(row)) for row in rows], "int32")
    expected = [t.decode() for t in theirs.decode(tf.constant(padded)).numpy()]
    assert ours.decode(padded.tolist()) == expected


def test_run_vocabularies_load_as_either_kind(tmp_path):
    corpus = ["to be or not", "T UW B IY"]
    pairs = [(corpus[0], corpus[1])] * 3
    host_vocabularies.build_vocabularies(pairs, None, "letters", "symbols").save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "source_letters.txt",
        "target_symbols.txt",
    ]
    again = host_vocabularies.Vocabularies.load(tmp_path)
    loaded = again.tensorflow()
    assert loaded.source.tokens == again.source.tokens and again.target.kind == "symbols"
