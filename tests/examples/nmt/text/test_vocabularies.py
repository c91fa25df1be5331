"""A run's pair of vocabularies: built by kind, saved and loaded, and their TensorFlow engine."""

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("the TensorFlow engine is the SavedModel's", allow_module_level=True)

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from examples.nmt.host.vocabularies import Vocabularies  # noqa: E402
from examples.nmt.host.vocabularies import build_vocabularies  # noqa: E402


def test_run_vocabularies_save_and_load(tmp_path):
    pairs = [(f"May {d}th, 1998", "1998-05-09") for d in range(4, 20)]
    vocabs = build_vocabularies(pairs, 100, source_kind="words", target_kind="char")
    vocabs.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "source_vocabulary.txt",
        "target_sentencepiece.model",
    ]
    loaded = Vocabularies.load(tmp_path)
    assert loaded.source.tokens == vocabs.source.tokens
    assert loaded.target.model == vocabs.target.model
    engines = loaded.tensorflow()
    assert (
        engines.source.tokens == vocabs.source.tokens
        and engines.target.model == vocabs.target.model
    )
    with pytest.raises(FileNotFoundError, match="no source vocabulary"):
        Vocabularies.load(tmp_path / "missing")
    with pytest.raises(ValueError, match="Expected a tokenizer"):
        build_vocabularies(pairs, source_kind="phones")


def test_letters_and_symbols_vocabularies_save_load_and_round_trip(tmp_path):
    pairs = [("Tomato", "T AH M EY T OW"), ("to mato", "P AH0 T"), ("potato", "T")]
    vocabs = build_vocabularies(pairs, 100, source_kind="letters", target_kind="symbols")
    vocabs.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "source_letters.txt",
        "target_symbols.txt",
    ]
    loaded = Vocabularies.load(tmp_path)
    assert (loaded.source.kind, loaded.target.kind) == ("letters", "symbols")
    assert loaded.source.tokens == vocabs.source.tokens
    engines = loaded.tensorflow()
    # Letters: lower-cased, one token a character, white space one boundary token.
    assert set(vocabs.source.tokens[4:]) == set("tomap\u2581")
    ids = engines.source.encode(tf.constant(["To  Mato", "pot"]))
    assert ids.to_list() == loaded.source.encode(["To  Mato", "pot"])
    tokens = [[loaded.source.tokens[i] for i in row] for row in ids.to_list()]
    assert tokens == [["t", "o", "\u2581", "m", "a", "t", "o"], ["p", "o", "t"]]
    assert engines.source.decode(ids.to_tensor()).numpy().tolist() == [b"to mato", b"pot"]
    assert loaded.source.decode(ids.to_list()) == ["to mato", "pot"]
    # Symbols: white-space-separated, case kept (AH0 and AH are two symbols).
    assert set(vocabs.target.tokens[4:]) == {"T", "AH", "M", "EY", "OW", "P", "AH0"}
    ids = engines.target.encode(tf.constant(["P  AH0 T", "t"]))
    assert engines.target.decode(ids.to_tensor()).numpy().tolist() == [b"P AH0 T", b"[UNK]"]
    assert loaded.target.decode(ids.to_list()) == ["P AH0 T", "[UNK]"]
