"""The state of an `AttentionRNNCell`: by name (`AttentionRNNState`) and as a flat list.

`keras.layers.RNN` carries a cell's state as a flat list of tensors; a reader
wants it by name. `StateLayout` is the one owner of the correspondence: the
order of the list, the `(B, n)` form every entry takes in it, and the way back
to each entry's own shape. The cell builds a layout from the memory's shapes
(`AttentionRNNCell.initial_state`, or its build config on reload) and never
writes or reads the list itself.
"""

import math
from typing import Any
from typing import NamedTuple

import keras
from keras import ops

from keras_attention import call_checks
from keras_attention import validation


class AttentionRNNState(NamedTuple):
    """The state of an `AttentionRNNCell`, by name (`cell.unpack_state(states)`).

    TensorFlow Addons called it `AttentionWrapperState`. With one attention
    layer each field below holds one tensor; with a list of them
    (`AttentionRNNCell(cell, [attention_1, attention_2])`), `weights`,
    `keys`, `values`, `mask` and `alignment` hold a tuple with one entry per
    attention, in the list's order, and `attention` is their concatenation.

    Attributes:
        cell_states: list of the wrapped cell's states (`[h]` for a GRU,
            `[h, c]` for an LSTM), each `(B, units)`.
        attention: `a_{t-1}`, the attentional vector `(B, attention_size)`
            (TFA's `attention`).
        weights: `w_{t-1}`, the attention weights `(B, Tv)` or `(B, H, Tv)`
            (TFA's `alignments`).
        keys: the memory's projected keys (`attention.project_memory`).
        values: the memory's projected values.
        mask: boolean `(B, Tv)`, True on real memory positions (`pack_state`
            also takes 0/1 floats).
        output: the previous step's output `(B, output_size)` (zeros at the
            start), which a masked (padded) decoder step repeats; `None` in
            `pack_state` means zeros.
        alignment: the attention's alignment state (`attention.step`), a
            dict of `(B, n)` tensors named by `attention.alignment_state_keys`
            (`n` from `attention.alignment_state_sizes(Tv)`: `Tv` for the
            weights, `K` for the means of `GMMAttention`); `None` when the
            attention keeps none (content attention, whose state is `{}`)
            (TFA's `attention_state`). In `pack_state`, `None` means the
            initial one.
    """

    cell_states: list
    attention: Any
    weights: Any
    keys: Any
    values: Any
    mask: Any
    output: Any = None
    alignment: Any = None


class MemoryLayout(NamedTuple):
    """The shapes one attention's entries take back from their `(B, n)` form.

    `keys` and `values` are `(lead, last)` pairs: the dimensions between the
    batch and `Tv` (the heads of `MultiHead`) and after it (the features);
    `weights` the dimensions between the batch and `Tv`. `weights_size` is
    `[H *] Tv` (None for an unknown `Tv`), `alignment_keys` and
    `alignment_sizes` name and size the alignment state's tensors. `grid` is
    the grid of a grid memory, `()` for a sequence: `Tv` is then its `N =
    prod(grid)` positions, and `split_weights` shapes the weights like it.
    `length` is `Tv` (None when unknown).
    """

    keys: tuple
    values: tuple
    weights: tuple
    weights_size: Any
    alignment_keys: tuple
    alignment_sizes: tuple
    context_size: int
    attention_size: int
    grid: tuple = ()
    length: Any = None

    @classmethod
    def of(cls, attention, value_shape, projected, query_size, attention_layer=None):
        """The layout of `attention` over a memory of `value_shape`.

        `projected` comes from `projected_dims`; `query_size` is the wrapped
        cell's output size and `attention_layer` the layer making `a_t` from
        `[h_t; c_t]` (None: `a_t` is the context).
        """
        length = call_checks.static(value_shape[1])
        heads = (attention.num_heads,) if attention.has_heads else ()
        names = tuple(attention.alignment_state_keys)
        sizes = attention.alignment_state_sizes(length)
        weights_size = None if length is None else math.prod(heads) * length
        context = getattr(attention, "output_dim", None) or (
            query_size if attention.has_heads else value_shape[-1]
        )
        size = context
        if attention_layer is not None:
            size = attention_layer.compute_output_shape((None, query_size + context))[-1]
            if not isinstance(size, int):
                validation.fail("AttentionRNNCell", "attention_layer", "of a static size", size)
        alignment_sizes = tuple(sizes[name] for name in names)
        return cls(
            *projected, heads, weights_size, names, alignment_sizes, context, size, length=length
        )

    def flat_sizes(self):
        """The `n` of the `(B, n)` keys, values and mask (None where `Tv` is unknown).

        Keys and values hold every projected feature of every position,
        `prod(lead) * Tv * prod(last)`; the mask `Tv`.
        """
        return tuple(
            _product(*lead, self.length, *last) for lead, last in (self.keys, self.values)
        ) + (self.length,)


def _product(*dims):
    """The product of `dims`, or None when one is unknown."""
    return None if any(call_checks.static(d) is None for d in dims) else math.prod(dims)


def projected_dims(attention, key_dim, value_dim):
    """`[(lead, last)]` of `attention.project_memory`'s keys and values, found symbolically.

    `lead` holds the dimensions between the batch and `Tv` (the heads of
    `MultiHead`), `last` those after it; neither depends on `Tv` or the batch.
    """
    keys, values = attention.project_memory(
        keras.KerasTensor((None, None, key_dim)), keras.KerasTensor((None, None, value_dim))
    )
    return [(tuple(x.shape[1:-2]), tuple(x.shape[-1:])) for x in (keys, values)]


def flatten(x):
    """`(B, ...)` -> `(B, n)`."""
    if len(x.shape) == 2:
        return x
    if keras.backend.is_keras_tensor(x):  # a Functional model's node: the batch is set when run
        return keras.layers.Reshape((-1,))(x)
    return ops.reshape(x, (ops.shape(x)[0], -1))


def _restore(flat, lead, last=()):
    """A `(B, n)` entry back to its `(B, *lead, Tv, *last)` shape."""
    if not lead and not last:
        return flat
    return ops.reshape(flat, (ops.shape(flat)[0], *lead, -1, *last))


class StateLayout:
    """The flat state list of an `AttentionRNNCell`, and the way to and from names.

    The list, for attentions `1..N`:

    ```
    [previous output, *cell states, a_{t-1},
     w_1, ..., w_N,                      weights, (B, [H*]Tv) each
     k_1, v_1, m_1, ..., k_N, v_N, m_N,  projected keys, values, 0/1 mask (B, Tv)
     *alignment_1, ..., *alignment_N]    each attention's alignment state, by key
    ```

    Every entry is `(B, n)`: Keras's RNN masks a padded decoder step with a
    `(B, 1)` `where` on each state (it does not broadcast against rank-3 or
    rank-4 states), and on JAX it repeats the first entry as the output of a
    masked step. With one attention this is the layout of every release.

    Args:
        cell_state_sizes: the wrapped cell's state sizes.
        memories: one `MemoryLayout` per attention.
        multiple: whether the cell was given a list of attentions (its
            state fields then hold tuples).
    """

    def __init__(self, cell_state_sizes, memories, multiple):
        self.cell_state_sizes = tuple(cell_state_sizes)
        self.memories = tuple(memories)
        self.multiple = multiple

    @staticmethod
    def placeholder_sizes(cell_state_sizes, alignment_counts):
        """`state_size` before the memory is known: the cell's sizes, None for every other entry."""
        count = len(alignment_counts)
        unknown = 2 + 4 * count + sum(alignment_counts)  # output, a_t, weights, memory, alignment
        return [None, *cell_state_sizes, *[None] * (unknown - 1)]

    @property
    def attention_size(self):
        """The size of `a_t`: every attention's, concatenated."""
        return sum(memory.attention_size for memory in self.memories)

    @property
    def weights_sizes(self):
        """`[H *] Tv` of each attention's weights (None for an unknown `Tv`)."""
        return [memory.weights_size for memory in self.memories]

    def __len__(self):
        alignment = sum(len(memory.alignment_keys) for memory in self.memories)
        return 2 + len(self.cell_state_sizes) + 4 * len(self.memories) + alignment

    def state_size(self, output_size):
        """The `n` of each `(B, n)` entry, in the list's order: the states a step returns.

        None where the size depends on a memory length `Tv` that is unknown
        (weights, keys, values, mask, and alignment states sized by `Tv`).
        """
        weights = self.weights_sizes
        memory = [size for m in self.memories for size in m.flat_sizes()]  # keys, values, mask
        alignment = [size for m in self.memories for size in m.alignment_sizes]
        head = [output_size, *self.cell_state_sizes, self.attention_size]
        return [*head, *weights, *memory, *alignment]

    def _each(self, value, field):
        """One entry per attention: `value` itself with one attention, else its tuple."""
        if not self.multiple:
            return (value,)
        if value is None and field == "alignment":  # every attention's initial state
            return (None,) * len(self.memories)
        if not isinstance(value, (list, tuple)) or len(value) != len(self.memories):
            received = f"{len(value)} entries" if isinstance(value, (list, tuple)) else value
            raise ValueError(
                f"AttentionRNNCell: with {len(self.memories)} attentions, "
                f"`AttentionRNNState.{field}` must hold one entry per attention. "
                f"Received: {received!r}"
            )
        return tuple(value)

    def item_or_tuple(self, values):
        """One entry per attention as a state field holds them: a tuple, or the one entry."""
        return tuple(values) if self.multiple else values[0]

    def entries(self, state):
        """`(keys, values, mask, alignment)` of each attention in `state`."""
        fields = ("keys", "values", "mask", "alignment")
        return list(zip(*(self._each(getattr(state, field), field) for field in fields)))

    def split_weights(self, outputs):
        """Each attention's weights `(..., [H,] Tv or *grid)`, the last features of `outputs`."""
        sizes = self.weights_sizes
        end = outputs.shape[-1] - sum(sizes)
        weights = []
        for size, memory in zip(sizes, self.memories):
            flat = outputs[..., end : end + size]  # (..., [H*]Tv)
            positions = memory.grid or (size // math.prod(memory.weights),)
            tail = (*memory.weights, *positions)  # ([H,] Tv or *grid)
            if keras.backend.is_keras_tensor(flat):  # a Functional model's node
                lead = [-1 if d is None else d for d in flat.shape[1:-1]]
                weights.append(keras.layers.Reshape((*lead, *tail))(flat))
            else:
                weights.append(ops.reshape(flat, (*ops.shape(flat)[:-1], *tail)))
            end += size
        return self.item_or_tuple(weights)

    def pack(self, state, mask_dtype, carry=None):
        """The flat list of a complete `AttentionRNNState` (output and alignment given).

        `carry`: a flat list whose memory entries (keys, values, mask) are
        taken as they are, when `state` holds the same memory unflattened.
        """
        cell_states = state.cell_states
        if not isinstance(cell_states, (list, tuple)):
            cell_states = [cell_states]
        weights = self._each(state.weights, "weights")
        entries = self.entries(state)
        count = len(self.cell_state_sizes) + 2 + len(self.memories)
        if carry is not None:
            memory = list(carry[count : count + 3 * len(self.memories)])
        else:
            memory = []
            for keys, values, mask, _ in entries:
                memory += [flatten(keys), flatten(values), ops.cast(mask, mask_dtype)]
        alignment = [
            entry[3][name]
            for entry, layout in zip(entries, self.memories)
            for name in layout.alignment_keys
        ]
        head = [state.output, *cell_states, state.attention]
        return [*head, *[flatten(w) for w in weights], *memory, *alignment]

    def unpack(self, states):
        """The `AttentionRNNState` of a flat list: original shapes, boolean masks."""
        states = list(states)
        count = len(self.cell_state_sizes)
        if len(states) != len(self):
            self._wrong_length(len(states))
        output, cell_states, attention = states[0], states[1 : count + 1], states[count + 1]
        weights, keys, values, masks, alignments = [], [], [], [], []
        start = count + 2 + len(self.memories)  # the first memory entry
        after = start + 3 * len(self.memories)  # the first alignment entry
        for index, layout in enumerate(self.memories):
            weights.append(_restore(states[count + 2 + index], layout.weights))
            flat_keys, flat_values, mask = states[start + 3 * index : start + 3 * index + 3]
            keys.append(_restore(flat_keys, *layout.keys))
            values.append(_restore(flat_values, *layout.values))
            masks.append(ops.greater(mask, 0.5))
            names = layout.alignment_keys
            alignments.append(dict(zip(names, states[after : after + len(names)])) or None)
            after += len(names)
        item = self.item_or_tuple
        return AttentionRNNState(
            list(cell_states), attention, item(weights), item(keys), item(values), item(masks),
            output, item(alignments),
        )  # fmt: skip

    def _wrong_length(self, received):
        count = len(self.cell_state_sizes)
        names = tuple(key for memory in self.memories for key in memory.alignment_keys)
        alignment = f", then the alignment state {names}" if names else ""
        if self.multiple:
            memory = (
                f"the weights of each of the {len(self.memories)} attentions, then the "
                f"keys, values and mask of each{alignment}"
            )
        else:
            memory = f"weights, keys, values, mask{alignment}"
        raise ValueError(
            f"AttentionRNNCell: expected {len(self)} states (the previous output, {count} of "
            f"the wrapped cell, then attention, {memory}). Received: {received} states"
        )
