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

from examples.nmt import data  # noqa: E402
from examples.nmt import evaluate  # noqa: E402
from examples.nmt import tokenizer  # noqa: E402
from examples.nmt import vocabulary  # noqa: E402

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


def batches(texts):
    return tf.data.Dataset.from_tensor_slices(texts).batch(64)


@pytest.fixture(scope="module")
def unigram():
    return tokenizer.SentencePieceVocabulary.train(batches(CORPUS), "unigram", 80)


def test_unigram_round_trip_keeps_case_and_punctuation(unigram):
    # The module-scoped model outlives the per-test `set_random_seed`, which
    # clears TensorFlow's kernel cache: the model's resource must survive it.
    keras.utils.set_random_seed(7)
    assert unigram.tokens[:4] == vocabulary.RESERVED
    texts = ["Am I fat?", "Let's go.", "Where is Tom?", "The café is open."]
    ids = unigram.encode(tf.constant(texts))
    assert ids.dtype == tf.int32 and ids.shape.rank == 2
    assert int(tf.reduce_min(ids.flat_values)) >= 4  # no special ids in encoded text
    assert vocabulary.UNK_ID not in ids.flat_values.numpy()
    dense = ids.to_tensor(default_value=vocabulary.PAD_ID)
    assert [t.decode() for t in unigram.decode(dense).numpy()] == texts
    # [START] is dropped and decoding stops at [END].
    with_specials = tf.concat(
        [tf.fill([4, 1], vocabulary.START_ID), dense, tf.fill([4, 1], vocabulary.END_ID), dense],
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
            return self.vocab.encode(texts).to_tensor(default_value=vocabulary.PAD_ID)

        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
        def decode(self, ids):
            return self.vocab.decode(ids)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def standardize(self, texts):
            return vocabulary.standardize(texts)

    tf.saved_model.save(Encoder(unigram), str(tmp_path / "encoder"))
    loaded = tf.saved_model.load(str(tmp_path / "encoder"))
    padded = tf.ragged.constant(expected).to_tensor(default_value=vocabulary.PAD_ID)
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
    chars = tokenizer.SentencePieceVocabulary.train(batches(dates), "char", 64)
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
        tokenizer.SentencePieceVocabulary(writer.getvalue())
    with pytest.raises(TypeError, match="bytes"):
        tokenizer.SentencePieceVocabulary("not a model")
    with pytest.raises(ValueError, match="model_type"):
        tokenizer.SentencePieceVocabulary.train(batches(CORPUS), "word-piece")


def test_run_vocabularies_save_and_load(tmp_path):
    examples = tf.data.Dataset.from_tensor_slices(
        {"source": [f"May {d}th, 1998" for d in range(4, 20)], "target": ["1998-05-09"] * 16}
    )
    vocabs = data.build_vocabularies(examples, 100, source_kind="words", target_kind="char")
    vocabs.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "source_vocabulary.txt",
        "target_sentencepiece.model",
    ]
    loaded = data.Vocabularies.load(tmp_path)
    assert loaded.source.tokens == vocabs.source.tokens
    assert loaded.target.model == vocabs.target.model
    with pytest.raises(FileNotFoundError, match="no source vocabulary"):
        data.Vocabularies.load(tmp_path / "missing")
    with pytest.raises(ValueError, match="Expected a tokenizer"):
        data.build_vocabularies(examples, source_kind="letters")


def test_corpus_scores_are_cased_13a_bleu_on_raw_references_with_signatures():
    references = ["Am I fat?", "Let's go to the beach.", "Tom isn't here yet."]
    scores = evaluate.corpus_scores(references, references)
    assert scores["bleu"] == pytest.approx(100.0) and scores["chrf"] == pytest.approx(100.0)
    for part in ("case:mixed", "tok:13a", "nrefs:1", f"version:{sacrebleu.__version__}"):
        assert part in scores["bleu_signature"]
    assert scores["chrf_signature"].startswith("nrefs:1|case:mixed")
    # Lower-cased, pre-tokenized outputs no longer score as natural text.
    tokenized = ["am i fat ?", "let ' s go to the beach .", "tom isn ' t here yet ."]
    lowered = evaluate.corpus_scores(tokenized, references)
    expected = sacrebleu.corpus_bleu(tokenized, [references]).score
    assert lowered["bleu"] == pytest.approx(expected) and lowered["bleu"] < 50.0
    with pytest.raises(ValueError, match="one hypothesis per reference"):
        evaluate.corpus_scores(["a"], references)


def test_tsv_test_sources_are_unseen_in_training_after_normalization(tmp_path):
    # Each source recurs as full-width, upper-cased and re-spaced variants,
    # with different references; none may straddle two splits.
    lines = []
    for i in range(300):
        source = f"Phrase numéro {i} ."
        variants = [source, source.upper(), source.replace(" ", "  "), "\uff30" + source[1:]]
        lines += [f"Reference {i}.{k}\t{text}" for k, text in enumerate(variants)]
    path = tmp_path / "pairs.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    splits = data.load_splits(f"tsv:{path}", held_out_fraction=0.1)

    def keys(name):
        sources = splits[name].map(lambda e: e["source"]).batch(2048)
        normalized = [
            tf.strings.lower(vocabulary.normalize(b), encoding="utf-8").numpy() for b in sources
        ]
        return {b" ".join(text.split()) for batch in normalized for text in batch}

    test, train, validation = keys("test"), keys("train"), keys("validation")
    assert len(test) > 5 and len(validation) > 5
    assert not test & (train | validation) and not validation & train
    assert len(test | train | validation) == 300


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_masked_crossentropy_is_the_token_mean_with_and_without_a_padding_mask(label_smoothing):
    import numpy as np

    from examples.nmt import recipes

    y_true = np.array([[4, 5, 0, 0], [6, 0, 0, 0]])
    logits = np.random.default_rng(0).normal(size=(2, 4, 8)).astype("float32")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    tokens = [(0, 0), (0, 1), (1, 0)]
    expected = np.mean(
        [
            (1 - label_smoothing) * -log_probs[b, t, y_true[b, t]]
            + label_smoothing * -log_probs[b, t].mean()
            for b, t in tokens
        ]
    )
    loss = recipes.MaskedCrossentropy(label_smoothing)
    # The model's logits carry the padding mask of the target embedding
    # (mask_zero=True); Keras keeps it on the tensor, as here.
    masked = tf.constant(logits)
    masked._keras_mask = tf.constant(y_true != 0)
    np.testing.assert_allclose(float(loss(y_true, logits)), expected, rtol=1e-6)
    np.testing.assert_allclose(float(loss(y_true, masked)), expected, rtol=1e-6)
    if label_smoothing == 0.0:
        builtin = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
        np.testing.assert_allclose(
            float(loss(y_true, logits)), float(builtin(y_true, logits)), rtol=1e-6
        )
