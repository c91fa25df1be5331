"""The NMT example's whole configuration: one typed dataclass, as the other examples have.

``python -m examples.nmt.train`` parses its flags (``examples.nmt.settings``),
fills the fields a recipe sets (``recipes/{date,g2p,real}.toml``) and checks
them, and hands the training a ``Config``, never an argparse namespace. Its
field defaults are the flags' defaults (``settings.make_parser`` takes them
from here); a field a recipe sets is None until the recipe fills it, and a
field of the other architecture (``units`` for a Transformer, say) stays
None. ``to_dict`` is what a run's ``config.json`` holds; a file written
before a field existed still loads, the field taking its default (no table of
added flags is kept).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Literal

from examples.nmt.data.arguments import DEFAULT_DATASET

DEFAULT_OUTPUT_DIR = os.path.join("runs", "nmt")


@dataclasses.dataclass(frozen=True)
class Config:
    # --- Data (examples.nmt.data.arguments, examples.nmt.host.splits)
    dataset: str = DEFAULT_DATASET  # a TFDS name, tsv:PATH, dict:PATH, folder:PATH
    test: str | None = None  # a file of test pairs instead of the hash split
    join_words: int | None = None  # pronunciations: test words joined k at a time
    keep_stress: bool = False
    data_dir: str | None = None
    source_lang: str | None = None
    target_lang: str | None = None
    max_examples: int | None = None
    download: bool = False
    # --- The run's folder
    output_dir: str = DEFAULT_OUTPUT_DIR
    overwrite: bool = False
    # --- The recipe ("auto" until resolved) and the model; None: the recipe's
    recipe: Literal["auto", "date", "g2p", "real"] = "auto"
    architecture: Literal["rnn", "transformer"] | None = None
    source_tokenizer: str | None = None
    target_tokenizer: str | None = None
    vocab_size: int | None = None
    max_length: int = 64  # most tokens per sentence
    # The RNN (examples.nmt.models.rnn)
    attention: str | None = None
    decoder: str | None = None
    rnn: Literal["gru", "lstm"] = "gru"
    attention_units: int | None = None
    encoder_layers: int = 1
    embedding_dim: int | None = None
    units: int | None = None
    # The Transformer (examples.nmt.models.transformer); num_heads for multihead too
    num_heads: int | None = None
    layers: int | None = None
    d_model: int | None = None
    ff_dim: int | None = None
    alignment_layer: int | None = None
    dropout: float | None = None
    # --- Training (examples.nmt.training)
    label_smoothing: float | None = None
    epochs: int | None = None
    batch_size: int | None = None
    length_bucket_step: float | None = None
    learning_rate: float | None = None
    warmup_steps: int | None = None
    clipnorm: float = 1.0  # per variable; 0: off
    weight_decay: float | None = None
    ema: float = 0.0
    output_bias: Literal["unigram", "zeros"] = "unigram"
    patience: int | None = 2  # None: off
    keep_checkpoints: int = 5
    seed: int = 0
    precision: str | None = None  # "auto" resolves to a dtype policy name
    jit_compile: bool = False
    strategy: str = "default"
    coordinator: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    # --- Evaluation, decoding and export
    samples: int = 3
    no_export: bool = False
    no_evaluate: bool = False
    beam_size: int | None = None
    length_penalty: float | None = None
    coverage_penalty: float = 0.0
    max_decode_length: int = 64


def defaults() -> dict[str, object]:
    """Every field's default: the flags' defaults."""
    return {field.name: field.default for field in dataclasses.fields(Config)}
