"""Captions your own image and draws where each digit was read: ``predict IMAGE.png``.

``python -m examples.captioning.predict IMAGE.png [--run runs/captioning]``
prints the caption and writes ``IMAGE.attention.png`` and
``IMAGE.attention.html`` (each written digit's weights over the image) beside
the image (or in ``--output-dir``). The image must have the run's scene size
(24x64 pixels by default) with light digits on a dark background, as the
scenes do (``--invert`` for dark ink on white paper); colour is averaged to
gray. A scene of the run's own test split: ``--scene N``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import numpy as np

from examples.captioning import data
from examples.captioning.config import DEFAULT_OUTPUT_DIR
from examples.captioning.evaluate import draw
from examples.captioning.evaluate import load_run
from examples.captioning.evaluate import search_captions
from examples.common import runs


def read_image(path: str) -> np.ndarray:
    """The pixels of an image file (PNG, JPEG, ... through Pillow), as stored."""
    if not os.path.isfile(path):
        raise runs.RunError(f"{path}: no such file")
    from PIL import Image  # noqa: PLC0415  (Pillow comes with matplotlib)

    try:
        with Image.open(path) as image:
            return np.asarray(image)
    except OSError as error:
        raise runs.RunError(f"{path}: not an image Pillow reads ({error})") from None


def caption_image(model, image: np.ndarray, height: int, width: int, invert: bool = False):
    """``(caption, attention (T, H', W'), scene uint8)`` of one picture (``data.as_image``)."""
    scene = data.as_image(image, height, width)
    if invert:
        scene = 255 - scene
    found = search_captions(model, scene[None])
    return found["captions"][0], found["attention"][0], scene


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(
        prog="python -m examples.captioning.predict", description=__doc__.split("\n")[0]
    )
    parser.add_argument("image", nargs="?", help="an image file of the run's scene size")
    parser.add_argument("--scene", type=int, help="caption test scene N instead of a file")
    parser.add_argument("--run", default=DEFAULT_OUTPUT_DIR, help="a finished run's folder")
    parser.add_argument("--invert", action="store_true", help="dark digits on a light ground")
    parser.add_argument("--output-dir", help="where the overlay goes (default: beside IMAGE)")
    args = parser.parse_args(argv)
    try:
        if (args.image is None) == (args.scene is None):
            raise runs.RunError("give an IMAGE or --scene N (one of them)")
        config, model = load_run(args.run)
        if args.image is not None:
            image, name = read_image(args.image), os.path.splitext(args.image)[0]
        else:
            scenes = data.load(config)["test"]
            if not 0 <= args.scene < len(scenes.images):
                raise runs.RunError(f"--scene expects 0..{len(scenes.images) - 1}")
            image, name = scenes.images[args.scene], os.path.join(args.run, f"scene_{args.scene}")
        caption, attention, scene = caption_image(
            model, image, config.height, config.width, args.invert
        )
    except (runs.RunError, ValueError, TypeError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if args.output_dir is not None:
        os.makedirs(args.output_dir, exist_ok=True)
        name = os.path.join(args.output_dir, os.path.basename(name))
    draw(scene, attention, caption, f"{name}.attention", f"caption: {caption or '(none)'}")
    print(caption)
    print(f"Overlay: {name}.attention.png, {name}.attention.html")
    return caption


if __name__ == "__main__":
    main(sys.argv[1:])
