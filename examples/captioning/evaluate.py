"""Scores a trained captioner on its held-out test scenes (greedy or beam search).

Rebuilds the run's test scenes from its ``config.json`` (they are
deterministic, made of glyphs training never saw), captions them with greedy
search (``--beam-size`` for beam search), and writes in the run folder:

* ``metrics.json`` (``metrics_beamK.json`` with ``--beam-size K``): exact
  match, digit error rate, attention correctness and pointing accuracy with
  their uniform baselines (``examples.captioning.metrics``);
* ``captions.tsv``: each test scene's gold and written caption (the export
  checks the SavedModel against it);
* ``attention_K.png`` / ``attention_K.html``: word-by-word overlays of the
  first ``figures`` test scenes (``plot_image_attention``,
  ``save_image_attention_html``).

Runs on any backend, whichever one trained the run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from examples.captioning import data
from examples.captioning import metrics as scoring
from examples.captioning.config import DEFAULT_OUTPUT_DIR
from examples.captioning.config import Config
from examples.common import backend
from examples.common import recipes
from examples.common import runs

CAPTIONS = "captions.tsv"
BATCH = 250  # scenes per search call (one compiled shape on JAX)


def search_captions(model: Any, images: np.ndarray, beam_size: int = 1) -> dict[str, np.ndarray]:
    """Captions of ``(N, H, W)`` uint8 scenes: ``ids (N, T)``, ``attention (N, T, H', W')``."""
    search = backend.compile_search(model, lambda batch: model.search(batch, beam_size))
    parts = [search(images[start : start + BATCH]) for start in range(0, len(images), BATCH)]
    ids = np.concatenate([part.ids for part in parts])
    attention = np.concatenate([part.attention for part in parts])
    lengths = np.concatenate([part.lengths for part in parts])
    return {
        "ids": ids,
        "lengths": lengths,
        "attention": attention.reshape(*attention.shape[:2], *model.grid),
        "captions": [data.text(row) for row in ids],
    }


def teacher_forced_weights(model: Any, scenes: data.Scenes) -> np.ndarray:
    """``(N, T, H', W')`` weights of each scene's gold caption fed to the decoder."""
    attend = backend.compile_search(
        model, lambda batch: model.attend(batch["image"], batch["caption_in"], penalty=False)[1]
    )
    inputs, _ = data.caption_ids(scenes.digits)
    return np.concatenate(
        [
            attend(
                {
                    "image": scenes.images[start : start + BATCH],
                    "caption_in": inputs[start : start + BATCH],
                }
            )
            for start in range(0, len(inputs), BATCH)
        ]
    )


def draw(image: np.ndarray, attention: np.ndarray, caption: str, path: str, title: str) -> None:
    """``path``.png and ``path``.html: each written token's weights over the scene."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    from keras_attention import plot_image_attention  # noqa: PLC0415
    from keras_attention import save_image_attention_html  # noqa: PLC0415

    tokens = [*caption, "</s>"][: len(attention)]  # no end token when the search ran out
    weights = attention[: len(tokens)]
    figure = plot_image_attention(
        image, weights, tokens, ncols=len(tokens), interpolation="nearest", title=title
    )
    figure.savefig(f"{path}.png", dpi=100, bbox_inches="tight")
    save_image_attention_html(image, weights, tokens, f"{path}.html", title=title)


def evaluate(
    config: Config, model: Any, run_dir: str, beam_size: int = 1, scenes: data.Scenes | None = None
) -> dict[str, Any]:
    """Scores ``model`` on the test scenes; writes ``metrics.json`` and the rest (module doc)."""
    if scenes is None:
        scenes = data.load(config)["test"]
    start = time.perf_counter()
    found = search_captions(model, scenes.images, beam_size)
    gold = [data.digits_text(row) for row in scenes.digits]
    weights = teacher_forced_weights(model, scenes)
    result = {
        **scoring.caption_scores(found["captions"], gold),
        **scoring.attention_scores(
            weights, scenes.boxes, scenes.counts, (config.height, config.width)
        ),
        "test_scenes": len(gold),
        "search": "greedy" if beam_size == 1 else f"beam {beam_size}",
        "evaluation_seconds": round(time.perf_counter() - start, 1),
        "backend": backend.name(),
        "devices": backend.devices(),
    }
    lines = ["scene\tgold\twritten"] + [
        f"{n}\t{g}\t{w}" for n, (g, w) in enumerate(zip(gold, found["captions"]))
    ]
    runs.write_text("\n".join(lines) + "\n", os.path.join(run_dir, CAPTIONS))
    for n in range(min(config.figures, len(gold))):
        title = f"test scene {n}: gold {gold[n]}, written {found['captions'][n] or '(none)'}"
        draw(
            scenes.images[n],
            found["attention"][n],
            found["captions"][n],
            os.path.join(run_dir, f"attention_{n}"),
            title,
        )
    return result


def report(result: dict[str, Any]) -> str:
    """The metrics as the commands print them."""
    return (
        f"exact match {result['exact_match']:.1%}, digit error rate "
        f"{result['digit_error_rate']:.2%}\n"
        f"attention correctness {result['attention_correctness']:.3f} (uniform "
        f"{result['attention_correctness_uniform']:.3f}), pointing accuracy "
        f"{result['pointing_accuracy']:.1%} (uniform {result['pointing_accuracy_uniform']:.1%})"
    )


def load_run(run_dir: str) -> tuple[Config, Any]:
    """A finished run's ``Config`` and ``model.keras``."""
    import examples.captioning.model  # noqa: F401, PLC0415  (registers the Captioner)

    path = os.path.join(run_dir, runs.CONFIG)
    if not os.path.isfile(path):
        raise runs.RunError(f"no run in {run_dir}: {path} does not exist")
    config = recipes.load(Config, path)
    return config, runs.load_model(run_dir)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m examples.captioning.evaluate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--run", default=DEFAULT_OUTPUT_DIR, help="a finished run's folder")
    parser.add_argument("--beam-size", type=int, default=1, help="1: greedy search")
    args = parser.parse_args(argv)
    try:
        if args.beam_size < 1:
            raise runs.RunError(f"--beam-size expects an integer >= 1, received {args.beam_size}")
        config, model = load_run(args.run)
        result = evaluate(config, model, args.run, args.beam_size)
    except runs.RunError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    # Greedy search updates metrics.json (the SavedModel's search); a beam its own file.
    name = runs.METRICS if args.beam_size == 1 else f"metrics_beam{args.beam_size}.json"
    previous = runs.read_json(os.path.join(args.run, name)) or {}
    runs.write_json({**previous, **result}, os.path.join(args.run, name))
    print(report(result))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
