"""A run's pair of vocabularies: built by kind, saved and loaded."""

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based", allow_module_level=True)

tf = pytest.importorskip("tensorflow")

from examples.nmt.text.vocabularies import Vocabularies  # noqa: E402
from examples.nmt.text.vocabularies import build_vocabularies  # noqa: E402


def test_run_vocabularies_save_and_load(tmp_path):
    examples = tf.data.Dataset.from_tensor_slices(
        {"source": [f"May {d}th, 1998" for d in range(4, 20)], "target": ["1998-05-09"] * 16}
    )
    vocabs = build_vocabularies(examples, 100, source_kind="words", target_kind="char")
    vocabs.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "source_vocabulary.txt",
        "target_sentencepiece.model",
    ]
    loaded = Vocabularies.load(tmp_path)
    assert loaded.source.tokens == vocabs.source.tokens
    assert loaded.target.model == vocabs.target.model
    with pytest.raises(FileNotFoundError, match="no source vocabulary"):
        Vocabularies.load(tmp_path / "missing")
    with pytest.raises(ValueError, match="Expected a tokenizer"):
        build_vocabularies(examples, source_kind="letters")
