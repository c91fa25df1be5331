"""Listen, Attend and Spell for connected digits: a waveform in, its digits out.

Read top to bottom:

1. ``LogMel``: ``(B, S)`` waveform at 8 kHz and ``(B,)`` lengths -> ``(B, F, M)``
   log-mel frames every 10 ms (``keras.layers.MelSpectrogram``: 32 ms
   windows, centred, frame ``k`` at sample ``80 k``), each mel bin less its
   mean over the utterance's own frames, zero after them. The features are
   inside the model, so the exported model takes a raw waveform.
2. The listener (``ConvEncoder``): three strided convolutions
   (``SUBSAMPLING`` = 8: memory position ``j`` is centred on sample ``640 j``)
   and residual convolutions: the memory ``(B, Tv, conv_filters)`` and its mask,
   then (``end_sentinel``) one learned end-of-audio position, where END attends.
3. The speller: ``AttentionRNN(AttentionRNNCell(GRUCell, attention))``,
   input feeding, over ``[START, d_1, ...]``; location-sensitive attention by
   default (Chorowski et al., 2015), or another of the package's (``ATTENTIONS``).
4. Logits over ``PAD, START, END, 0..9`` from each step's attentional vector.

Decoding (``examples.speech.search``): ``initial_state`` encodes once;
``step`` runs one decoder step from the previous token (the cell's own
``pack_state`` / ``unpack_state``, the same for every attention).
"""

from __future__ import annotations

import types
from typing import Any

import keras
from keras import ops

import keras_attention
from examples.speech.config import Config
from examples.speech.data import PAD
from examples.speech.data import SAMPLING_RATE
from examples.speech.data import VOCABULARY_SIZE
from keras_attention import AttentionRNNState

FFT_LENGTH = 256  # 32 ms at 8 kHz
STRIDE = 80  # 10 ms: frame k is centred on sample 80 k
SUBSAMPLING = 8  # three convolutions of stride 2
SAMPLES_PER_STEP = STRIDE * SUBSAMPLING  # one memory position stands for 80 ms

ATTENTIONS = {
    "location_sensitive": lambda c: keras_attention.LocationSensitiveAttention(
        c["attention_units"],
        c["location_filters"],
        c["location_kernel_size"],
        probability_fn=c["probability_fn"],
        name="attention",
    ),
    "bahdanau": lambda c: keras_attention.BahdanauAttention(
        c["attention_units"], probability_fn=c["probability_fn"], name="attention"
    ),
    # Soft in training and decoding (a little noise in training), as examples/nmt does.
    "monotonic": lambda c: keras_attention.BahdanauMonotonicAttention(
        c["attention_units"], sigmoid_noise=0.5, mode="parallel", name="attention"
    ),
    "stepwise_monotonic": lambda c: keras_attention.StepwiseMonotonicAttention(
        c["attention_units"], sigmoid_noise=0.5, mode="soft", name="attention"
    ),
    "gmm": lambda c: keras_attention.GMMAttention(units=c["attention_units"], name="attention"),
    "dca": lambda c: keras_attention.DynamicConvolutionAttention(
        units=c["attention_units"], name="attention"
    ),
}
TAKE_PROBABILITY_FN = ("location_sensitive", "bahdanau")
# Attention that need not move forward through the audio: a search's end guard
# (``search.end_guard``, which reads where the attention is) does not apply to it.
CONTENT_ONLY = ("bahdanau",)


def valid_frames(lengths: Any) -> Any:
    """Frames whose centre lies inside the waveform: ``ceil(lengths / STRIDE)``."""
    return (lengths + STRIDE - 1) // STRIDE


@keras.saving.register_keras_serializable(package="examples_speech")
class LogMel(keras.layers.Layer):
    """``(B, S)`` waveform, ``(B,)`` lengths -> ``(B, F, num_mel_bins)`` normalized log-mel."""

    def __init__(self, num_mel_bins: int = 40, sampling_rate: int = SAMPLING_RATE, **kwargs):
        super().__init__(**kwargs)
        self.num_mel_bins = num_mel_bins
        self.sampling_rate = sampling_rate
        self.mel = keras.layers.MelSpectrogram(
            fft_length=FFT_LENGTH,
            sequence_stride=STRIDE,
            sampling_rate=sampling_rate,
            num_mel_bins=num_mel_bins,
            min_freq=20.0,
            max_freq=sampling_rate / 2,
            power_to_db=False,
            dtype="float32",
        )

    def build(self, waveform_shape, lengths_shape=None):
        self.mel.build(waveform_shape)
        self.built = True

    def call(self, waveform, lengths):
        # Zeros after the waveform, so that the last frames never see the centred
        # STFT's reflection of the array's end: padding after an utterance changes nothing.
        waveform = ops.pad(waveform, ((0, 0), (0, FFT_LENGTH // 2)))
        power = ops.transpose(self.mel(waveform), (0, 2, 1))  # (B, F, M)
        log_mel = ops.log(power + 1e-6)
        frames = ops.arange(ops.shape(log_mel)[1])
        mask = ops.cast(frames[None, :] < valid_frames(lengths)[:, None], log_mel.dtype)  # (B, F)
        count = ops.maximum(ops.sum(mask, axis=1), 1.0)[:, None, None]  # (B, 1, 1)
        mean = ops.sum(log_mel * mask[..., None], axis=1, keepdims=True) / count  # (B, 1, M)
        return (log_mel - mean) * mask[..., None]

    def compute_output_shape(self, waveform_shape, lengths_shape=None):
        samples = waveform_shape[1]
        frames = None if samples is None else 1 + (samples + FFT_LENGTH // 2) // STRIDE
        return (waveform_shape[0], frames, self.num_mel_bins)

    def get_config(self):
        return {
            **super().get_config(),
            "num_mel_bins": self.num_mel_bins,
            "sampling_rate": self.sampling_rate,
        }


def positions_mask(count: Any, size: Any) -> Any:
    """Boolean ``(B, size)``: True at positions below each row's ``count``."""
    return ops.arange(size)[None, :] < count[:, None]


@keras.saving.register_keras_serializable(package="examples_speech")
class ConvEncoder(keras.layers.Layer):
    """Log-mel ``(B, F, M)``, lengths ``(B,)`` -> memory ``(B, Tv, filters)``, mask ``(B, Tv)``.

    Three convolutions of width 5 and stride 2, each over frames padded with
    two zeros a side (memory position ``j`` is centred on frame ``8 j``, sample
    ``640 j``, whatever the padding after the utterance), then
    ``context_layers`` residual convolutions of width 5 (each widens what a
    position hears by 320 ms); a layer normalization and ReLU after each.
    Positions past an utterance's end are zeroed after every layer, so a
    waveform's memory does not depend on how much padding follows it.
    With ``end_sentinel``, one more position follows each utterance's last
    (at ``Tv``, the first padded one): a learned vector, the end of the audio,
    where the END token can attend (so the attention moves forward to finish;
    without it END learns to attend the first positions, and a decoding window
    that follows the attention forward cannot reach END).
    (A bidirectional GRU here needs the mask too: Keras runs a masked GRU in
    a Python loop on PyTorch, 5 to 15 times slower than the whole encoder.)
    """

    def __init__(
        self, filters: int = 64, context_layers: int = 3, end_sentinel: bool = False, **kwargs
    ):
        super().__init__(**kwargs)
        self.filters = filters
        self.context_layers = context_layers
        self.end_sentinel = end_sentinel
        self.subsampling = [
            keras.layers.Conv1D(filters, 5, strides=2, name=f"subsample_{i}") for i in range(3)
        ]
        self.context = [
            keras.layers.Conv1D(filters, 5, padding="same", name=f"context_{i}")
            for i in range(context_layers)
        ]
        self.norms = [
            keras.layers.LayerNormalization(name=f"norm_{i}") for i in range(3 + context_layers)
        ]

    def build(self, features_shape, lengths_shape=None):
        size = features_shape[-1]
        for convolution in [*self.subsampling, *self.context]:
            convolution.build((None, None, size))
            size = self.filters
        for norm in self.norms:
            norm.build((None, None, self.filters))
        if self.end_sentinel:
            self.sentinel = self.add_weight(
                shape=(self.filters,),
                initializer=keras.initializers.RandomNormal(stddev=1.0),
                name="end_sentinel",
            )
        self.built = True

    def call(self, features, lengths):
        x, count = features, valid_frames(lengths)
        for convolution, norm in zip(self.subsampling, self.norms):
            x = convolution(ops.pad(x, ((0, 0), (2, 2), (0, 0))))  # (B, ceil(n / 2), filters)
            count = (count + 1) // 2
            mask = positions_mask(count, ops.shape(x)[1])
            x = keras.activations.relu(norm(x)) * ops.cast(mask, x.dtype)[..., None]
        for convolution, norm in zip(self.context, self.norms[3:]):
            x = x + keras.activations.relu(norm(convolution(x)))
            x = x * ops.cast(mask, x.dtype)[..., None]
        if self.end_sentinel:
            x = ops.pad(x, ((0, 0), (0, 1), (0, 0)))  # (B, Tv + 1, filters)
            steps = ops.shape(x)[1]
            at_end = ops.cast(ops.arange(steps)[None, :] == count[:, None], x.dtype)  # (B, Tv + 1)
            x = x + at_end[..., None] * ops.cast(self.sentinel, x.dtype)
            mask = positions_mask(count + 1, steps)
        return x, mask

    def compute_output_spec(self, features, lengths):
        steps = features.shape[1]
        for _ in range(3):
            steps = None if steps is None else (steps + 1) // 2
        if self.end_sentinel and steps is not None:
            steps += 1
        batch = features.shape[0]
        return (
            keras.KerasTensor((batch, steps, self.filters), dtype=self.compute_dtype),
            keras.KerasTensor((batch, steps), dtype="bool"),
        )

    def get_config(self):
        return {
            **super().get_config(),
            "filters": self.filters,
            "context_layers": self.context_layers,
            "end_sentinel": self.end_sentinel,
        }


def _encode(parts: Any, waveform: Any, lengths: Any) -> tuple[Any, Any]:
    """The memory ``(B, Tv, conv_filters)`` and its boolean mask ``(B, Tv)``."""
    return parts.encoder(parts.features(waveform, lengths), lengths)


@keras.saving.register_keras_serializable(package="examples_speech")
class Listener(keras.Model):
    """The teacher-forced model ``(waveform, lengths, decoder_in) -> logits (B, T, 13)``.

    Its layers, by the attributes ``encode`` and ``step`` read, are made
    before the Functional graph and set on the model once it exists (on
    PyTorch a layer is a ``torch.nn.Module``, which a model takes only after
    its own ``__init__``). Arguments: the model fields of ``Config``.
    """

    def __init__(
        self,
        num_mel_bins: int = 40,
        conv_filters: int = 64,
        context_layers: int = 3,
        end_sentinel: bool = False,  # what a model saved before the option holds
        decoder_units: int = 128,
        embedding_dim: int = 32,
        attention: str = "location_sensitive",
        attention_units: int = 64,
        location_filters: int = 16,
        location_kernel_size: int = 41,
        inference_window: tuple[int, int] | None = (4, 20),
        probability_fn: str = "softmax",
        end_window: int | None = None,  # what a model saved before the option holds
        **kwargs: Any,
    ):
        if attention not in ATTENTIONS:
            raise ValueError(f"Expected attention in {tuple(ATTENTIONS)}. Received: {attention!r}")
        if probability_fn != "softmax" and attention not in TAKE_PROBABILITY_FN:
            raise ValueError(
                f"Expected probability_fn='softmax' with attention={attention!r} (only "
                f"{TAKE_PROBABILITY_FN} take another). Received: {probability_fn!r}"
            )
        if end_window is not None and (
            isinstance(end_window, bool) or not isinstance(end_window, int) or end_window < 0
        ):
            raise ValueError(
                f"Expected end_window a non-negative int or None. Received: {end_window!r}"
            )
        settings = dict(
            num_mel_bins=num_mel_bins,
            conv_filters=conv_filters,
            context_layers=context_layers,
            end_sentinel=end_sentinel,
            decoder_units=decoder_units,
            embedding_dim=embedding_dim,
            attention=attention,
            attention_units=attention_units,
            location_filters=location_filters,
            location_kernel_size=location_kernel_size,
            inference_window=None if inference_window is None else tuple(inference_window),
            probability_fn=probability_fn,
            end_window=end_window,
        )
        # === Layers ===
        parts = types.SimpleNamespace()
        parts.features = LogMel(num_mel_bins, name="log_mel")
        parts.encoder = ConvEncoder(conv_filters, context_layers, end_sentinel, name="encoder")
        # No Keras mask on the decoder's input: the steps after END (padding) come after
        # every real step of a causal RNN and the loss ignores them, so they change
        # nothing; and Keras runs a masked RNN on PyTorch ten times slower (8 s a batch).
        parts.embedding = keras.layers.Embedding(VOCABULARY_SIZE, embedding_dim, name="embedding")
        parts.attention_layer = ATTENTIONS[attention](settings)
        parts.cell = keras_attention.AttentionRNNCell(
            keras.layers.GRUCell(decoder_units, name="decoder_gru"),
            parts.attention_layer,
            attention_layer_size=decoder_units,
            output_attention=True,  # the cell's output is a_t, the attentional vector
            name="attention_cell",
        )
        parts.decoder = keras_attention.AttentionRNN(parts.cell, name="decoder")
        parts.output_layer = keras.layers.Dense(VOCABULARY_SIZE, dtype="float32", name="logits")

        # === Functional model (teacher forcing) ===
        waveform = keras.Input((None,), dtype="float32", name="waveform")
        lengths = keras.Input((), dtype="int32", name="lengths")
        decoder_in = keras.Input((None,), dtype="int32", name="decoder_in")
        memory, mask = _encode(parts, waveform, lengths)
        outputs = parts.decoder(parts.embedding(decoder_in), memory, memory_mask=mask)
        logits = parts.output_layer(outputs)  # (B, T, 13)
        kwargs.setdefault("name", f"listener_{attention}")
        super().__init__(
            inputs={"waveform": waveform, "lengths": lengths, "decoder_in": decoder_in},
            outputs=logits,
            **kwargs,
        )
        for key, value in vars(parts).items():
            setattr(self, key, value)
        self.settings = settings

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, **self.settings}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    # ------------------------------------------------------------ decoding
    def encode(self, waveform: Any, lengths: Any) -> tuple[Any, Any]:
        """The memory ``(B, Tv, conv_filters)`` and its boolean mask ``(B, Tv)``."""
        return _encode(self, waveform, lengths)

    def initial_state(self, waveform: Any, lengths: Any) -> tuple[dict[str, Any], tuple]:
        """Encodes once: the first decoder ``state`` and the ``memory`` (keys, values, mask)."""
        memory, mask = self.encode(waveform, lengths)
        full = self.cell.unpack_state(self.cell.initial_state(memory, value_mask=mask))
        return self._changing(full), (full.keys, full.values, full.mask)

    @staticmethod
    def _changing(full: AttentionRNNState) -> dict[str, Any]:
        """What a search carries: the cell's state, ``a_t``, the weights, the alignment state."""
        state = {"cell": full.cell_states, "attention": full.attention, "weights": full.weights}
        if full.alignment is not None:
            state["alignment"] = full.alignment
        return state

    def step(self, ids: Any, state: dict[str, Any], memory: tuple) -> tuple[Any, dict, Any]:
        """``(N,)`` previous tokens -> ``(N, 13)`` float32 logits, the new state, ``(N, Tv)``
        weights."""
        embedded = ops.take(self.embedding.embeddings, ids, axis=0)  # (N, E)
        full = AttentionRNNState(
            state["cell"], state["attention"], state["weights"], *memory,
            alignment=state.get("alignment"),
        )  # fmt: skip
        _, states = self.cell(embedded, self.cell.pack_state(full))
        new = self.cell.unpack_state(states)
        logits = ops.cast(self.output_layer(new.attention), "float32")
        return logits, self._changing(new), ops.cast(new.weights, "float32")


def build_model(config: Config) -> Listener:
    """The untrained model of ``config`` (its model fields)."""
    return Listener(
        num_mel_bins=config.num_mel_bins,
        conv_filters=config.conv_filters,
        context_layers=config.context_layers,
        end_sentinel=config.end_sentinel,
        decoder_units=config.decoder_units,
        embedding_dim=config.embedding_dim,
        attention=config.attention,
        attention_units=config.attention_units,
        location_filters=config.location_filters,
        location_kernel_size=config.location_kernel_size,
        inference_window=config.inference_window,
        probability_fn=config.probability_fn,
        end_window=config.end_window,
    )


def compile_model(model: Listener, config: Config, steps_per_epoch: int = 1) -> Listener:
    """Adam and cross-entropy over the digits and END (the padding, class 0, ignored).

    The rate stays at ``learning_rate`` for the first three quarters of the
    run's ``epochs * steps_per_epoch`` steps, then drops to a fifth: the
    attention finds the alignment only after a plateau of several epochs
    (a decay from the start slowed that down), and the last epochs fine-tune.
    """
    drop = max(1, config.epochs * steps_per_epoch * 3 // 4)
    schedule = keras.optimizers.schedules.PiecewiseConstantDecay(
        [drop], [config.learning_rate, config.learning_rate / 5]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(schedule, clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=PAD),
    )
    return model
