"""Encoder-decoder translation models with the package's attention layers.

``Seq2Seq`` (built by ``build_model``) is a Functional Keras model
``(source_ids (B, Ts), target_in_ids (B, Tt)) -> logits (B, Tt, V)`` for
teacher-forced training, which also holds its layers by name for decoding one
step at a time. Encoder: an embedding and a bidirectional GRU/LSTM whose two
directions together give ``units`` features per source token (the memory).
Two decoders:

* ``decoder="luong"``: an RNN over the whole target, then one attention call
  for all steps (fast teacher forcing), ``a_t = tanh(W [h_t; c_t])``, logits
  from ``a_t`` (Luong et al., 2015).
* ``decoder="bahdanau"``: ``AttentionRNN(AttentionRNNCell(...))``, input
  feeding: each step attends with the new state and feeds its attentional
  vector to the next step (Bahdanau et al., 2015; Luong's input feeding).

Decoding (as OpenNMT-tf's ``Decoder``): ``model.initial_state(source_ids,
max_length)`` encodes once and projects the memory once (``project_memory``),
returning ``(state, memory)``; ``model.step(ids, state, memory, index)``
returns the next logits, the new state and the attention weights ``(N, Ts)``
(multi-head weights averaged over heads). The RNN needs neither the most
steps nor the position; ``examples.nmt.models.transformer.Transformer`` has the
same interface (``examples.nmt.models.decoding``) and uses both for its
key/value caches.

Both decoders take one step through the layer's own ``step`` (the cell's,
or the attention's: ``initial_alignment_state``, then ``step``), the same for
every attention. Attention with an alignment state (``location``,
``monotonic``, ``stepwise``, ``gmm``, ``dca``) reads the previous step's
alignment. Teacher forcing needs nothing new (``AttentionRNNCell`` carries
the state; the Luong decoder's one full call runs the recurrence over the
target); when that state is not empty (``{}`` for content attention) the
decoding ``state`` carries it as ``"alignment"``, the layer's own dict, which
the searches tile and reorder like any state, so no shape of its leaves is
assumed (GMM's means are ``(B, 5)``). ``monotonic`` trains in the soft
``"parallel"`` mode with a little ``sigmoid_noise`` and decodes in that
same mode (``stepwise`` likewise, in its ``"soft"`` mode): step-by-step
decoding then gives the teacher-forced logits exactly, and the short
date-task training does not push its stopping probabilities to 0 or 1,
which ``"hard"`` decoding would need (``docs/location-attention.md``); a
translator needs neither its linear time nor its online reading.
``local-p`` places its window from each query alone: no state.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

import keras_attention
from examples.nmt.models.attentions import make_attention
from examples.nmt.models.decoding import Memory
from examples.nmt.models.functional import LayersFirstModel
from examples.nmt.text.special import PAD_ID
from keras_attention import AttentionRNNState

DECODERS = ("bahdanau", "luong")
RNNS = ("gru", "lstm")


def _rnn_cell(rnn: str, units: int, name: str) -> keras.layers.Layer:
    cell = {"gru": keras.layers.GRUCell, "lstm": keras.layers.LSTMCell}[rnn]
    return cell(units, name=name)


@keras.saving.register_keras_serializable(package="examples_nmt")
class TakeLast(keras.layers.Layer):
    """The last ``size`` features: ``a_t`` out of ``[h_t; a_t]``."""

    def __init__(self, size: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.size = size
        self.supports_masking = True

    def call(self, inputs):
        return inputs[..., -self.size :]

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.size)

    def get_config(self):
        return {**super().get_config(), "size": self.size}


@keras.saving.register_keras_serializable(package="examples_nmt")
class Seq2Seq(LayersFirstModel):
    """The translation model; see the module doc. Arguments as ``build_model``."""

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        embedding_dim: int = 64,
        units: int = 128,
        attention: str = "bahdanau",
        decoder: str = "bahdanau",
        rnn: str = "gru",
        num_heads: int = 4,
        dropout: float = 0.0,
        encoder_layers: int = 1,
        attention_units: int | None = None,
        **kwargs: Any,
    ):
        if decoder not in DECODERS:
            raise ValueError(f"Expected decoder in {DECODERS}. Received: {decoder!r}")
        if rnn not in RNNS:
            raise ValueError(f"Expected rnn in {RNNS}. Received: {rnn!r}")
        if units < 2 or units % 2:
            raise ValueError(f"Expected an even number of units >= 2. Received: units={units}")
        if isinstance(encoder_layers, bool) or not isinstance(encoder_layers, int):
            raise TypeError(
                f"Expected encoder_layers to be an int. Received: {type(encoder_layers).__name__}"
            )
        if encoder_layers < 1:
            raise ValueError(f"Expected encoder_layers >= 1. Received: {encoder_layers}")
        # === Layers (what `step` runs) ===
        self.source_embedding = keras.layers.Embedding(
            source_vocab_size, embedding_dim, mask_zero=True, name="source_embedding"
        )
        self.source_dropout = keras.layers.Dropout(dropout, name="source_dropout")
        encoder_rnn = {"gru": keras.layers.GRU, "lstm": keras.layers.LSTM}[rnn]
        # The layers below the top one (encoder_layers > 1), dropout after each;
        # the top keeps the name "encoder", so one-layer runs load as before.
        self.lower_encoders = [
            keras.layers.Bidirectional(
                encoder_rnn(units // 2, return_sequences=True, name=f"encoder_rnn_{index}"),
                name=f"encoder_{index}",
            )
            for index in range(encoder_layers - 1)
        ]
        self.encoder_dropout = keras.layers.Dropout(dropout, name="encoder_dropout")
        self.encoder = keras.layers.Bidirectional(
            encoder_rnn(units // 2, return_sequences=True, return_state=True, name="encoder_rnn"),
            name="encoder",
        )
        # Forward and backward final states -> the decoder's initial state(s).
        self.bridges = [
            keras.layers.Dense(units, activation="tanh", name=f"bridge_{index}")
            for index in range(2 if rnn == "lstm" else 1)
        ]
        self.target_embedding = keras.layers.Embedding(
            target_vocab_size, embedding_dim, mask_zero=True, name="target_embedding"
        )
        self.target_dropout = keras.layers.Dropout(dropout, name="target_dropout")
        self.attention_layer = make_attention(attention, units, num_heads, attention_units)
        self.input_feeding = decoder == "bahdanau"
        if self.input_feeding:
            self.decoder_cell = keras_attention.AttentionRNNCell(
                _rnn_cell(rnn, units, "decoder_cell"),
                self.attention_layer,
                attention_layer_size=units,
                name="attention_cell",
            )
            self.decoder_rnn = keras_attention.AttentionRNN(self.decoder_cell, name="decoder_rnn")
            self.attentional = TakeLast(units, name="attentional")  # a_t out of [h_t; a_t]
        else:
            self.decoder_cell = _rnn_cell(rnn, units, "decoder_cell")
            self.decoder_rnn = keras.layers.RNN(
                self.decoder_cell, return_sequences=True, name="decoder_rnn"
            )
            self.attention_dense = keras.layers.Dense(
                units, activation="tanh", use_bias=False, name="attention_dense"
            )
        self.attentional_dropout = keras.layers.Dropout(dropout, name="attentional_dropout")
        self.output_layer = keras.layers.Dense(target_vocab_size, dtype="float32", name="logits")

        # === Functional model (teacher forcing) ===
        source_ids = keras.Input((None,), dtype="int32", name="source_ids")
        target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
        memory, mask, first = self.encode(source_ids)
        target = self.target_dropout(self.target_embedding(target_in_ids))
        if self.input_feeding:
            outputs = self.decoder_rnn(target, memory, memory_mask=mask, initial_state=first)
            attentional = self.attentional(outputs)  # (B, Tt, units)
        else:
            states = self.decoder_rnn(target, initial_state=first)  # (B, Tt, units)
            context = self.attention_layer(states, memory, value_mask=mask)
            attentional = self.attention_dense(
                keras.layers.Concatenate(name="attention_concat")([states, context])
            )
        logits = self.output_layer(self.attentional_dropout(attentional))
        kwargs.setdefault("name", f"nmt_{decoder}_{attention}")
        super().__init__(inputs=[source_ids, target_in_ids], outputs=logits, **kwargs)

        # === Config ===
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.attention = attention
        self.decoder = decoder
        self.rnn = rnn
        self.num_heads = num_heads
        self.dropout = dropout
        self.encoder_layers = encoder_layers
        self.attention_units = attention_units

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "source_vocab_size": self.source_vocab_size,
            "target_vocab_size": self.target_vocab_size,
            "embedding_dim": self.embedding_dim,
            "units": self.units,
            "attention": self.attention,
            "decoder": self.decoder,
            "rnn": self.rnn,
            "num_heads": self.num_heads,
            "dropout": self.dropout,
            "encoder_layers": self.encoder_layers,
            "attention_units": self.attention_units,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    # ------------------------------------------------------------ decoding
    def encode(self, source_ids, training=None) -> tuple[Any, Any, list]:
        """Memory ``(B, Ts, units)``, its boolean mask ``(B, Ts)``, the decoder's first states."""
        mask = ops.not_equal(source_ids, PAD_ID)
        inputs = self.source_dropout(self.source_embedding(source_ids), training=training)
        for layer in self.lower_encoders:
            inputs = self.encoder_dropout(
                layer(inputs, mask=mask, training=training), training=training
            )
        memory, *states = self.encoder(inputs, mask=mask, training=training)
        halves = len(states) // 2
        first = [
            bridge(ops.concatenate([states[index], states[halves + index]], -1))
            for index, bridge in enumerate(self.bridges)
        ]
        return memory, mask, first

    def initial_state(
        self, source_ids: Any, max_length: Any = None
    ) -> tuple[dict[str, Any], Memory]:
        """Encodes ``(B, Ts)`` ids once: the first decoder ``state`` and the ``memory``.

        ``max_length`` (the most decoding steps) is unused: the state of an
        RNN does not grow.
        """
        del max_length
        memory, mask, first = self.encode(ops.convert_to_tensor(source_ids, "int32"))
        if not self.input_feeding:
            keys, values = self.attention_layer.project_memory(memory, memory)
            state = {"cell": first}
            alignment = self.attention_layer.initial_alignment_state(keys, mask)
            if alignment:  # {} for content attention: nothing to carry
                state["alignment"] = alignment
            return state, Memory(keys, values, mask)
        cell = self.decoder_cell
        full = cell.unpack_state(cell.initial_state(memory, value_mask=mask, cell_state=first))
        return self._cell_state(full), Memory(full.keys, full.values, full.mask)

    def _cell_state(self, full: AttentionRNNState) -> dict[str, Any]:
        """The decoding state of the input-feeding cell: what changes from step to step."""
        state = {"cell": full.cell_states, "attention": full.attention, "weights": full.weights}
        if full.alignment is not None:
            state["alignment"] = full.alignment  # a dict, whatever its leaves' shapes
        return state

    def step(
        self,
        inputs: Any,
        state: dict[str, Any],
        memory: Memory,
        index: Any = None,
    ) -> tuple[Any, dict[str, Any], Any]:
        """``(N,)`` previous ids -> ``(N, V)`` float32 logits, new state, ``(N, Ts)`` weights.

        ``index`` (the output position) is unused: the RNN state carries it.
        """
        del index
        # A plain gather: no Keras mask for the cells to warn about.
        embedded = ops.take(self.target_embedding.embeddings, inputs, axis=0)  # (N, E)
        if self.input_feeding:
            cell = self.decoder_cell
            full = AttentionRNNState(
                state["cell"],
                state["attention"],
                state["weights"],
                *memory,
                alignment=state.get("alignment"),
            )
            _, new_states = cell(embedded, cell.pack_state(full))
            new = cell.unpack_state(new_states)
            attentional, weights = new.attention, new.weights  # a_t, w_t
            state = self._cell_state(new)
        else:
            output, cell_states = self.decoder_cell(embedded, state["cell"])
            if not isinstance(cell_states, (list, tuple)):
                cell_states = [cell_states]
            # The layer's step reads the previous alignment state (None: the
            # initial one) and returns the next; the search carries (and
            # reorders) it.
            context, weights, alignment = self.attention_layer.step(
                output,
                memory.keys,
                memory.values,
                value_mask=memory.mask,
                alignment_state=state.get("alignment"),
            )
            attentional = self.attention_dense(ops.concatenate([output, context], -1))
            state = {"cell": list(cell_states)}
            if alignment:  # {} for content attention: nothing to carry
                state["alignment"] = alignment
        if len(weights.shape) == 3:  # multi-head (N, H, Ts): mean over heads
            weights = ops.mean(weights, axis=1)
        logits = ops.cast(self.output_layer(attentional), "float32")
        return logits, state, ops.cast(weights, "float32")


def build_model(
    source_vocab_size: int,
    target_vocab_size: int,
    *,
    embedding_dim: int = 64,
    units: int = 128,
    attention: str = "bahdanau",
    decoder: str = "bahdanau",
    rnn: str = "gru",
    num_heads: int = 4,
    dropout: float = 0.0,
    encoder_layers: int = 1,
    attention_units: int | None = None,
) -> Seq2Seq:
    """The teacher-forced training model; see the module doc.

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (0 pads).
        embedding_dim: token embedding size.
        units: decoder state size, memory size (``units // 2`` per encoder
            direction) and attentional vector size; even.
        attention: a name of ``ATTENTIONS`` (``models/attentions.py``: the
            content-based ``"bahdanau"``, ``"luong"``, ``"scaled_dot"``,
            ``"multihead"``, and the location-aware ``"location"``,
            ``"monotonic"``, ``"local-p"``, ``"stepwise"``, ``"gmm"``,
            ``"dca"``).
        decoder: ``"bahdanau"`` (input feeding) or ``"luong"``.
        rnn: ``"gru"`` or ``"lstm"``.
        num_heads: heads of ``"multihead"``.
        dropout: dropout on the embeddings, between encoder layers and on the
            attentional vector.
        encoder_layers: bidirectional RNN layers in the encoder (the top one's
            final states start the decoder).
        attention_units: hidden size of the attention of ``SIZED_ATTENTIONS``
            (``units`` when None).
    """
    return Seq2Seq(
        source_vocab_size,
        target_vocab_size,
        embedding_dim=embedding_dim,
        units=units,
        attention=attention,
        decoder=decoder,
        rnn=rnn,
        num_heads=num_heads,
        dropout=dropout,
        encoder_layers=encoder_layers,
        attention_units=attention_units,
    )
