"""Recurrent decoders that attend at every step (TFA's `AttentionWrapper`).

`AttentionRNNCell` wraps a Keras RNN cell and one or more attention layers;
`AttentionRNN` runs it over a memory. The cell's state by name is an
`AttentionRNNState`, laid out as a flat list by `attention_rnn_state.StateLayout`;
`memory_in_state.MemoryInState` carries the memory in that state, and
`attention_rnn_options` checks the arguments TFA's wrapper had.
"""

from keras_attention.layers.recurrent.attention_rnn import AttentionRNN
from keras_attention.layers.recurrent.attention_rnn_cell import AttentionRNNCell
from keras_attention.layers.recurrent.attention_rnn_state import AttentionRNNState

__all__ = ["AttentionRNN", "AttentionRNNCell", "AttentionRNNState"]
