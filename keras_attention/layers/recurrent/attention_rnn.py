import keras

from keras_attention import validation
from keras_attention.layers.recurrent.attention_rnn_cell import AttentionRNNCell


@keras.saving.register_keras_serializable(package="keras_attention")
class AttentionRNN(keras.layers.RNN):
    """`keras.layers.RNN` over an `AttentionRNNCell` that takes the memory.

    `AttentionRNN(cell)(targets, memory, memory_mask=...)` equals
    `keras.layers.RNN(cell)(targets, initial_state=cell.initial_state(memory,
    value_mask=memory_mask))`, in one layer. Use it in Functional models:
    there the two-call form makes the attention's memory projections graph
    nodes of their own, which a saved model would restore as separate copies.
    Keras fills `memory_mask` from the memory's Keras mask.

    Args:
        cell: an `AttentionRNNCell`.
        return_sequences: return every step's output (default) or the last.
        return_state: also return the final state, the cell's flat state
            list after the last step (TFA's final `AttentionWrapperState`):
            `outputs, *states = layer(...)`, read by name with
            `cell.unpack_state(states)` (`cell_states`, `attention`,
            `weights`, ...). It holds the projected memory too, so it can
            start the next call of the cell. Its shapes are
            `cell.state_size`'s, `(B, None)` where the memory's length is
            unknown.
        **kwargs: other `keras.layers.RNN` arguments.

    Call arguments:
        sequences: `(B, T, d_in)` decoder inputs.
        memory: `(B, Tv, dv)` encoder outputs, attended at every step, or a
            grid `(B, *grid, dv)` (an image's features) for an attention that
            takes one (Bahdanau, Luong, scaled dot product), flattened once to
            `prod(grid)` positions; with a cell of several attentions, one
            memory for all or a list with one per attention (each its own
            `Tv` and `dv`).
        memory_mask: boolean `(B, Tv)` or `(B, *grid)`, True on real memory
            positions (a list with a list of memories).
        initial_state: initial states of the wrapped cell (e.g. the
            encoder's final state), or None for zeros.
        sequences_mask: boolean `(B, T)`, True on real decoder steps; Keras
            fills it from the Keras mask of `sequences` (e.g.
            `Embedding(mask_zero=True)`). A masked step keeps the state and
            repeats the previous output (zeros with `return_sequences`), as
            in any Keras RNN.
        mask: the same as `sequences_mask` (the name `keras.layers.RNN`
            uses); `sequences_mask` wins when both are given.
        training: enables dropout (the wrapped cell's masks are drawn once
            per call, new for every batch).

    Example:

    >>> import numpy as np, keras
    >>> from keras_attention import AttentionRNN, AttentionRNNCell, LuongAttention
    >>> cell = AttentionRNNCell(keras.layers.GRUCell(8), LuongAttention("general"))
    >>> memory = np.random.rand(2, 7, 6).astype("float32")
    >>> targets = np.random.rand(2, 5, 3).astype("float32")
    >>> tuple(AttentionRNN(cell)(targets, memory).shape)
    (2, 5, 14)
    """

    def __init__(self, cell, return_sequences=True, return_state=False, **kwargs):
        if not isinstance(cell, AttentionRNNCell):
            raise TypeError(f"AttentionRNN: `cell` must be an AttentionRNNCell. Received: {cell!r}")
        return_state = validation.flag("AttentionRNN", "return_state", return_state)
        super().__init__(
            cell, return_sequences=return_sequences, return_state=return_state, **kwargs
        )

    def build(self, sequences_shape, memory_shape=None, initial_state_shape=None):
        if memory_shape is not None:
            self.cell._build_memory(memory_shape, memory_shape, "memory")  # noqa: SLF001
        super().build(sequences_shape)

    def compute_output_shape(self, sequences_shape, memory_shape=None, **kwargs):
        if memory_shape is not None and self.cell._memory_shapes is None:  # noqa: SLF001
            self.cell._build_memory(memory_shape, memory_shape, "memory")  # noqa: SLF001
        shape = super().compute_output_shape(sequences_shape)
        if not self.return_state:
            return shape
        # keras.layers.RNN sizes the states from the cell's state_size of its
        # construction, before the memory was known: the cell's own, now.
        batch = sequences_shape[0]
        return shape[0], *[(batch, size) for size in self.cell.state_size]

    def call(
        self,
        sequences,
        memory,
        memory_mask=None,
        initial_state=None,
        sequences_mask=None,
        mask=None,
        training=False,
    ):
        # With two tensor arguments Keras fills `sequences_mask` and
        # `memory_mask` from their Keras masks, never `mask`.
        mask = mask if sequences_mask is None else sequences_mask
        states = self.cell._initial_state(  # noqa: SLF001
            memory, None, memory_mask, initial_state, names=("memory", "memory", "memory_mask")
        )
        # Random draws of every step made here, outside the loop (JAX cannot
        # draw inside it): they ride in the step inputs. The wrapped cell's
        # dropout masks likewise: one per call, shared by its steps.
        if training:
            self.cell.prepare_dropout_masks(sequences[:, 0], states)
        sequences = self.cell.append_step_noise(sequences, memory, training)
        try:
            return super().call(sequences, initial_state=states, mask=mask, training=training)
        finally:
            self.cell.reset_step_noise()
            self.cell.reset_dropout_mask()
