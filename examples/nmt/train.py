"""Trains, evaluates and exports an attention NMT model: ``python -m examples.nmt.train``.

The defaults train the date-normalization task in a few minutes on two CPU
cores. Any other dataset gets the ``real`` recipe (``--recipe``, see
``examples.nmt.training.recipes``): SentencePiece subwords, a Transformer
(``--architecture rnn`` for the RNN), dropout and label smoothing, tuned on
Tatoeba French->English. Everything goes to
``--output-dir`` (``runs/nmt``):

* ``model.keras`` (best epoch's weights), ``saved_model/`` (``translate(strings)``,
  see ``examples.nmt.export``), the vocabularies (``{side}_vocabulary.txt``
  for words, ``{side}_sentencepiece.model`` for SentencePiece, ``side`` =
  source or target), ``config.json`` (the arguments, recipe filled in);
* ``metrics.json`` (test BLEU, chrF, exact match, alignment accuracy, best
  epoch, training time; written before the export), ``history.csv``,
  ``training_curves.png`` and ``training.json`` (best epoch and its
  ``val_loss``, written when training is done);
* ``attention_K.png`` / ``attention_K.html``: heat-maps of test sentences;
* ``backup/`` (resumes a killed run, see ``examples.common.checkpointing``;
  deleted when training is done), ``logs/`` (TensorBoard);
* ``checkpoints/epoch_N.weights.npz``: the model weights of the last
  ``--keep-checkpoints`` epochs (5), which ``--average-checkpoints`` of
  ``evaluate``, ``translate`` and ``export`` average.

A used ``--output-dir`` is refused unless it holds a run with the same
settings (decoding, evaluation and export flags aside), which then resumes
after its last finished epoch (or, when its training is done, only
evaluates and exports again), or ``--overwrite`` is given.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import dataclasses
import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

from examples.nmt import cli
from examples.nmt import settings
from examples.nmt.training import distribution
from examples.nmt.training.pipeline import train

# The command line lives in settings.py; these names are train's as before.
DEFAULT_OUTPUT_DIR = settings.DEFAULT_OUTPUT_DIR
EVERYDAY = settings.EVERYDAY
make_parser = settings.make_parser
check_args = settings.check_args
parse_args = settings.parse_args
PROG = settings.PROG


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Trains with command-line arguments; see the module doc."""
    config = parse_args(argv)
    try:
        # First: several processes meet here before any other work.
        distributed = distribution.setup(
            config.strategy, config.coordinator, config.num_processes, config.process_id
        )
    except cli.RunError as error:
        cli.fail(PROG, str(error))
    chief = distributed.is_chief
    if not chief:  # other processes train in step with the chief; their files are dropped
        config = dataclasses.replace(config, output_dir=tempfile.mkdtemp(prefix="nmt-process-"))
    try:
        return train(config, distributed=distributed)
    except cli.RunError as error:
        cli.fail(PROG, str(error))
    finally:
        if not chief:
            shutil.rmtree(config.output_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
