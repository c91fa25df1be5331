"""Greedy search, beam search and sampling over a step function, in `keras.ops` only.

Every search drives one step function, as OpenNMT-tf's decoders do::

    logits, state, attention = step(ids, state, index)  # or (logits, state)

`ids` are the `(N,)` int32 tokens chosen at the previous step (`start_id`
at step 0), `state` any nest of tensors with leading dimension `N` (lists,
dicts, NamedTuples: an `AttentionRNNCell` state, `MultiHead` key/value
caches), `index` the int32 scalar position. It returns `(N, V)` logits (or
log-probabilities; any float dtype, normalized here in float32), the new state
(same structure and shapes) and, optionally, the `(N, Tv)` attention of this
step (reduce a multi-head `(N, H, Tv)` first, e.g. `ops.mean(w, axis=1)`:
which reduction aligns best is the model's choice). `N = B` for greedy
search and sampling, `B * beam_size` for beam search (row `b * K + k`).

The loops are `keras.ops.while_loop` over fixed-size buffers: they run
eagerly, in `tf.function` (also `jit_compile=True`), under `jax.jit` and in
PyTorch, and stop when every hypothesis has emitted `end_id` or after
`max_length` steps (beam search with `early_stopping=True`: once each
entry's best hypothesis is final). Scores of beam search follow GNMT
(`keras_attention.decoding.penalties`). `ensemble_step` makes one step of
several models' steps (the mean of their log-probabilities, a tuple of their
states), which every search takes as it takes one model's. `decode` runs
an encoder-decoder's search over its memory (tiled once for the beams, never
reordered) and gives each sequence's best hypothesis.

Example:

>>> import numpy as np
>>> from keras import ops
>>> from keras_attention import decoding
>>> # A bigram "model" over [pad, end, a, b]: the logits depend on the last token.
>>> table = np.log([[0.25] * 4, [0.25] * 4, [0.01, 0.5, 0.09, 0.4], [0.01, 0.8, 0.09, 0.1]])
>>> table = ops.convert_to_tensor(table, "float32")
>>> def step(ids, state, index):
...     return ops.take(table, ids, axis=0), state
>>> state = {"unused": np.zeros((1, 1))}  # one sentence; any nest of (B, ...) tensors
>>> result = decoding.beam_search(step, state, start_id=2, end_id=1, max_length=4, beam_size=2)
>>> ops.convert_to_numpy(result.ids)[0].tolist()  # [end] (p=0.5), [b, end] (p=0.32)
[[1, 0, 0, 0], [3, 1, 0, 0]]
>>> ops.convert_to_numpy(result.lengths)[0].tolist()
[1, 2]
"""

from keras_attention.decoding.beam import beam_search
from keras_attention.decoding.best import decode
from keras_attention.decoding.ensemble import ensemble_step
from keras_attention.decoding.greedy import greedy_search
from keras_attention.decoding.greedy import sample
from keras_attention.decoding.loop import NEG_INF
from keras_attention.decoding.loop import SearchResult
from keras_attention.decoding.penalties import coverage_penalty
from keras_attention.decoding.penalties import length_penalty
from keras_attention.decoding.state import reorder_state
from keras_attention.decoding.state import tile_state

__all__ = [
    "NEG_INF",
    "SearchResult",
    "beam_search",
    "decode",
    "coverage_penalty",
    "ensemble_step",
    "greedy_search",
    "length_penalty",
    "reorder_state",
    "sample",
    "tile_state",
]
