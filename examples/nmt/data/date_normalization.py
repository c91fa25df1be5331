"""`date_normalization`: a TFDS dataset generated locally, with no download.

Importing this module registers the builder, so ``tfds.load`` and
``tfds.builder("date_normalization")`` find it. The examples come from
``examples.nmt.data.dates``; they are deterministic for a given config, and the
built dataset is cached under ``data_dir`` like any TFDS dataset.

Features:
    source: the surface form, e.g. ``"Sat 9 May 1998"``.
    target: the ISO date, ``"1998-05-09"`` (ten tokens: one a character).
    alignment: int32 ``(L, 2)`` gold links ``(target_index, source_index)``;
        source indices count the tokens of ``examples.nmt.text.normalization.standardize(source)``.

Example:

```python
import tensorflow_datasets as tfds
from examples.nmt.data import date_normalization  # registers the builder

train = tfds.load("date_normalization/small", split="train")
```
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow_datasets as tfds
from etils import epath

from examples.nmt.data import dates


@dataclasses.dataclass
class DateNormalizationConfig(tfds.core.BuilderConfig):
    """Split sizes and seed of a `date_normalization` config."""

    train_size: int = dates.CONFIGS["default"]["train"]
    validation_size: int = dates.CONFIGS["default"]["validation"]
    test_size: int = dates.CONFIGS["default"]["test"]
    seed: int = dates.SEED

    def sizes(self) -> dict[str, int]:
        return {
            "train": self.train_size,
            "validation": self.validation_size,
            "test": self.test_size,
        }


class DateNormalization(tfds.core.GeneratorBasedBuilder):
    """Date normalization as translation, with gold alignments."""

    VERSION = tfds.core.Version("2.0.0")
    RELEASE_NOTES = {
        "1.0.0": "Initial release.",
        "2.0.0": "Targets as natural ISO dates, '1998-05-09' (was '1 9 9 8 - 0 5 - 0 9').",
    }
    BUILDER_CONFIGS = [
        DateNormalizationConfig(name="default", description="50k/2k/2k examples."),
        DateNormalizationConfig(
            name="small",
            description="2k/200/200 examples, for tests and quick runs.",
            train_size=dates.CONFIGS["small"]["train"],
            validation_size=dates.CONFIGS["small"]["validation"],
            test_size=dates.CONFIGS["small"]["test"],
        ),
    ]
    DEFAULT_CONFIG_NAME = "default"
    # A plain path in place of TFDS's lookup, which imports the
    # `importlib_resources` backport that TFDS only installs on Python < 3.9.
    code_path = epath.Path(__file__)

    def _info(self) -> tfds.core.DatasetInfo:
        return self.dataset_info_from_configs(
            description=__doc__.split("\n\n")[0],
            features=tfds.features.FeaturesDict(
                {
                    "source": tfds.features.Text(),
                    "target": tfds.features.Text(),
                    "alignment": tfds.features.Tensor(shape=(None, 2), dtype=np.int32),
                }
            ),
            supervised_keys=("source", "target"),
        )

    def _split_generators(self, dl_manager: tfds.download.DownloadManager) -> dict:
        del dl_manager  # Nothing to download.
        return {split: self._generate_examples(split) for split in dates.SPLITS}

    def _generate_examples(self, split: str):
        config = self.builder_config
        examples = dates.generate_examples(split, config.sizes(), config.seed)
        yield from enumerate(examples)
