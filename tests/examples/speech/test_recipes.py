"""The recipe files: default.toml is the Config's defaults, every recipe loads."""

import dataclasses
import os

import pytest

from examples.common import recipes
from examples.speech.config import RECIPES_DIR
from examples.speech.config import Config

pytestmark = pytest.mark.backend_independent


def test_default_recipe_is_the_dataclass_defaults():
    path = os.path.join(RECIPES_DIR, "default.toml")
    named = {f.name for f in dataclasses.fields(Config) if getattr(Config(), f.name) is not None}
    assert set(recipes.read_file(path)) == named
    assert recipes.load(Config, path) == Config()


@pytest.mark.parametrize(
    "name", sorted(n[:-5] for n in os.listdir(RECIPES_DIR) if n.endswith(".toml"))
)
def test_every_recipe_loads(name):
    config = recipes.load(Config, recipes.resolve(name, RECIPES_DIR))
    assert config.min_digits <= config.max_digits


def test_the_decoding_window_can_be_turned_off():
    assert recipes.load(Config, None, ["inference_window=none"]).inference_window is None
