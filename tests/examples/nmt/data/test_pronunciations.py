"""Pronouncing dictionaries: the reader, the bundled CMUdict builder, dict:PATH and --test."""

import bz2
import gzip
import lzma

import pytest

tf = pytest.importorskip("tensorflow")
tfds = pytest.importorskip("tensorflow_datasets")

from examples.nmt.data import pronouncing_dictionary  # noqa: E402
from examples.nmt.data import pronunciations  # noqa: E402
from examples.nmt.data import show  # noqa: E402
from examples.nmt.data import sources  # noqa: E402
from examples.nmt.data.arguments import is_pronunciation  # noqa: E402
from examples.nmt.host.splits import load_splits  # noqa: E402
from examples.nmt.host.text import source_key  # noqa: E402

# The three formats: CMUdict 0.7b (two spaces, WORD(1)), CMU Sphinx (one space,
# a trailing comment), Phonetisaurus (a tab).
CMUDICT_07B = [
    ";;; # CMUdict  --  Major Version: 0.07",
    "",
    "#HASH-MARK  HH AE1 SH M AA2 R K",
    "TOMATO  T AH0 M EY1 T OW2",
    "TOMATO(1)  T AH0 M AA1 T OW2",
]
SPHINX = [
    "tomato T AH0 M EY1 T OW2",
    "tomato(2) T AH0 M AA1 T OW2 # british",
    "aalborg AO1 L B AO0 R G",
]
PHONETISAURUS = ["tomato\tT AH M EY T OW", "aalborg\tAO L  B AO R G"]
# The standard split's test reference file: every pronunciation of a word on its line.
MULTI_REFERENCE = [
    "tomato\tT AH0 M EY1 T OW2\tT AH0 M AA1 T OW2",
    "aalborg\tAO1 L B AO0 R G",
    "either\tIY1 DH ER0\t\tAY1 DH ER0 \t",  # an empty field, a trailing tab
    "either(3)\tIY1 TH ER0",  # an alternate on its own line still counts
]


def write(path, lines, opener=open):
    with opener(path, "wb") as file:
        file.write(("\n".join(lines) + "\n").encode("utf-8"))
    return path


def texts(pairs, key="source"):
    return [pair[0 if key == "source" else 1] for pair in pairs]


def test_reads_the_cmudict_07b_format_with_stress_kept_or_removed(tmp_path):
    path = write(tmp_path / "cmudict-0.7b", CMUDICT_07B)
    assert list(pronunciations.read_pronunciations(path, stress=True)) == [
        ("#HASH-MARK", "HH AE1 SH M AA2 R K"),
        ("TOMATO", "T AH0 M EY1 T OW2"),
        ("TOMATO", "T AH0 M AA1 T OW2"),
    ]
    assert list(pronunciations.read_pronunciations(path)) == [
        ("#HASH-MARK", "HH AE SH M AA R K"),
        ("TOMATO", "T AH M EY T OW"),
        ("TOMATO", "T AH M AA T OW"),
    ]


@pytest.mark.parametrize("opener", [open, gzip.open, bz2.open, lzma.open])
def test_reads_the_sphinx_format_plain_or_compressed_dropping_comments(tmp_path, opener):
    suffix = {open: "", gzip.open: ".gz", bz2.open: ".bz2", lzma.open: ".xz"}[opener]
    path = write(tmp_path / f"cmudict.dict{suffix}", SPHINX, opener)
    assert list(pronunciations.read_pronunciations(path)) == [
        ("tomato", "T AH M EY T OW"),
        ("tomato", "T AH M AA T OW"),
        ("aalborg", "AO L B AO R G"),
    ]


def test_reads_the_phonetisaurus_tab_format(tmp_path):
    path = write(tmp_path / "train.dic", PHONETISAURUS)
    assert list(pronunciations.read_pronunciations(path, stress=True)) == [
        ("tomato", "T AH M EY T OW"),
        ("aalborg", "AO L B AO R G"),
    ]


def test_reads_every_tab_separated_pronunciation_of_a_line_as_one_entry(tmp_path):
    path = write(tmp_path / "cmudict.dic.test", MULTI_REFERENCE)
    assert list(pronunciations.read_pronunciations(path)) == [
        ("tomato", "T AH M EY T OW"),
        ("tomato", "T AH M AA T OW"),
        ("aalborg", "AO L B AO R G"),
        ("either", "IY DH ER"),
        ("either", "AY DH ER"),
        ("either", "IY TH ER"),
    ]
    line = "word\tW ER1 D # a comment\tW AO1 D"  # a comment ends the line, tabs and all
    assert pronunciations.parse_line(line) == ("word", ["W ER1 D"])
    assert pronunciations.parse_line("word W ER1  D") == ("word", ["W ER1 D"])


def test_a_multi_reference_test_file_gives_one_test_example_a_reference(tmp_path, capsys):
    path = write(tmp_path / "words.dict", word_list(600))
    test_path = write(tmp_path / "test.dict", MULTI_REFERENCE)
    splits = load_splits(f"dict:{path}", test=str(test_path))
    assert pairs(splits["test"]) == [
        ("aalborg", "AO L B AO R G"),
        ("either", "AY DH ER"),
        ("either", "IY DH ER"),
        ("either", "IY TH ER"),
        ("tomato", "T AH M AA T OW"),
        ("tomato", "T AH M EY T OW"),
    ]
    assert f"Test file {test_path}: 3 words, 6 references" in capsys.readouterr().out


def test_a_multi_reference_dictionary_writes_one_pronunciation_a_line(tmp_path, capsys):
    lines = [line.replace(" ", "\t", 1) for line in word_list(600)]  # 600 words, 200 (2)s
    lines += [f"{line}\tZ IY1 R OW0" for line in MULTI_REFERENCE[:2]]  # 3 and 2 fields
    path = write(tmp_path / "words.dict", lines)
    entries = list(pronunciations.read_pronunciations(path))
    assert len(entries) == 600 + 200 + 3 + 2  # every pronunciation is an entry
    out = tmp_path / "splits"
    show.main(["--dataset", f"dict:{path}", "--write-splits", str(out), "--show", "0"])
    written = []
    for name in ("train", "validation", "test"):
        text = (out / f"{name}.dict").read_text()
        assert all(line.count("\t") == 1 for line in text.splitlines()), name
        written += list(pronunciations.read_pronunciations(out / f"{name}.dict"))
    assert sorted(written) == sorted(entries)
    assert ("tomato", "Z IY R OW") in written and ("aalborg", "Z IY R OW") in written


def test_stress_removal_touches_only_a_digit_after_letters():
    assert pronunciations.remove_stress("ER0 AH1 2 K") == "ER AH 2 K"


@pytest.mark.parametrize("bad", ["tomato", "tomato\t", "(2) T OW"])
def test_a_line_without_phonemes_names_the_file_and_line(tmp_path, bad):
    path = write(tmp_path / "bad.dict", [*SPHINX, bad])
    with pytest.raises(pronunciations.DictionaryFormatError, match=r"bad\.dict, line 4: expected"):
        list(pronunciations.read_pronunciations(path))


def test_bad_utf8_and_missing_files_are_named(tmp_path):
    path = tmp_path / "latin1.dict"
    path.write_bytes(b"tomato T OW\nna\xefve N AY IY V\n")
    with pytest.raises(pronunciations.DictionaryFormatError, match=r"line 2: not UTF-8"):
        list(pronunciations.read_pronunciations(path))
    with pytest.raises(FileNotFoundError, match="no such dictionary file"):
        list(pronunciations.read_pronunciations(tmp_path / "missing.dict"))


def test_the_bundled_dictionary_is_the_pinned_cmudict_with_39_phonemes():
    pronouncing_dictionary.check_dictionary()  # its SHA-256
    entries = list(pronunciations.read_pronunciations(pronouncing_dictionary.DICTIONARY))
    phonemes = {phoneme for _, pron in entries for phoneme in pron.split()}
    assert len(phonemes) == 39  # the G2P papers' set, stress removed
    assert len(entries) == 135_166  # every line is an entry
    assert ("pronunciation", "P R OW N AH N S IY EY SH AH N") in entries


def test_a_changed_bundled_dictionary_is_refused(tmp_path):
    path = write(tmp_path / "cmudict.dict.xz", SPHINX, lzma.open)
    with pytest.raises(ValueError, match="Expected the bundled CMUdict with SHA-256"):
        pronouncing_dictionary.check_dictionary(str(path))


def test_builder_configs_keep_or_remove_stress(tmp_path, monkeypatch):
    path = write(tmp_path / "cmudict.dict.xz", SPHINX, lzma.open)
    monkeypatch.setattr(pronouncing_dictionary, "DICTIONARY", str(path))
    monkeypatch.setattr(pronouncing_dictionary, "check_dictionary", lambda: None)
    targets = {}
    for config in ("no_stress", "stress"):
        name = f"cmu_pronouncing_dictionary/{config}"
        builder = tfds.builder(name, data_dir=str(tmp_path / "tfds"))
        builder.download_and_prepare()
        train = tfds.as_numpy(builder.as_dataset(split="train"))
        targets[config] = sorted(example["target"].decode() for example in train)
    assert targets["stress"] == ["AO1 L B AO0 R G", "T AH0 M AA1 T OW2", "T AH0 M EY1 T OW2"]
    assert targets["no_stress"] == ["AO L B AO R G", "T AH M AA T OW", "T AH M EY T OW"]
    assert tfds.builder("cmu_pronouncing_dictionary").builder_config.name == "no_stress"


def test_the_builder_prepares_offline_without_download(tmp_path, monkeypatch):
    path = write(tmp_path / "cmudict.dict.xz", SPHINX * 10, lzma.open)
    monkeypatch.setattr(pronouncing_dictionary, "DICTIONARY", str(path))
    monkeypatch.setattr(pronouncing_dictionary, "check_dictionary", lambda: None)
    builder = sources.catalogue_builder("cmu_pronouncing_dictionary", str(tmp_path / "tfds"))
    assert builder.is_prepared()


def word_list(count):
    """``count`` distinct made-up words, each with one or two pronunciations."""
    lines = []
    for i in range(count):
        word = "w" + "".join(chr(ord("a") + int(d)) for d in str(i))
        lines.append(f"{word} W ER1 D {' '.join('D' for _ in str(i))}")
        if i % 3 == 0:
            lines.append(f"{word}(2) W AO1 D")
    return lines


def test_dict_dataset_splits_by_word_keeping_alternates_together(tmp_path):
    path = write(tmp_path / "words.dict", word_list(600))
    splits = load_splits(f"dict:{path}", held_out_fraction=0.1)
    home = {}
    for name, split in splits.items():
        for word in texts(split):
            assert home.setdefault(word, name) == name, word
    assert set(home.values()) == {"train", "validation", "test"}
    targets = texts(splits["train"], "target")
    assert all(not any(c.isdigit() for c in target) for target in targets)
    stressed = load_splits(f"dict:{path}", keep_stress=True)
    assert any("ER1" in target for target in texts(stressed["train"], "target"))


def test_a_test_file_replaces_the_hash_test_split_and_leaves_training(tmp_path, capsys):
    lines = word_list(600)
    path = write(tmp_path / "train.dict", lines)
    test_path = write(tmp_path / "test.dict", lines[:20] + ["unseen Y UW1"])
    splits = load_splits(f"dict:{path}", test=str(test_path))
    test_words = set(texts(splits["test"]))
    assert "unseen" in test_words and len(texts(splits["test"])) == 21
    for name in ("train", "validation"):
        assert not test_words & set(texts(splits[name])), name
    kept = len(texts(splits["train"])) + len(texts(splits["validation"]))
    total = sum(1 for _ in pronunciations.read_pronunciations(path))
    dropped = sum(1 for word, _ in pronunciations.read_pronunciations(path) if word in test_words)
    assert kept == total - dropped
    assert f"Dropped {dropped} of {total} training examples" in capsys.readouterr().out


def pairs(dataset):
    return sorted(zip(texts(dataset), texts(dataset, "target"), strict=True))


def test_written_splits_read_back_as_the_same_split(tmp_path, capsys):
    path = write(tmp_path / "words.dict", word_list(600))
    splits = load_splits(f"dict:{path}")
    out = tmp_path / "splits"
    show.main(["--dataset", f"dict:{path}", "--write-splits", str(out), "--show", "0"])
    printed = capsys.readouterr().out
    for name, split in splits.items():
        written = list(pronunciations.read_pronunciations(out / f"{name}.dict"))
        assert sorted(written) == pairs(split), name
        assert f"{name}.dict: {len(written):,} entries" in printed
    # Training and validation in one file, the test file as --test: the same three splits.
    rest = (out / "train.dict").read_text() + (out / "validation.dict").read_text()
    (tmp_path / "rest.dict").write_text(rest)
    again = load_splits(f"dict:{tmp_path / 'rest.dict'}", test=str(out / "test.dict"))
    for name in splits:
        assert pairs(again[name]) == pairs(splits[name]), name


def test_write_splits_refuses_what_would_not_read_back_and_other_datasets(tmp_path, capsys):
    for word, phonemes in [("", "T AH"), ("tab\tword", "T AH"), ("word", " "), ("a", "B\nC")]:
        with pytest.raises(pronunciations.DictionaryFormatError, match="Expected entries"):
            pronunciations.write_pronunciations([(word, phonemes)], tmp_path / "bad.dict")
    with pytest.raises(SystemExit) as exit_info:
        show.main(["--dataset", "date_normalization/small", "--write-splits", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "expected --write-splits with a pronunciation dataset" in capsys.readouterr().err


def test_a_test_file_for_a_tfds_pronunciation_dataset_and_a_tsv(tmp_path, monkeypatch):
    path = write(tmp_path / "cmudict.dict.xz", word_list(300), lzma.open)
    monkeypatch.setattr(pronunciations, "DICTIONARY", str(path))
    monkeypatch.setattr(pronunciations, "check_dictionary", lambda: None)
    test_path = write(tmp_path / "test.dict", word_list(5))
    splits = load_splits("cmu_pronouncing_dictionary", test=str(test_path))
    test_words = set(texts(splits["test"]))
    assert len(test_words) == 5
    assert not test_words & (set(texts(splits["train"])) | set(texts(splits["validation"])))
    pairs = [f"English {i}.\tAutre {i} ." for i in range(400)]
    tsv = write(tmp_path / "pairs.txt", pairs)
    tsv_test = write(tmp_path / "test.txt", pairs[:3])
    splits = load_splits(f"tsv:{tsv}", test=str(tsv_test))
    assert texts(splits["test"]) == ["Autre 0 .", "Autre 1 .", "Autre 2 ."]


def test_a_test_file_needs_a_file_dataset(tmp_path):
    test_path = write(tmp_path / "test.dict", SPHINX)
    with pytest.raises(ValueError, match="Expected --test with a tsv:PATH, dict:PATH"):
        load_splits("date_normalization/small", test=str(test_path))


def test_source_keys_fold_case_and_space():
    keys = [source_key(text) for text in ["Tomato", " tomato ", "TO  MATO"]]
    assert keys == ["tomato", "tomato", "to mato"]


def test_is_pronunciation():
    assert is_pronunciation("dict:x.dict")
    assert is_pronunciation("cmu_pronouncing_dictionary/stress")
    assert not is_pronunciation("tsv:x.txt")
    assert not is_pronunciation("date_normalization")


def test_join_words_is_for_pronunciations_only(tmp_path):
    tsv = write(tmp_path / "pairs.txt", [f"English {i}.\tAutre {i} ." for i in range(400)])
    with pytest.raises(ValueError, match="Expected --join-words with a pronunciation dataset"):
        load_splits(f"tsv:{tsv}", join_words=2)
    path = write(tmp_path / "words.dict", word_list(600))
    splits = load_splits(f"dict:{path}", join_words=3)
    sizes = {len(source.split()) for source in texts(splits["train"])}
    assert sizes == {1, 2, 3}
    assert {len(source.split()) for source in texts(splits["test"])} == {1}  # test: one word
