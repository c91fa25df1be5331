"""Where the parallel text comes from: TFDS, ``tsv:``, ``dict:``, ``folder:``, dates, CMUdict.

``load_splits`` reads one of

* a TFDS catalogue dataset, e.g. ``"ted_hrlr_translate/pt_to_en"``,
  ``"wmt14_translate/de-en"``, ``"para_crawl/enfr"``: source and target
  come from the supervised keys, or from ``source_lang``/``target_lang``;
  it must be prepared in the data dir, or ``download=True`` (``--download``)
  downloads and prepares it (``catalogue_builder``);
* ``"date_normalization"`` (the default): generated locally, no download,
  with gold alignments (see ``examples.nmt.data.date_normalization``);
* ``"cmu_pronouncing_dictionary"`` (``/no_stress``, ``/stress``): words
  and their phonemes, built locally from the bundled CMUdict
  (``examples.nmt.data.pronouncing_dictionary``), split by a hash of the word;
* ``"tsv:PATH"``: a plain or zipped ``English<TAB>Other[<TAB>attribution]``
  file (see ``examples.nmt.data.tsv``), split by a hash of the source sentence;
* ``"dict:PATH"``: a pronouncing dictionary, CMUdict or Phonetisaurus format
  (``examples.nmt.data.pronunciations``), words -> phonemes, stress digits
  removed unless ``keep_stress``, split by a hash of the word;
* ``"folder:PATH"``: a ``tfds.folder_dataset.TranslateFolder`` layout
  (``LANG.SPLIT.txt`` files).

Every split is a ``tf.data.Dataset`` of ``{"source": str, "target": str}``
(plus ``"alignment"``, int32 ``(L, 2)`` ``(target_index, source_index)``
links, for the dates). Missing validation or test splits are carved from
train by a hash of the normalized source (``split_by_hash``), so a source
sentence never straddles two splits: test sources are unseen in training.
With ``test=PATH`` (``--test``), a file in the format of the dataset
(``tsv:``/``dict:``, or a dictionary for ``cmu_pronouncing_dictionary``) is
the test split instead; validation is still carved from train by hash, and
training examples whose source is a test source are dropped (and counted).

``python -m examples.nmt.data`` builds a dataset and prints a few examples;
with ``--write-splits DIR`` it writes a pronunciation dataset's splits as
dictionary files (``train.dict``, ``validation.dict``, ``test.dict``), so
that the same split can be read back with ``dict:`` / ``--test`` or scored
by other G2P tools.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

import tensorflow as tf
import tensorflow_datasets as tfds

from examples.nmt import cli
from examples.nmt.data import date_normalization
from examples.nmt.data import files
from examples.nmt.data import joined_words
from examples.nmt.data import pronouncing_dictionary
from examples.nmt.data import pronunciations
from examples.nmt.data.arguments import DEFAULT_DATASET
from examples.nmt.data.arguments import SPLITS
from examples.nmt.data.arguments import add_arguments
from examples.nmt.data.arguments import is_pronunciation
from examples.nmt.data.splitting import Splits
from examples.nmt.data.splitting import complete_splits
from examples.nmt.data.splitting import without_sources

_SPLIT_ALIASES = {
    "validation": ("validation", "valid", "dev"),
    "test": ("test",),
    "train": ("train",),
}
# The example's TFDS builders that prepare offline (no download needed).
LOCAL_BUILDERS = (
    date_normalization.DateNormalization,
    pronouncing_dictionary.CmuPronouncingDictionary,
)


def load_splits(
    dataset: str = DEFAULT_DATASET,
    *,
    data_dir: str | None = None,
    source_lang: str | None = None,
    target_lang: str | None = None,
    max_examples: int | None = None,
    held_out_fraction: float = 0.05,
    download: bool = False,
    test: str | None = None,
    keep_stress: bool = False,
    join_words: int | None = None,
) -> Splits:
    """Loads ``train``, ``validation`` and ``test`` splits of a parallel text.

    Args:
        dataset: a TFDS name, ``"tsv:PATH"``, ``"dict:PATH"`` or ``"folder:PATH"``.
        data_dir: where TFDS keeps built datasets (TFDS's default if None).
        source_lang, target_lang: language keys, where the dataset's own
            direction is missing or should be reversed.
        max_examples: keep at most this many examples of each split.
        held_out_fraction: the share of examples in each split carved by hash.
        download: download and prepare a TFDS dataset that is not prepared
            in ``data_dir`` (see ``catalogue_builder``).
        test: a file in the dataset's format to test on (see the module doc).
        keep_stress: keep the stress digits of ``dict:`` dictionaries (and
            of a ``test`` dictionary).
        join_words: pronunciations only: train and validation examples
            become joins of 1 to ``join_words`` words
            (``examples.nmt.data.joined_words.join_split``); test stays one
            word an example.

    Returns:
        ``{"train", "validation", "test"}`` -> ``tf.data.Dataset`` of dicts.
    """
    kind, _, path = dataset.partition(":")
    test_split = None
    if test is not None:
        test_split = files.test_file_split(dataset, test, source_lang, target_lang, keep_stress)
    if kind == "tsv" and path:
        pairs = files.tsv_pairs(path, source_lang, target_lang)
        splits = files.pairs_splits(path, pairs, held_out_fraction, test_split)
    elif kind == "dict" and path:
        pairs = list(pronunciations.read_pronunciations(path, stress=keep_stress))
        splits = files.pairs_splits(path, pairs, held_out_fraction, test_split)
    elif kind == "folder" and path:
        builder = tfds.folder_dataset.TranslateFolder(root_dir=path)
        splits = _builder_splits(builder, source_lang, target_lang, held_out_fraction, test_split)
    else:
        builder = catalogue_builder(dataset, data_dir, download)
        splits = _builder_splits(builder, source_lang, target_lang, held_out_fraction, test_split)
    if join_words is not None:
        if not is_pronunciation(dataset):
            raise ValueError(
                "Expected --join-words with a pronunciation dataset (dict:PATH or "
                f"cmu_pronouncing_dictionary). Received --dataset {dataset}"
            )
        for name in ("train", "validation"):
            splits[name] = joined_words.join_split(splits[name], join_words)
    if max_examples is not None:
        splits = {name: split.take(max_examples) for name, split in splits.items()}
    return {name: splits[name] for name in SPLITS}


class DatasetNotPreparedError(ValueError):
    """A TFDS catalogue dataset is not prepared in the data dir and no download was asked for."""


def catalogue_builder(
    name: str, data_dir: str | None = None, download: bool = False
) -> tfds.core.DatasetBuilder:
    """The prepared TFDS builder of ``name`` in ``data_dir``.

    Whether the dataset is prepared is read from the data dir
    (``builder.is_prepared()``), with no network access. An unprepared
    dataset is downloaded and prepared only with ``download=True``, except
    the example's own ``date_normalization``, which is generated offline:
    without the network, TFDS's downloads retry for minutes before failing.

    Raises:
        ValueError: an unknown dataset name.
        DatasetNotPreparedError: not prepared and ``download`` is False; the
            message says how to prepare the dataset elsewhere.
    """
    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except tfds.core.registered.DatasetNotFoundError as error:
        first_line = str(error).splitlines()[0]
        raise ValueError(
            f"Expected a TFDS dataset name, tsv:PATH or folder:PATH. Received: {name!r} "
            f"({first_line})"
        ) from error
    if builder.is_prepared():
        return builder
    if not download and not isinstance(builder, LOCAL_BUILDERS):
        raise DatasetNotPreparedError(
            f"the TFDS dataset {name} is not prepared in the data dir (no {builder.data_path}). "
            "Pass --download to download and prepare it now (needs the network), or prepare "
            f"it on a machine with network access (`tfds build {name} --data_dir DIR`, or "
            f"`python -m examples.nmt.data --dataset {name} --data-dir DIR --download`), "
            f"copy DIR/{name.split('/')[0]} into a data dir here and pass --data-dir"
        )
    builder.download_and_prepare()
    return builder


def _text_keys(features: tfds.features.FeaturesDict) -> tuple[tuple[str, ...], list[str]]:
    """The prefix path to the text features (``("translation",)`` or ``()``) and their keys."""
    if "translation" in features.keys() and isinstance(
        features["translation"], tfds.features.FeaturesDict
    ):
        return ("translation",), list(features["translation"].keys())
    keys = [key for key, feature in features.items() if isinstance(feature, tfds.features.Text)]
    return (), keys


def language_pair(
    languages: Sequence[str],
    supervised_keys: object,
    source_lang: str | None,
    target_lang: str | None,
) -> tuple[str, str]:
    """Picks ``(source, target)`` keys among ``languages``; raises if ambiguous.

    Both languages given win; one given is paired with the other of two
    languages; none given takes the dataset's supervised keys.
    """
    given = source_lang or target_lang
    pair = None
    if source_lang and target_lang:
        pair = (source_lang, target_lang)
    elif given and len(languages) == 2:
        other = next(language for language in languages if language != given)
        pair = (given, other) if source_lang else (other, given)
    elif not given and isinstance(supervised_keys, tuple) and len(supervised_keys) == 2:
        pair = tuple(supervised_keys)
    if pair is None or not all(key in languages for key in pair) or pair[0] == pair[1]:
        raise ValueError(
            f"Expected source/target languages among {list(languages)}; pass "
            f"--source-lang/--target-lang. Received: source_lang={source_lang!r}, "
            f"target_lang={target_lang!r}, supervised keys {supervised_keys!r}."
        )
    return pair


def _builder_splits(
    builder: tfds.core.DatasetBuilder,
    source_lang: str | None,
    target_lang: str | None,
    fraction: float,
    test: tf.data.Dataset | None = None,
) -> Splits:
    """The splits of a TFDS builder as ``{"source", "target"[, "alignment"]}`` dicts.

    With a ``test`` split, the builder's own test split is not read and its
    sources are dropped from train.
    """
    prefix, languages = _text_keys(builder.info.features)
    source, target = language_pair(
        languages, builder.info.supervised_keys, source_lang, target_lang
    )
    with_alignment = "alignment" in builder.info.features.keys()

    def to_pair(example: dict) -> dict:
        texts = example
        for key in prefix:
            texts = texts[key]
        pair = {"source": texts[source], "target": texts[target]}
        if with_alignment:
            pair["alignment"] = example["alignment"]
        return pair

    # No TFDS auto-cache: `make_batches` caches the encoded examples.
    read_config = tfds.ReadConfig(try_autocache=False)
    found = {}
    for name, aliases in _SPLIT_ALIASES.items():
        alias = next((alias for alias in aliases if alias in builder.info.splits), None)
        if alias is not None and not (name == "test" and test is not None):
            examples = builder.as_dataset(split=alias, read_config=read_config)
            found[name] = examples.map(to_pair)
    if "train" not in found:
        raise ValueError(f"Expected a 'train' split. Received: {list(builder.info.splits)}")
    if test is not None:
        found["train"] = without_sources(found["train"], test)
        found["test"] = test
    return complete_splits(found, fraction)


def splits_from_args(args: argparse.Namespace) -> Splits:
    """``load_splits`` with the flags of ``add_arguments``."""
    return load_splits(
        args.dataset,
        data_dir=args.data_dir,
        source_lang=args.source_lang,
        target_lang=args.target_lang,
        max_examples=args.max_examples,
        download=getattr(args, "download", False),
        test=getattr(args, "test", None),
        keep_stress=getattr(args, "keep_stress", False),
        join_words=getattr(args, "join_words", None),
    )


def write_splits(splits: Splits, folder: str) -> None:
    """Writes each split of pronunciations to ``folder/SPLIT.dict``; prints the counts."""
    os.makedirs(folder, exist_ok=True)
    for name, split in splits.items():
        entries = (
            (example["source"].decode(), example["target"].decode())
            for example in split.as_numpy_iterator()
        )
        path = os.path.join(folder, f"{name}.dict")
        print(f"{path}: {pronunciations.write_pronunciations(entries, path):,} entries")


def main(argv: Sequence[str] | None = None) -> None:
    """Builds (and caches) a dataset, then prints a few examples of each split."""
    parser = argparse.ArgumentParser(prog="python -m examples.nmt.data", description=main.__doc__)
    add_arguments(parser)
    parser.add_argument("--show", type=int, default=3, help="examples to print a split")
    parser.add_argument(
        "--write-splits",
        metavar="DIR",
        help="pronunciations: write each split to DIR/SPLIT.dict (word<TAB>PH ON EMES)",
    )
    args = parser.parse_args(argv)
    if args.write_splits and not is_pronunciation(args.dataset):
        cli.fail(
            parser.prog,
            "expected --write-splits with a pronunciation dataset (cmu_pronouncing_dictionary, "
            f"dict:PATH). Received --dataset {args.dataset}",
        )
    try:
        splits = splits_from_args(args)
        if args.write_splits:
            write_splits(splits, args.write_splits)
    except (OSError, ValueError) as error:
        cli.fail(parser.prog, str(error))
    for name, split in splits.items():
        print(f"{name}:")
        for example in split.take(args.show).as_numpy_iterator():
            print(f"  {example['source'].decode()}  ->  {example['target'].decode()}")


if __name__ == "__main__":
    main()
