import keras
from keras import ops

from keras_attention import backends
from keras_attention import validation
from keras_attention.layers.content.luong_attention import LuongAttention
from keras_attention.precision import math_dtype


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongLocalPAttention(LuongAttention):
    """Luong's local attention with predicted positions ("local-p", Luong et al., 2015).

    Each query predicts where to look, and attends a window around it:

    ```
    p_i  = S · sigmoid(v_pᵀ tanh(W_p q_i))            S: the memory's length (unmasked)
    a_ij = softmax_j(score(q_i, k_j))  over |j - p_i| <= D
    w_ij = a_ij · exp(-(j - p_i)² / (2σ²)),  σ = D / 2
    ```

    with `score` one of `LuongAttention`'s (`"general"` by default, the one
    Luong et al. report best with local-p). The Gaussian favours positions
    near `p_i`, and trains `p_i` through the gradient; the weights sum to
    less than 1. Unlike monotonic attention, each query places its window
    from its own content, so there is no state to carry: `attend`, `step`
    and `AttentionRNNCell` work as for `LuongAttention`. The window and the
    Gaussian enter through `ContentAttention`'s `_locality` hook.

    Args:
        window_width: `D`, the half-width of the window (default 10, the
            paper's).
        score_mode, use_scale, units: as in `LuongAttention`.
        position_units: size of `W_p`'s output; `None` uses the query's size.
        probability_fn, dropout, seed, block_size: as in `ContentAttention`.
        implementation: `"exact"` (default) or `"auto"`, which gives the
            exact path too: the Gaussian multiplies the normalized weights,
            which the chunked path never holds.
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for `W`, `W_p`,
            `v_p` and the score's weights, each its own copy.
        window: None only: local-p places its own window (`window_width`
            around the predicted position); kept for the content contract.
        **kwargs: base layer arguments.

    Call arguments and returns: the contract of `BaseAttention`. `S` comes
    from `value_mask` (the number of unmasked positions; `Tv` without a
    mask), so each sentence of a padded batch gets its own range.

    Example:

    >>> import numpy as np
    >>> from keras_attention import LuongLocalPAttention
    >>> layer = LuongLocalPAttention(window_width=2)
    >>> decoder = np.random.rand(2, 3, 8).astype("float32")
    >>> encoder = np.random.rand(2, 9, 6).astype("float32")
    >>> context, weights = layer(decoder, encoder, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 6), (2, 3, 9))

    References:
        Luong, Pham & Manning, "Effective Approaches to Attention-based
        Neural Machine Translation", EMNLP 2015, section 3.2.
    """

    accepts_grids = False  # its predicted position lies on one axis

    def __init__(
        self,
        window_width=10,
        score_mode="general",
        use_scale=False,
        units=None,
        position_units=None,
        probability_fn="softmax",
        dropout=0.0,
        seed=None,
        implementation="exact",
        block_size=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        window=None,
        **kwargs,
    ):
        super().__init__(
            score_mode=score_mode,
            use_scale=use_scale,
            units=units,
            probability_fn=probability_fn,
            dropout=dropout,
            seed=seed,
            implementation=implementation,
            block_size=block_size,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint,
            window=window,
            **kwargs,
        )
        owner = "LuongLocalPAttention"
        if self.window is not None:  # it chooses where to look itself
            validation.fail(
                owner,
                "window",
                "None (local-p attends `window_width` positions around the position "
                "each query predicts)",
                window,
                error=TypeError,
            )
        if self.implementation == "chunked":
            validation.fail(
                owner,
                "implementation",
                "'exact' or 'auto' (local-p multiplies its normalized weights by a "
                "Gaussian; the chunked path never holds them)",
                implementation,
            )
        self.window_width = validation.integer(owner, "window_width", window_width)
        self.position_units = validation.integer(
            owner, "position_units", position_units, allow_none=True
        )

    def build(self, query_shape, value_shape=None, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        units = self.position_units or query_shape[-1]
        self.position_dense = self._dense(units, "position_dense", input_dim=query_shape[-1])
        self.position_v = self._score_vector_weight("position_v", units)

    def positions(self, query, value_mask=None, value_length=None):
        """`p = S · sigmoid(v_pᵀ tanh(W_p q))`: `(B, Tq)` (or `(B,)`) positions.

        float32, or float64 in a float64 layer.
        """
        hidden = ops.tanh(self.position_dense(query))  # (B, [Tq,] P)
        v = ops.cast(self.position_v, hidden.dtype)
        flat = ops.reshape(hidden, (-1, ops.shape(v)[0]))  # a rank-2 product (XLA in loops)
        logits = ops.reshape(backends.matmul(flat, v[:, None]), ops.shape(hidden)[:-1])
        dtype = math_dtype(hidden)
        if value_mask is None:
            length = ops.cast(value_length, dtype)
        else:
            length = ops.sum(ops.cast(value_mask, dtype), axis=-1)  # (B,)
            length = ops.reshape(length, (-1,) + (1,) * (len(hidden.shape) - 2))
        return length * ops.sigmoid(ops.cast(logits, dtype))

    def _locality(self, query, key_features, value_mask):
        """`|j - p| <= D` and `exp(-(j - p)² / (2σ²))`: `(B, [Tq,] Tv)` each."""
        value_length = ops.shape(key_features)[1]
        centre = self.positions(query, value_mask, value_length)  # (B, [Tq])
        distance = ops.arange(value_length, dtype=centre.dtype) - centre[..., None]  # (B, [Tq,] Tv)
        sigma = self.window_width / 2.0
        gaussian = ops.exp(-ops.square(distance) / (2.0 * sigma * sigma))
        return ops.abs(distance) <= float(self.window_width), gaussian

    def get_config(self):
        config = super().get_config()
        config.update(window_width=self.window_width, position_units=self.position_units)
        return config
