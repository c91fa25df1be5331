"""`cmu_pronouncing_dictionary`: a TFDS dataset built locally from the bundled CMUdict.

Grapheme-to-phoneme conversion (G2P) as translation: the source is a word,
the target its phonemes, ``"pronunciation"`` -> ``"P R AH N AH N S IY EY
SH AH N"``. Importing this module registers the builder, so ``tfds.load``
and ``tfds.builder("cmu_pronouncing_dictionary")`` find it; it is built from
``examples/nmt/data/cmudict/cmudict.dict.xz`` (CMU's BSD-style licence, see
the ``README.md`` there), with no download.

Configs: ``no_stress`` (the default; the G2P papers' 39 phonemes) and
``stress`` (the digits kept, ``AH0``). One split, ``train``: every entry,
an alternate pronunciation one more example of its word. ``load_splits``
carves validation and test out of it by a hash of the word, so all the
pronunciations of a word land in one split and no test word is seen in
training.

Example:

```python
import tensorflow_datasets as tfds
from examples.nmt.data import pronouncing_dictionary  # registers the builder

train = tfds.load("cmu_pronouncing_dictionary", split="train")
```
"""

from __future__ import annotations

import dataclasses

import tensorflow_datasets as tfds
from etils import epath

from examples.nmt.data import pronunciations
from examples.nmt.data.pronunciations import DICTIONARY
from examples.nmt.data.pronunciations import DICTIONARY_SHA256  # noqa: F401  (its home was here)
from examples.nmt.data.pronunciations import check_dictionary
from examples.nmt.data.pronunciations import is_pronunciation  # noqa: F401  (likewise)


@dataclasses.dataclass
class PronouncingDictionaryConfig(tfds.core.BuilderConfig):
    """Whether a config keeps the stress digits."""

    stress: bool = False


class CmuPronouncingDictionary(tfds.core.GeneratorBasedBuilder):
    """The CMU Pronouncing Dictionary: words and their phonemes."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release: cmudict.dict of CMU Sphinx (cmudict 1.1.3)."}
    BUILDER_CONFIGS = [
        PronouncingDictionaryConfig(
            name="no_stress", description="Stress digits removed: 39 phonemes."
        ),
        PronouncingDictionaryConfig(
            name="stress", description="Stress digits kept on the vowels.", stress=True
        ),
    ]
    DEFAULT_CONFIG_NAME = "no_stress"
    # A plain path in place of TFDS's lookup (see date_normalization).
    code_path = epath.Path(__file__)

    def _info(self) -> tfds.core.DatasetInfo:
        return self.dataset_info_from_configs(
            description=__doc__.split("\n\n")[0],
            features=tfds.features.FeaturesDict(
                {"source": tfds.features.Text(), "target": tfds.features.Text()}
            ),
            supervised_keys=("source", "target"),
            homepage="https://github.com/cmusphinx/cmudict",
        )

    def _split_generators(self, dl_manager: tfds.download.DownloadManager) -> dict:
        del dl_manager  # Bundled: nothing to download.
        check_dictionary()
        return {"train": self._generate_examples(DICTIONARY)}

    def _generate_examples(self, path: str):
        entries = pronunciations.read_pronunciations(path, stress=self.builder_config.stress)
        for index, (word, phonemes) in enumerate(entries):
            yield index, {"source": word, "target": phonemes}
