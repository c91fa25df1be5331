"""The arguments of `AttentionRNNCell` that `tfa.seq2seq.AttentionWrapper` had, checked.

One attention layer or a list of them, one attention size or attention layer
per attention, the attention layer's activation, `cell_input_fn` and
`output_attention`: each is checked here once and returned in the form the
cell stores (and serializes).
"""

import numbers

import keras
from keras import ops

from keras_attention import call_checks
from keras_attention import validation
from keras_attention.layers.base import BaseAttention

OWNER = "AttentionRNNCell"


def concat_inputs(inputs, attention):
    """`[x_t; a_{t-1}]`: input feeding, TFA's default `cell_input_fn`."""
    return ops.concatenate([inputs, attention], -1)


def inputs_only(inputs, attention):
    """`x_t` alone: no input feeding (the cell never sees `a_{t-1}`)."""
    del attention
    return inputs


# The serializable choices of `cell_input_fn`, by name.
CELL_INPUT_FNS = {"concat": concat_inputs, "inputs": inputs_only}


def _deserialize(value):
    """A layer's config (from a `.keras` file) as the layer; anything else as it is."""
    return keras.layers.deserialize(value) if isinstance(value, dict) else value


def rnn_cell(cell):
    """The wrapped Keras RNN cell (a layer with a `state_size`), checked."""
    cell = _deserialize(cell)
    if not isinstance(cell, keras.layers.Layer):
        raise TypeError(f"{OWNER}: `cell` must be a Keras layer. Received: {cell!r}")
    if not hasattr(cell, "state_size"):
        raise TypeError(
            f"{OWNER}: `cell` must be an RNN cell with a `state_size`. "
            f"Received: {type(cell).__name__}"
        )
    return cell


def attentions(attention):
    """`(stored, multiple)`: the layer, or a list of layers (`multiple=True`)."""
    multiple = isinstance(attention, (list, tuple))
    layers = [_deserialize(layer) for layer in attention] if multiple else [_deserialize(attention)]
    if multiple and not layers:
        validation.fail(OWNER, "attention", "an attention layer or a non-empty list of them", [])
    for index, layer in enumerate(layers):
        if not isinstance(layer, BaseAttention):
            where = f"attention[{index}]" if multiple else "attention"
            raise TypeError(
                f"{OWNER}: `{where}` must be an attention layer of keras_attention (a "
                "`keras_attention.layers.BaseAttention`, with `project_memory` and `step`), "
                f"such as BahdanauAttention or MultiHead. Received: {layer!r}"
            )
    return (layers if multiple else layers[0]), multiple


def layer_sizes(size, count, multiple):
    """`attention_layer_size` as stored: None, an int, or a list of `count` ints."""
    if isinstance(size, (list, tuple)):
        sizes = [validation.integer(OWNER, "attention_layer_size", s) for s in size]
        if len(sizes) != count:
            validation.fail(
                OWNER, "attention_layer_size", f"one size per attention ({count})", list(size)
            )
        return sizes if multiple else sizes[0]
    size = validation.integer(OWNER, "attention_layer_size", size, allow_none=True)
    if size is not None and count > 1:
        validation.fail(
            OWNER, "attention_layer_size",
            f"a list of one size per attention ({count}), as TFA's AttentionWrapper", size,
        )  # fmt: skip
    return [size] if size is not None and multiple else size


def attention_layers(layer, count, multiple, size):
    """`attention_layer` as stored: None, a layer, or a list of `count` layers."""
    if layer is None:
        return None
    if size is not None:
        validation.fail(
            OWNER, "attention_layer",
            "None when attention_layer_size is given (one of the two makes a_t)",
            "a layer" if not isinstance(layer, (list, tuple)) else "a list",
        )  # fmt: skip
    given = isinstance(layer, (list, tuple))
    layers = [_deserialize(item) for item in layer] if given else [_deserialize(layer)]
    if len(layers) != count:
        validation.fail(OWNER, "attention_layer", f"one layer per attention ({count})", layers)
    for item in layers:
        if not isinstance(item, keras.layers.Layer):
            validation.fail(OWNER, "attention_layer", "a Keras layer", item, error=TypeError)
    return layers if multiple else layers[0]


def activation(value):
    """The attention layer's activation (`keras.activations.get`), checked."""
    try:
        return keras.activations.get(value)
    except (ValueError, TypeError):
        validation.fail(
            OWNER, "attention_activation",
            "a Keras activation (a name such as 'tanh' or 'linear', None, or a callable)", value,
        )  # fmt: skip


def cell_input_fn(value):
    """`cell_input_fn` as stored: a name of `CELL_INPUT_FNS`, a Keras layer or a callable."""
    if isinstance(value, dict):  # a layer's or a registered function's config
        value = keras.saving.deserialize_keras_object(value)
    if isinstance(value, str):
        return validation.choice(OWNER, "cell_input_fn", value, tuple(CELL_INPUT_FNS))
    if not callable(value):
        validation.fail(
            OWNER, "cell_input_fn",
            f"one of {tuple(CELL_INPUT_FNS)}, a Keras layer or a callable "
            "`fn(inputs, attention) -> cell_inputs`", value, error=TypeError,
        )  # fmt: skip
    return value


def serialize_cell_input_fn(value):
    """A name as it is; a layer or a callable through `keras.saving.serialize_keras_object`."""
    return value if isinstance(value, str) else keras.saving.serialize_keras_object(value)


def output_attention(value):
    """None (`[h_t; a_t]`), True (`a_t`) or False (`h_t`)."""
    if value is not None and not isinstance(value, bool):
        validation.fail(
            OWNER, "output_attention", "None ([h_t; a_t]), True (a_t) or False (h_t)", value,
            error=TypeError,
        )  # fmt: skip
    return value


def attention_denses(sizes, activation_fn, multiple, dtype):
    """The `Dense` layers that `attention_layer_size` makes (no bias, as TFA's)."""
    if sizes is None:
        return None
    each = sizes if multiple else [sizes]
    denses = [
        keras.layers.Dense(
            size, activation=activation_fn, use_bias=False, dtype=dtype,
            name="attention_dense" if not multiple else f"attention_dense_{index}",
        )
        for index, size in enumerate(each)
    ]  # fmt: skip
    return denses if multiple else denses[0]


def memories(value, key, value_mask, count, multiple, names):
    """Each attention's `(value, key, mask)`, checked; `names` are the caller's arguments.

    A key left None is its value; a mask must have its memory's `(B, Tv)` or
    `(B, *grid)` shape.
    """
    values = per_attention(value, count, multiple, names[0])
    keys = per_attention(key, count, multiple, names[1])
    keys = [v if k is None else k for v, k in zip(values, keys)]
    masks = per_attention(value_mask, count, multiple, names[2])
    listed = multiple and isinstance(value_mask, (list, tuple))
    for index, (v, mask) in enumerate(zip(values, masks)):
        if mask is not None:
            where = f"{names[2]}[{index}]" if listed else names[2]
            expected = tuple(call_checks.static(d) for d in v.shape[:-1])
            call_checks.mask_shape(OWNER, where, mask, expected)
    return values, keys, masks


def per_attention(value, count, multiple, name, shapes=False):
    """One entry per attention: a list of `count`, or `value` for each of them.

    With `shapes=True`, `value` is a shape or a list of shapes (a `.keras`
    build config stores either as nested lists).
    """
    nested = isinstance(value, (list, tuple)) and (
        not shapes or (len(value) > 0 and not isinstance(value[0], (numbers.Integral, type(None))))
    )
    if not multiple or not nested:
        return [value] * count
    if len(value) != count:
        validation.fail(OWNER, name, f"one entry per attention ({count})", f"{len(value)} entries")
    return list(value)
