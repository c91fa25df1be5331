"""Parity with TensorFlow Addons 0.23's monotonic attention, on its own outputs.

`fixtures/tfa_monotonic.npz` holds inputs, weights and every step's alignments of
`tfa.seq2seq.BahdanauMonotonicAttention` and `LuongMonotonicAttention`, written by
TFA itself (`fixtures/make_tfa_monotonic.py`, run where TFA installs: TensorFlow
2.15, Keras 2). Our layers get the same weights and must give the same alignments.
"""

import os

import numpy as np
import pytest
from backend_utils import to_numpy

from keras_attention import BahdanauMonotonicAttention
from keras_attention import LuongMonotonicAttention
from keras_attention import masks

DATA = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "tfa_monotonic.npz"))
TAGS = sorted({key.split("/")[0] for key in DATA.files if "/" in key})


def _layer(tag):
    kind, option, mode = tag.split("_")
    weights = {key.split("/")[1]: DATA[key] for key in DATA.files if key.startswith(tag + "/")}
    bias = float(weights["attention_score_bias"])
    if kind == "bahdanau":
        layer = BahdanauMonotonicAttention(
            6, normalize=option == "normalize1", score_bias_init=bias, mode=mode
        )
    else:
        layer = LuongMonotonicAttention(
            use_scale=option == "scale1", score_bias_init=bias, mode=mode
        )
    depth = DATA["memory"].shape[-1]
    layer.build((None, DATA["queries"].shape[-1]), (None, None, depth))
    layer.key_dense.kernel.assign(weights["memory_kernel"])
    if kind == "bahdanau":
        layer.query_dense.kernel.assign(weights["query_kernel"])
        layer.v.assign(weights["attention_v"])
    if "attention_g" in weights:
        layer.g.assign(weights["attention_g"])
    if "attention_b" in weights:
        layer.b.assign(weights["attention_b"])
    return layer, weights["alignments"]


def test_fixture_is_complete():
    assert str(DATA["tfa_version"]) == "0.23.0"
    assert len(TAGS) == 12  # {Bahdanau, normalized, Luong, scaled} x 3 modes


@pytest.mark.parametrize("tag", TAGS)
def test_alignments_match_tfa(tag):
    layer, expected = _layer(tag)
    memory, queries = DATA["memory"], DATA["queries"]
    value_mask = masks.padding_mask(DATA["lengths"], memory.shape[1])
    context, weights = layer(queries, memory, value_mask=value_mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(weights), expected, atol=1e-5)
    valid = to_numpy(value_mask)[..., None]
    expected_context = np.einsum("bqk,bkd->bqd", expected, np.where(valid, memory, 0.0))
    np.testing.assert_allclose(to_numpy(context), expected_context, atol=1e-5)
    key_features, value_features = layer.project_memory(memory, memory, value_mask)
    state = None
    for step in range(queries.shape[1]):  # one step at a time, as TFA ran
        _, weights, state = layer.attend(
            queries[:, step], key_features, value_features, value_mask=value_mask,
            alignment_state=state, return_attention_scores=True,
        )  # fmt: skip
        np.testing.assert_allclose(to_numpy(weights), expected[:, step], atol=1e-5)
