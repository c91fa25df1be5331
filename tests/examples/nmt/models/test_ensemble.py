"""An Ensemble of an RNN and a Transformer (their states differ) under the translator's search.

Checked against teacher forcing in NumPy: the best hypothesis's
log-probability is the sum, over its tokens, of the normalized mean of the
two models' log-softmaxes given its prefix. On every backend, compiled
where the example compiles (``backend.compile_search`` through ``Ensemble.variables``).
"""

import keras
import numpy as np
import tiny
from keras.ops import convert_to_numpy as to_numpy

from examples.nmt import backend
from examples.nmt.models.ensemble import Ensemble
from examples.nmt.text.special import PAD_ID
from examples.nmt.text.special import START_ID

SOURCE = tiny.SOURCE
MAX_LENGTH = 5


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def teacher_forced(members, ids):
    """``(B, T, V)`` log-probabilities of the ensemble given the ``(B, T)`` outputs as prefixes."""
    target_in = np.concatenate([np.full((len(ids), 1), START_ID), ids[:, :-1]], axis=1)
    target_in = target_in.astype("int32")
    source, members_log_probs = keras.ops.convert_to_tensor(SOURCE), []
    for member in members:  # compiled on JAX, where an eager pass compiles op by op
        forward = backend.compile_search(member, lambda x, m=member: m([source, x]))
        members_log_probs.append(log_softmax(to_numpy(forward(target_in)).astype("float64")))
    return log_softmax(np.mean(members_log_probs, axis=0))


def test_an_ensemble_of_two_architectures_searches_the_mean_of_their_log_probabilities():
    members = [
        tiny.tiny_model("rnn", seed=3, output_scale=8.0),
        tiny.tiny_model("transformer", seed=4, output_scale=8.0, layers=1),
    ]
    for member in members:  # never [PAD], as after training: teacher forcing would mask it
        bias = to_numpy(member.output_layer.bias)
        member.output_layer.bias.assign(np.where(np.arange(len(bias)) == PAD_ID, -50.0, bias))
    # Beam search: each member's state (RNN states, key/value caches) tiled and reordered.
    result = tiny.search(Ensemble(members), SOURCE, max_length=MAX_LENGTH, beam_size=3)
    ids, lengths = to_numpy(result.ids), to_numpy(result.lengths)
    log_probs = teacher_forced(members, ids)  # (B, T, V)
    assert lengths.max() > 1  # more than the first step is checked
    for entry, length in enumerate(lengths):
        chosen = log_probs[entry, np.arange(length), ids[entry, :length]]
        np.testing.assert_allclose(to_numpy(result.log_probs)[entry], chosen.sum(), atol=1e-4)
