import keras
from keras import ops

from keras_attention import masks as masks_lib
from keras_attention import ops as attention_ops
from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.luong import LuongAttention


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
    from its own content, so there is no state to carry: `attend` and
    `AttentionRNNCell` work as for `LuongAttention`.

    Args:
        window_width: `D`, the half-width of the window (default 10, the
            paper's).
        score_mode, use_scale, units: as in `LuongAttention`.
        position_units: size of `W_p`'s output; `None` uses the query's size.
        probability_fn, dropout, seed: as in `BaseAttention` (the path is
            always exact: the Gaussian multiplies the normalized weights).
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for `W`, `W_p`,
            `v_p` and the score's weights, each its own copy.
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
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        # No sliding `window`: `window_width` around the predicted p_t is the window.
        super().__init__(
            score_mode, use_scale, units, probability_fn, dropout, seed, "exact", None,
            kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
            kernel_constraint, bias_constraint, window=None, **kwargs,
        )  # fmt: skip
        owner = "LuongLocalPAttention"
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
        """`p = S · sigmoid(v_pᵀ tanh(W_p q))`: `(B, Tq)` (or `(B,)`) float32 positions."""
        hidden = ops.tanh(self.position_dense(query))  # (B, [Tq,] P)
        v = ops.cast(self.position_v, hidden.dtype)
        flat = ops.reshape(hidden, (-1, ops.shape(v)[0]))  # a rank-2 product (XLA in loops)
        logits = ops.reshape(scores.matmul(flat, v[:, None]), ops.shape(hidden)[:-1])
        if value_mask is None:
            length = ops.cast(value_length, "float32")
        else:
            length = ops.sum(ops.cast(value_mask, "float32"), axis=-1)  # (B,)
            length = ops.reshape(length, (-1,) + (1,) * (len(hidden.shape) - 2))
        return length * ops.sigmoid(ops.cast(logits, "float32"))

    def attend(
        self,
        query,
        key_features,
        value_features,
        query_mask=None,
        value_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        value_length = ops.shape(key_features)[1]
        # A step is projected while rank 2 (a rank-3 Dense is a Tensordot, whose
        # gradient XLA cannot compile inside the while loop of an RNN).
        features = self._project_query(query)
        centre = self.positions(query, value_mask, value_length)  # (B, [Tq])
        single_step = len(query.shape) == 2
        if single_step:
            features, centre = ops.expand_dims(features, 1), ops.expand_dims(centre, 1)
            query_mask = None if query_mask is None else ops.expand_dims(query_mask, 1)
            if attention_mask is not None:
                attention_mask = ops.expand_dims(attention_mask, 1)
        query_length = ops.shape(features)[1]
        distance = ops.arange(value_length, dtype="float32") - centre[..., None]  # (B, Tq, Tv)
        window = ops.abs(distance) <= float(self.window_width)
        mask = masks_lib.attention_mask_from(
            query_mask, value_mask, attention_mask, use_causal_mask, query_length, value_length
        )
        mask = window if mask is None else ops.logical_and(mask, window)
        score, query_in, key_in, params = self._score(features, key_features)
        logits = score.logits(score.prepare(query_in), key_in, *params)  # (B, Tq, Tv)
        weights = attention_ops.attention_weights(logits, mask, self.probability_fn)
        sigma = self.window_width / 2.0
        weights = weights * ops.exp(-ops.square(distance) / (2.0 * sigma * sigma))
        weights = ops.cast(weights, self.compute_dtype)
        dropped = weights
        if training and self.dropout > 0:
            dropped = keras.random.dropout(weights, self.dropout, seed=self.seed_generator)
        context = attention_ops.weighted_sum(dropped, value_features)  # (B, Tq, dv)
        if single_step:
            context, weights = context[:, 0], weights[:, 0]
        context = ops.cast(context, self.compute_dtype)
        return (context, weights) if return_attention_scores else context

    def get_config(self):
        config = super().get_config()
        for argument in ("implementation", "block_size", "window"):
            config.pop(argument)
        config.update(window_width=self.window_width, position_units=self.position_units)
        return config
