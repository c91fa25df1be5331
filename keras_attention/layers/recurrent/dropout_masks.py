"""The dropout masks of the cell an `AttentionRNNCell` wraps: drawn once per sequence.

Keras's cells (`GRUCell`, `LSTMCell`, through `DropoutRNNCell`) draw a
dropout mask at their first training step and keep it until
`reset_dropout_mask`; `keras.layers.RNN` resets them only for a bare cell.
Wrapped in an `AttentionRNNCell`, the masks are drawn here, before the loop
(so they are the same for every step and never a value of the loop's trace,
which JAX refuses), and reset after it: `AttentionRNN` calls
`prepare_dropout_masks` and `reset_dropout_mask` around every call.
`AttentionRNNCell` inherits this mixin; it needs the cell's `cell`,
`_layout` (`StateLayout`), `_cell_input_size` and `compute_dtype`.
"""

from keras import ops


class WrappedCellDropout:
    def _wrapped_cells(self):
        """The wrapped cell, or a `StackedRNNCells`' cells (each with a state of its own)."""
        return getattr(self.cell, "cells", [self.cell])

    def _dropout_cells(self):
        """The wrapped cells with Keras's cached dropout masks."""
        return [cell for cell in self._wrapped_cells() if hasattr(cell, "reset_dropout_mask")]

    def prepare_dropout_masks(self, inputs, states):
        """Draws the wrapped cell's dropout masks for a sequence, before its loop.

        `inputs` is the first step's `(B, d_in)`, `states` the flat initial
        state list (see the module doc).
        """
        if not any(
            getattr(c, "dropout", 0) or getattr(c, "recurrent_dropout", 0)
            for c in self._dropout_cells()
        ):
            return
        cells = self._wrapped_cells()
        cell_states = list(self._layout.unpack(states).cell_states)
        if not hasattr(self.cell, "cells"):  # a single cell: its states are the one cell's
            cell_states = [cell_states]
        step_input = ops.zeros(
            (ops.shape(inputs)[0], self._cell_input_size(inputs.shape[-1])), self.compute_dtype
        )  # (B, cell input): only its shape makes the mask
        for index, (cell, state) in enumerate(zip(cells, cell_states)):
            state = list(state) if isinstance(state, (list, tuple)) else [state]
            if hasattr(cell, "get_dropout_mask"):
                cell.get_dropout_mask(step_input)
                cell.get_recurrent_dropout_mask(state[0])
            if index + 1 < len(cells):  # the next cell's input is this one's output
                step_input, _ = cell(step_input, state)

    def reset_dropout_mask(self):
        """Forgets the wrapped cell's dropout masks (both kinds): the next sequence draws new
        ones. `AttentionRNN` calls it after every call, as `keras.layers.RNN` does."""
        for cell in self._dropout_cells():
            cell.reset_dropout_mask()
            cell.reset_recurrent_dropout_mask()

    def reset_recurrent_dropout_mask(self):
        """The same as `reset_dropout_mask` (Keras's `DropoutRNNCell` has both names)."""
        self.reset_dropout_mask()
