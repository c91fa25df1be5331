"""Word vocabularies: standardization, ids, saving, detokenization."""

import keras
import numpy as np
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based", allow_module_level=True)

tf = pytest.importorskip("tensorflow")

from examples.nmt.host.vocabularies import TokenVocabulary  # noqa: E402
from examples.nmt.host.vocabularies import Vocabularies  # noqa: E402
from examples.nmt.host.vocabularies import build_vocabularies  # noqa: E402
from examples.nmt.text import normalization  # noqa: E402
from examples.nmt.text import special  # noqa: E402
from examples.nmt.text import words  # noqa: E402


def test_standardize():
    texts = ["May 9th, 1998", "Ｃａｆé  l'HOMME [START]\u202f!", "", "a\x1cb\x0bc\u2028d\x85e"]
    got = normalization.standardize(texts).numpy().tolist()
    assert got == [b"may 9 th , 1998", "café l ' homme [ start ] !".encode(), b"", b"a b c d e"]


def test_vocabulary_ids_and_round_trip(tmp_path):
    examples = [("a b b", "x y"), ("b c", "y")]
    vocabs = build_vocabularies(examples)
    assert vocabs.source.tokens == ("[PAD]", "[UNK]", "[START]", "[END]", "b", "a", "c")
    assert (special.PAD_ID, special.UNK_ID, special.START_ID, special.END_ID) == (0, 1, 2, 3)
    vocabs.save(tmp_path)
    loaded = Vocabularies.load(tmp_path).tensorflow()
    assert (
        loaded.source.tokens == vocabs.source.tokens
        and loaded.target.tokens == vocabs.target.tokens
    )
    assert loaded.source.lookup(tf.constant(["b", "zzz"])).numpy().tolist() == [4, special.UNK_ID]
    assert loaded.target.decode([[2, 5, 4, 3, 4], [4, 0, 0, 0, 0]]).numpy().tolist() == [
        b"x y",
        b"y",
    ]
    small = build_vocabularies(examples, max_size=5)
    assert len(small.source) == 5
    odd = TokenVocabulary(special.RESERVED + ("\u00a7", "\u2029x", "\x1dy"))
    odd.save(tmp_path / "source_vocabulary.txt")
    assert Vocabularies.load(tmp_path).source.tokens == odd.tokens


def test_detokenize_stops_at_end_and_drops_specials():
    tokens = tf.constant(["[PAD]", "[UNK]", "[START]", "[END]", "a", "b"])
    ids = tf.constant([[2, 4, 1, 5, 3, 4], [4, 0, 5, 0, 0, 0], [3, 4, 4, 4, 4, 4]])
    np.testing.assert_array_equal(
        words.detokenize(ids, tokens).numpy(), [b"a [UNK] b", b"a b", b""]
    )
