"""The captioning example's whole configuration: one dataclass, its defaults the default recipe.

``recipes/default.toml`` repeats these defaults; a run's ``config.json`` is a
valid ``--config`` (``examples.common.recipes``). Every command takes a
``Config``, never an argparse namespace.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Literal

RECIPES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipes")
DEFAULT_OUTPUT_DIR = os.path.join("runs", "captioning")


@dataclasses.dataclass(frozen=True)
class Config:
    # --- Scenes (examples.captioning.data)
    digits: Literal["sklearn", "mnist"] = "sklearn"  # sklearn: bundled, offline
    mnist_path: str | None = None  # a local mnist.npz (keras.datasets format); None: download
    glyph_size: int = 8  # glyphs are resized to glyph_size x glyph_size pixels
    height: int = 24  # scene size in pixels
    width: int = 64
    min_digits: int = 1
    max_digits: int = 5
    clutter: int = 0  # random strokes per scene, away from the digits
    augment_glyphs: bool = False  # training scenes: each glyph a random affine copy (data.distort)
    train_scenes: int = 8000
    validation_scenes: int = 500
    test_scenes: int = 1000
    seed: int = 0  # glyph split, scenes, weights and batch order
    # --- Model (examples.captioning.model)
    # The decoder: a GRU with attention ("rnn") or Transformer blocks ("transformer").
    architecture: Literal["rnn", "transformer"] = "rnn"
    attention: Literal["bahdanau", "luong", "scaled_dot"] = "bahdanau"
    filters: int = 48  # channels of the CNN's grid memory
    pooling: int = 4  # the grid is (height / pooling, width / pooling)
    units: int = 128  # GRU state and attentional vector
    attention_units: int = 64  # Bahdanau's hidden size
    # What the attention scores: each cell's own pixels ("cell") or the CNN's features.
    attention_keys: Literal["cell", "features"] = "features"
    # What the context reads: the CNN's features (26x26 px per cell) or "local" ones (10x10).
    attention_values: Literal["features", "local"] = "features"
    # "ink": the attention may look only at cells holding ink (mean pixel >= 20% of full).
    attention_mask: Literal["ink", "none"] = "ink"
    embedding_dim: int = 32
    doubly_stochastic: float = 0.01  # Xu et al.'s lambda; 0: off
    # The Transformer decoder's sizes (architecture="transformer"; examples.captioning.transformer).
    decoder_layers: int = 2
    heads: int = 4
    d_model: int = 64  # a multiple of heads
    ff_dim: int = 128
    # --- Training
    epochs: int = 12
    batch_size: int = 64
    learning_rate: float = 3e-3  # Adam's, decayed to 5% over the run (cosine)
    patience: int | None = None
    # --- Outputs
    figures: int = 4  # test scenes drawn word by word
    export: bool = True  # write saved_model/ (in a TensorFlow process)

    @property
    def grid(self) -> tuple[int, int]:
        """The CNN's grid ``(H', W')``."""
        return self.height // self.pooling, self.width // self.pooling

    def check(self) -> Config:
        """The config, or a ValueError naming the setting that cannot work."""
        self.check_scenes()
        for name in (
            "units",
            "filters",
            "epochs",
            "batch_size",
            "decoder_layers",
            "heads",
            "ff_dim",
        ):
            if getattr(self, name) < 1:
                _fail(name, ">= 1", getattr(self, name))
        pooling = self.pooling
        if pooling < 1 or pooling & (pooling - 1) or self.height % pooling or self.width % pooling:
            _fail("pooling", "a power of 2 dividing height and width", pooling)
        if self.d_model < 1 or self.d_model % self.heads:
            _fail("d_model", f"a positive multiple of heads ({self.heads})", self.d_model)
        if self.doubly_stochastic < 0:
            _fail("doubly_stochastic", ">= 0", self.doubly_stochastic)
        return self

    def check_scenes(self) -> Config:
        """The config, or a ValueError naming a scene setting that cannot work."""
        fail = _fail
        for name in ("glyph_size", "height", "width", "min_digits"):
            if getattr(self, name) < 1:
                fail(name, ">= 1", getattr(self, name))
        if self.max_digits < self.min_digits:
            fail("max_digits", f">= min_digits ({self.min_digits})", self.max_digits)
        if self.height < self.glyph_size:
            fail("height", f">= glyph_size ({self.glyph_size})", self.height)
        need = self.max_digits * (self.glyph_size + 1) - 1
        if self.width < need:
            fail("width", f">= {need} (max_digits glyphs side by side, 1 pixel apart)", self.width)
        return self


def _fail(name: str, expected: str, received: object) -> None:
    raise ValueError(f"Expected {name} {expected}. Received: {name}={received!r}")
