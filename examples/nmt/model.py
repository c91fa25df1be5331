"""Encoder-decoder translation models with the package's attention layers.

``build_model`` returns a Functional Keras model
``(source_ids (B, Ts), target_in_ids (B, Tt)) -> logits (B, Tt, V)`` for
teacher-forced training. Encoder: an embedding and a bidirectional GRU/LSTM
whose two directions together give ``units`` features per source token (the
memory). Two decoders:

* ``decoder="luong"``: an RNN over the whole target, then one attention call
  for all steps (fast teacher forcing), ``a_t = tanh(W [h_t; c_t])``, logits
  from ``a_t`` (Luong et al., 2015).
* ``decoder="bahdanau"``: ``AttentionRNN(AttentionRNNCell(...))``, input
  feeding: each step attends with the new state and feeds its attentional
  vector to the next step (Bahdanau et al., 2015; Luong's input feeding).

``Seq2SeqDecoder(model)`` wraps a built model for step-by-step decoding with
``examples.nmt.decoding``: ``initial_state(source_ids)`` encodes once and
projects the memory once (``project_memory``); ``step(ids, state, step)`` is
a ``step_fn`` returning log-probabilities, the new state and the attention
weights ``(N, Ts)`` (multi-head weights averaged over heads).
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

import keras_attention

ATTENTIONS = ("bahdanau", "luong", "scaled_dot", "multihead")
DECODERS = ("bahdanau", "luong")
RNNS = ("gru", "lstm")


def make_attention(kind: str, units: int, num_heads: int = 4) -> keras.layers.Layer:
    """One of the package's layers, sized for ``units``-feature queries and memory."""
    if kind == "bahdanau":
        return keras_attention.BahdanauAttention(units, name="attention")
    if kind == "luong":
        return keras_attention.LuongAttention("general", name="attention")
    if kind == "scaled_dot":
        return keras_attention.ScaledDotProduct(name="attention")
    if kind == "multihead":
        if units % num_heads:
            raise ValueError(
                f"Expected units divisible by num_heads. Received: units={units}, "
                f"num_heads={num_heads}"
            )
        return keras_attention.MultiHead(num_heads, units // num_heads, name="attention")
    raise ValueError(f"Expected attention in {ATTENTIONS}. Received: {kind!r}")


def _rnn_cell(rnn: str, units: int, name: str) -> keras.layers.Layer:
    cell = {"gru": keras.layers.GRUCell, "lstm": keras.layers.LSTMCell}[rnn]
    return cell(units, name=name)


def _rnn(rnn: str, units: int, name: str, **kwargs: Any) -> keras.layers.Layer:
    layer = {"gru": keras.layers.GRU, "lstm": keras.layers.LSTM}[rnn]
    return layer(units, return_sequences=True, name=name, **kwargs)


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
) -> keras.Model:
    """The teacher-forced training model; see the module doc.

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (0 pads).
        embedding_dim: token embedding size.
        units: decoder state size, memory size (``units // 2`` per encoder
            direction) and attentional vector size; even.
        attention: ``"bahdanau" | "luong" | "scaled_dot" | "multihead"``.
        decoder: ``"bahdanau"`` (input feeding) or ``"luong"``.
        rnn: ``"gru"`` or ``"lstm"``.
        num_heads: heads of ``"multihead"``.
        dropout: dropout on the embeddings and the attentional vector.
    """
    if decoder not in DECODERS:
        raise ValueError(f"Expected decoder in {DECODERS}. Received: {decoder!r}")
    if rnn not in RNNS:
        raise ValueError(f"Expected rnn in {RNNS}. Received: {rnn!r}")
    if units % 2:
        raise ValueError(f"Expected an even number of units. Received: units={units}")
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")

    embedded = keras.layers.Embedding(
        source_vocab_size, embedding_dim, mask_zero=True, name="source_embedding"
    )(source_ids)
    embedded = keras.layers.Dropout(dropout, name="source_dropout")(embedded)
    memory, *encoder_states = keras.layers.Bidirectional(
        _rnn(rnn, units // 2, "encoder_rnn", return_state=True), name="encoder"
    )(embedded)  # (B, Ts, units)
    # Forward and backward final states -> the decoder's initial state(s).
    halves = len(encoder_states) // 2
    decoder_states = [
        keras.layers.Dense(units, activation="tanh", name=f"bridge_{index}")(
            keras.layers.Concatenate(name=f"bridge_concat_{index}")(
                [encoder_states[index], encoder_states[halves + index]]
            )
        )
        for index in range(halves)
    ]

    target = keras.layers.Embedding(
        target_vocab_size, embedding_dim, mask_zero=True, name="target_embedding"
    )(target_in_ids)
    target = keras.layers.Dropout(dropout, name="target_dropout")(target)
    attention_layer = make_attention(attention, units, num_heads)
    if decoder == "luong":
        states = _rnn(rnn, units, "decoder_rnn")(target, initial_state=decoder_states)
        context = attention_layer(states, memory)  # (B, Tt, units)
        attentional = keras.layers.Dense(
            units, activation="tanh", use_bias=False, name="attention_dense"
        )(keras.layers.Concatenate(name="attention_concat")([states, context]))
    else:
        cell = keras_attention.AttentionRNNCell(
            _rnn_cell(rnn, units, "decoder_cell"),
            attention_layer,
            attention_layer_size=units,
            name="attention_cell",
        )
        outputs = keras_attention.AttentionRNN(cell, name="decoder_rnn")(
            target, memory, initial_state=decoder_states
        )  # (B, Tt, 2 * units) = [h_t; a_t]
        attentional = TakeLast(units, name="attentional")(outputs)  # a_t
    attentional = keras.layers.Dropout(dropout, name="attentional_dropout")(attentional)
    logits = keras.layers.Dense(target_vocab_size, dtype="float32", name="logits")(attentional)
    return keras.Model([source_ids, target_in_ids], logits, name=f"nmt_{decoder}_{attention}")


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


class Seq2SeqDecoder:
    """Step-by-step decoding of a ``build_model`` model, with cached memory.

    Works for both decoder styles. ``initial_state`` returns a dict of
    tensors with first dimension ``B``; ``step`` is a ``decoding`` step_fn.
    """

    def __init__(self, model: keras.Model):
        self.model = model
        self.source_embedding = model.get_layer("source_embedding")
        self.encoder = model.get_layer("encoder")
        self.target_embedding = model.get_layer("target_embedding")
        self.decoder_rnn = model.get_layer("decoder_rnn")
        self.logits = model.get_layer("logits")
        self.bridges = []
        index = 0
        while any(layer.name == f"bridge_{index}" for layer in model.layers):
            self.bridges.append(model.get_layer(f"bridge_{index}"))
            index += 1
        self.input_feeding = isinstance(self.decoder_rnn, keras_attention.AttentionRNN)
        if self.input_feeding:
            self.cell = self.decoder_rnn.cell
            self.attention = self.cell.attention
        else:
            self.cell = self.decoder_rnn.cell
            self.attention = model.get_layer("attention")
            self.attention_dense = model.get_layer("attention_dense")

    def encode(self, source_ids: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, list[tf.Tensor]]:
        """Memory ``(B, Ts, units)``, its mask ``(B, Ts)`` and the decoder's first states."""
        source_ids = tf.convert_to_tensor(source_ids, tf.int32)
        mask = tf.not_equal(source_ids, 0)
        embedded = self.source_embedding(source_ids)
        memory, *states = self.encoder(embedded, mask=mask)
        halves = len(states) // 2
        first = [
            bridge(tf.concat([states[index], states[halves + index]], -1))
            for index, bridge in enumerate(self.bridges)
        ]
        return memory, mask, first

    def initial_state(self, source_ids: tf.Tensor) -> dict[str, Any]:
        """Encodes the source and projects the memory once."""
        memory, mask, first = self.encode(source_ids)
        if self.input_feeding:
            return {"cell": self.cell.initial_state(memory, value_mask=mask, cell_state=first)}
        keys, values = self.attention.project_memory(memory, memory)
        return {"rnn": first, "keys": keys, "values": values, "mask": mask}

    def step(self, ids: tf.Tensor, state: dict[str, Any], step: tf.Tensor) -> tuple:
        """``(N,)`` previous ids -> ``(N, V)`` log-probabilities, new state, ``(N, Ts)`` weights."""
        del step
        # A plain gather: no Keras mask for the cells to warn about.
        embedded = tf.gather(self.target_embedding.embeddings, ids)  # (N, E)
        if self.input_feeding:
            outputs, cell_states = self.cell(embedded, state["cell"])
            weights = cell_states[len(cell_states) - 4]  # w_t: (N, Ts) or (N, H, Ts)
            attentional = outputs[..., -self.cell.attention_layer_size :]
            new_state = {"cell": list(cell_states)}
        else:
            output, rnn_states = self.cell(embedded, state["rnn"])
            rnn_states = rnn_states if isinstance(rnn_states, (list, tuple)) else [rnn_states]
            context, weights = self.attention.attend(
                output, state["keys"], state["values"], value_mask=state["mask"],
                return_attention_scores=True,
            )
            attentional = self.attention_dense(tf.concat([output, context], -1))
            new_state = {**state, "rnn": list(rnn_states)}
        if len(weights.shape) == 3:  # multi-head (N, H, Ts): mean over heads
            weights = tf.reduce_mean(weights, axis=1)
        logits = tf.cast(self.logits(attentional), tf.float32)
        return tf.nn.log_softmax(logits), new_state, tf.cast(weights, tf.float32)
