from typing import Any
from typing import NamedTuple

import keras
from keras import ops

from keras_attention import validation
from keras_attention.layers.base import BaseAttention


class AttentionRNNState(NamedTuple):
    """The state of an `AttentionRNNCell`, by name (see `unpack_state`).

    Attributes:
        cell_states: list of the wrapped cell's states (`[h]` for a GRU,
            `[h, c]` for an LSTM), each `(B, units)`.
        attention: `a_{t-1}`, the attentional vector `(B, attention_size)`.
        weights: `w_{t-1}`, the attention weights `(B, Tv)` or `(B, H, Tv)`.
        keys: the memory's projected keys (`attention.project_memory`).
        values: the memory's projected values.
        mask: boolean `(B, Tv)`, True on real memory positions.
        output: the previous step's output `(B, output_size)` (zeros at the
            start), which a masked (padded) decoder step repeats; `None` in
            `pack_state` means zeros.
        alignment: the attention's alignment state (`attention.step`), a
            dict of `(B, n)` tensors named by `attention.alignment_state_keys`
            (`n` from `attention.alignment_state_sizes(Tv)`: `Tv` for the
            weights, `K` for the means of `GMMAttention`); `None` when the
            attention keeps none (content attention, whose state is `{}`), and
            in `pack_state` it means the initial one.
    """

    cell_states: list
    attention: Any
    weights: Any
    keys: Any
    values: Any
    mask: Any
    output: Any = None
    alignment: Any = None


def _flatten(x):
    """`(B, ...)` -> `(B, n)`."""
    if len(x.shape) == 2:
        return x
    if keras.backend.is_keras_tensor(x):  # a Functional model's node: the batch is set when run
        return keras.layers.Reshape((-1,))(x)
    return ops.reshape(x, (ops.shape(x)[0], -1))


@keras.saving.register_keras_serializable(package="keras_attention")
class AttentionRNNCell(keras.layers.Layer):
    """An RNN cell that attends over a memory at every step (input feeding).

    Wraps any Keras RNN cell and any attention layer of this package, for
    Bahdanau-style decoders: at step `t`

    ```
    h_t, s_t = cell([x_t; a_{t-1}], s_{t-1})      # input feeding
    c_t, w_t = attention(h_t, memory)              # context, weights (B, Tv)
    a_t = tanh(W_a [h_t; c_t])  if attention_layer_size else c_t
    output_t = [h_t; a_t]  (+ w_t flattened, with return_attention_weights)
    ```

    It fills the place of `tfa.seq2seq.AttentionWrapper`. Keras 3's `RNN`
    has no `constants`, so the memory travels in the state: build the
    initial state with `initial_state(value, ...)`, which also computes the
    attention's key/value projections once for the whole sequence, and pass
    it to `keras.layers.RNN(cell)(inputs, initial_state=...)`. The same
    state drives step-by-step decoding with `cell(x_t, states)`. An
    attention that draws noise in training (monotonic `sigmoid_noise`)
    needs `AttentionRNN` on JAX, which draws every step's noise before the
    loop (`append_step_noise`); a plain `keras.layers.RNN` would draw it
    inside `lax.scan`, which JAX refuses.

    State layout (a flat list): the previous output (what a masked decoder
    step repeats: Keras's RNN on JAX reads it from the first state), the
    wrapped cell's states, then `a_{t-1}` `(B, attention_size)`, `w_{t-1}`
    (the attention weights of the previous step), and the memory: projected
    keys, projected values and the memory mask as 0/1 floats `(B, Tv)`. The
    memory parts never change over time. Last come the `(B, n)` tensors of
    the attention's alignment state (`attention.initial_alignment_state`,
    then what `attention.step` returns), in `attention.alignment_state_keys`
    order, each declared with the size `attention.alignment_state_sizes(Tv)`
    gives it (`Tv`, or `K` for the means of `GMMAttention`): none for content
    attention, whose state is empty. Every step calls `attention.step`, the
    same for every layer. Read it by name with
    `unpack_state(states)` (an `AttentionRNNState`) or
    `attention_weights(states)`, and write it with `pack_state(state)`;
    do not index the list.

    Decoder masks: a masked step (padding in the decoder inputs, the Keras
    mask of `Embedding(mask_zero=True)` or `mask=`) keeps the state and
    repeats the previous output, on every backend, as any Keras RNN does.

    Args:
        cell: a Keras RNN cell (`GRUCell`, `LSTMCell`, ...).
        attention: one of `BahdanauAttention`, `LuongAttention`,
            `ScaledDotProduct`, `MultiHead`, or an attention with an
            alignment state (`LocationSensitiveAttention`,
            `BahdanauMonotonicAttention`, `LuongMonotonicAttention`,
            `StepwiseMonotonicAttention`, `GMMAttention`,
            `DynamicConvolutionAttention`).
        attention_layer_size: size of the attentional vector `a_t`
            (Luong et al. 2015); `None` uses the context itself.
        return_attention_weights: append each step's attention weights,
            flattened (`Tv`, or `H*Tv` for `MultiHead`), to the output; needs
            a memory of static length.
        **kwargs: base layer arguments.

    Example:

    >>> import numpy as np, keras
    >>> from keras_attention import AttentionRNNCell, BahdanauAttention
    >>> cell = AttentionRNNCell(keras.layers.GRUCell(16), BahdanauAttention(8))
    >>> encoder = np.random.rand(2, 7, 12).astype("float32")
    >>> targets = np.random.rand(2, 5, 4).astype("float32")
    >>> states = cell.initial_state(encoder)
    >>> rnn = keras.layers.RNN(cell, return_sequences=True)
    >>> tuple(rnn(targets, initial_state=states).shape)
    (2, 5, 28)

    References:
        Bahdanau et al., ICLR 2015; Luong et al., EMNLP 2015 (input feeding).
    """

    def __init__(
        self, cell, attention, attention_layer_size=None, return_attention_weights=False, **kwargs
    ):
        super().__init__(**kwargs)
        self.cell = keras.layers.deserialize(cell) if isinstance(cell, dict) else cell
        self.attention = (
            keras.layers.deserialize(attention) if isinstance(attention, dict) else attention
        )
        if not isinstance(self.cell, keras.layers.Layer):
            raise TypeError(
                f"AttentionRNNCell: `cell` must be a Keras layer. Received: {self.cell!r}"
            )
        if not hasattr(self.cell, "state_size"):
            raise TypeError(
                f"AttentionRNNCell: `cell` must be an RNN cell with a `state_size`. "
                f"Received: {type(self.cell).__name__}"
            )
        if not isinstance(self.attention, BaseAttention):
            raise TypeError(
                "AttentionRNNCell: `attention` must be an attention layer of "
                "keras_attention (a `keras_attention.layers.BaseAttention`, with "
                "`project_memory` and `step`), such as BahdanauAttention or MultiHead. "
                f"Received: {self.attention!r}"
            )
        self.attention_layer_size = validation.integer(
            "AttentionRNNCell", "attention_layer_size", attention_layer_size, allow_none=True
        )
        attention_layer_size = self.attention_layer_size
        self.return_attention_weights = validation.flag(
            "AttentionRNNCell", "return_attention_weights", return_attention_weights
        )
        self._memory_shapes = None
        self._state_dims = None
        self._input_size = None  # the step inputs' feature size, from `build`
        self._noise_in_inputs = False  # set by `append_step_noise`
        self.attention_dense = None
        if attention_layer_size:
            self.attention_dense = keras.layers.Dense(
                attention_layer_size,
                activation="tanh",
                use_bias=False,
                name="attention_dense",
                dtype=self.dtype_policy,
            )

    # ------------------------------------------------------------ sizes
    @property
    def _cell_state_sizes(self):
        size = self.cell.state_size
        return list(size) if isinstance(size, (list, tuple)) else [size]

    @property
    def _cell_output_size(self):
        return getattr(self.cell, "output_size", None) or self._cell_state_sizes[0]

    def _context_size(self):
        value_dim = self._memory_shapes["value_shape"][-1]
        return getattr(self.attention, "output_dim", None) or (
            self._cell_output_size if self.attention.has_heads else value_dim
        )

    @property
    def _attention_size(self):
        return self.attention_layer_size or self._context_size()

    def _weights_size(self):
        length = self._memory_shapes["value_shape"][1]
        heads = self.attention.num_heads if self.attention.has_heads else 1
        return None if length is None else heads * length

    @property
    def _alignment_keys(self):
        return tuple(self.attention.alignment_state_keys)

    def _alignment_sizes(self):
        """`{key: n}` of the alignment state's `(B, n)` tensors (None: an unknown `Tv`)."""
        length = validation.static(self._memory_shapes["value_shape"][1])
        return self.attention.alignment_state_sizes(length)

    @property
    def state_size(self):
        alignment = len(self._alignment_keys)
        if self._memory_shapes is None:  # sizes for counting before the memory is known
            return [1, *self._cell_state_sizes, 1, 1, 1, 1, 1, *[1] * alignment]
        memory = [1, 1, 1]  # (B, n) flattened memory; see the class docstring
        sizes = [*self._cell_state_sizes, self._attention_size, self._weights_size() or 1, *memory]
        declared = self._alignment_sizes()
        alignment = [declared[name] or 1 for name in self._alignment_keys]  # 1: unknown Tv
        return [self.output_size, *sizes, *alignment]

    @property
    def output_size(self):
        size = self._cell_output_size + self._attention_size
        if self.return_attention_weights:
            weights = self._weights_size()
            if weights is None:
                raise ValueError(
                    "AttentionRNNCell: return_attention_weights=True needs a memory of "
                    f"static length. Received value shape {self._memory_shapes['value_shape']}"
                )
            size += weights
        return size

    # ------------------------------------------------------------ build
    def _build_memory(self, value_shape, key_shape):
        self._memory_shapes = {"value_shape": tuple(value_shape), "key_shape": tuple(key_shape)}
        if not self.attention.built:
            self.attention.build((None, self._cell_output_size), value_shape, key_shape)

    def build(self, input_shape):
        if self._memory_shapes is None:
            raise ValueError(
                "AttentionRNNCell: call `cell.initial_state(value, ...)` and pass its "
                "result as `initial_state` before running the cell."
            )
        self._input_size = input_shape[-1]
        # Sublayers may come back built from their own build configs on reload.
        if not self.cell.built:
            self.cell.build((input_shape[0], input_shape[-1] + self._attention_size))
        if self.attention_dense is not None and not self.attention_dense.built:
            self.attention_dense.build((None, self._cell_output_size + self._context_size()))

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

    # ------------------------------------------------------------ state
    def initial_state(self, value, key=None, value_mask=None, cell_state=None):
        """The initial state list for `value` `(B, Tv, dv)` (and `key`).

        Builds the attention on the memory's shapes, computes its key/value
        projections once, and starts the wrapped cell from `cell_state` (a
        list, e.g. the encoder's final states) or zeros.
        """
        key = value if key is None else key
        self._build_memory(value.shape, key.shape)
        # Masked positions are zeroed before projection: whatever they hold
        # never reaches an output or a gradient.
        key_features, value_features = self.attention.project_memory(key, value, value_mask)
        # Zeros shaped from `value` itself, so that symbolic batch sizes work.
        per_key = ops.zeros_like(ops.cast(value[..., 0], self.compute_dtype))  # (B, Tv)
        per_row = per_key[:, :1]  # (B, 1)
        if value_mask is None:
            value_mask = ops.ones_like(per_key)
        if cell_state is None:
            cell_state = [ops.repeat(per_row, size, axis=1) for size in self._cell_state_sizes]
        cell_state = list(cell_state) if isinstance(cell_state, (list, tuple)) else [cell_state]
        weights = per_key
        if self.attention.has_heads:
            weights = ops.repeat(per_key[:, None], self.attention.num_heads, axis=1)  # (B, H, Tv)
        state = AttentionRNNState(
            cell_states=cell_state,
            attention=ops.repeat(per_row, self._attention_size, axis=1),
            weights=weights,
            keys=key_features,
            values=value_features,
            mask=value_mask,
            output=ops.repeat(per_row, self.output_size, axis=1),
        )
        return self.pack_state(state)  # the alignment state starts as the attention says

    def unpack_state(self, states):
        """The flat state list of this cell as an `AttentionRNNState`.

        The memory mask comes back boolean. Works on the states that
        `initial_state` returns and on those a step of the cell returns.
        """
        states = list(states)
        count = len(self._cell_state_sizes)
        names = self._alignment_keys
        if len(states) != count + 6 + len(names):
            alignment = f", then the alignment state {names}" if names else ""
            raise ValueError(
                f"AttentionRNNCell: expected {count + 6 + len(names)} states (the previous "
                f"output, {count} of the wrapped cell, then attention, weights, keys, values, "
                f"mask{alignment}). Received: {len(states)} states"
            )
        output, cell_states = states[0], states[1 : count + 1]
        attention, weights, keys, values, mask = states[count + 1 : count + 6]
        keys, values = self._restore(keys, "keys"), self._restore(values, "values")
        weights = self._restore(weights, "weights")
        alignment = dict(zip(names, states[count + 6 :])) or None  # None: an empty state
        return AttentionRNNState(
            cell_states, attention, weights, keys, values, ops.greater(mask, 0.5), output, alignment
        )

    def pack_state(self, state):
        """The flat state list (what `keras.layers.RNN` carries) of an `AttentionRNNState`."""
        if not isinstance(state, AttentionRNNState):
            raise TypeError(
                "AttentionRNNCell.pack_state: expected an AttentionRNNState. "
                f"Received: {type(state).__name__}"
            )
        cell_states = state.cell_states
        if not isinstance(cell_states, (list, tuple)):
            cell_states = [cell_states]
        mask = ops.cast(state.mask, self.compute_dtype)
        output = state.output
        if output is None:
            output = ops.zeros((ops.shape(state.attention)[0], self.output_size), mask.dtype)
        # Every state is carried as (B, n): Keras's RNN on JAX masks a step
        # with a (B, 1) `where`, which does not broadcast against rank-3 or
        # rank-4 states (keys, values, multi-head weights).
        self._state_dims = {
            "keys": (tuple(state.keys.shape[1:-2]), tuple(state.keys.shape[-1:])),
            "values": (tuple(state.values.shape[1:-2]), tuple(state.values.shape[-1:])),
            "weights": (tuple(state.weights.shape[1:-1]), ()),
        }
        memory = [_flatten(state.keys), _flatten(state.values), mask]
        alignment = state.alignment
        if alignment is None:
            alignment = self.attention.initial_alignment_state(mask, ops.greater(mask, 0.5))
        alignment = [alignment[name] for name in self._alignment_keys]  # (B, n) each
        return [output, *cell_states, state.attention, _flatten(state.weights), *memory, *alignment]

    def _restore(self, flat, name):
        """A `(B, n)` state back to its `(B, [H,] Tv[, d])` shape."""
        lead, last = self._state_dims[name]
        if not lead and not last:
            return flat
        return ops.reshape(flat, (ops.shape(flat)[0], *lead, -1, *last))

    def attention_weights(self, states):
        """The last step's attention weights `(B, Tv)` or `(B, H, Tv)` of a state list."""
        return self.unpack_state(states).weights

    def get_initial_state(self, batch_size=None):
        raise ValueError(
            "AttentionRNNCell needs its memory in the initial state: pass "
            "`initial_state=cell.initial_state(encoder_outputs, value_mask=...)` "
            "to keras.layers.RNN, or call the cell with those states."
        )

    # ------------------------------------------------------------ noise
    def append_step_noise(self, sequences, memory, training=None):
        """`sequences` `(B, T, d)` with the attention's draws of each step appended.

        An attention that draws noise in training (monotonic attention's
        `sigmoid_noise`) would draw it at every step, inside the RNN's loop,
        which JAX cannot do (a `SeedGenerator` advanced inside `lax.scan`
        leaks the new seed out of the loop body). `AttentionRNN` calls this
        before its loop, on every backend: the draws `(B, T, Tv)` ride in
        the step inputs, one slice a step, and `call` splits them off and
        hands them to `attention.step`; `reset_step_noise` ends that. Returns
        `sequences` unchanged when the attention draws nothing.
        """
        self._noise_in_inputs = False
        memory = ops.convert_to_tensor(memory)
        shape = (ops.shape(sequences)[1], ops.shape(memory)[0], ops.shape(memory)[1])
        noise = self.attention.draw_noise(shape, training)  # (T, B, Tv) or None
        if noise is None:
            return sequences
        self._noise_in_inputs = True
        noise = ops.cast(ops.moveaxis(noise, 0, 1), sequences.dtype)  # (B, T, Tv)
        return ops.concatenate([sequences, noise], -1)

    def reset_step_noise(self):
        """Step inputs carry no noise again (after the loop `append_step_noise` fed)."""
        self._noise_in_inputs = False

    # ------------------------------------------------------------ step
    def call(self, inputs, states, training=None):
        count = len(self._cell_state_sizes)
        # The layout of `pack_state`, read in place: `unpack_state`'s cast of
        # the mask would cost a comparison per step for nothing.
        cell_states, previous_attention = list(states[1 : count + 1]), states[count + 1]
        flat_keys, flat_values, memory_mask = states[count + 3 : count + 6]
        alignment = dict(zip(self._alignment_keys, states[count + 6 :]))
        extra = {}
        if self._noise_in_inputs:  # this step's draws (append_step_noise)
            inputs, noise = inputs[:, : self._input_size], inputs[:, self._input_size :]
            extra["noise"] = noise
        key_features = self._restore(flat_keys, "keys")
        value_features = self._restore(flat_values, "values")
        cell_input = ops.concatenate([inputs, ops.cast(previous_attention, inputs.dtype)], -1)
        cell_output, new_cell_states = self.cell(cell_input, cell_states, training=training)
        if not isinstance(new_cell_states, (list, tuple)):
            new_cell_states = [new_cell_states]
        context, weights, alignment = self.attention.step(
            cell_output,
            key_features,
            value_features,
            value_mask=ops.greater(memory_mask, 0.5),
            alignment_state=alignment,
            training=training,
            **extra,
        )  # (B, dv), (B, Tv) or (B, H, Tv), the next alignment state
        attention = context
        if self.attention_dense is not None:
            attention = self.attention_dense(ops.concatenate([cell_output, context], -1))
        outputs = [cell_output, attention]
        if self.return_attention_weights:
            # The static size: with a symbolic batch, (B, -1) is (None, None) in a
            # TensorFlow graph, and the output then changes shape inside the RNN's loop.
            outputs.append(ops.reshape(weights, (-1, self._weights_size())))  # (B, [H*]Tv)
        output = ops.concatenate(outputs, -1)
        new_states = [
            output,
            *new_cell_states,
            attention,
            _flatten(weights),
            flat_keys,
            flat_values,
            memory_mask,
            *[alignment[name] for name in self._alignment_keys],
        ]
        return output, new_states

    def get_config(self):
        config = super().get_config()
        config.update(
            cell=keras.layers.serialize(self.cell),
            attention=keras.layers.serialize(self.attention),
            attention_layer_size=self.attention_layer_size,
            return_attention_weights=self.return_attention_weights,
        )
        return config
