"""The speech example's configuration: one frozen dataclass whose defaults are the default recipe.

``recipes/default.toml`` repeats these defaults; ``recipes/tiny.toml`` is the
tests' few-clip run. A run's ``config.json`` is a valid ``--config``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Literal

RECIPES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipes")

Attention = Literal[
    "location_sensitive", "bahdanau", "monotonic", "stepwise_monotonic", "gmm", "dca"
]
ProbabilityFn = Literal["softmax", "sparsemax", "hardmax", "sigmoid"]


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything a run depends on but the data's location (``--data``) and its folder.

    Data: utterances of ``min_digits``..``max_digits`` clips of one speaker,
    joined with silences of ``gap_seconds`` (a range) and Gaussian noise of
    standard deviation ``noise`` (full scale is 1). ``held_out_speaker``
    trains on the other five speakers and is reported on its own (the
    speaker-held-out split); ``None`` trains on all six. The long-utterance
    test joins ``long_lengths`` digits of the test clips; ``validation_long_N`` the same
    lengths of the validation clips, to choose settings on.
    """

    seed: int = 0
    held_out_speaker: str | None = "george"
    train_utterances: int = 3000
    validation_utterances: int = 200
    test_utterances: int = 300
    long_utterances: int = 40
    long_lengths: tuple[int, ...] = (14, 28)
    min_digits: int = 2
    max_digits: int = 7
    gap_seconds: tuple[float, float] = (0.05, 0.3)
    noise: float = 0.002
    max_clips_per_speaker: int | None = None  # a few clips for tests
    # Model.
    num_mel_bins: int = 40
    conv_filters: int = 64
    context_layers: int = 3
    end_sentinel: bool = True  # a learned end-of-audio position after the memory, for END
    decoder_units: int = 128
    embedding_dim: int = 32
    attention: Attention = "location_sensitive"
    attention_units: int = 64
    location_filters: int = 16
    location_kernel_size: int = 41  # +-20 positions (1.6 s): the whole decoding window
    # The attention's normalizer (location_sensitive and bahdanau only); "sigmoid" is
    # Chorowski et al. (2015)'s smoothing.
    probability_fn: ProbabilityFn = "softmax"
    # Decoding only: a search's location-sensitive attention may only move from its previous
    # peak m to [m - back, m + forward] memory positions (80 ms each); None: anywhere.
    inference_window: tuple[int, int] | None = (4, 20)
    # Decoding only: END only when the attention's peak is at most end_window positions
    # before the end of the audio, and nothing else once it stops there; None: END anywhere.
    # Content-only attention (bahdanau) decodes without it.
    end_window: int | None = 3
    # Training.
    batch_size: int = 32
    epochs: int = 20
    # SortaGrad (Amodei et al., 2016): the first sorted_epochs epochs take the utterances
    # shortest first; 0: every epoch shuffled.
    sorted_epochs: int = 0
    learning_rate: float = 0.002  # a fifth of it for the last quarter of the steps
    patience: int | None = None
