import keras
from keras import ops

from keras_attention import validation
from keras_attention.layers.recurrent import attention_rnn_options as options
from keras_attention.layers.recurrent.attention_rnn_state import AttentionRNNState
from keras_attention.layers.recurrent.dropout_masks import WrappedCellDropout
from keras_attention.layers.recurrent.memory_in_state import MemoryInState

__all__ = ["AttentionRNNCell", "AttentionRNNState"]  # the state, from here as before

# The memory's arguments as `initial_state` names them (`AttentionRNN` passes its own).
MEMORY_ARGUMENTS = ("value", "key", "value_mask")


@keras.saving.register_keras_serializable(package="keras_attention")
class AttentionRNNCell(MemoryInState, WrappedCellDropout, keras.layers.Layer):
    """An RNN cell that attends over a memory at every step (`tfa.seq2seq.AttentionWrapper`).

    Wraps any Keras RNN cell and one or more attention layers of this
    package. At step `t`, for attentions `i = 1..N`:

    ```
    h_t, s_t = cell(cell_input_fn(x_t, a_{t-1}), s_{t-1})  # default [x_t; a_{t-1}]
    c_t^i, w_t^i = attention_i.step(h_t, memory_i)         # context, weights (B, Tv_i)
    a_t^i = act(W_i [h_t; c_t^i])  with attention_layer_size (act: attention_activation)
          = attention_layer_i([h_t; c_t^i])  with attention_layer
          = c_t^i  otherwise
    a_t = [a_t^1; ...; a_t^N]
    output_t = [h_t; a_t] (output_attention=None), a_t (True) or h_t (False)
               (+ every w_t^i flattened, with return_attention_weights)
    ```

    Keras 3's `RNN` has no `constants`, so the memory travels in the state:
    build the initial state with `initial_state(value, ...)`, which also
    computes each attention's key/value projections once, and pass it to
    `keras.layers.RNN(cell)(inputs, initial_state=...)`, or use
    `AttentionRNN(cell)(inputs, memory)`. The same state drives step-by-step
    decoding, as a flat list with `cell(x_t, states)` or by name with
    `cell.step(x_t, state)`. Read the flat list by name with
    `unpack_state(states)` (an `AttentionRNNState`) and write it with
    `pack_state(state)`; `attention_rnn_state.StateLayout` owns its layout.
    Every step calls `attention.step`, the same for every attention layer.
    A masked decoder step (the Keras mask of `Embedding(mask_zero=True)`, or
    `mask=`) keeps the state and repeats the previous output, as any Keras
    RNN does. An attention that draws noise in training (monotonic
    `sigmoid_noise`) needs `AttentionRNN` on JAX, which draws every step's
    noise before the loop (`append_step_noise`).

    Args:
        cell: a Keras RNN cell (`GRUCell`, `LSTMCell`, ...). Its `dropout`
            and `recurrent_dropout` masks are drawn once per call of
            `AttentionRNN` and shared by the call's steps, as
            `keras.layers.RNN` does for a bare cell (`keras.layers.RNN` over
            this cell does not: call `reset_dropout_mask()` after each batch).
        attention: an attention layer of this package (content attention
            such as `BahdanauAttention`, `LuongAttention`, `MultiHead`, or one
            with an alignment state such as `LocationSensitiveAttention`), or
            a list of them (each over its own memory, or one shared: TFA's
            list of mechanisms, e.g. multi-source attention or Tacotron's
            location + content pair). With a list, the state's per-attention
            fields are tuples.
        attention_layer_size: the size of `a_t^i = act(W_i [h_t; c_t^i])`
            (no bias), an int, or with a list of attentions a list of one
            size each; `None` (default) uses each context itself.
        return_attention_weights: append each step's attention weights,
            flattened (`Tv`, or `H*Tv` for `MultiHead`; one block per
            attention), to the output (TFA's `alignment_history`); split them
            with `alignment_history(outputs)`. Needs memories of static length.
        cell_input_fn: what the wrapped cell reads: `"concat"` (default,
            TFA's default: `[x_t; a_{t-1}]`, input feeding), `"inputs"`
            (`x_t` alone), a Keras layer called as `layer(inputs, attention)`
            (saved with the cell, weights included), or a callable
            `fn(inputs, attention) -> cell_inputs`. A callable is saved with
            `keras.saving.serialize_keras_object`: register it with
            `keras.saving.register_keras_serializable()` (or pass it in
            `custom_objects`) for the `.keras` file to load; a lambda loads
            only with `safe_mode=False`.
        output_attention: `None` (default: `[h_t; a_t]`, both), `True` (`a_t`,
            TFA's default and Luong's) or `False` (`h_t`, Bahdanau's).
        attention_layer: instead of `attention_layer_size`, a Keras layer
            (a list of them with a list of attentions) mapping `[h_t; c_t^i]`
            to `a_t^i`, as TFA's `attention_layer`.
        attention_activation: the activation of the layers that
            `attention_layer_size` makes: `"tanh"` (default: Luong et al.'s
            attentional vector `tanh(W_a [h_t; c_t])`) or `None` / `"linear"`
            (TFA's `Dense(size, use_bias=False)`, linear).
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
        self,
        cell,
        attention,
        attention_layer_size=None,
        return_attention_weights=False,
        cell_input_fn="concat",
        output_attention=None,
        attention_layer=None,
        attention_activation="tanh",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.cell = options.rnn_cell(cell)
        self.attention, self._multiple = options.attentions(attention)
        count = len(self._attentions)
        self.attention_layer_size = options.layer_sizes(attention_layer_size, count, self._multiple)
        self.return_attention_weights = validation.flag(
            "AttentionRNNCell", "return_attention_weights", return_attention_weights
        )
        self.cell_input_fn = options.cell_input_fn(cell_input_fn)
        self.output_attention = options.output_attention(output_attention)
        self.attention_layer = options.attention_layers(
            attention_layer, count, self._multiple, self.attention_layer_size
        )
        self.attention_activation = options.activation(attention_activation)
        self.attention_dense = options.attention_denses(
            self.attention_layer_size, self.attention_activation, self._multiple,
            self.dtype_policy,
        )  # fmt: skip
        self._memory_shapes = None
        self._layout = None  # a StateLayout, from the memory's shapes (`_build_memory`)
        self._memory_dims = {}  # (index, dk, dv) -> the projections' (lead, last) dims
        self._input_size = None  # the step inputs' feature size, from `build`
        self._noise_in_inputs = ()  # which attentions' draws ride in the inputs

    # ------------------------------------------------------------ sizes
    @property
    def _attentions(self):
        return tuple(self.attention) if self._multiple else (self.attention,)

    @property
    def _attention_layers(self):
        """The layer making each `a_t^i`, or None (the context itself)."""
        layers = self.attention_dense if self.attention_layer is None else self.attention_layer
        if layers is None:
            return (None,) * len(self._attentions)
        return tuple(layers) if self._multiple else (layers,)

    @property
    def _cell_output_size(self):
        return getattr(self.cell, "output_size", None) or self._cell_state_sizes[0]

    @property
    def output_size(self):
        if self.output_attention is None:  # [h_t; a_t]
            size = self._cell_output_size + self._attention_size
        else:  # a_t or h_t
            size = self._attention_size if self.output_attention else self._cell_output_size
        if self.return_attention_weights:
            weights = self._layout.weights_sizes
            if None in weights:
                raise ValueError(
                    "AttentionRNNCell: return_attention_weights=True needs a memory of "
                    f"static length. Received value shape {self._memory_shapes['value_shape']}"
                )
            size += sum(weights)
        return size

    def compute_output_shape(self, input_shape, states_shape=None):
        # `input_shape`: the name `build` records, which `Model.summary` passes back.
        batch = input_shape[0]
        if states_shape is None:
            states_shape = [(batch, size) for size in self.state_size]
        return (batch, self.output_size), [tuple(shape) for shape in states_shape]

    def compute_output_spec(self, inputs, states, training=None):
        # A step keeps each state's shape and dtype (alignment states may be float32).
        output_shape, _ = self.compute_output_shape(inputs.shape)
        states = [keras.KerasTensor(s.shape, dtype=s.dtype) for s in states]
        return keras.KerasTensor(output_shape, dtype=self.compute_dtype), states

    # ------------------------------------------------------------ build
    def _cell_input_size(self, input_size):
        if self.cell_input_fn == "concat":
            return input_size + self._attention_size
        if self.cell_input_fn == "inputs":
            return input_size
        inputs = ops.zeros((1, input_size), self.compute_dtype)
        attention = ops.zeros((1, self._attention_size), self.compute_dtype)
        return self._cell_input(inputs, attention).shape[-1]

    def build(self, input_shape):
        if self._memory_shapes is None:
            raise ValueError(
                "AttentionRNNCell: call `cell.initial_state(value, ...)` and pass its "
                "result as `initial_state` before running the cell."
            )
        self._input_size = input_shape[-1]
        # Sublayers may come back built from their own build configs on reload.
        if not self.cell.built:
            self.cell.build((input_shape[0], self._cell_input_size(input_shape[-1])))
        for layer, memory in zip(self._attention_layers, self._layout.memories):
            if layer is not None and not layer.built:
                layer.build((None, self._cell_output_size + memory.context_size))

    # ------------------------------------------------------------ state
    def initial_state(self, value, key=None, value_mask=None, cell_state=None):
        """The initial state list for `value` `(B, Tv, dv)` or a grid `(B, *grid, dv)` (and `key`).

        Builds the attentions on the memory's shapes, computes their key/value
        projections once, and starts the wrapped cell from `cell_state` (a
        list, e.g. the encoder's final states) or zeros. With a list of
        attentions, `value`, `key` and `value_mask` are each one tensor for
        all of them or a list with one per attention (TFA's mechanisms each
        took their own `memory` and `memory_sequence_length`).
        """
        return self._initial_state(value, key, value_mask, cell_state)

    def _initial_state(self, value, key, value_mask, cell_state, names=MEMORY_ARGUMENTS):
        """`initial_state`, its errors naming the caller's arguments (`names`: value, key, mask)."""
        multiple = self._multiple
        values, keys, masks = options.memories(
            value, key, value_mask, len(self._attentions), multiple, names
        )
        self._build_memory(
            [tuple(v.shape) for v in values] if multiple else tuple(values[0].shape),
            [tuple(k.shape) for k in keys] if multiple else tuple(keys[0].shape),
            names[0],
        )
        keys, values, masks = zip(*map(self._flat_memory, keys, values, masks))  # grids: (B, N, ·)
        weights, key_features, value_features, value_masks = [], [], [], []
        per_row = None  # (B, 1) zeros
        for attention, k, v, mask in zip(self._attentions, keys, values, masks):
            # Masked positions are zeroed before projection: whatever they hold
            # never reaches an output or a gradient.
            features = attention.project_memory(k, v, mask)
            key_features.append(features[0])
            value_features.append(features[1])
            # Zeros shaped from `v` itself, so that symbolic batch sizes work.
            per_key = ops.zeros_like(ops.cast(v[..., 0], self.compute_dtype))  # (B, Tv)
            value_masks.append(ops.ones_like(per_key) if mask is None else mask)
            per_row = per_key[:, :1] if per_row is None else per_row
            if attention.has_heads:
                per_key = ops.repeat(per_key[:, None], attention.num_heads, axis=1)  # (B, H, Tv)
            weights.append(per_key)
        if cell_state is None:
            cell_state = [ops.repeat(per_row, size, axis=1) for size in self._cell_state_sizes]
        cell_state = list(cell_state) if isinstance(cell_state, (list, tuple)) else [cell_state]
        item = self._layout.item_or_tuple
        state = AttentionRNNState(
            cell_states=cell_state,
            attention=ops.repeat(per_row, self._attention_size, axis=1),
            weights=item(weights),
            keys=item(key_features),
            values=item(value_features),
            mask=item(value_masks),
            output=ops.repeat(per_row, self.output_size, axis=1),
        )
        return self.pack_state(state)  # the alignment states start as the attentions say

    def unpack_state(self, states):
        """The flat state list of this cell as an `AttentionRNNState`.

        The memory masks come back boolean. Works on the states that
        `initial_state` returns and on those a step of the cell returns.
        """
        return self._require_layout("unpack_state").unpack(states)

    def pack_state(self, state):
        """The flat state list (what `keras.layers.RNN` carries) of an `AttentionRNNState`."""
        if not isinstance(state, AttentionRNNState):
            raise TypeError(
                "AttentionRNNCell.pack_state: expected an AttentionRNNState. "
                f"Received: {type(state).__name__}"
            )
        layout = self._require_layout("pack_state")
        return layout.pack(self._complete(state), self.compute_dtype)

    def attention_weights(self, states):
        """The last step's attention weights `(B, [H,] Tv)` of a state list (a tuple: one each)."""
        return self.unpack_state(states).weights

    def alignment_history(self, outputs):
        """Each attention's weights `(..., [H,] Tv)` out of outputs `(..., output_size)`.

        TFA's `alignment_history`: with `return_attention_weights=True`, the
        outputs of `keras.layers.RNN(cell, return_sequences=True)` `(B, T, ·)`
        give `(B, T, [H,] Tv)` per attention (a tuple with a list of them).
        """
        if not self.return_attention_weights:
            validation.fail(
                "AttentionRNNCell", "return_attention_weights",
                "True for `alignment_history` (the weights ride in the outputs)", False,
            )  # fmt: skip
        return self._layout.split_weights(outputs)

    # ------------------------------------------------------------ step
    def _cell_input(self, inputs, attention):
        function = options.CELL_INPUT_FNS.get(self.cell_input_fn, self.cell_input_fn)
        return function(inputs, attention)

    def step(self, inputs, state, training=None):
        """One decoding step by name: `(output (B, output_size), next AttentionRNNState)`.

        `inputs` is `(B, d_in)`; `state` an `AttentionRNNState` (from
        `unpack_state`, or built by hand with `alignment=None` for the initial
        alignment states). `cell(inputs, states)` is the same step on the flat
        list that `keras.layers.RNN` carries.
        """
        if not isinstance(state, AttentionRNNState):
            validation.fail(
                "AttentionRNNCell", "state", "an AttentionRNNState (unpack_state turns a "
                "flat state list into one)", type(state).__name__, error=TypeError,
            )  # fmt: skip
        self._require_layout("step")
        if not self.built:
            self.build(tuple(inputs.shape))
        return self._step(inputs, self._complete(state), training)

    def _step(self, inputs, state, training=None, noise=None):
        previous = ops.cast(state.attention, inputs.dtype)
        cell_output, cell_states = self.cell(
            self._cell_input(inputs, previous), list(state.cell_states), training=training
        )
        if not isinstance(cell_states, (list, tuple)):
            cell_states = [cell_states]
        noise = noise or [None] * len(self._attentions)
        attentions, weights, alignments = [], [], []
        entries = self._layout.entries(state)
        for attention, layer, draw, (keys, values, mask, alignment) in zip(
            self._attentions, self._attention_layers, noise, entries
        ):
            context, weights_i, alignment = attention.step(
                cell_output, keys, values, value_mask=ops.cast(mask, "bool"),
                alignment_state=alignment, training=training,
                **({} if draw is None else {"noise": draw}),
            )  # fmt: skip  # (B, d), (B, [H,] Tv), the next alignment state
            if layer is not None:
                context = layer(ops.concatenate([cell_output, context], -1))
            attentions.append(context)
            weights.append(weights_i)
            alignments.append(alignment or None)
        attention = ops.concatenate(attentions, -1) if len(attentions) > 1 else attentions[0]
        outputs = {None: [cell_output, attention], True: [attention], False: [cell_output]}
        outputs = outputs[self.output_attention]
        if self.return_attention_weights:
            # The static size: with a symbolic batch, (B, -1) is (None, None) in a
            # TensorFlow graph, and the output then changes shape inside the RNN's loop.
            for weights_i, size in zip(weights, self._layout.weights_sizes):
                outputs.append(ops.reshape(weights_i, (-1, size)))  # (B, [H*]Tv)
        output = ops.concatenate(outputs, -1) if len(outputs) > 1 else outputs[0]
        item = self._layout.item_or_tuple
        new_state = AttentionRNNState(
            list(cell_states), attention, item(weights), state.keys, state.values, state.mask,
            output, item(alignments),
        )  # fmt: skip
        return output, new_state

    def call(self, inputs, states, training=None):
        state = self._layout.unpack(states)
        noise = None
        if any(self._noise_in_inputs):  # this step's draws (append_step_noise)
            inputs, noise = self._split_noise(inputs, state)
        output, new_state = self._step(inputs, state, training, noise)
        # The memory entries never change: the incoming flat ones are carried on.
        new_states = self._layout.pack(new_state, self.compute_dtype, carry=states)
        # A loop carries each state in the dtype it came in (keras.layers.RNN casts the
        # initial states to the compute dtype; the alignment states are float32 inside).
        return output, [ops.cast(new, old.dtype) for new, old in zip(new_states, states)]

    def get_config(self):
        config = super().get_config()
        serialize = keras.layers.serialize
        attention_layer = self.attention_layer
        if attention_layer is not None:
            attention_layer = [serialize(x) for x in self._attention_layers]
            attention_layer = attention_layer if self._multiple else attention_layer[0]
        config.update(
            cell=serialize(self.cell),
            attention=[serialize(x) for x in self._attentions]
            if self._multiple
            else serialize(self.attention),
            attention_layer_size=self.attention_layer_size,
            return_attention_weights=self.return_attention_weights,
            cell_input_fn=options.serialize_cell_input_fn(self.cell_input_fn),
            output_attention=self.output_attention,
            attention_layer=attention_layer,
            attention_activation=keras.activations.serialize(self.attention_activation),
        )
        return config
