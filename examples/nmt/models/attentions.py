"""The attention layers the RNN translator can use, by name, and their sizes.

``make_attention(name, units, num_heads, attention_units)`` builds one of
the package's layers for ``units``-feature queries and memory (the
``--attention`` choices: ``ATTENTIONS``). ``attention_units`` is the size of
the hidden layer of the attentions that score through one
(``SIZED_ATTENTIONS``: Bahdanau's ``v . tanh(W_q q + W_k k)``, and the
location-aware layers, whose scores or mixture parameters come from such a
layer); left None, it is ``units``. A smaller one
costs less a step: in the g2p recipe's model of 512 units, 128 inside
Bahdanau's tanh took the train step to 0.89x its time
(``benchmarks/train_step.py``; ``examples/nmt/README.md``).
``set_attention_mode`` switches a trained monotonic or stepwise attention to
another mode for decoding.
"""

from __future__ import annotations

from collections.abc import Callable

import keras

import keras_attention

# What monotonic attention trains with: a little noise on its stopping
# probabilities (regularization; decoding stays in the soft "parallel" mode).
MONOTONIC_SIGMOID_NOISE = 0.5


def _multihead(units: int, num_heads: int) -> keras.layers.Layer:
    if num_heads < 1 or units % num_heads:
        raise ValueError(
            f"Expected num_heads >= 1 dividing units. Received: units={units}, "
            f"num_heads={num_heads}"
        )
    return keras_attention.MultiHead(num_heads, units // num_heads, name="attention")


# The one place an attention is registered: name -> layer for ``units``-feature
# queries and memory, given (units, num_heads, attention_units); the last is
# the size of the layers that score through a hidden layer (SIZED_ATTENTIONS),
# ``units`` when left None. A layer with an alignment state
# (``has_alignment_state``) needs nothing more: both decoders carry its state.
ATTENTION_LAYERS: dict[str, Callable[[int, int, int], keras.layers.Layer]] = {
    "bahdanau": lambda _, __, size: keras_attention.BahdanauAttention(size, name="attention"),
    "luong": lambda *_: keras_attention.LuongAttention("general", name="attention"),
    "scaled_dot": lambda *_: keras_attention.ScaledDotProduct(name="attention"),
    "multihead": lambda units, num_heads, _: _multihead(units, num_heads),
    # Tacotron 2's 32 filters of width 31, with `size` inside the tanh.
    "location": lambda _, __, size: keras_attention.LocationSensitiveAttention(
        size, name="attention"
    ),
    # Trained and decoded in the soft "parallel" mode (see the module doc).
    "monotonic": lambda _, __, size: keras_attention.BahdanauMonotonicAttention(
        size, sigmoid_noise=MONOTONIC_SIGMOID_NOISE, mode="parallel", name="attention"
    ),
    "local-p": lambda *_: keras_attention.LuongLocalPAttention(name="attention"),
    # As monotonic: soft in training and decoding, a little noise in training.
    "stepwise": lambda _, __, size: keras_attention.StepwiseMonotonicAttention(
        size, sigmoid_noise=MONOTONIC_SIGMOID_NOISE, mode="soft", name="attention"
    ),
    # GMMv2b, 5 components (its state holds the (B, 5) means); DCA, the paper's filters.
    "gmm": lambda _, __, size: keras_attention.GMMAttention(units=size, name="attention"),
    "dca": lambda _, __, size: keras_attention.DynamicConvolutionAttention(
        units=size, name="attention"
    ),
}
ATTENTIONS = tuple(ATTENTION_LAYERS)
# The attentions with a hidden layer of their own, whose size attention_units sets.
SIZED_ATTENTIONS = ("bahdanau", "location", "monotonic", "stepwise", "gmm", "dca")


def make_attention(
    kind: str, units: int, num_heads: int = 4, attention_units: int | None = None
) -> keras.layers.Layer:
    """One of the package's layers, sized for ``units``-feature queries and memory.

    ``attention_units``: the hidden size of a ``SIZED_ATTENTIONS`` layer
    (``units`` when None); ValueError for the others.
    """
    if kind not in ATTENTIONS:
        raise ValueError(f"Expected attention in {ATTENTIONS}. Received: {kind!r}")
    if attention_units is not None:
        if kind not in SIZED_ATTENTIONS:
            raise ValueError(
                f"Expected attention in {SIZED_ATTENTIONS} with attention_units (the size "
                f"of its hidden layer). Received: attention={kind!r}, "
                f"attention_units={attention_units}"
            )
        if isinstance(attention_units, bool) or not isinstance(attention_units, int):
            raise TypeError(
                "Expected attention_units to be an int or None. Received: "
                f"{type(attention_units).__name__}"
            )
        if attention_units < 1:
            raise ValueError(f"Expected attention_units >= 1. Received: {attention_units}")
    return ATTENTION_LAYERS[kind](units, num_heads, attention_units or units)


def set_attention_mode(model: keras.Model, mode: str) -> None:
    """Decodes with the model's monotonic or stepwise attention in ``mode`` (in memory only).

    For scoring weights trained in one mode in another: ``"hard"`` decoding
    of a ``monotonic`` run trained ``"parallel"`` (soft), the recipe of
    Raffel et al. 2017. Raises ValueError for an attention without modes or
    a mode it does not have.
    """
    attention = getattr(model, "attention_layer", None)  # Seq2Seq's; a Transformer has none
    config = attention.get_config() if attention is not None else {}
    if "mode" not in config:
        raise ValueError(
            "Expected a run whose attention has modes (monotonic, stepwise) for "
            f"--attention-mode. Received a run with {type(attention).__name__}"
        )
    type(attention)(**{**config, "mode": mode})  # ValueError for a mode it lacks
    attention.mode = mode
