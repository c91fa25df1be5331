"""Draws the figures of docs/positional-encodings.md into docs/img/.

    python docs/scripts/positional_figures.py [--output DIR]

Figures:

- `positional_sinusoidal.png`: the `SinusoidalPositionalEncoding` of 128
  positions and 64 features as a heat map, and four of its features along
  the positions.
- `positional_rotary.png`: the logit between a query and a key that are the
  same vector, rotated by `rotary_embedding` at positions `m` and `n`,
  against `m - n`, at two starting positions (the curves coincide).

The encodings come from the package itself; any Keras backend works.
Matplotlib is used with the Agg backend (no display needed).
"""

from __future__ import annotations

import argparse
import pathlib
from collections.abc import Sequence

import keras
import numpy as np

from keras_attention import SinusoidalPositionalEncoding
from keras_attention.rotary import rotary_embedding

DEFAULT_OUTPUT = pathlib.Path(__file__).resolve().parent.parent / "img"


def sinusoidal_figure(path: pathlib.Path, positions: int = 128, features: int = 64) -> None:
    import matplotlib.pyplot as plt

    zeros = np.zeros((1, positions, features), "float32")
    encoding = keras.ops.convert_to_numpy(SinusoidalPositionalEncoding(mode="encoding")(zeros))[0]
    figure, (heat, lines) = plt.subplots(1, 2, figsize=(11, 4), width_ratios=(1.2, 1))
    image = heat.imshow(encoding.T, aspect="auto", cmap="RdBu", vmin=-1, vmax=1, origin="lower")
    heat.set(xlabel="position", ylabel="feature", title="Sinusoidal encoding PE[pos, feature]")
    figure.colorbar(image, ax=heat)
    for feature in (6, 7, 20, 40):  # a sine-cosine pair, then slower wavelengths
        lines.plot(encoding[:, feature], label=f"feature {feature}")
    lines.set(xlabel="position", ylabel="value", title="Four features along the positions")
    lines.legend(loc="lower left", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def rotary_figure(path: pathlib.Path, features: int = 64, distance: int = 60) -> None:
    import matplotlib.pyplot as plt

    vector = np.random.default_rng(0).normal(size=(1, features)).astype("float32")
    figure, axis = plt.subplots(figsize=(7, 3.6))
    offsets = np.arange(-distance, distance + 1)
    for start in (distance, 500):
        query = keras.ops.convert_to_numpy(rotary_embedding(vector, np.array([start])))
        keys = np.repeat(vector, len(offsets), axis=0)  # (N, d), one key per distance
        keys = keras.ops.convert_to_numpy(rotary_embedding(keys, start - offsets))
        axis.plot(
            offsets,
            (keys @ query.T)[:, 0] / features,
            label=f"query at position {start}",
            linestyle="-" if start == distance else "--",
        )
    axis.set(
        xlabel="query position - key position",
        ylabel="q·k / d",
        title="RoPE: the logit depends on the relative position only",
    )
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> list[pathlib.Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=pathlib.Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    args.output.mkdir(parents=True, exist_ok=True)
    paths = [args.output / "positional_sinusoidal.png", args.output / "positional_rotary.png"]
    sinusoidal_figure(paths[0])
    rotary_figure(paths[1])
    for path in paths:
        print(f"wrote {path}")
    return paths


if __name__ == "__main__":
    main()
