"""Show, Attend and Tell on digit scenes: a small CNN's grid, a GRU that attends over it.

Read top to bottom:

1. **Encoder.** The uint8 scene ``(B, H, W, 1)`` is scaled to [0, 1] and
   run through 3x3 convolutions, each with instance normalization and ReLU,
   and 2x2 max-pooling down to the grid ``(B, H', W', filters)``, ``H' = H
   / pooling`` (four convolutions for the default ``pooling`` 4: each cell
   covers 4x4 pixels and sees 26x26). Trained from scratch: no weights to
   download. Instance normalization (per scene and channel) centres the
   dark background away so that digits stand out: without it training sat
   on a plateau for epochs; batch normalization left its running
   statistics apart from the training batches'.
   Two channels of cell coordinates (row and column, in [0, 1]) are
   appended, so that what a word attends to also says *where* it is:
   the memory is ``(B, H', W', filters + 2)``.
2. **Decoder.** ``AttentionRNNCell(GRUCell(units), attention)`` with input
   feeding (Bahdanau et al.; Luong et al.): at step ``t`` the GRU reads the
   previous token's embedding and the previous attentional vector
   ``a_{t-1}``, its new state ``h_t`` attends over the grid (the cell
   flattens it once, row-major), and ``a_t = tanh(W [h_t; c_t])``. The
   GRU starts from ``tanh(W_0 mean(grid))`` (Xu et al.'s initial state).
   The logits of the next token come from ``a_t``.
3. **Attention.** ``"bahdanau"`` (``BahdanauAttention(attention_units)``,
   the paper's soft attention, default), ``"luong"`` (general) or
   ``"scaled_dot"`` (the keys projected to the query's size first); weights
   ``(B, T, H', W')``. What the attention scores, its keys, is the memory
   itself (``attention_keys="features"``, as in Xu et al.) or each cell's own
   pixels and coordinates (``"cell"``). What it reads, the values, is the
   CNN's grid too (``attention_values="features"``) or, with ``"local"``,
   the stem's output before the last convolutions through two 1x1
   convolutions: 10x10 pixels a cell instead of 26x26 (pooling 4), so that a
   cell beside a digit sees less of it.
   **Where it may look** (``attention_mask="ink"``, the default): only at
   cells that hold ink, a mean pixel of at least ``INK`` = 20% of full (3.2
   of the 16 pixels of a 4x4 cell lit), passed as the cell's ``value_mask``. It
   comes from the pixels, not from any label: a blank cell holds nothing to
   read, yet a CNN feature sees 26x26 pixels, so without the mask the
   attention often settled on the blank cell beside the digit it read.
   A scene without ink gets zero weights and a zero context, not NaN.
   **Or a Transformer** (``architecture="transformer"``,
   ``examples/captioning/transformer.py``): pre-LN blocks of causal
   self-attention, ``MultiHead`` cross-attention over the flattened grid
   (the ink mask its ``value_mask``) and a feed-forward; the weights are the
   last block's cross-attention averaged over heads. The CNN, its keys,
   values and mask are the same.
4. **Doubly stochastic regularization** (Xu et al., eq. 14), with
   ``doubly_stochastic`` = lambda > 0: ``lambda * sum_cells (1 - sum_t
   w_t)^2`` over the caption's real steps, averaged over the batch, is
   added to the loss.

The teacher-forced pass runs ``keras.layers.RNN`` over the cell from
``cell.initial_state(values, key=keys, ...)``; decoding steps the same cell.
``Captioner(images_and_captions)`` gives the teacher-forced logits ``(B, T,
V)`` that training fits; ``attend`` also gives the weights.
Decoding (as the NMT example's models and OpenNMT-tf's ``Decoder``):
``initial_state(images) -> (state, memory)`` encodes once,
``step(ids, state, memory, index) -> (logits, state, weights (N, H'*W'))``
takes one token; ``search`` runs ``keras_attention.decoding``'s greedy or
beam search over it.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import keras
from keras import ops

import keras_attention
from examples.captioning.data import END_ID
from examples.captioning.data import PAD_ID
from examples.captioning.data import START_ID
from examples.captioning.data import VOCABULARY_SIZE
from examples.captioning.transformer import TransformerDecoder
from keras_attention import AttentionRNNState
from keras_attention import decoding

ARCHITECTURES = ("rnn", "transformer")
ATTENTIONS = ("bahdanau", "luong", "scaled_dot")
KEYS = ("cell", "features")
VALUES = ("features", "local")
MASKS = ("ink", "none")
INK = 0.2  # a cell holds ink when its mean pixel reaches 20% of full (3.2 of 16 pixels lit)


def _one_of(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"Expected {name} in {choices}. Received: {name}={value!r}")
    return value


def make_attention(name: str, units: int, attention_units: int) -> keras.layers.Layer:
    """The attention layer of the decoder, by name."""
    if name == "bahdanau":
        return keras_attention.BahdanauAttention(attention_units, name="attention")
    if name == "luong":
        return keras_attention.LuongAttention("general", name="attention")
    if name == "scaled_dot":
        return keras_attention.ScaledDotProduct(name="attention")
    raise ValueError(f"Expected attention in {ATTENTIONS}. Received: attention={name!r}")


@keras.saving.register_keras_serializable(package="examples_captioning")
class Captioner(keras.Model):
    """The captioner; see the module doc.

    Args:
        height, width: the scenes' size in pixels.
        pooling: the grid's stride, a power of 2 dividing ``height`` and ``width``.
        filters: the CNN's channels (the memory has 2 more: the coordinates).
        units: the GRU's state and the attentional vector's size.
        attention: ``"bahdanau"``, ``"luong"`` or ``"scaled_dot"``.
        attention_units: Bahdanau's hidden size.
        embedding_dim: the token embedding's size.
        doubly_stochastic: lambda of the doubly stochastic penalty; 0 is off.
        max_length: the most tokens a search writes (digits and the end).
        attention_keys: ``"features"`` (the CNN's grid) or ``"cell"`` (each cell's pixels).
        attention_values: ``"features"`` or ``"local"`` (the stem's 10x10-pixel view).
        attention_mask: ``"ink"`` (only cells holding ink may be attended) or
            ``"none"``; ``"none"`` here, so that a model saved before the mask
            existed loads as it was trained (``config.py``'s default is ``"ink"``).
        architecture: ``"rnn"`` (the GRU above; ``units``, ``attention``,
            ``attention_units`` and ``embedding_dim`` size it) or
            ``"transformer"`` (``decoder_layers`` blocks of ``heads`` heads,
            ``d_model`` features and a ``ff_dim`` feed-forward).
    """

    def __init__(
        self,
        height: int = 24,
        width: int = 64,
        pooling: int = 2,
        filters: int = 48,
        units: int = 128,
        attention: str = "bahdanau",
        attention_units: int = 64,
        embedding_dim: int = 32,
        doubly_stochastic: float = 0.0,
        max_length: int = 6,
        attention_keys: str = "features",
        attention_values: str = "features",
        attention_mask: str = "none",
        architecture: str = "rnn",
        decoder_layers: int = 2,
        heads: int = 4,
        d_model: int = 64,
        ff_dim: int = 128,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        pools = int(math.log2(pooling)) if pooling >= 1 else -1
        if 2**pools != pooling or height % pooling or width % pooling:
            raise ValueError(
                "Expected pooling a power of 2 dividing height and width. "
                f"Received: pooling={pooling}, height={height}, width={width}"
            )
        self.height, self.width, self.pooling = height, width, pooling
        self.filters, self.units, self.attention = filters, units, attention
        self.attention_units, self.embedding_dim = attention_units, embedding_dim
        self.doubly_stochastic, self.max_length = doubly_stochastic, max_length
        self.attention_keys = _one_of("attention_keys", attention_keys, KEYS)
        self.attention_values = _one_of("attention_values", attention_values, VALUES)
        self.attention_mask = _one_of("attention_mask", attention_mask, MASKS)
        architecture = _one_of("architecture", architecture, ARCHITECTURES)
        self.architecture, self.decoder_layers, self.heads = architecture, decoder_layers, heads
        self.d_model, self.ff_dim = d_model, ff_dim
        self.grid = (height // pooling, width // pooling)  # (H', W')

        # === Encoder: pixels -> grid ===
        # Its first `stem_layers` layers end at the last pooling (each cell sees 10x10
        # pixels for pooling 4); the 3x3 convolutions after them widen that to 26x26.
        convolutions = [keras.layers.Rescaling(1 / 255, name="to_unit")]
        widths = [filters // 2] + [filters] * max(2, pools + 1)
        for index, channels in enumerate(widths):
            convolutions += [
                keras.layers.Conv2D(channels, 3, padding="same", name=f"conv_{index}"),
                keras.layers.GroupNormalization(groups=-1, name=f"norm_{index}"),
                keras.layers.ReLU(name=f"relu_{index}"),
            ]
            if index < pools:
                convolutions.append(keras.layers.MaxPooling2D(2, name=f"pool_{index}"))
        self.stem_layers = 1 + 4 * pools  # rescaling, then (conv, norm, relu, pool) per pooling
        self.encoder = keras.Sequential(convolutions, name="encoder")
        self.encoder.build((None, height, width, 1))
        # "local" values: the stem's cells, through 1x1 convolutions (no wider view).
        self.local = None
        if attention_values == "local":
            pointwise = []
            for index in range(2):
                pointwise += [
                    keras.layers.Conv2D(filters, 1, name=f"local_conv_{index}"),
                    keras.layers.GroupNormalization(groups=-1, name=f"local_norm_{index}"),
                    keras.layers.ReLU(name=f"local_relu_{index}"),
                ]
            self.local = keras.Sequential(pointwise, name="local")
        self.key_projection = None
        if architecture == "transformer":
            self.transformer = TransformerDecoder(
                VOCABULARY_SIZE, max_length, decoder_layers, heads, d_model, ff_dim, name="decoder"
            )
            self.logits = keras.layers.Dense(VOCABULARY_SIZE, dtype="float32", name="logits")
            self._build()
            return
        self.bridge = keras.layers.Dense(units, activation="tanh", name="bridge")
        # Scaled dot-product scores q . k: the keys need the query's size.
        if attention == "scaled_dot":
            self.key_projection = keras.layers.Dense(units, use_bias=False, name="key_projection")

        # === Decoder: tokens + grid -> logits ===
        self.embedding = keras.layers.Embedding(
            VOCABULARY_SIZE, embedding_dim, mask_zero=True, name="embedding"
        )
        self.cell = keras_attention.AttentionRNNCell(
            keras.layers.GRUCell(units, name="gru"),
            make_attention(attention, units, attention_units),
            attention_layer_size=units,
            return_attention_weights=True,
            name="attention_cell",
        )
        self.decoder = keras.layers.RNN(self.cell, return_sequences=True, name="decoder")
        self.logits = keras.layers.Dense(VOCABULARY_SIZE, dtype="float32", name="logits")
        self._build()

    def _build(self):
        """Builds every weight now, so that a saved model loads into them."""
        height, width = self.height, self.width
        self.attend(
            ops.zeros((1, height, width, 1), "uint8"), ops.zeros((1, 1), "int32"), penalty=False
        )
        self.built = True

    # ------------------------------------------------------------ encoder
    def encode(self, images: Any, training: Any = None) -> tuple[Any, Any, Any, list]:
        """``(B, H, W[, 1])`` uint8 -> the memory's keys, values and mask, the first GRU state.

        Values ``(B, H', W', filters + 2)``: the CNN's grid (or, with
        ``attention_values="local"``, the stem's cells through 1x1
        convolutions) and the cell coordinates. Keys: the CNN's grid and the
        coordinates (``attention_keys="features"``), or each cell's own pixels
        and its coordinates, ``(B, H', W', pooling**2 + 2)`` (``"cell"``).
        Mask ``(B, H', W')`` bool, the cells holding ink (``attention_mask="ink"``),
        or None.
        """
        if len(images.shape) == 3:
            images = images[..., None]
        pixels = ops.cast(images, "float32")
        near = pixels
        for layer in self.encoder.layers[: self.stem_layers]:
            near = layer(near, training=training)  # (B, H', W', ·): 10x10 px a cell
        grid = near
        for layer in self.encoder.layers[self.stem_layers :]:
            grid = layer(grid, training=training)  # (B, H', W', filters): 26x26 px a cell
        rows, cols = self.grid
        coordinates = ops.stack(
            ops.meshgrid(ops.linspace(0.0, 1.0, rows), ops.linspace(0.0, 1.0, cols), indexing="ij"),
            axis=-1,
        )  # (H', W', 2)
        coordinates = ops.zeros_like(grid[..., :2]) + coordinates  # (B, H', W', 2)
        keys = values = ops.concatenate([grid, coordinates], axis=-1)
        if self.local is not None:
            values = ops.concatenate([self.local(near, training=training), coordinates], axis=-1)
        if self.attention_keys == "cell":
            size = self.pooling
            cells = ops.reshape(pixels / 255.0, (-1, rows, size, cols, size))
            cells = ops.reshape(
                ops.transpose(cells, (0, 1, 3, 2, 4)), (-1, rows, cols, size * size)
            )
            keys = ops.concatenate([cells, coordinates], axis=-1)  # (B, H', W', p*p + 2)
        if self.key_projection is not None:
            keys = self.key_projection(keys)  # (B, H', W', units)
        mask = None
        if self.attention_mask == "ink":
            size = self.pooling
            blocks = ops.reshape(pixels, (-1, rows, size, cols, size))
            mask = ops.mean(blocks, axis=(2, 4)) >= INK * 255  # (B, H', W')
        if self.architecture == "transformer":
            return keys, values, mask, []
        first = self.bridge(ops.mean(grid, axis=(1, 2)))  # (B, units)
        return keys, values, mask, [first]

    # ------------------------------------------------------------ teacher forcing
    def attend(self, images: Any, caption_in: Any, training: Any = None, penalty: bool = True):
        """Teacher-forced ``(logits (B, T, V), weights (B, T, H', W'))``."""
        keys, values, mask, first = self.encode(images, training)
        if self.architecture == "transformer":
            features, weights = self.transformer(caption_in, *_flat(keys, values, mask))
            weights = ops.reshape(weights, (-1, ops.shape(weights)[1], *self.grid))
            if penalty:
                self._penalize(caption_in, weights)
            return self.logits(features), weights
        embedded = self.embedding(caption_in)  # (B, T, E), masked after the caption
        states = self.cell.initial_state(values, key=keys, value_mask=mask, cell_state=first)
        outputs = self.decoder(embedded, initial_state=states, training=training)
        attentional = outputs[..., self.units : 2 * self.units]  # a_t out of [h_t; a_t; w_t]
        weights = self.cell.alignment_history(outputs)  # (B, T, H', W')
        if penalty:
            self._penalize(caption_in, weights)
        return self.logits(attentional), weights

    def _penalize(self, caption_in: Any, weights: Any) -> None:
        """Adds the doubly stochastic penalty of weights ``(B, T, H', W')`` when it is on."""
        if self.doubly_stochastic > 0:
            steps = ops.cast(ops.not_equal(caption_in, PAD_ID), weights.dtype)  # (B, T)
            per_cell = ops.sum(weights * steps[:, :, None, None], axis=1)  # (B, H', W')
            self.add_loss(
                self.doubly_stochastic * ops.mean(ops.sum((1.0 - per_cell) ** 2, axis=(1, 2)))
            )

    def call(self, inputs, training=None):
        logits, _ = self.attend(inputs["image"], inputs["caption_in"], training)
        return logits

    # ------------------------------------------------------------ decoding
    def initial_state(self, images: Any) -> tuple[dict[str, Any], tuple]:
        """Encodes ``(B, H, W[, 1])`` once: the first decoder state and the projected memory."""
        keys, values, mask, first = self.encode(images)
        if self.architecture == "transformer":
            return self.transformer.initial_state(*_flat(keys, values, mask))
        full = self.cell.unpack_state(
            self.cell.initial_state(values, key=keys, value_mask=mask, cell_state=first)
        )
        state = {"cell": full.cell_states, "attention": full.attention, "weights": full.weights}
        return state, (full.keys, full.values, full.mask)

    def step(self, ids: Any, state: dict[str, Any], memory: tuple, index: Any = None):
        """``(N,)`` previous ids -> ``(N, V)`` logits, the new state, ``(N, H'*W')`` weights."""
        if self.architecture == "transformer":
            features, state, weights = self.transformer.step(ids, state, memory, index)
            return ops.cast(self.logits(features), "float32"), state, ops.cast(weights, "float32")
        del index  # the GRU's state carries the position
        embedded = ops.take(self.embedding.embeddings, ids, axis=0)  # (N, E)
        full = AttentionRNNState(state["cell"], state["attention"], state["weights"], *memory)
        _, states = self.cell(embedded, self.cell.pack_state(full))
        new = self.cell.unpack_state(states)
        state = {"cell": new.cell_states, "attention": new.attention, "weights": new.weights}
        logits = ops.cast(self.logits(new.attention), "float32")
        return logits, state, ops.cast(new.weights, "float32")

    def search(self, images: Any, beam_size: int = 1) -> decoding.SearchResult:
        """The best caption of greedy (``beam_size`` 1) or beam search, fields ``(B, ...)``.

        ``ids`` ``(B, max_length)``, ``attention`` ``(B, max_length, H'*W')``.
        """
        state, memory = self.initial_state(images)
        return decoding.decode(
            self.step,
            state,
            memory,
            start_id=START_ID,
            end_id=END_ID,
            max_length=self.max_length,
            beam_size=beam_size,
            pad_id=PAD_ID,
        )

    def get_config(self):
        # Every constructor argument, as the attribute of the same name holds it.
        return {**super().get_config(), **{name: getattr(self, name) for name in arguments()}}


def _flat(keys: Any, values: Any, mask: Any) -> tuple[Any, Any, Any]:
    """The grid memory ``(B, H', W', ·)`` and mask ``(B, H', W')`` flattened row-major."""
    flat = lambda x: ops.reshape(x, (ops.shape(x)[0], -1, x.shape[-1]))  # noqa: E731
    mask = None if mask is None else ops.reshape(mask, (ops.shape(mask)[0], -1))
    return flat(keys), flat(values), mask


def arguments() -> list[str]:
    """The names of ``Captioner``'s own constructor arguments."""
    names = inspect.signature(Captioner.__init__).parameters
    return [name for name in names if name not in ("self", "kwargs")]


def build_model(config) -> Captioner:
    """The ``Captioner`` of a ``Config`` (``examples.captioning.config``): each argument is the
    config's field of the same name, but ``max_length``, the most digits and the end."""
    given = {name: getattr(config, name) for name in arguments() if name != "max_length"}
    kind = config.attention if config.architecture == "rnn" else "transformer"
    return Captioner(**given, max_length=config.max_digits + 1, name=f"captioner_{kind}")
