import math

import keras
from keras import ops

from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.alignment.monotonic_attention_base import MonotonicAttentionBase


@keras.saving.register_keras_serializable(package="keras_attention")
class BahdanauMonotonicAttention(MonotonicAttentionBase):
    """Monotonic attention with an additive energy (Raffel et al., 2017).

    At step `i`, with `α_0` a one-hot on memory position 0,

    ```
    e_i[j] = vᵀ tanh(W_q q_i + W_k k_j [+ b]) + r
    p_i[j] = sigmoid(e_i[j] + N(0, sigmoid_noise²))     ([e_i[j] > 0] in "hard" mode)
    α_i    = monotonic_attention(p_i, α_{i-1}, mode)
    ```

    and the context is `Σ_j α_i[j] · value_j`. The attention moves only
    forward; mass that passes the last (unmasked) position leaves, so `α_i`
    may sum to less than 1. Train with `"parallel"` (or `"recursive"`) and a
    positive `sigmoid_noise`, which pushes `p` towards 0 or 1; decode with
    `mode="hard"` for online, linear-time attention. TensorFlow Addons'
    `tfa.seq2seq.BahdanauMonotonicAttention`, one step at a time through
    `attend` or `AttentionRNNCell`.

    Args:
        units: size `U` of the hidden layer inside the tanh.
        normalize: weight-normalize `v` (`v = g · v / ‖v‖`, `g` initialized
            to `√(1/U)`) and add a bias `b` inside the tanh, as TFA's
            `normalize=True`.
        sigmoid_noise: standard deviation of the noise added to the energy
            before the sigmoid, in training only (TFA added it in every call).
        score_bias_init: initial value of the learned scalar `r`; Raffel et
            al. suggest a negative value such as -4 for long memories.
        mode: `"parallel"` (default), `"recursive"` or `"hard"`
            (`keras_attention.monotonic.monotonic_attention`).
        seed: seed of the noise.
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for `W_q`,
            `W_k`, `v` (kernel) and `b` (bias), each weight its own copy.
        **kwargs: base layer arguments.

    Call arguments and returns: those of `AlignmentAttention`: `attend`
    takes one `(B, dq)` step and an `alignment_state` (`{"weights": α}`);
    calling the layer on `(B, Tq, dq)` runs every step. Context `(B, Tq,
    dv)`, weights `(B, Tq, Tv)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention import BahdanauMonotonicAttention
    >>> layer = BahdanauMonotonicAttention(units=16, score_bias_init=-1.0)
    >>> decoder = np.random.rand(2, 3, 8).astype("float32")
    >>> encoder = np.random.rand(2, 5, 8).astype("float32")
    >>> context, weights = layer(decoder, encoder, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 8), (2, 3, 5))

    References:
        Raffel, Luong, Liu, Weiss & Eck, "Online and Linear-Time Attention by
        Enforcing Monotonic Alignments", ICML 2017.
    """

    def __init__(
        self,
        units,
        normalize=False,
        sigmoid_noise=0.0,
        score_bias_init=0.0,
        mode="parallel",
        seed=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        super().__init__(
            sigmoid_noise=sigmoid_noise,
            score_bias_init=score_bias_init,
            mode=mode,
            seed=seed,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint,
            **kwargs,
        )
        owner = type(self).__name__
        self.units = validation.integer(owner, "units", units)
        self.normalize = validation.flag(owner, "normalize", normalize)

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        self.query_dense = self._dense(self.units, "query_dense", input_dim=query_shape[-1])
        self.key_dense = self._dense(self.units, "key_dense", input_dim=key_shape[-1])
        self.v = self._score_vector_weight("v", self.units)
        self.g = self.b = None
        if self.normalize:
            self.g = self.add_weight(
                name="g",
                shape=(),
                initializer=keras.initializers.Constant(math.sqrt(1.0 / self.units)),
            )
            self.b = self._bias_weight("b", self.units)
        self._build_score_bias()

    def _project_memory(self, key, value):
        return self.key_dense(key), value

    def _project_query(self, query):
        return self.query_dense(query)

    def _energy(self, query_features, key_features):
        query = ops.expand_dims(query_features, 1)  # (B, 1, U)
        v = ops.cast(self.v, query.dtype)
        if self.normalize:
            query = scores.add_bias(query, ops.cast(self.b, query.dtype))
            v = scores.weight_normalized(v, ops.cast(self.g, query.dtype))
        return scores.AdditiveScore().logits(query, key_features, v)[:, 0]  # (B, Tv)

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, normalize=self.normalize)
        return config
