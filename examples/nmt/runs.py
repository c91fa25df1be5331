"""A run's folder: what ``train.py`` writes and ``evaluate.py``/``translate.py`` read.

Its file names (``OUTPUTS``), which settings a resumed run must share
(``RESUME_IRRELEVANT``, ``prepare_output_dir``), loading a run (``load_run``,
``load_config``), its last epochs' weights averaged (``averaged_weights``),
several runs as one ensemble (``load_runs``), and writing its outputs safely
(``write_json``, ``write_history``, ``save_model``, ``save_weights``: to a
temporary file, then renamed, so a killed process never leaves half a file).

``checkpoints/epoch_N.weights.npz`` hold the model weights after ``N``
finished epochs (``model.get_weights()`` order, no optimizer state: about a
third of an epoch's backup with Adam), the last
``--keep-checkpoints`` of a run (``RunCheckpoint``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

from examples.common.recipes import RECORD_ONLY
from examples.common.recipes import to_dict
from examples.common.runs import BACKEND_KEY  # noqa: F401  (runs.BACKEND_KEY)
from examples.common.runs import CHECKPOINTS
from examples.common.runs import CONFIG
from examples.common.runs import HISTORY
from examples.common.runs import METRICS
from examples.common.runs import MODEL
from examples.common.runs import TRAINING
from examples.common.runs import checkpoint_path
from examples.common.runs import kept_epochs
from examples.common.runs import prepare_run_dir
from examples.common.runs import read_json
from examples.common.runs import read_weights
from examples.common.runs import save_model  # noqa: F401  (runs.save_model)
from examples.common.runs import save_weights  # noqa: F401  (runs.save_weights)
from examples.common.runs import write_history  # noqa: F401  (runs.write_history)
from examples.common.runs import write_json
from examples.nmt.cli import RunError
from examples.nmt.config import Config
from examples.nmt.host.vocabularies import Vocabularies
from examples.nmt.models import rnn as _rnn  # noqa: F401  (registers Seq2Seq for loading)
from examples.nmt.models import transformer as _transformer  # noqa: F401  (registers it)
from examples.nmt.models.decoding import Decoder
from examples.nmt.models.ensemble import Ensemble

# What a run writes into its folder; --overwrite deletes these and nothing else.
OUTPUTS = (
    CONFIG,
    MODEL,
    METRICS,
    HISTORY,
    TRAINING,
    "source_vocabulary.txt",
    "target_vocabulary.txt",
    "source_letters.txt",
    "target_letters.txt",
    "source_symbols.txt",
    "target_symbols.txt",
    "source_sentencepiece.model",
    "target_sentencepiece.model",
    "training_curves.png",
    "attention_*.png",
    "attention_*.html",
    "saved_model",
    "long_inputs.json",
    "long_inputs.png",
    "backup",
    "logs",
    "checkpoint.weights.h5",
    CHECKPOINTS,
)
# Flags that may change between a run and its resumption.
RESUME_IRRELEVANT = frozenset(
    {
        "output_dir",
        "overwrite",
        "data_dir",
        "download",
        "strategy",
        "coordinator",
        "num_processes",
        "process_id",
        "samples",
        "no_export",
        "no_evaluate",
        "beam_size",
        "length_penalty",
        "coverage_penalty",
        "max_decode_length",
        "keep_checkpoints",
    }
)


def load_vocabularies(directory: str) -> Vocabularies:
    """A run's vocabularies (``examples.nmt.host.vocabularies``: ``tensorflow()`` gives the
    SavedModel's graph ops of the same files)."""
    return Vocabularies.load(directory)


def load_run(
    directory: str, average_checkpoints: int | None = None
) -> tuple[keras.Model, Vocabularies]:
    """``model.keras`` and the vocabularies of a train.py output dir (``load_vocabularies``).

    With ``average_checkpoints`` N, the model holds the element-wise mean of
    the weights of the run's last N trained epochs (``averaged_weights``)
    instead of the best epoch's.
    """
    path = os.path.join(directory, MODEL)
    if not os.path.isfile(path):
        raise RunError(f"no trained model in {directory}: {path} does not exist")
    model = keras.saving.load_model(path, compile=False)
    if average_checkpoints is not None:
        model.set_weights(averaged_weights(directory, average_checkpoints))
    return model, load_vocabularies(directory)


def load_runs(
    directories: Sequence[str], average_checkpoints: int | None = None
) -> tuple[Decoder, Vocabularies]:
    """``load_run`` of one run, or an ``Ensemble`` of several, with the first run's vocabularies.

    The runs of an ensemble must share both vocabularies: the target one (the
    members' log-probabilities are averaged token by token) and the source one
    (they read the same source ids, and their attention is averaged over the
    same source tokens).
    """
    loaded = [load_run(directory, average_checkpoints) for directory in directories]
    if len(loaded) == 1:
        return loaded[0]
    first = loaded[0][1]
    for directory, (_, vocabularies) in zip(directories[1:], loaded[1:]):
        for side in ("target", "source"):
            ours, theirs = getattr(first, side), getattr(vocabularies, side)
            if type(ours) is not type(theirs) or tuple(ours.tokens) != tuple(theirs.tokens):
                raise RunError(
                    f"the runs of an ensemble must share the {side} vocabulary: {directory} "
                    f"has another {side} vocabulary ({type(theirs).__name__} of "
                    f"{len(theirs.tokens)} tokens) than {directories[0]} "
                    f"({type(ours).__name__} of {len(ours.tokens)} tokens)"
                )
    return Ensemble([model for model, _ in loaded]), first


def averaged_weights(directory: str, count: int) -> list[np.ndarray]:
    """The element-wise mean of the weights of the run's last ``count`` trained epochs.

    "Last" as trained, not up to the best epoch: Vaswani et al. (2017) average
    the last 5 checkpoints of a run, Popel and Bojar (2018) the last ones too;
    the last epochs are those the learning rate has decayed over, and with
    early stopping they include the ``--patience`` epochs after the best.
    Arrays that are not floats (none in the example's models) are the last
    epoch's.

    Raises:
        RunError: the run keeps fewer than ``count`` epochs, or one of them
            holds the weights of another model than the last (another number
            of arrays, or an array of another shape or dtype): the error
            names both files and the first weight that differs.
    """
    epochs = kept_epochs(directory)
    if len(epochs) < count:
        kept = (
            f"keeps the weights of {len(epochs)} epochs ({', '.join(map(str, epochs))})"
            if epochs
            else "keeps no epoch's weights (a run before --keep-checkpoints, or 0)"
        )
        raise RunError(
            f"--average-checkpoints {count}: {directory} {kept} in {CHECKPOINTS}/; average "
            f"at most {len(epochs)}, or train with --keep-checkpoints {count} or more"
        )
    paths = [checkpoint_path(directory, epoch) for epoch in epochs[-count:]]
    last = [read_weights(path) for path in paths]
    specs = [[(a.shape, a.dtype) for a in arrays] for arrays in last]
    for path, spec in zip(paths, specs):  # each against the last epoch's
        if spec != specs[-1]:
            pairs = enumerate(zip(spec, specs[-1]))
            index = next((i for i, (a, b) in pairs if a != b), min(len(spec), len(specs[-1])))
            there, here = (
                f"shape {each[index][0]} {each[index][1]}"
                if index < len(each)
                else f"absent (it holds {len(each)} arrays)"
                for each in (spec, specs[-1])
            )
            raise RunError(
                f"--average-checkpoints {count}: {path} and {os.path.basename(paths[-1])} hold "
                f"the weights of different models: weight {index} is {there} in the first, "
                f"{here} in the second"
            )
    averaged = []
    for arrays in zip(*last):  # one weight, from each of the last epochs
        if np.issubdtype(arrays[-1].dtype, np.floating):
            mean = np.mean(np.stack(arrays).astype("float64"), axis=0)
            averaged.append(mean.astype(arrays[-1].dtype))
        else:
            averaged.append(arrays[-1])
    return averaged


def load_config(directory: str) -> dict[str, Any] | None:
    """The arguments a run was started with (``config.json``), or None.

    A run before ``--precision`` recorded ``mixed_precision`` (a boolean):
    it reads as the policy it trained in.
    """
    config = read_json(os.path.join(directory, CONFIG))
    if config is not None and "mixed_precision" in config:
        config["precision"] = "mixed_float16" if config.pop("mixed_precision") else "float32"
    return config


def saved_settings(directory: str) -> dict[str, Any] | None:
    """A run's ``config.json`` read as ``train.py --config`` reads it, or None without one.

    A setting the file lacks (a flag added since the run) takes its default,
    the recipe's or the parser's, as in any ``--config`` file: no table of
    added flags is kept. What resuming compares with the new run's settings.
    """
    path = os.path.join(directory, CONFIG)
    raw = load_config(directory)
    if raw is None:
        return None
    from examples.nmt import settings  # noqa: PLC0415  (argparse and the recipes: only here)

    try:
        config = settings.parse_args(["--config", path])
    except SystemExit:  # the parser printed what is wrong
        raise RunError(f"{path} holds settings train.py no longer accepts (above)") from None
    recorded = {key: raw[key] for key in RECORD_ONLY if key in raw}  # the backend
    return {**to_dict(config), **recorded}


def save_metrics(metrics: dict[str, Any], path: str) -> None:
    write_json(metrics, path)


def prepare_output_dir(config: Config, outputs: Sequence[str] = OUTPUTS) -> bool:
    """Refuses a used ``--output-dir`` unless resuming or ``--overwrite``; True on a resume.

    ``--overwrite`` deletes the names (glob patterns) in ``outputs``, nothing else.
    Writes ``config.json`` (``examples.common.runs.prepare_run_dir``).
    """
    return prepare_run_dir(
        config.output_dir,
        to_dict(config),
        overwrite=config.overwrite,
        outputs=outputs,
        resume_irrelevant=RESUME_IRRELEVANT,
        spell=lambda key: f"--{key.replace('_', '-')}",
        read=saved_settings,
    )
