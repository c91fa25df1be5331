"""TFDS datasets for the example: catalogue names and ``folder:PATH``, read into Python pairs.

The example reads every dataset into lists of ``(source, target)`` pairs
(``examples.nmt.host.splits.load_splits``); this module is the part that
needs TensorFlow Datasets: ``catalogue_pairs`` reads a prepared TFDS
catalogue dataset (e.g. ``"ted_hrlr_translate/pt_to_en"``,
``"wmt14_translate/de-en"``; source and target from the supervised keys or
``source_lang``/``target_lang``; ``download=True``, ``--download``,
prepares a missing one: ``catalogue_builder``) or a
``tfds.folder_dataset.TranslateFolder`` layout (``LANG.SPLIT.txt`` files).

``python -m examples.nmt.data`` (``examples.nmt.data.show``) prints a few
examples of any dataset.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow_datasets as tfds

from examples.nmt.data import date_normalization
from examples.nmt.data import pronouncing_dictionary

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


def catalogue_pairs(
    dataset: str,
    data_dir: str | None = None,
    download: bool = False,
    source_lang: str | None = None,
    target_lang: str | None = None,
) -> dict[str, list[tuple[str, str]]]:
    """The splits a TFDS dataset (a catalogue name or ``folder:PATH``) has, as lists of pairs.

    TensorFlow Datasets reads the records (TensorFlow on the host, hidden from
    the GPUs: ``backend.keep_tensorflow_on_the_host``); the pairs go on as
    plain Python strings into the one input pipeline (``examples.nmt.host``).
    Splits the dataset lacks are not carved here (``host.splits.complete_splits``).
    """
    from examples.nmt import backend  # noqa: PLC0415

    backend.keep_tensorflow_on_the_host()
    tfds.disable_progress_bar()
    kind, _, path = dataset.partition(":")
    if kind == "folder" and path:
        builder = tfds.folder_dataset.TranslateFolder(root_dir=path)
    else:
        builder = catalogue_builder(dataset, data_dir, download)
    prefix, languages = _text_keys(builder.info.features)
    source, target = language_pair(
        languages, builder.info.supervised_keys, source_lang, target_lang
    )
    read_config = tfds.ReadConfig(try_autocache=False)
    found = {}
    for name, aliases in _SPLIT_ALIASES.items():
        alias = next((alias for alias in aliases if alias in builder.info.splits), None)
        if alias is None:
            continue
        pairs = []
        for example in tfds.as_numpy(builder.as_dataset(split=alias, read_config=read_config)):
            for key in prefix:
                example = example[key]
            pairs.append((example[source].decode("utf-8"), example[target].decode("utf-8")))
        found[name] = pairs
    return found
