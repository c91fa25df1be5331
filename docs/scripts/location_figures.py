"""Draws the alignment figure of docs/location-attention.md into docs/img/.

    KERAS_BACKEND=tensorflow python docs/scripts/location_figures.py [--output DIR] [--epochs N]

`location_alignments.png`: the classic Tacotron figure (decoder step against
encoder position) for one held-out sentence of a toy "stretch" task (every
source token said twice, so the true alignment is a staircase of slope 1/2),
learned by six input-feeding GRU decoders that differ only in their
attention: content-based `BahdanauAttention`, `LocationSensitiveAttention`,
`BahdanauMonotonicAttention` and `StepwiseMonotonicAttention` (trained and
drawn in their soft modes, "parallel" and "soft", with sigmoid noise; their
titles also give the accuracy of the same weights in "hard" mode),
`GMMAttention` and `DynamicConvolutionAttention`. The weights are those of
teacher-forced decoding. It trains for a few minutes on a CPU; the title of
each panel gives its held-out token accuracy.
"""

from __future__ import annotations

import argparse
import pathlib
from collections.abc import Sequence

import keras
import numpy as np

import keras_attention as ka

DEFAULT_OUTPUT = pathlib.Path(__file__).resolve().parent.parent / "img"
VOCAB, START, LENGTH = 10, 11, 12  # tokens 1..10, start symbol 11, source length


def stretch_data(count: int, seed: int):
    """`(source, decoder_inputs, targets)`: each source token repeated twice."""
    rng = np.random.default_rng(seed)
    source = rng.integers(1, VOCAB + 1, size=(count, LENGTH)).astype("int32")
    targets = np.repeat(source, 2, axis=1)  # (N, 2 * LENGTH)
    decoder_inputs = np.concatenate([np.full((count, 1), START), targets[:, :-1]], 1)
    return source, decoder_inputs.astype("int32"), targets


def attentions() -> dict:
    return {
        "BahdanauAttention (content only)": lambda: ka.BahdanauAttention(32),
        "LocationSensitiveAttention": lambda: ka.LocationSensitiveAttention(
            32, filters=8, kernel_size=7
        ),
        "BahdanauMonotonicAttention": lambda: ka.BahdanauMonotonicAttention(
            32, sigmoid_noise=1.0, score_bias_init=-1.0, seed=0
        ),
        "StepwiseMonotonicAttention": lambda: ka.StepwiseMonotonicAttention(
            32, sigmoid_noise=1.0, mode="soft", seed=0
        ),
        "GMMAttention": lambda: ka.GMMAttention(units=32),
        "DynamicConvolutionAttention": lambda: ka.DynamicConvolutionAttention(units=32),
    }


def build_model(attention) -> keras.Model:
    source_in = keras.Input((LENGTH,), dtype="int32")
    target_in = keras.Input((None,), dtype="int32")
    encoded = keras.layers.Embedding(VOCAB + 2, 16)(source_in)
    encoded = keras.layers.Bidirectional(keras.layers.GRU(16, return_sequences=True))(encoded)
    embedded = keras.layers.Embedding(VOCAB + 2, 16)(target_in)
    cell = ka.AttentionRNNCell(
        keras.layers.GRUCell(32), attention, attention_layer_size=32, return_attention_weights=True
    )
    outputs = ka.AttentionRNN(cell)(embedded, encoded)
    logits = keras.layers.Dense(VOCAB + 2)(outputs[..., :-LENGTH])
    weights = outputs[..., -LENGTH:]  # (B, T, Tv)
    return keras.Model([source_in, target_in], [logits, weights])


def _evaluate(model: keras.Model):
    """(held-out token accuracy, teacher-forced weights (T, Tv) of held-out sentence 0)."""
    test_source, test_inputs, test_targets = stretch_data(64, seed=2)
    logits, weights = model.predict([test_source, test_inputs], verbose=0)
    return float(np.mean(np.argmax(logits, -1) == test_targets)), np.asarray(weights[0])


def train(name: str, factory, epochs: int, examples: int):
    """(panel title, weights (T, Tv) of held-out sentence 0)."""
    model = build_model(factory())
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile("adam", [loss, None])
    source, decoder_inputs, targets = stretch_data(examples, seed=1)
    model.fit([source, decoder_inputs], [targets, targets], batch_size=64, epochs=epochs, verbose=0)
    accuracy, weights = _evaluate(model)
    title = f"{name}\nheld-out accuracy {accuracy:.2f}"
    attention = next(
        layer for layer in model.layers if isinstance(layer, ka.AttentionRNN)
    ).cell.attention
    if "Monotonic" in name:  # the same weights decoding in hard mode
        config = {**attention.get_config(), "mode": "hard"}
        hard = build_model(type(attention).from_config(config))
        hard.set_weights(model.get_weights())
        hard_accuracy, _ = _evaluate(hard)
        title = (
            f"{name} ({attention.mode})\n"
            f"held-out accuracy {accuracy:.2f}, hard mode {hard_accuracy:.2f}"
        )
    print(title.replace("\n", ": "))
    return title, weights


def alignment_figure(path: pathlib.Path, epochs: int, examples: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 3, figsize=(13, 8.4), sharey=True)
    for axis, (name, factory) in zip(axes.flat, attentions().items()):
        title, weights = train(name, factory, epochs, examples)
        image = axis.imshow(weights.T, aspect="auto", origin="lower", cmap="viridis", vmin=0)
        axis.set(title=title, xlabel="decoder step")
        figure.colorbar(image, ax=axis, fraction=0.05)
    for axis in axes[:, 0]:
        axis.set_ylabel("encoder position")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> list[pathlib.Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=pathlib.Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--epochs", type=int, default=12)  # the committed figure
    parser.add_argument("--examples", type=int, default=3000)
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(0)
    path = args.output / "location_alignments.png"
    alignment_figure(path, args.epochs, args.examples)
    print(path)
    return [path]


if __name__ == "__main__":
    main()
