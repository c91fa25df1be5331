"""Loading parallel text (TFDS catalogue, TSV, TranslateFolder), vocabularies, batches."""

import os
import pathlib
import zipfile

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tfds = pytest.importorskip("tensorflow_datasets")

from examples.nmt import data  # noqa: E402
from examples.nmt import tsv  # noqa: E402
from examples.nmt import vocabulary  # noqa: E402

FRA_ENG = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "fra-eng.zip"
LINES = ["Go.\tVa !", "Run!\tCours !\tCC-BY 2.0 (France) Attribution", "", "Who?\tQui ?"]


def texts(dataset: tf.data.Dataset, key: str = "source") -> list[str]:
    return [t.decode() for t in dataset.map(lambda ex: ex[key]).as_numpy_iterator()]


def write_tsv(path: pathlib.Path, lines: list[str]) -> pathlib.Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_zip(path: pathlib.Path, lines: list[str]) -> pathlib.Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("_about.txt", "attribution")
        archive.writestr("fra.txt", "\n".join(lines) + "\n")
    return path


# --- TSV -------------------------------------------------------------------


@pytest.mark.parametrize("writer", [write_tsv, write_zip])
def test_tsv_reads_plain_and_zipped(tmp_path, writer):
    path = writer(tmp_path / ("pairs.zip" if writer is write_zip else "pairs.txt"), LINES)
    assert list(tsv.read_pairs(path)) == [("Go.", "Va !"), ("Run!", "Cours !"), ("Who?", "Qui ?")]


@pytest.mark.parametrize("writer", [write_tsv, write_zip])
@pytest.mark.parametrize("bad_line", ["only english", "a\tb\tc\td", "\tno english", "no other\t "])
def test_tsv_malformed_line_names_file_and_line(tmp_path, writer, bad_line):
    path = writer(
        tmp_path / ("pairs.zip" if writer is write_zip else "pairs.txt"), LINES + [bad_line]
    )
    with pytest.raises(tsv.TsvFormatError, match=r"pairs\.(txt|zip:fra\.txt), line 5:"):
        list(tsv.read_pairs(path))


def test_tsv_rejects_bad_utf8_with_line_number(tmp_path):
    path = tmp_path / "pairs.txt"
    path.write_bytes(b"Go.\tVa !\nbad\t\xff\xfe\n")
    with pytest.raises(tsv.TsvFormatError, match=r"pairs\.txt, line 2: not UTF-8"):
        list(tsv.read_pairs(path))


def test_tsv_zip_needs_exactly_one_text_file(tmp_path):
    path = tmp_path / "two.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.txt", "Go.\tVa !\n")
        archive.writestr("b.txt", "Go.\tVa !\n")
    with pytest.raises(tsv.TsvFormatError, match="Expected one"):
        list(tsv.read_pairs(path))


def test_tsv_splits_by_source_hash_keeping_duplicates_together(tmp_path):
    lines = [
        f"English {i % 150}.\t{'Phrase' if i % 2 else 'PHRASE'}  {i % 150} ." for i in range(1200)
    ]
    splits = data.load_splits(
        f"tsv:{write_tsv(tmp_path / 'dups.txt', lines)}", held_out_fraction=0.2
    )
    assert set(splits) == {"train", "validation", "test"}
    home = {}
    for name, split in splits.items():
        for source in texts(split):
            key = " ".join(source.lower().split())
            assert home.setdefault(key, name) == name, f"{source!r} is in {home[key]} and {name}"
    assert sum(len(texts(split)) for split in splits.values()) == 1200
    assert 10 < sum(name == "test" for name in home.values()) < 60


def test_tsv_direction_defaults_to_other_to_english(tmp_path):
    path = write_tsv(tmp_path / "pairs.txt", [f"Hello {i}.\tBonjour {i}." for i in range(50)])
    splits = data.load_splits(f"tsv:{path}")
    pairs = [(ex["source"], ex["target"]) for ex in splits["train"].take(1).as_numpy_iterator()]
    assert pairs[0][0].startswith(b"Bonjour") and pairs[0][1].startswith(b"Hello")
    reverse = data.load_splits(f"tsv:{path}", source_lang="en", max_examples=3)
    assert all(source.startswith("Hello") for source in texts(reverse["train"]))
    assert len(texts(reverse["train"])) == 3


def test_main_prints_examples(tmp_path, capsys):
    path = write_tsv(tmp_path / "pairs.txt", [f"Hello {i}.\tBonjour {i}." for i in range(50)])
    data.main(["--dataset", f"tsv:{path}", "--show", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.endswith(":")] == ["train:", "validation:", "test:"]
    assert sum("->" in line for line in lines) == 6


@pytest.mark.skipif(not FRA_ENG.exists(), reason="needs shared/data/fra-eng.zip")
def test_real_tatoeba_file_loads():
    assert sum(1 for _ in tsv.read_pairs(FRA_ENG)) == 142_787
    splits = data.load_splits(f"tsv:{FRA_ENG}", max_examples=2000)
    sources = {name: set(texts(split)) for name, split in splits.items()}
    assert all(len(s) > 1500 for s in sources.values())
    assert not sources["train"] & sources["test"] and not sources["validation"] & sources["test"]


# --- TFDS folder and catalogue ---------------------------------------------


def test_translate_folder_layout(tmp_path):
    for split, n in (("train", 40), ("test", 10)):
        (tmp_path / f"en.{split}.txt").write_text("".join(f"{split} hello {i}\n" for i in range(n)))
        (tmp_path / f"fr.{split}.txt").write_text(
            "".join(f"{split} bonjour {i}\n" for i in range(n))
        )
    splits = data.load_splits(f"folder:{tmp_path}", source_lang="fr", held_out_fraction=0.2)
    assert all(s.startswith("test bonjour") for s in texts(splits["test"]))
    assert all(t.startswith("test hello") for t in texts(splits["test"], "target"))
    carved = texts(splits["validation"])
    assert carved and not set(carved) & set(texts(splits["train"]))
    assert len(carved) + len(texts(splits["train"])) == 40
    with pytest.raises(ValueError, match="--source-lang"):
        data.load_splits(f"folder:{tmp_path}")


def write_metadata(data_dir: pathlib.Path, name: str, split_names: list[str]) -> None:
    """TFDS metadata with the given splits, so ``mock_data`` knows them offline."""
    builder = tfds.builder(name, data_dir=str(data_dir))
    infos = [
        tfds.core.SplitInfo(name=split, shard_lengths=[40], num_bytes=0) for split in split_names
    ]
    builder.info.set_splits(tfds.core.SplitDict(infos))
    os.makedirs(builder.data_dir)
    builder.info.write_to_directory(builder.data_dir)


def scripted_as_dataset(self, split, **kwargs):
    """40 examples per split, ``"<lang> <split> <i % 30>"``: duplicates included."""
    languages = list(self.info.features.keys())
    rows = {lang: [f"{lang} {split} {i % 30}" for i in range(40)] for lang in languages}
    return tf.data.Dataset.from_tensor_slices(rows)


def mock_catalogue(tmp_path, name, split_names):
    write_metadata(tmp_path, name, split_names)
    return tfds.testing.mock_data(
        as_dataset_fn=scripted_as_dataset,
        data_dir=str(tmp_path),
        policy=tfds.testing.MockPolicy.USE_FILES,
    )


def test_catalogue_dataset_uses_supervised_keys(tmp_path):
    with mock_catalogue(tmp_path, "ted_hrlr_translate/pt_to_en", ["train", "validation", "test"]):
        splits = data.load_splits("ted_hrlr_translate/pt_to_en")
        reverse = data.load_splits("ted_hrlr_translate/pt_to_en", source_lang="en")
    assert texts(splits["validation"])[0] == "pt validation 0"
    assert texts(splits["validation"], "target")[0] == "en validation 0"
    assert texts(reverse["test"])[0] == "en test 0"
    assert len(texts(splits["train"])) == 40


def test_catalogue_dataset_without_held_out_splits_is_carved(tmp_path):
    with mock_catalogue(tmp_path, "para_crawl/enfr", ["train"]):
        splits = data.load_splits("para_crawl/enfr", held_out_fraction=0.2)
    sets = {name: set(texts(split)) for name, split in splits.items()}
    assert sets["validation"] and sets["test"]
    assert not sets["train"] & sets["validation"] and not sets["train"] & sets["test"]
    assert all(s.startswith("en train") for s in sets["test"])


def test_catalogue_dataset_with_default_mock_data(tmp_path):
    write_metadata(tmp_path, "wmt14_translate/de-en", ["train", "validation", "test"])
    with tfds.testing.mock_data(num_examples=4, data_dir=str(tmp_path)):
        splits = data.load_splits("wmt14_translate/de-en", max_examples=3)
    assert {name: len(texts(split)) for name, split in splits.items()} == {
        "train": 3,
        "validation": 3,
        "test": 3,
    }


def test_language_pair():
    assert data.language_pair(["en", "pt"], ("pt", "en"), None, None) == ("pt", "en")
    assert data.language_pair(["en", "pt"], ("pt", "en"), None, "pt") == ("en", "pt")
    assert data.language_pair(["de", "en"], None, "de", None) == ("de", "en")
    assert data.language_pair(["de", "en", "fr"], None, "fr", "de") == ("fr", "de")
    for bad in [
        (["de", "en", "fr"], None, "fr", None),
        (["de", "en"], None, None, None),
        (["de", "en"], None, "es", None),
        (["de", "en"], ({"image": "x"}, "label"), None, None),
    ]:
        with pytest.raises(ValueError, match="--source-lang/--target-lang"):
            data.language_pair(*bad)


def test_date_normalization_loads_with_alignments(date_data_dir):
    splits = data.load_splits("date_normalization/small", data_dir=str(date_data_dir))
    example = next(splits["test"].as_numpy_iterator())
    assert set(example) == {"source", "target", "alignment"}
    assert example["alignment"].shape[1] == 2
    assert len(example["target"]) == 10  # "1998-05-09"


# --- Vocabularies and batches ----------------------------------------------


def test_standardize():
    texts = ["May 9th, 1998", "Ｃａｆé  l'HOMME [START]\u202f!", "", "a\x1cb\x0bc\u2028d\x85e"]
    got = vocabulary.standardize(texts).numpy().tolist()
    assert got == [b"may 9 th , 1998", "café l ' homme [ start ] !".encode(), b"", b"a b c d e"]


def test_vocabulary_ids_and_round_trip(tmp_path):
    examples = tf.data.Dataset.from_tensor_slices(
        {"source": ["a b b", "b c"], "target": ["x y", "y"]}
    )
    vocabs = data.build_vocabularies(examples)
    assert vocabs.source.tokens == ("[PAD]", "[UNK]", "[START]", "[END]", "b", "a", "c")
    assert (data.PAD_ID, data.UNK_ID, data.START_ID, data.END_ID) == (0, 1, 2, 3)
    vocabs.save(tmp_path)
    loaded = data.Vocabularies.load(tmp_path)
    assert (
        loaded.source.tokens == vocabs.source.tokens
        and loaded.target.tokens == vocabs.target.tokens
    )
    assert loaded.source.lookup(tf.constant(["b", "zzz"])).numpy().tolist() == [4, data.UNK_ID]
    assert loaded.target.decode([[2, 5, 4, 3, 4], [4, 0, 0, 0, 0]]).numpy().tolist() == [
        b"x y",
        b"y",
    ]
    small = data.build_vocabularies(examples, max_size=5)
    assert len(small.source) == 5
    odd = vocabulary.Vocabulary(vocabulary.RESERVED + ("\u00a7", "\u2029x", "\x1dy"))
    odd.save(tmp_path / "odd.txt")
    assert vocabulary.Vocabulary.load(tmp_path / "odd.txt").tokens == odd.tokens


def encoded_batches(examples, **kwargs):
    vocabs = data.build_vocabularies(examples)
    return vocabs, list(data.make_batches(examples, vocabs, **kwargs).as_numpy_iterator())


def test_make_batches_layout():
    examples = tf.data.Dataset.from_tensor_slices(
        {
            "source": ["un deux trois", "quatre", "cinq six"],
            "target": ["one two three", "four", "five six"],
        }
    )
    vocabs, batches = encoded_batches(examples, batch_size=2)
    ((source, target_in), target_out) = batches[0]
    assert source.dtype == target_in.dtype == target_out.dtype == np.int32
    assert source.shape == (2, 3) and target_in.shape == target_out.shape == (2, 4)
    assert np.all(target_in[:, 0] == data.START_ID)
    assert target_out[0, 3] == data.END_ID and target_out[1, 1] == data.END_ID
    assert np.all(target_in[1, 2:] == data.PAD_ID) and np.all(source[1, 1:] == data.PAD_ID)
    np.testing.assert_array_equal(
        target_in[:, 1:], np.where(target_out[:, :-1] == data.END_ID, 0, target_out[:, :-1])
    )
    assert vocabs.source.decode(source).numpy().tolist() == [b"un deux trois", b"quatre"]
    assert vocabs.target.decode(target_out).numpy().tolist() == [b"one two three", b"four"]


def test_make_batches_truncates_and_buckets():
    sentences = [" ".join(["w"] * n) for n in range(1, 41)]
    examples = tf.data.Dataset.from_tensor_slices({"source": sentences, "target": sentences})
    _, batches = encoded_batches(examples, batch_size=4, training=True, max_length=20)
    assert sum(len(b[1]) for b in batches) == 40
    for (source, target_in), _ in batches:
        assert source.shape[1] <= 20 and target_in.shape[1] <= 20
        lengths = np.count_nonzero(target_in, axis=1)
        assert lengths.max() - lengths.min() <= 8  # Bucketed by length.
    _, again = encoded_batches(examples, batch_size=4, training=True, max_length=20)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(batches, again, strict=True))  # Seeded.


def test_make_batches_alignment_matrices(date_data_dir):
    splits = data.load_splits(
        "date_normalization/small", data_dir=str(date_data_dir), max_examples=8
    )
    vocabs = data.build_vocabularies(splits["train"], source_kind="words", target_kind="char")
    (source, _), target_out, alignment = next(
        data.make_batches(
            splits["test"], vocabs, batch_size=8, with_alignment=True
        ).as_numpy_iterator()
    )
    assert alignment.shape == target_out.shape + source.shape[1:] and alignment.dtype == np.float32
    raw = list(splits["test"].as_numpy_iterator())
    for b, example in enumerate(raw):
        expected = np.zeros(alignment.shape[1:], np.float32)
        expected[tuple(example["alignment"].T)] = 1.0
        np.testing.assert_array_equal(alignment[b], expected)
        assert not alignment[b, 10].any()  # The [END] row.
    plain = next(data.make_batches(splits["test"], vocabs, batch_size=8).as_numpy_iterator())
    assert len(plain) == 2


def test_encode_texts():
    vocab = vocabulary.Vocabulary(vocabulary.RESERVED + ("hello", "world"))
    ids = data.encode_texts(tf.constant(["Hello, world!", "hello"]), vocab, max_length=3)
    assert ids.numpy().tolist() == [[4, 1, 5], [4, 0, 0]]
