import keras
from keras import ops

from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.alignment.monotonic_attention_base import MonotonicAttentionBase


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongMonotonicAttention(MonotonicAttentionBase):
    """Monotonic attention with a multiplicative energy (Raffel et al., 2017).

    At step `i`, with `α_0` a one-hot on memory position 0,

    ```
    e_i[j] = g · q_iᵀ W k_j + r                     (g = 1 without use_scale)
    p_i[j] = sigmoid(e_i[j] + N(0, sigmoid_noise²))  ([e_i[j] > 0] in "hard" mode)
    α_i    = monotonic_attention(p_i, α_{i-1}, mode)
    ```

    and the context is `Σ_j α_i[j] · value_j`. `W` maps the keys to the
    query's size (Luong's "general" score). The attention only moves forward,
    and mass that passes the last position leaves. TensorFlow Addons'
    `tfa.seq2seq.LuongMonotonicAttention` (whose `units` had to equal the
    query depth; here it is that depth).

    Args:
        use_scale: learn a scalar `g` (initialized to 1) multiplying the
            energy: TFA's `scale=True`.
        sigmoid_noise: standard deviation of the noise added before the
            sigmoid, in training only (TFA added it in every call).
        score_bias_init: initial value of the learned scalar `r`.
        mode: `"parallel"` (default), `"recursive"` or `"hard"`.
        seed: seed of the noise.
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for `W`.
        **kwargs: base layer arguments.

    Call arguments and returns: those of `AlignmentAttention`. Context
    `(B, Tq, dv)`, weights `(B, Tq, Tv)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention import LuongMonotonicAttention
    >>> layer = LuongMonotonicAttention(use_scale=True, mode="hard")
    >>> decoder = np.random.rand(2, 3, 8).astype("float32")
    >>> encoder = np.random.rand(2, 5, 6).astype("float32")
    >>> tuple(layer(decoder, encoder).shape)
    (2, 3, 6)

    References:
        Raffel, Luong, Liu, Weiss & Eck, "Online and Linear-Time Attention by
        Enforcing Monotonic Alignments", ICML 2017.
    """

    def __init__(
        self,
        use_scale=False,
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
        self.use_scale = validation.flag(type(self).__name__, "use_scale", use_scale)

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        self.key_dense = self._dense(query_shape[-1], "key_dense", input_dim=key_shape[-1])
        self.g = None
        if self.use_scale:
            self.g = self.add_weight(name="g", shape=(), initializer="ones")
        self._build_score_bias()

    def _project_memory(self, key, value):
        return self.key_dense(key), value

    def _energy(self, query_features, key_features):
        query = ops.expand_dims(query_features, 1)  # (B, 1, dq)
        score = scores.DotScore(None, query.shape[-1])
        energy = score.logits(score.prepare(query), key_features)[:, 0]  # (B, Tv)
        return energy if self.g is None else energy * ops.cast(self.g, energy.dtype)

    def get_config(self):
        config = super().get_config()
        config.update(use_scale=self.use_scale)
        return config
