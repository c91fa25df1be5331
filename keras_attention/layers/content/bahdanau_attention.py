import math

import keras
from keras import ops

from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.content.content_attention import ContentAttention
from keras_attention.layers.kernel_args import KernelArgsMixin


@keras.saving.register_keras_serializable(package="keras_attention")
class BahdanauAttention(KernelArgsMixin, ContentAttention):
    """Additive attention (Bahdanau et al., 2015).

    `score(q, k) = vᵀ tanh(W_q q + W_k k + b)`, weights `= softmax(score)` over
    the keys, context `= Σ weights · value`. With `normalize=True`, `v` is
    weight-normalized, `v = g · v / ‖v‖` with a learned scalar gain `g`
    (Salimans & Kingma, 2016), as in TensorFlow Addons' `BahdanauAttention`.

    `W_k k` depends only on the keys: `project_memory` computes it once, and
    `attend` reuses it at every decoding step.

    Args:
        units: size `U` of the hidden layer inside the tanh.
        normalize: weight-normalize `v` with a learned gain.
        use_bias: add a learned bias `b` inside the tanh.
        probability_fn, dropout, seed, implementation, block_size: as in
            `ContentAttention`; the chunked path never holds the
            `(B, Tq, Tv, units)` tanh, only `(B, block, block, units)` tiles
            (`block_size` 32 by default).
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for `W_q`,
            `W_k`, `v` (kernel) and `b` (bias). Each weight gets its own
            copy (a seeded initializer a seed derived per weight), so `W_q`
            and `W_k` never start equal; `v` is initialized as the kernel of
            a `Dense(units -> 1)`, so any kernel initializer applies.
        window: a sliding window, as in `ContentAttention`.
        **kwargs: base layer arguments.

    Call arguments and returns: the contract of `BaseAttention`; the context
    is `(B, Tq, dv)` and the weights `(B, Tq, Tv)` (without `Tq` for a rank-2
    query). Over a grid memory `(B, *grid, d)` (an image's features), with a
    `(B, *grid)` mask, the weights are `(B, Tq, *grid)` (`ContentAttention`).

    Example:

    >>> import numpy as np
    >>> from keras_attention import BahdanauAttention
    >>> layer = BahdanauAttention(units=16)
    >>> decoder = np.random.rand(2, 3, 8).astype("float32")
    >>> encoder = np.random.rand(2, 5, 8).astype("float32")
    >>> context, weights = layer(decoder, encoder, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 8), (2, 3, 5))
    >>> image = np.random.rand(2, 4, 6, 8).astype("float32")  # (B, H', W', C)
    >>> tuple(layer(decoder, image, return_attention_scores=True)[1].shape)
    (2, 3, 4, 6)

    References:
        Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
        Learning to Align and Translate", ICLR 2015.
    """

    def __init__(
        self,
        units,
        normalize=False,
        use_bias=True,
        probability_fn="softmax",
        dropout=0.0,
        seed=None,
        implementation="auto",
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
            probability_fn=probability_fn,
            dropout=dropout,
            seed=seed,
            implementation=implementation,
            block_size=block_size,
            window=window,
            **kwargs,
        )
        self.units = validation.integer("BahdanauAttention", "units", units)
        self.normalize = validation.flag("BahdanauAttention", "normalize", normalize)
        self.use_bias = validation.flag("BahdanauAttention", "use_bias", use_bias)
        self._set_kernel_args(
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            kernel_constraint,
            bias_constraint,
        )

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        self.query_dense = self._dense(self.units, "query_dense", input_dim=query_shape[-1])
        self.key_dense = self._dense(self.units, "key_dense", input_dim=key_shape[-1])
        self.v = self._score_vector_weight("v", self.units)
        self.b = self._bias_weight("b", self.units) if self.use_bias else None
        self.g = None
        if self.normalize:
            self.g = self.add_weight(
                name="g",
                shape=(),
                initializer=keras.initializers.Constant(math.sqrt(1.0 / self.units)),
            )

    def _project_memory(self, key, value):
        return self.key_dense(key), value

    def _project_query(self, query):
        return self.query_dense(query)

    def _score_vector(self, dtype):
        v = ops.cast(self.v, dtype)
        if self.normalize:
            v = scores.weight_normalized(v, ops.cast(self.g, dtype))
        return v

    def _score(self, query, key):
        if self.b is not None:
            query = scores.add_bias(query, ops.cast(self.b, query.dtype))
        return scores.AdditiveScore(), query, key, (self._score_vector(query.dtype),)

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            normalize=self.normalize,
            use_bias=self.use_bias,
            **self._kernel_config(),
        )
        return config
