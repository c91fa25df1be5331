"""Tiling and reordering a search state: any nest of tensors with a leading batch axis."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops


def tile_state(state: Any, beam_size) -> Any:
    """Repeats each batch entry `beam_size` times: leaves `(B, ...) -> (B * K, ...)`.

    Rows come out batch-major, `b * K + k` (each entry's `K` copies side by
    side), the layout `beam_search` uses. Works on any nest `keras.tree`
    walks: lists, tuples, dicts, NamedTuples (an `AttentionRNNState`, a
    `MultiHead` `(keys, values)` cache).

    Args:
        state: nested tensors, leading dimension `B`.
        beam_size: `K`, a positive Python int (or, on TensorFlow, an int32
            scalar tensor).

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.decoding import tile_state
    >>> tiled = tile_state({"h": np.array([[1.0], [2.0]])}, 2)
    >>> ops.convert_to_numpy(tiled["h"])[:, 0].tolist()
    [1.0, 1.0, 2.0, 2.0]
    """
    return keras.tree.map_structure(lambda x: ops.repeat(x, beam_size, axis=0), state)


def reorder_state(state: Any, indices) -> Any:
    """Row `i` of every leaf becomes its row `indices[i]`: one gather per leaf.

    `beam_search` calls it with each step's parent beams (global rows of
    `(B * K, ...)` leaves), so that a hypothesis continues from its parent's
    state.

    Args:
        state: nested tensors, leading dimension `N`.
        indices: `(N,)` integer rows.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.decoding import reorder_state
    >>> moved = reorder_state((np.array([10, 11, 12]),), np.array([2, 2, 0]))
    >>> ops.convert_to_numpy(moved[0]).tolist()
    [12, 12, 10]
    """
    indices = ops.cast(indices, "int32")
    return keras.tree.map_structure(lambda x: ops.take(x, indices, axis=0), state)
