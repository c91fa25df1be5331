"""Draws the figures of the documentation into docs/img/.

    python docs/scripts/make_figures.py                # all figures, a few minutes on a CPU
    python docs/scripts/make_figures.py --epochs 1     # quick run (what the docs test does)

Figures:

- `reversal_heatmap.png`: a tiny GRU encoder-decoder with `BahdanauAttention`
  trained to reverse digit strings; its attention is the anti-diagonal.
- `probability_fns.png`: one row of logits normalized by softmax, sparsemax
  and hardmax.
- `multi_head_causal.png`: the four heads of an untrained causal
  `MultiHead` self-attention, drawn by `plot_heads`.
- `padding_trimmed.png`: padded weights drawn with the padding cut off.

Every figure is drawn by `keras_attention.plot_attention` or `plot_heads`;
the script runs on any Keras backend.
"""

from __future__ import annotations

import argparse
import pathlib
from collections.abc import Sequence

import keras
import numpy as np

import keras_attention
from keras_attention import BahdanauAttention
from keras_attention import MultiHead
from keras_attention import plot_attention
from keras_attention import plot_heads

DEFAULT_OUTPUT = pathlib.Path(__file__).resolve().parent.parent / "img"
PAD, START, END = 0, 1, 2  # token ids; digits 0-9 are ids 3-12
VOCAB = 13


def digit_tokens(ids: Sequence[int]) -> list[str]:
    """Labels of token ids: digits, `<s>` and `</s>` (padding is never drawn)."""
    names = {PAD: "<pad>", START: "<s>", END: "</s>"}
    return [names.get(int(i), str(int(i) - 3)) for i in ids]


def reversal_data(examples: int, length: int, seed: int) -> tuple:
    """Digit strings of 3..`length` digits; targets are the reversed strings.

    Returns `((source, target_in), target_out)` int32 arrays, padded with 0:
    source `(N, length)`, decoder inputs `<s> y...` and outputs `y... </s>`
    `(N, length + 1)`.
    """
    rng = np.random.default_rng(seed)
    source = np.zeros((examples, length), "int32")
    target_in = np.zeros((examples, length + 1), "int32")
    target_out = np.zeros((examples, length + 1), "int32")
    for n in range(examples):
        size = rng.integers(3, length + 1)
        digits = rng.integers(0, 10, size) + 3
        source[n, :size] = digits
        target_in[n, : size + 1] = [START, *digits[::-1]]
        target_out[n, : size + 1] = [*digits[::-1], END]
    return (source, target_in), target_out


def reversal_model(units: int = 32) -> keras.Model:
    """Encoder-decoder whose second output is the `(B, Tq, Tv)` attention."""
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    encoded = keras.layers.Embedding(VOCAB, 16, mask_zero=True)(source)
    encoded = keras.layers.Bidirectional(keras.layers.GRU(units, return_sequences=True))(encoded)
    decoded = keras.layers.Embedding(VOCAB, 16, mask_zero=True)(target)
    decoded = keras.layers.GRU(units, return_sequences=True)(decoded)
    context, weights = BahdanauAttention(units)(decoded, encoded, return_attention_scores=True)
    features = keras.layers.Concatenate()([decoded, context])
    logits = keras.layers.Dense(VOCAB, name="logits")(features)
    return keras.Model([source, target], [logits, weights])


def train_reversal(epochs: int, examples: int, seed: int) -> keras.Model:
    """Trains `reversal_model` with teacher forcing; returns the model."""
    keras.utils.set_random_seed(seed)
    model = reversal_model()
    (source, target_in), target_out = reversal_data(examples, 8, seed)
    trainer = keras.Model(model.inputs, model.outputs[0])
    trainer.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    sample_weight = (target_out != PAD).astype("float32")
    trainer.fit(
        [source, target_in],
        target_out,
        sample_weight=sample_weight,
        batch_size=64,
        epochs=epochs,
        verbose=0,
    )
    return model


def reversal_heatmap(model: keras.Model, output: pathlib.Path) -> pathlib.Path:
    """Greedy-decodes one string and draws the attention of every output step."""
    source = np.array([[4, 7, 3, 11, 8, 5, 0, 0]], "int32")  # "1 4 0 8 5 2" and padding
    target = [START]
    for _ in range(8):  # greedy decoding, re-running the decoder on its own outputs
        logits, weights = model.predict([source, np.array([target], "int32")], verbose=0)
        target.append(int(np.argmax(logits[0, -1])))
        if target[-1] == END:
            break
    outputs = target[1:]
    ax = plot_attention(
        weights[0],
        digit_tokens(source[0]),
        digit_tokens(outputs),
        source_length=int((source[0] != PAD).sum()),
        annotate=True,
        title="BahdanauAttention, trained to reverse digits",
    )
    ax.set_xlabel("source (encoder)")
    ax.set_ylabel("output (decoder)")
    path = output / "reversal_heatmap.png"
    ax.figure.savefig(path, dpi=110, bbox_inches="tight")
    return path


def probability_fns_figure(output: pathlib.Path) -> pathlib.Path:
    """The same logits through softmax, sparsemax and hardmax, side by side."""
    from matplotlib.figure import Figure

    logits = np.array([[2.0, 1.6, 0.3, -0.5, 1.9, 0.0]], "float32")  # (Tq=1, Tv=6)
    figure = Figure(figsize=(9, 1.9), layout="constrained")
    axes = figure.subplots(1, 3)
    tokens = ["a", "b", "c", "d", "e", "f"]
    for ax, name in zip(axes, ("softmax", "sparsemax", "hardmax")):
        weights = keras.ops.convert_to_numpy(
            keras_attention.ops.attention_weights(logits, None, name)
        )
        plot_attention(
            weights,
            tokens,
            ["q"],
            ax=ax,
            annotate=True,
            colorbar=False,
            vmin=0.0,
            vmax=1.0,
            title=name,
        )
    path = output / "probability_fns.png"
    figure.savefig(path, dpi=110)
    return path


def multi_head_figure(output: pathlib.Path, seed: int) -> pathlib.Path:
    """The four heads of a causal `MultiHead` self-attention (untrained)."""
    keras.utils.set_random_seed(seed)
    tokens = "the cat sat on the mat".split()
    x = np.random.default_rng(seed).normal(size=(1, len(tokens), 16)).astype("float32")
    layer = MultiHead(num_heads=4, key_dim=8)
    _, weights = layer(x, x, use_causal_mask=True, return_attention_scores=True)  # (1, 4, 6, 6)
    figure = plot_heads(
        weights,
        tokens,
        tokens,
        index=0,
        ncols=4,
        title="MultiHead(num_heads=4), use_causal_mask=True",
    )
    path = output / "multi_head_causal.png"
    figure.savefig(path, dpi=100)
    return path


def padding_figure(output: pathlib.Path) -> pathlib.Path:
    """Weights of a padded batch drawn with `source_length`/`target_length`."""
    from matplotlib.figure import Figure

    query = np.random.default_rng(0).normal(size=(2, 4, 8)).astype("float32")
    value_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)  # (B, Tv)
    value = np.random.default_rng(1).normal(size=(2, 5, 8)).astype("float32")
    _, weights = keras_attention.ScaledDotProduct()(
        query, value, value_mask=value_mask, return_attention_scores=True
    )
    figure = Figure(figsize=(7, 2.6), layout="constrained")
    left, right = figure.subplots(1, 2)
    source = ["s0", "s1", "s2", "<pad>", "<pad>"]
    target = ["t0", "t1", "t2", "t3"]
    plot_attention(
        weights,
        source,
        target,
        ax=left,
        index=0,
        colorbar=False,
        annotate=True,
        title="as computed",
    )
    plot_attention(
        weights,
        source,
        target,
        ax=right,
        index=0,
        source_length=[3, 5],
        colorbar=False,
        annotate=True,
        title="source_length=[3, 5]",
    )
    path = output / "padding_trimmed.png"
    figure.savefig(path, dpi=100)
    return path


def main(argv: Sequence[str] | None = None) -> list[pathlib.Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--output",
        type=pathlib.Path,
        default=DEFAULT_OUTPUT,
        help="folder of the PNG files (default: docs/img)",
    )
    parser.add_argument(
        "--epochs", type=int, default=12, help="training epochs of the reversal model"
    )
    parser.add_argument("--examples", type=int, default=4000, help="training strings")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    paths = [
        probability_fns_figure(args.output),
        multi_head_figure(args.output, args.seed),
        padding_figure(args.output),
    ]
    print(f"training the reversal model for {args.epochs} epochs ...", flush=True)
    model = train_reversal(args.epochs, args.examples, args.seed)
    paths.append(reversal_heatmap(model, args.output))
    for path in paths:
        print(f"wrote {path}")
    return paths


if __name__ == "__main__":
    main()
