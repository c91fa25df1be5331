"""The recipe files: default.toml is the Config's defaults, every recipe loads."""

import dataclasses
import os

import pytest

from examples.captioning.config import RECIPES
from examples.captioning.config import Config
from examples.common import recipes

pytestmark = pytest.mark.backend_independent


def test_default_recipe_is_the_dataclass_defaults():
    path = os.path.join(RECIPES, "default.toml")
    named = {f.name for f in dataclasses.fields(Config) if getattr(Config(), f.name) is not None}
    assert set(recipes.read_file(path)) == named
    assert recipes.load(Config, path) == Config()


@pytest.mark.parametrize("name", sorted(n[:-5] for n in os.listdir(RECIPES) if n.endswith(".toml")))
def test_every_recipe_loads_and_checks(name):
    config = recipes.load(Config, recipes.resolve(name, RECIPES))
    assert config.check() is config
