"""The layer configurations every contract test runs over, with NumPy truth.

Each case builds a layer and knows how to compute its logits from NumPy
inputs and the layer's own (randomized) weights, using `reference.py` only.
"""

import math

import numpy as np
import reference
from backend_utils import to_numpy

from keras_attention import BahdanauAttention
from keras_attention import LuongAttention
from keras_attention import MultiHead
from keras_attention import ScaledDotProduct

DQ, DK, DV = 6, 6, 5  # query, key, value feature sizes used by the cases


def _w(variable):
    return to_numpy(variable).astype(np.float64)


def _dense(layer, x):
    bias = _w(layer.bias) if layer.use_bias else None
    return reference.dense(x, _w(layer.kernel), bias)


def bahdanau_logits(layer, q, k):
    v = _w(layer.v)
    if layer.normalize:
        v = _w(layer.g) * v / np.linalg.norm(v)
    b = None if layer.b is None else _w(layer.b)
    return reference.additive_scores(_dense(layer.query_dense, q), _dense(layer.key_dense, k), v, b)


def luong_logits(layer, q, k):
    if layer.score_mode == "dot":
        logits = reference.dot_scores(q, k)
    elif layer.score_mode == "general":
        logits = reference.dot_scores(q, _dense(layer.key_dense, k))
    else:
        logits = reference.additive_scores(
            _dense(layer.query_dense, q), _dense(layer.key_dense, k), _w(layer.v)
        )
    return logits * (_w(layer.g) if layer.use_scale else 1.0)


def scaled_dot_logits(layer, q, k):
    scale = layer.scale if layer.scale is not None else 1 / math.sqrt(q.shape[-1])
    return reference.dot_scores(q, k) * scale


def _heads(x, heads):
    b, t, _ = x.shape
    return x.reshape(b, t, heads, -1).transpose(0, 2, 1, 3)  # (B, heads, T, d)


def multi_head_reference(layer, q, k, v, mask, probability_fn):
    h, hkv = layer.num_heads, layer.num_key_value_heads or layer.num_heads
    qh = _heads(_dense(layer.query_dense, q), h)  # (B, H, Tq, dk)
    kh = np.repeat(_heads(_dense(layer.key_dense, k), hkv), h // hkv, axis=1)
    vh = np.repeat(_heads(_dense(layer.value_dense, v), hkv), h // hkv, axis=1)
    if layer.qk_norm:  # RMSNorm per head over dk
        qh = reference.rms_norm(qh, _w(layer.query_norm))
        kh = reference.rms_norm(kh, _w(layer.key_norm))
    logits = reference.dot_scores(qh, kh) / math.sqrt(layer.key_dim)
    if layer.logit_soft_cap is not None:
        logits = reference.soft_cap(logits, layer.logit_soft_cap)
    mask = None if mask is None else mask[:, None]  # (B, 1, Tq, Tv)
    context, weights = reference.attend(logits, vh, mask, probability_fn)
    merged = context.transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], -1)
    if layer.use_gate:
        merged = merged * reference.sigmoid(_dense(layer.gate_dense, q))
    return _dense(layer.output_dense, merged), weights


def reference_call(layer, q, k, v, mask, probability_fn="softmax"):
    """(context, weights) the layer must produce; `mask` is (B, Tq, Tv) or None."""
    if isinstance(layer, MultiHead):
        return multi_head_reference(layer, q, k, v, mask, probability_fn)
    logits_fn = {
        BahdanauAttention: bahdanau_logits,
        LuongAttention: luong_logits,
        ScaledDotProduct: scaled_dot_logits,
    }[type(layer)]
    return reference.attend(logits_fn(layer, q, k), v, mask, probability_fn)


CASES = {
    "bahdanau": lambda **kw: BahdanauAttention(units=7, **kw),
    "bahdanau_normalized": lambda **kw: BahdanauAttention(units=7, normalize=True, **kw),
    "bahdanau_no_bias": lambda **kw: BahdanauAttention(units=4, use_bias=False, **kw),
    "luong_dot": lambda **kw: LuongAttention(**kw),
    "luong_general_scaled": lambda **kw: LuongAttention("general", use_scale=True, **kw),
    "luong_concat": lambda **kw: LuongAttention("concat", units=5, **kw),
    "scaled_dot": lambda **kw: ScaledDotProduct(**kw),
    "scaled_dot_custom_scale": lambda **kw: ScaledDotProduct(scale=0.3, **kw),
    "multi_head": lambda **kw: MultiHead(num_heads=2, key_dim=3, **kw),
    "multi_head_gqa": lambda **kw: MultiHead(
        num_heads=4, key_dim=3, value_dim=2, num_key_value_heads=2, output_dim=7, **kw
    ),
    # Today's Transformer options (soft cap low enough to bind on these logits).
    "multi_head_gated_qk_norm_capped": lambda **kw: MultiHead(
        num_heads=2, key_dim=3, use_gate=True, qk_norm=True, logit_soft_cap=1.5, **kw
    ),
}


def make_inputs(rng, batch=2, tq=3, tv=4):
    q = rng.normal(size=(batch, tq, DQ)).astype("float32")
    k = rng.normal(size=(batch, tv, DK)).astype("float32")
    v = rng.normal(size=(batch, tv, DV)).astype("float32")
    return q, k, v


def build_randomized(name, rng, **kwargs):
    """The case's layer, built on the standard shapes, every weight random."""
    layer = CASES[name](**kwargs)
    layer.build((None, None, DQ), (None, None, DV), (None, None, DK))
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32") * 0.7)
    return layer
