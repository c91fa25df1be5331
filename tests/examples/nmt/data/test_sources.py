"""Loading parallel text (TFDS catalogue, TSV, TranslateFolder, dates) into lists of pairs."""

import pathlib
import zipfile

import pytest

tf = pytest.importorskip("tensorflow")  # the mocked TFDS catalogue
tfds = pytest.importorskip("tensorflow_datasets")

import tiny  # noqa: E402

from examples.nmt.data import show  # noqa: E402
from examples.nmt.data import sources  # noqa: E402
from examples.nmt.data import tsv  # noqa: E402
from examples.nmt.host.splits import load_splits  # noqa: E402
from examples.nmt.host.text import source_key  # noqa: E402

FRA_ENG = tiny.ROOT.parent / "shared" / "data" / "fra-eng.zip"
LINES = ["Go.\tVa !", "Run!\tCours !\tCC-BY 2.0 (France) Attribution", "", "Who?\tQui ?"]


def texts(pairs: list, key: str = "source") -> list[str]:
    return [pair[0 if key == "source" else 1] for pair in pairs]


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
    splits = load_splits(f"tsv:{write_tsv(tmp_path / 'dups.txt', lines)}", held_out_fraction=0.2)
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
    splits = load_splits(f"tsv:{path}")
    source, target = splits["train"][0]
    assert source.startswith("Bonjour") and target.startswith("Hello")
    reverse = load_splits(f"tsv:{path}", source_lang="en", max_examples=3)
    assert all(source.startswith("Hello") for source in texts(reverse["train"]))
    assert len(texts(reverse["train"])) == 3


def test_main_prints_examples(tmp_path, capsys):
    path = write_tsv(tmp_path / "pairs.txt", [f"Hello {i}.\tBonjour {i}." for i in range(50)])
    show.main(["--dataset", f"tsv:{path}", "--show", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.endswith(":")] == ["train:", "validation:", "test:"]
    assert sum("->" in line for line in lines) == 6


@pytest.mark.skipif(not FRA_ENG.exists(), reason="needs shared/data/fra-eng.zip")
def test_real_tatoeba_file_loads():
    assert sum(1 for _ in tsv.read_pairs(FRA_ENG)) == 142_787
    splits = load_splits(f"tsv:{FRA_ENG}", max_examples=2000)
    seen = {name: set(texts(split)) for name, split in splits.items()}
    assert all(len(s) > 1500 for s in seen.values())
    assert not seen["train"] & seen["test"] and not seen["validation"] & seen["test"]


# --- TFDS folder and catalogue ---------------------------------------------


def test_translate_folder_layout(tmp_path):
    for split, n in (("train", 40), ("test", 10)):
        (tmp_path / f"en.{split}.txt").write_text("".join(f"{split} hello {i}\n" for i in range(n)))
        (tmp_path / f"fr.{split}.txt").write_text(
            "".join(f"{split} bonjour {i}\n" for i in range(n))
        )
    splits = load_splits(f"folder:{tmp_path}", source_lang="fr", held_out_fraction=0.2)
    assert all(s.startswith("test bonjour") for s in texts(splits["test"]))
    assert all(t.startswith("test hello") for t in texts(splits["test"], "target"))
    carved = texts(splits["validation"])
    assert carved and not set(carved) & set(texts(splits["train"]))
    assert len(carved) + len(texts(splits["train"])) == 40
    with pytest.raises(ValueError, match="--source-lang"):
        load_splits(f"folder:{tmp_path}")


def scripted_as_dataset(self, split, **kwargs):
    """40 examples per split, ``"<lang> <split> <i % 30>"``: duplicates included."""
    languages = list(self.info.features.keys())
    rows = {lang: [f"{lang} {split} {i % 30}" for i in range(40)] for lang in languages}
    return tf.data.Dataset.from_tensor_slices(rows)


def mock_catalogue(tmp_path, name, split_names):
    tiny.write_tfds_metadata(tmp_path, name, split_names)
    return tfds.testing.mock_data(
        as_dataset_fn=scripted_as_dataset,
        data_dir=str(tmp_path),
        policy=tfds.testing.MockPolicy.USE_FILES,
    )


def test_catalogue_dataset_uses_supervised_keys(tmp_path):
    with mock_catalogue(tmp_path, "ted_hrlr_translate/pt_to_en", ["train", "validation", "test"]):
        splits = load_splits("ted_hrlr_translate/pt_to_en")
        reverse = load_splits("ted_hrlr_translate/pt_to_en", source_lang="en")
    assert texts(splits["validation"])[0] == "pt validation 0"
    assert texts(splits["validation"], "target")[0] == "en validation 0"
    assert texts(reverse["test"])[0] == "en test 0"
    assert len(texts(splits["train"])) == 40


def test_catalogue_dataset_without_held_out_splits_is_carved(tmp_path):
    with mock_catalogue(tmp_path, "para_crawl/enfr", ["train"]):
        splits = load_splits("para_crawl/enfr", held_out_fraction=0.2)
    sets = {name: set(texts(split)) for name, split in splits.items()}
    assert sets["validation"] and sets["test"]
    assert not sets["train"] & sets["validation"] and not sets["train"] & sets["test"]
    assert all(s.startswith("en train") for s in sets["test"])


def test_catalogue_dataset_with_default_mock_data(tmp_path):
    tiny.write_tfds_metadata(tmp_path, "wmt14_translate/de-en", ["train", "validation", "test"])
    with tfds.testing.mock_data(num_examples=4, data_dir=str(tmp_path)):
        splits = load_splits("wmt14_translate/de-en", max_examples=3)
    assert {name: len(texts(split)) for name, split in splits.items()} == {
        "train": 3,
        "validation": 3,
        "test": 3,
    }


def test_language_pair():
    assert sources.language_pair(["en", "pt"], ("pt", "en"), None, None) == ("pt", "en")
    assert sources.language_pair(["en", "pt"], ("pt", "en"), None, "pt") == ("en", "pt")
    assert sources.language_pair(["de", "en"], None, "de", None) == ("de", "en")
    assert sources.language_pair(["de", "en", "fr"], None, "fr", "de") == ("fr", "de")
    for bad in [
        (["de", "en", "fr"], None, "fr", None),
        (["de", "en"], None, None, None),
        (["de", "en"], None, "es", None),
        (["de", "en"], ({"image": "x"}, "label"), None, None),
    ]:
        with pytest.raises(ValueError, match="--source-lang/--target-lang"):
            sources.language_pair(*bad)


def test_date_normalization_is_generated_with_alignments():
    splits = load_splits("date_normalization/small")
    assert {name: len(pairs) for name, pairs in splits.items()} == {
        "train": 2000,
        "validation": 200,
        "test": 200,
    }
    source, target = splits["test"][0]
    links = splits["test"][0].alignment
    assert links.dtype == "int32" and links.ndim == 2 and links.shape[1] == 2
    assert len(target) == 10 and target[4] == target[7] == "-"  # "1998-05-09"
    # Every target character but the two dashes is linked to a source token.
    assert sorted(set(links[:, 0].tolist())) == [0, 1, 2, 3, 5, 6, 8, 9]
    assert links[:, 1].max() < len(source.split()) * 4  # indices into the source's tokens
    assert not {s for s, _ in splits["test"]} & {s for s, _ in splits["train"]}
    with pytest.raises(ValueError, match="CONFIG in"):
        load_splits("date_normalization/huge")


# --- Vocabularies and batches ----------------------------------------------


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
    splits = load_splits(f"tsv:{path}", held_out_fraction=0.1)

    def keys(name):
        return {source_key(source) for source, _ in splits[name]}

    test, train, validation = keys("test"), keys("train"), keys("validation")
    assert len(test) > 5 and len(validation) > 5
    assert not test & (train | validation) and not validation & train
    assert len(test | train | validation) == 300
