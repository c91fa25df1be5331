"""How an `AttentionRNNCell` carries its memory: in its state, with its draws in its inputs.

Keras 3's `RNN` has no `constants`: the memory (each attention's projected
keys and values, and its mask) travels in the state, as `StateLayout` lays
it out, from the shapes `initial_state` (or a `.keras` build config) gives.
Random draws of every step (monotonic `sigmoid_noise`) are made before the
loop and ride in the step inputs, since JAX cannot draw inside `lax.scan`.
`AttentionRNNCell` inherits this, as Keras's `GRUCell` inherits
`DropoutRNNCell`'s masks.

A grid memory `(B, *grid, d)` (an image's `(B, H, W, C)` features), for an
attention that accepts one (`accepts_grids`: Bahdanau, Luong, scaled dot
product), is flattened once, to `N = prod(grid)` positions in row-major order
(`keras_attention.layers.grid`): the state holds `(B, N, ·)` memories and
`(B, N)` weights and masks, and `alignment_history` gives `(B, T, *grid)`.
Any other rank is refused here, naming the argument.
"""

from keras import ops

from keras_attention import call_checks
from keras_attention.layers import grid as grid_lib
from keras_attention.layers.recurrent import attention_rnn_options as options
from keras_attention.layers.recurrent.attention_rnn_state import MemoryLayout
from keras_attention.layers.recurrent.attention_rnn_state import StateLayout
from keras_attention.layers.recurrent.attention_rnn_state import projected_dims

OWNER = options.OWNER


def _flat_shape(shape, grid):
    """A memory shape `(B, *grid, d)` as `(B, N, d)` (N None where the grid is not static)."""
    if not grid:
        return shape
    known = all(isinstance(d, int) for d in grid)
    return (shape[0], grid_lib.product(grid) if known else None, shape[-1])


class MemoryInState:
    """The memory, the state sizes and the draws of an `AttentionRNNCell` (a mixin of the cell)."""

    @property
    def _cell_state_sizes(self):
        size = self.cell.state_size
        return list(size) if isinstance(size, (list, tuple)) else [size]

    @property
    def _attention_size(self):
        return self._layout.attention_size

    @property
    def state_size(self):
        if self._layout is None:  # sizes for counting before the memory is known
            counts = [len(attention.alignment_state_keys) for attention in self._attentions]
            return StateLayout.placeholder_sizes(self._cell_state_sizes, counts)
        return self._layout.state_size(self.output_size)

    def _build_memory(self, value_shape, key_shape, argument="value"):
        count = len(self._attentions)
        values = options.per_attention(value_shape, count, self._multiple, argument, shapes=True)
        keys = options.per_attention(key_shape, count, self._multiple, "key", shapes=True)
        values, keys = [tuple(s) for s in values], [tuple(s) for s in keys]
        grids = self._memory_grids(values, keys, argument)
        self._memory_shapes = {
            "value_shape": values if self._multiple else values[0],
            "key_shape": keys if self._multiple else keys[0],
        }
        values = [_flat_shape(shape, grid) for shape, grid in zip(values, grids)]  # (B, N, dv)
        keys = [_flat_shape(shape, grid) for shape, grid in zip(keys, grids)]  # (B, N, dk)
        memories, query_size = [], self._cell_output_size
        for index, (attention, layer) in enumerate(zip(self._attentions, self._attention_layers)):
            if not attention.built:
                attention.build((None, query_size), values[index], keys[index])
            dims = (index, keys[index][-1], values[index][-1])
            if dims not in self._memory_dims:  # found once, symbolically
                self._memory_dims[dims] = projected_dims(attention, *dims[1:])
            projected = self._memory_dims[dims]
            layout = MemoryLayout.of(attention, values[index], projected, query_size, layer)
            memories.append(layout._replace(grid=grids[index]))
        self._layout = StateLayout(self._cell_state_sizes, memories, self._multiple)

    def _memory_grids(self, values, keys, argument):
        """Each attention's memory grid (`()` for a sequence), its rank checked."""
        grids = []
        for index, (attention, value, key) in enumerate(zip(self._attentions, values, keys)):
            where = f"{argument}[{index}]" if self._multiple else argument
            grid = attention.accepts_grids and len(value) > 3
            if len(value) != 3 and not grid:
                expected = "a tensor of rank 3 (batch, time, features)"
                if len(value) > 3:
                    expected += (
                        f"; {type(attention).__name__} does not attend over a grid (batch, "
                        "*grid, features), as BahdanauAttention, LuongAttention and "
                        "ScaledDotProduct do"
                    )
                call_checks.call_fail(OWNER, where, expected, f"shape {value}")
            if len(key) != len(value):
                received = f"key shape {key}, value shape {value}"
                name = f"key[{index}]" if self._multiple else "key"
                call_checks.call_fail(OWNER, name, f"the rank of `{where}`", received)
            grids.append(tuple(value[1:-1]) if grid else ())
        return grids

    def _flat_memory(self, key, value, mask):
        """One attention's `(key, value, mask)`, a grid `(B, *grid, ·)` as `(B, N, ·)`."""
        grid = grid_lib.memory_grid(key, value, heads=False)
        if grid is None:
            return key, value, mask
        key, value, mask, _ = grid_lib.flatten_memory(key, value, mask, None, grid, True)
        return key, value, mask

    def get_build_config(self):
        config = super().get_build_config() or {}
        if self._memory_shapes is not None:
            config["memory_shapes"] = self._memory_shapes
        return config

    def build_from_config(self, config):
        if self.built:
            return
        if "memory_shapes" in config:
            self._build_memory(**config["memory_shapes"])
        super().build_from_config(config)

    def _require_layout(self, method):
        if self._layout is None:
            raise ValueError(
                f"AttentionRNNCell: `{method}` needs the memory's shapes; call "
                "`cell.initial_state(value, ...)` first. Received: a cell without a memory"
            )
        return self._layout

    def _complete(self, state):
        """`state` with its defaults filled: zero output, initial alignment states."""
        layout = self._layout
        entries = layout.entries(state)
        alignments = []
        for attention, (_, _, mask, alignment) in zip(self._attentions, entries):
            if alignment is None:
                mask = ops.cast(mask, self.compute_dtype)
                alignment = attention.initial_alignment_state(mask, ops.greater(mask, 0.5))
            alignments.append(alignment or None)
        output = state.output
        if output is None:
            batch = ops.shape(state.attention)[0]
            output = ops.zeros((batch, self.output_size), self.compute_dtype)
        return state._replace(output=output, alignment=layout.item_or_tuple(alignments))

    def get_initial_state(self, batch_size=None):
        raise ValueError(
            "AttentionRNNCell needs its memory in the initial state: pass "
            "`initial_state=cell.initial_state(encoder_outputs, value_mask=...)` "
            "to keras.layers.RNN, or call the cell with those states."
        )

    # ------------------------------------------------------------ noise
    def append_step_noise(self, sequences, memory, training=None):
        """`sequences` `(B, T, d)` with the attentions' draws of each step appended.

        An attention that draws noise in training (monotonic attention's
        `sigmoid_noise`) would draw it at every step, inside the RNN's loop,
        which JAX cannot do (a `SeedGenerator` advanced inside `lax.scan`
        leaks the new seed out of the loop body). `AttentionRNN` calls this
        before its loop, on every backend: the draws `(B, T, Tv)` ride in
        the step inputs, one slice a step, and `call` splits them off and
        hands them to `attention.step`; `reset_step_noise` ends that. Returns
        `sequences` unchanged when no attention draws anything.
        """
        self._noise_in_inputs = ()
        memories = options.per_attention(memory, len(self._attentions), self._multiple, "memory")
        draws, flags = [], []
        for attention, memory_i in zip(self._attentions, memories):
            memory_i = grid_lib.sizes(ops.convert_to_tensor(memory_i))  # (B, Tv or *grid, dv)
            shape = (ops.shape(sequences)[1], memory_i[0], grid_lib.product(memory_i[1:-1]))
            noise = attention.draw_noise(shape, training)  # (T, B, Tv) or None
            flags.append(noise is not None)
            if noise is not None:
                draws.append(ops.cast(ops.moveaxis(noise, 0, 1), sequences.dtype))  # (B, T, Tv)
        if not draws:
            return sequences
        self._noise_in_inputs = tuple(flags)
        return ops.concatenate([sequences, *draws], -1)

    def reset_step_noise(self):
        """Step inputs carry no noise again (after the loop `append_step_noise` fed)."""
        self._noise_in_inputs = ()

    def _split_noise(self, inputs, state):
        """`(inputs, one (B, Tv) draw or None per attention)` of noisy step inputs."""
        noise, start = [], self._input_size
        for draws, (_, _, mask, _) in zip(self._noise_in_inputs, self._layout.entries(state)):
            end = start + ops.shape(mask)[1] if draws else start
            noise.append(inputs[:, start:end] if draws else None)
            start = end
        return inputs[:, : self._input_size], noise
