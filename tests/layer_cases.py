"""The one registry of the package's public layers, with NumPy truth.

`REGISTRY` maps a case name to a `Case`: how to build the layer, the shapes
of its inputs (a sequence, a grid memory `(B, H, W, d)`, or a grid query for
`MultiHead(attention_axes=...)`), its NumPy reference (`reference.py` only,
computed from the layer's own weights), how it decodes one step (`step`, a
key/value cache, or the recurrent cell) and, in one place, the contract
checks that do not apply to it and why (`skips`). `test_layer_contract.py`
runs every check over every case; other test modules filter the registry
(`CASES`: the content cases over sequences; `ALIGNMENT`: the layers with an
alignment state; `LOCAL_P`) for their layer-specific tests.
"""

import dataclasses
import math
from collections.abc import Callable

import keras
import numpy as np
import reference
from backend_utils import to_numpy

from keras_attention import AttentionRNN
from keras_attention import AttentionRNNCell
from keras_attention import BahdanauAttention
from keras_attention import BahdanauMonotonicAttention
from keras_attention import DynamicConvolutionAttention
from keras_attention import GMMAttention
from keras_attention import LocationSensitiveAttention
from keras_attention import LuongAttention
from keras_attention import LuongLocalPAttention
from keras_attention import LuongMonotonicAttention
from keras_attention import MultiHead
from keras_attention import ScaledDotProduct
from keras_attention import StepwiseMonotonicAttention

DQ, DK, DV = 6, 6, 5  # query, key, value feature sizes of the content cases
ALIGNMENT_DIMS = (6, 5, 4)  # the same for the alignment and local-p cases
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512}

# The contract's checks (test_layer_contract.py), named as `Case.skips` names them.
CHECKS = (
    "config",  # get_config / from_config round trip
    "keras_file",  # a model with the layer saved to a real `.keras` file and loaded
    "shapes",  # compute_output_shape without data; symbolic call shapes = eager ones
    "float64",  # a float64 layer computes and returns float64 (NumPy truth at float64)
    "mixed_precision",  # mixed_float16 / mixed_bfloat16 against float32 on the same weights
    "fresh_init",  # a fresh layer's kernels start apart (default and seeded initializers)
    "mask_invariance",  # whatever masked positions hold never changes the output
    "causal",  # perturbing the future never moves the past
    "step",  # one query at a time (step, cache or cell) equals the full call
)


def _w(variable):
    return to_numpy(variable).astype(np.float64)


def _dense(layer, x):
    bias = _w(layer.bias) if layer.use_bias else None
    return reference.dense(x, _w(layer.kernel), bias)


# ---------------------------------------------------------------- content truth
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


def _rotate(layer, qh, kh):
    """RoPE at the layer's positions: key j at j, query i at Tv - Tq + i."""
    tq, tv = qh.shape[2], kh.shape[2]
    scaling = layer.rope_scaling
    if scaling is None:
        rotate = dict(base=layer.rotary_base)
    else:
        thetas, magnitude = reference.rope_scaled_frequencies(
            layer.key_dim, layer.rotary_base, scaling["rope_type"], scaling["factor"],
            scaling.get("original_max_position_embeddings"),
        )  # fmt: skip
        rotate = dict(inverse_frequencies=thetas, magnitude=magnitude)
    qh = reference.rotate_half(qh, np.arange(tq) + tv - tq, **rotate)
    return qh, reference.rotate_half(kh, np.arange(tv), **rotate)


def multi_head_reference(layer, q, k, v, mask, probability_fn):
    h, hkv = layer.num_heads, layer.num_key_value_heads or layer.num_heads
    qh = _heads(_dense(layer.query_dense, q), h)  # (B, H, Tq, dk)
    kh = np.repeat(_heads(_dense(layer.key_dense, k), hkv), h // hkv, axis=1)
    vh = np.repeat(_heads(_dense(layer.value_dense, v), hkv), h // hkv, axis=1)
    if layer.qk_norm:  # RMSNorm per head over dk
        qh = reference.rms_norm(qh, _w(layer.query_norm))
        kh = reference.rms_norm(kh, _w(layer.key_norm))
    if layer.rotary:
        qh, kh = _rotate(layer, qh, kh)
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


def content_reference(layer, q, k, v, value_mask=None):
    """`reference_call` for any layout: a grid (memory, or query and memory of
    `MultiHead(attention_axes=...)` over every axis) is its row-major sequence."""
    batch = q.shape[0]
    flat_query = isinstance(layer, MultiHead) and q.ndim > 3
    qf = q.reshape(batch, -1, q.shape[-1]) if flat_query else q
    kf, vf = k.reshape(batch, -1, k.shape[-1]), v.reshape(batch, -1, v.shape[-1])
    mask = None
    if value_mask is not None:
        mask = np.broadcast_to(value_mask.reshape(batch, 1, -1), (batch, qf.shape[1], kf.shape[1]))
    context, weights = reference_call(layer, qf, kf, vf, mask)
    query_axes = q.shape[1:-1] if flat_query else (qf.shape[1],)
    context = context.reshape(batch, *query_axes, context.shape[-1])
    weights = weights.reshape(*weights.shape[:-2], *query_axes, *k.shape[1:-1])
    return context, weights


# ---------------------------------------------------------------- local-p truth
def reference_local_p(layer, q, k, v, value_mask=None):
    """(context, weights) of local-p, one query and one position at a time."""
    batch, steps, tv = q.shape[0], q.shape[1], k.shape[1]
    mask = np.ones((batch, tv), bool) if value_mask is None else value_mask
    k, v = np.where(mask[..., None], k, 0.0), np.where(mask[..., None], v, 0.0)
    if layer.score_mode == "dot":
        logits = reference.dot_scores(q, k)
    elif layer.score_mode == "general":
        logits = reference.dot_scores(q, reference.dense(k, _w(layer.key_dense.kernel)))
    else:
        logits = reference.additive_scores(
            reference.dense(q, _w(layer.query_dense.kernel)),
            reference.dense(k, _w(layer.key_dense.kernel)),
            _w(layer.v),
        )
    logits = logits * (_w(layer.g) if layer.use_scale else 1.0)
    width, sigma = layer.window_width, layer.window_width / 2
    weights = np.zeros((batch, steps, tv))
    for n in range(batch):
        length = mask[n].sum()
        for i in range(steps):
            hidden = np.tanh(q[n, i] @ _w(layer.position_dense.kernel))
            centre = length / (1.0 + np.exp(-(hidden @ _w(layer.position_v))))
            keep = mask[n] & (np.abs(np.arange(tv) - centre) <= width)
            if keep.any():
                row = np.exp(logits[n, i][keep] - logits[n, i][keep].max())
                weights[n, i, keep] = row / row.sum()
            weights[n, i] *= np.exp(-((np.arange(tv) - centre) ** 2) / (2 * sigma**2))
    return np.einsum("bqk,bkd->bqd", weights, v), weights


# ---------------------------------------------------------------- alignment truth
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _location_step(layer, query, keys, mask, state, training):
    prev, cumulative = state["weights"], state["cumulative"]
    channels = {"both": [prev, cumulative], "previous": [prev], "cumulative": [cumulative]}
    features = np.stack(channels[layer.location_features], axis=-1)  # (B, Tv, C)
    filtered = reference.conv1d_same(features, _w(layer.location_conv.kernel))
    location = reference.dense(filtered, _w(layer.location_dense.kernel))
    query = reference.dense(query[:, None], _w(layer.query_dense.kernel))
    bias = None if layer.b is None else _w(layer.b)
    logits = reference.additive_scores(query, keys + location, _w(layer.v), bias)[:, 0]
    if layer.inference_window is not None and not training:
        back, forward = layer.inference_window
        peak = np.argmax(prev, axis=-1)[:, None]
        positions = np.arange(prev.shape[1])[None]
        mask = mask & (positions >= peak - back) & (positions <= peak + forward)
    weights = reference.NORMALIZERS[layer.probability_fn](logits, mask)
    return weights, {"weights": weights, "cumulative": cumulative + weights}


def _monotonic_step(layer, query, keys, mask, state, training):
    if isinstance(layer, BahdanauMonotonicAttention):
        query = reference.dense(query[:, None], _w(layer.query_dense.kernel))
        v, bias = _w(layer.v), None
        if layer.normalize:
            v, bias = _w(layer.g) * v / np.linalg.norm(v), _w(layer.b)
        energy = reference.additive_scores(query, keys, v, bias)[:, 0]
    else:
        energy = reference.dot_scores(query[:, None], keys)[:, 0]
        energy = energy * (_w(layer.g) if layer.use_scale else 1.0)
    energy = energy + _w(layer.score_bias)
    mode = layer.mode
    if mode == "auto":  # stepwise: the expectation in training, hard decisions otherwise
        mode = "soft" if training else "hard"
    p_choose = (energy > 0).astype(np.float64) if mode == "hard" else _sigmoid(energy)
    if isinstance(layer, StepwiseMonotonicAttention):  # p is the probability of staying
        weights = np.where(mask, reference.stepwise_monotonic(p_choose, state["weights"]), 0.0)
        return weights, {"weights": weights}
    p_choose = np.where(mask, p_choose, 0.0)
    if mode == "hard":
        weights = reference.monotonic_hard(p_choose, state["weights"])
    else:
        weights = reference.monotonic_recurrence(p_choose, state["weights"])
    return weights, {"weights": weights}


def _softplus(x):
    return np.log1p(np.exp(x))


def _gmm_step(layer, query, mask, state):
    """Battenberg et al.'s GMMv2: w = softmax(ŵ), Δ = softplus(Δ̂), σ = softplus(σ̂), μ += Δ."""
    hidden = np.tanh(
        reference.dense(query, _w(layer.hidden_dense.kernel), _w(layer.hidden_dense.bias))
    )
    parameters = reference.dense(hidden, _w(layer.parameter_dense.kernel))
    k = layer.num_mixtures
    w_hat = parameters[:, :k] + _w(layer.mixture_bias)
    delta = _softplus(parameters[:, k : 2 * k] + _w(layer.delta_bias))
    sigma = np.maximum(_softplus(parameters[:, 2 * k :] + _w(layer.sigma_bias)), 1e-5)
    mixture = np.exp(w_hat - w_hat.max(-1, keepdims=True))
    mixture = mixture / mixture.sum(-1, keepdims=True)
    means = state["means"] + delta
    weights = reference.gmm_density(mixture, means, sigma, mask.shape[1])
    weights = np.where(mask, weights, 0.0)
    return weights, {"weights": weights, "means": means}


def _dca_step(layer, query, mask, state):
    """Battenberg et al.'s DCA: static, dynamic (per example) and prior filters of α_{i-1}."""
    previous = state["weights"]  # (B, Tv)
    static = reference.conv1d_same(previous[..., None], _w(layer.static_kernel)[:, None, :])
    hidden = np.tanh(
        reference.dense(
            query, _w(layer.filter_hidden_dense.kernel), _w(layer.filter_hidden_dense.bias)
        )
    )
    filters = reference.dense(hidden, _w(layer.filter_dense.kernel))
    filters = filters.reshape(len(query), layer.dynamic_filters, layer.dynamic_kernel_size)
    dynamic = np.stack(  # each example convolved with its own filters, (W, 1, C_d)
        [
            reference.conv1d_same(previous[n : n + 1, :, None], filters[n].T[:, None, :])[0]
            for n in range(len(query))
        ]
    )
    energy = np.tanh(
        reference.dense(static, _w(layer.static_dense.kernel))
        + reference.dense(dynamic, _w(layer.dynamic_dense.kernel))
        + _w(layer.b)
    ) @ _w(layer.v)
    taps = reference.beta_binomial(layer.prior_length, layer.prior_alpha, layer.prior_beta)
    prior = reference.causal_filter(previous, taps)
    weights = reference.softmax(energy + np.log(np.maximum(prior, 1e-6)), mask)
    return weights, {"weights": weights}


def alignment_reference(layer, q, k, v, value_mask=None, query_mask=None, training=False):
    """(context (B, Tq, dv), weights (B, Tq, Tv)) of the recurrence, step by step in NumPy."""
    batch, steps, tv = q.shape[0], q.shape[1], k.shape[1]
    mask = np.ones((batch, tv), bool) if value_mask is None else value_mask
    k, v = np.where(mask[..., None], k, 0.0), np.where(mask[..., None], v, 0.0)
    keys = reference.dense(k, _w(layer.key_dense.kernel)) if hasattr(layer, "key_dense") else None
    if isinstance(layer, LocationSensitiveAttention):
        state = {"weights": np.zeros((batch, tv)), "cumulative": np.zeros((batch, tv))}
    elif isinstance(layer, GMMAttention):
        state = {"weights": np.zeros((batch, tv)), "means": np.zeros((batch, layer.num_mixtures))}
    else:
        first = np.zeros((batch, tv))
        first[:, 0] = 1.0
        state = {"weights": np.where(mask, first, 0.0)}
    contexts, all_weights = np.zeros((batch, steps, v.shape[-1])), np.zeros((batch, steps, tv))
    for t in range(steps):
        if isinstance(layer, LocationSensitiveAttention):
            weights, new = _location_step(layer, q[:, t], keys, mask, state, training)
        elif isinstance(layer, GMMAttention):
            weights, new = _gmm_step(layer, q[:, t], mask, state)
        elif isinstance(layer, DynamicConvolutionAttention):
            weights, new = _dca_step(layer, q[:, t], mask, state)
        else:
            weights, new = _monotonic_step(layer, q[:, t], keys, mask, state, training)
        if query_mask is not None:
            keep = query_mask[:, t, None]
            weights = np.where(keep, weights, 0.0)
            new = {name: np.where(keep, new[name], state[name]) for name in new}
        state = new
        all_weights[:, t] = weights
        contexts[:, t] = np.einsum("bk,bkd->bd", weights, v)
    return contexts, all_weights


# ---------------------------------------------------------------- the registry
@dataclasses.dataclass(frozen=True)
class Case:
    """One layer configuration, its inputs, its NumPy truth and its skipped checks.

    `make(**kwargs)` builds the layer (`dtype`, `name`, `kernel_initializer`
    pass through). Inputs: `query (B, *query_axes, dq)`, `key (B,
    *value_axes, dk)`, `value (B, *value_axes, dv)`; for the recurrent
    family the query is the decoder's inputs and the value its memory (no
    key). `reference(layer, q, k, v, value_mask) -> (context, weights)`.
    `step`: "step" (`project_memory`, `initial_alignment_state`, `step`),
    "cache" (`init_cache`, `call_with_cache`: causal self-attention) or
    "cell" (the `AttentionRNNCell` one step at a time).
    """

    family: str  # "content", "alignment" or "recurrent"
    make: Callable
    dims: tuple = (DQ, DK, DV)
    query_axes: tuple = (3,)
    value_axes: tuple = (4,)
    reference: Callable | None = content_reference
    step: str = "step"
    skips: dict = dataclasses.field(default_factory=dict)
    core: bool = False  # in `CASES`: the sequence content cases other modules loop over
    # Checks the layer fails today (a defect in keras_attention, not in the check): the
    # contract marks them xfail(strict=True) with this reason, where the defect shows.
    defects: dict = dataclasses.field(default_factory=dict)


GRID = (3, 4)  # the grid memory's (H, W)
# Skip reasons, one spelling each.
NO_KERNELS = "no trainable projections: nothing to start apart"
REFUSES_CAUSAL = (
    "an alignment state runs over the queries in order and refuses use_causal_mask; "
    "the check perturbs future queries instead (causality of the recurrence)"
)
GRID_NOT_CAUSAL = "a grid memory has no order relative to the queries: use_causal_mask needs Tv"
WINDOW_EDGE = (
    "the window's hard edge |s - p_t| <= D moves with p_t computed in bfloat16 "
    "(8-bit mantissa, p_t off by ~S/256): a position at the edge enters or leaves"
)
AXES_NO_STEP = (
    "MultiHead's step and key/value cache attend over one axis; a query grid over "
    "attention_axes=(1, 2) has no single next position (test_grid_attention checks "
    "the axes against keras.layers.MultiHeadAttention instead)"
)


def _content(make, core=False, **fields):
    return Case("content", make, core=core, **fields)


def _grid(make, **fields):
    skips = {"causal": GRID_NOT_CAUSAL, **fields.pop("skips", {})}
    return Case("content", make, value_axes=GRID, skips=skips, **fields)


def _alignment(make, **fields):
    skips = {"causal": REFUSES_CAUSAL, **fields.pop("skips", {})}
    return Case(
        "alignment", make, dims=ALIGNMENT_DIMS, query_axes=(4,), value_axes=(6,),
        reference=alignment_reference, skips=skips, **fields,
    )  # fmt: skip


def _local_p(make, dot=False):
    dq, dk, dv = ALIGNMENT_DIMS
    return Case(
        "content", make, dims=(dq, dq if dot else dk, dv), query_axes=(4,), value_axes=(9,),
        reference=reference_local_p, skips={"mixed_precision[mixed_bfloat16]": WINDOW_EDGE},
    )  # fmt: skip


def _attention_rnn(attention, **kwargs):
    """`AttentionRNN` over a GRU cell and `attention`; `dtype` reaches every sublayer."""
    dtype = kwargs.pop("dtype", None)
    initializer = kwargs.pop("kernel_initializer", None)
    extra = {} if initializer is None else {"kernel_initializer": initializer}
    cell = AttentionRNNCell(
        keras.layers.GRUCell(6, dtype=dtype, **extra), attention(dtype=dtype, **extra),
        attention_layer_size=4, dtype=dtype,
    )  # fmt: skip
    return AttentionRNN(cell, dtype=dtype, **kwargs)


def _recurrent(attention):
    return Case(
        "recurrent", lambda **kw: _attention_rnn(attention, **kw), dims=(3, 5, 5),
        query_axes=(4,), value_axes=(5,), reference=None, step="cell",
    )  # fmt: skip


def _multi_head_rope(rope_scaling):
    return _content(
        lambda **kw: MultiHead(2, 4, rotary=True, rope_scaling=rope_scaling, **kw),
        step="cache",
    )  # fmt: skip


REGISTRY = {
    # Content attention over a sequence (the `core` ones are `CASES`).
    "bahdanau": _content(lambda **kw: BahdanauAttention(units=7, **kw), core=True),
    "bahdanau_normalized": _content(
        lambda **kw: BahdanauAttention(units=7, normalize=True, **kw), core=True
    ),
    "bahdanau_no_bias": _content(
        lambda **kw: BahdanauAttention(units=4, use_bias=False, **kw), core=True
    ),
    "luong_dot": _content(lambda **kw: LuongAttention(**kw), core=True,
                          skips={"fresh_init": NO_KERNELS}),
    "luong_general_scaled": _content(
        lambda **kw: LuongAttention("general", use_scale=True, **kw), core=True
    ),
    "luong_concat": _content(lambda **kw: LuongAttention("concat", units=5, **kw), core=True),
    "scaled_dot": _content(lambda **kw: ScaledDotProduct(**kw), core=True,
                           skips={"fresh_init": NO_KERNELS}),
    "scaled_dot_custom_scale": _content(lambda **kw: ScaledDotProduct(scale=0.3, **kw), core=True,
                                        skips={"fresh_init": NO_KERNELS}),
    "multi_head": _content(lambda **kw: MultiHead(num_heads=2, key_dim=3, **kw), core=True),
    "multi_head_gqa": _content(
        lambda **kw: MultiHead(
            num_heads=4, key_dim=3, value_dim=2, num_key_value_heads=2, output_dim=7, **kw
        ),
        core=True,
    ),
    # Today's Transformer options (issue 45; soft cap low enough to bind on these logits).
    "multi_head_gated_qk_norm_capped": _content(
        lambda **kw: MultiHead(
            num_heads=2, key_dim=3, use_gate=True, qk_norm=True, logit_soft_cap=1.5, **kw
        ),
        core=True,
    ),
    "multi_head_rope_linear": _multi_head_rope({"rope_type": "linear", "factor": 2.0}),
    "multi_head_rope_dynamic": _multi_head_rope({"rope_type": "dynamic", "factor": 2.0}),
    "multi_head_rope_yarn": _multi_head_rope(YARN),
    "multi_head_axes_2d": _content(
        lambda **kw: MultiHead(num_heads=2, key_dim=3, attention_axes=(1, 2), **kw),
        query_axes=(2, 3), value_axes=(3, 2), skips={"step": AXES_NO_STEP},
    ),
    # A grid memory (B, H, W, d) with a grid mask (B, H, W) (issue 45).
    "bahdanau_grid": _grid(lambda **kw: BahdanauAttention(units=7, **kw)),
    "luong_general_scaled_grid": _grid(
        lambda **kw: LuongAttention("general", use_scale=True, **kw)
    ),
    "luong_concat_grid": _grid(lambda **kw: LuongAttention("concat", units=5, **kw)),
    "scaled_dot_grid": _grid(lambda **kw: ScaledDotProduct(**kw), skips={"fresh_init": NO_KERNELS}),
    # Luong's local-p (a predicted position and a Gaussian window).
    "local_p_general": _local_p(lambda **kw: LuongLocalPAttention(window_width=2, **kw)),
    "local_p_dot_scaled": _local_p(
        lambda **kw: LuongLocalPAttention(
            window_width=3, score_mode="dot", use_scale=True, position_units=3, **kw
        ),
        dot=True,
    ),
    "local_p_concat": _local_p(
        lambda **kw: LuongLocalPAttention(window_width=1, score_mode="concat", units=4, **kw)
    ),
    # Attention with an alignment state.
    "location": _alignment(
        lambda **kw: LocationSensitiveAttention(units=7, filters=3, kernel_size=5, **kw)
    ),
    "location_cumulative_window": _alignment(
        lambda **kw: LocationSensitiveAttention(
            units=5, filters=2, kernel_size=3, location_features="cumulative",
            inference_window=(1, 1), **kw,
        )
    ),
    "location_previous_no_bias": _alignment(
        lambda **kw: LocationSensitiveAttention(
            units=4, filters=2, kernel_size=4, location_features="previous", use_bias=False, **kw
        )
    ),
    "location_sigmoid_window": _alignment(  # Chorowski et al.'s smoothing, and a window
        lambda **kw: LocationSensitiveAttention(
            units=5, filters=2, kernel_size=5, probability_fn="sigmoid",
            inference_window=(1, 2), **kw,
        )
    ),
    "bahdanau_monotonic": _alignment(lambda **kw: BahdanauMonotonicAttention(7, **kw)),
    "bahdanau_monotonic_normalized_recursive": _alignment(
        lambda **kw: BahdanauMonotonicAttention(5, normalize=True, mode="recursive", **kw)
    ),
    "bahdanau_monotonic_hard": _alignment(
        lambda **kw: BahdanauMonotonicAttention(6, mode="hard", **kw)
    ),
    "luong_monotonic": _alignment(
        lambda **kw: LuongMonotonicAttention(**kw)
    ),
    "luong_monotonic_scaled_recursive": _alignment(
        lambda **kw: LuongMonotonicAttention(use_scale=True, mode="recursive", **kw),
    ),
    "luong_monotonic_hard": _alignment(
        lambda **kw: LuongMonotonicAttention(use_scale=True, mode="hard", **kw),
    ),
    # mode="auto": hard outside training (these tests' default), soft in training.
    "stepwise": _alignment(lambda **kw: StepwiseMonotonicAttention(7, **kw)),
    "stepwise_soft_normalized": _alignment(
        lambda **kw: StepwiseMonotonicAttention(5, normalize=True, mode="soft", **kw)
    ),
    "stepwise_hard": _alignment(lambda **kw: StepwiseMonotonicAttention(6, mode="hard", **kw)),
    "gmm": _alignment(lambda **kw: GMMAttention(num_mixtures=3, units=5, **kw)),
    "gmm_one_component": _alignment(
        lambda **kw: GMMAttention(
            num_mixtures=1, units=4, delta_bias_init=0.5, sigma_bias_init=2.0, **kw
        )
    ),
    "dca": _alignment(
        lambda **kw: DynamicConvolutionAttention(
            units=6, static_filters=3, static_kernel_size=5, dynamic_filters=2,
            dynamic_kernel_size=3, dynamic_units=4, **kw,
        )
    ),
    "dca_even_widths_prior": _alignment(
        lambda **kw: DynamicConvolutionAttention(
            units=4, static_filters=2, static_kernel_size=4, dynamic_filters=3,
            dynamic_kernel_size=2, dynamic_units=5, prior_length=4, prior_alpha=0.5,
            prior_beta=2.0, **kw,
        )
    ),
    # The recurrent layers: AttentionRNN over an AttentionRNNCell of each family.
    "attention_rnn_bahdanau": _recurrent(lambda **kw: BahdanauAttention(5, **kw)),
    "attention_rnn_location": _recurrent(
        lambda **kw: LocationSensitiveAttention(units=5, filters=2, kernel_size=3, **kw)
    ),
}  # fmt: skip
ALL = sorted(REGISTRY)

# The filtered views other modules loop over.
CASES = {name: case.make for name, case in REGISTRY.items() if case.core}
ALIGNMENT = {name: case.make for name, case in REGISTRY.items() if case.family == "alignment"}
LOCAL_P = {name: case.make for name, case in REGISTRY.items() if name.startswith("local_p_")}


def skip_reason(name, check):
    """Why `check` does not apply to case `name`, or None when it does."""
    assert check in CHECKS, check
    return REGISTRY[name].skips.get(check)


for _name, _case in REGISTRY.items():  # every skip names a check (or a check[variant])
    assert all(key.split("[")[0] in CHECKS for key in _case.skips), (_name, _case.skips)
    assert all(key in CHECKS for key in _case.defects), (_name, _case.defects)


def case_inputs(name, rng, batch=2, dtype="float32"):
    """`(query, key, value, value_mask)` of a case; the mask pads the second example."""
    case = REGISTRY[name]
    dq, dk, dv = case.dims
    q = rng.normal(size=(batch, *case.query_axes, dq)).astype(dtype)
    k = rng.normal(size=(batch, *case.value_axes, dk)).astype(dtype)
    v = rng.normal(size=(batch, *case.value_axes, dv)).astype(dtype)
    size = int(np.prod(case.value_axes))
    value_mask = np.ones((batch, size), bool)
    value_mask[1:, size - 2 :] = False  # the last two positions (cells) of later examples
    if len(case.value_axes) > 1:  # a grid: a cell inside it too
        value_mask[1:, 1] = False
    return q, k, v, value_mask.reshape(batch, *case.value_axes)


def build_case(name, rng=None, **kwargs):
    """The case's layer built on its input shapes; every weight random when `rng` is given."""
    case = REGISTRY[name]
    layer = case.make(**kwargs)
    dq, dk, dv = case.dims
    query_shape = (None, *(None for _ in case.query_axes), dq)
    value_shape = (None, *(None for _ in case.value_axes), dv)
    key_shape = (None, *(None for _ in case.value_axes), dk)
    if case.family == "recurrent":
        layer.build(query_shape, value_shape)
    else:
        layer.build(query_shape, value_shape, key_shape)
    if rng is not None:
        for variable in layer.weights:
            values = rng.normal(size=variable.shape) * 0.7
            variable.assign(values.astype(keras.backend.standardize_dtype(variable.dtype)))
    return layer


# The helpers of the content cases over a sequence, by name (`CASES`).
def make_inputs(rng, batch=2, tq=3, tv=4):
    q = rng.normal(size=(batch, tq, DQ)).astype("float32")
    k = rng.normal(size=(batch, tv, DK)).astype("float32")
    v = rng.normal(size=(batch, tv, DV)).astype("float32")
    return q, k, v


def make_alignment_inputs(rng, batch=2, tq=4, tv=6):
    dq, dk, dv = ALIGNMENT_DIMS
    q = rng.normal(size=(batch, tq, dq)).astype("float32")
    k = rng.normal(size=(batch, tv, dk)).astype("float32")
    v = rng.normal(size=(batch, tv, dv)).astype("float32")
    return q, k, v


def build_randomized(name, rng, **kwargs):
    """The case's layer, built on the standard shapes, every weight random."""
    return build_case(name, rng, **kwargs)
