import math

import keras
from keras import ops

from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.base import BaseAttention
from keras_attention.layers.kernel_args import KernelArgsMixin


@keras.saving.register_keras_serializable(package="keras_attention")
class MultiHead(KernelArgsMixin, BaseAttention):
    """Multi-head attention (Vaswani et al., 2017), with grouped-query heads.

    Each of `H = num_heads` heads projects the query to `dk = key_dim`
    features, runs scaled dot-product attention over keys and values
    projected by one of `num_key_value_heads` key/value heads (grouped-query
    attention, Ainslie et al. 2023; `num_key_value_heads=1` is multi-query
    attention), and the heads' contexts are concatenated and projected to
    `output_dim` features.

    The key/value projections depend only on the keys and values:
    `project_memory` computes them once for step-by-step decoding.

    Args:
        num_heads: number of query heads `H`.
        key_dim: features per head for queries and keys, `dk`.
        value_dim: features per head for values, `dv`; defaults to `key_dim`.
        num_key_value_heads: key/value heads; must divide `num_heads`;
            defaults to `num_heads`.
        output_dim: features of the output; defaults to the query's.
        use_bias: biases in the four projections.
        probability_fn, dropout, seed, implementation, block_size: as in
            `BaseAttention`; the heads share one tile layout.
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for the four
            projections.
        **kwargs: base layer arguments.

    Call arguments and returns: the contract of `BaseAttention`; the context
    is `(B, Tq, output_dim)` and the weights `(B, H, Tq, Tv)` (without `Tq`
    for a rank-2 query).

    Example:

    >>> import numpy as np
    >>> from keras_attention import MultiHead
    >>> layer = MultiHead(num_heads=4, key_dim=8, num_key_value_heads=2)
    >>> x = np.random.rand(2, 5, 16).astype("float32")
    >>> context, weights = layer(x, x, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 5, 16), (2, 4, 5, 5))

    References:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
        Ainslie et al., "GQA: Training Generalized Multi-Query Transformer
        Models from Multi-Head Checkpoints", EMNLP 2023.
    """

    _has_heads = True

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        num_key_value_heads=None,
        output_dim=None,
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
        **kwargs,
    ):
        super().__init__(probability_fn, dropout, seed, implementation, block_size, **kwargs)
        self.num_heads = validation.integer("MultiHead", "num_heads", num_heads)
        self.key_dim = validation.integer("MultiHead", "key_dim", key_dim)
        self.value_dim = validation.integer("MultiHead", "value_dim", value_dim, allow_none=True)
        self.num_key_value_heads = validation.integer(
            "MultiHead", "num_key_value_heads", num_key_value_heads, allow_none=True
        )
        self.output_dim = validation.integer("MultiHead", "output_dim", output_dim, allow_none=True)
        if self.num_heads % self._kv_heads:
            raise ValueError(
                "MultiHead: `num_key_value_heads` must divide `num_heads`. "
                f"Received: num_heads={num_heads}, "
                f"num_key_value_heads={num_key_value_heads}"
            )
        self.use_bias = bool(use_bias)
        self._set_kernel_args(kernel_initializer, bias_initializer, kernel_regularizer,
                              bias_regularizer, kernel_constraint, bias_constraint)

    @property
    def _kv_heads(self):
        return self.num_key_value_heads or self.num_heads

    @property
    def _value_dim(self):
        return self.value_dim or self.key_dim

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        h, hkv, dk, dv = self.num_heads, self._kv_heads, self.key_dim, self._value_dim
        bias = self.use_bias
        self.query_dense = self._dense(h * dk, "query", bias, query_shape[-1])
        self.key_dense = self._dense(hkv * dk, "key", bias, key_shape[-1])
        self.value_dense = self._dense(hkv * dv, "value", bias, value_shape[-1])
        output_dim = self.output_dim or query_shape[-1]
        self.output_dense = self._dense(output_dim, "output", bias, h * dv)

    def _split_heads(self, x, heads):
        size = x.shape[-1] // heads
        x = ops.reshape(x, (*ops.shape(x)[:-1], heads, size))  # (B, T, heads, d)
        return ops.transpose(x, (0, 2, 1, 3))  # (B, heads, T, d)

    def _project_memory(self, key, value):
        key = self._split_heads(self.key_dense(key), self._kv_heads)  # (B, Hkv, Tv, dk)
        value = self._split_heads(self.value_dense(value), self._kv_heads)  # (B, Hkv, Tv, dv)
        group = self.num_heads // self._kv_heads
        if group > 1:
            key = ops.repeat(key, group, axis=1)  # (B, H, Tv, dk)
            value = ops.repeat(value, group, axis=1)  # (B, H, Tv, dv)
        return key, value

    def _project_query(self, query):
        projected = self.query_dense(query)
        if len(query.shape) == 2:  # one step: (B, H, dk)
            return ops.reshape(projected, (-1, self.num_heads, self.key_dim))
        return self._split_heads(projected, self.num_heads)  # (B, H, Tq, dk)

    def _score(self, query, key):
        return scores.DotScore(1.0 / math.sqrt(self.key_dim), self.key_dim), query, key, ()

    def _merge(self, context):
        if len(context.shape) == 3:  # one step: (B, H, dv) -> (B, H*dv), a rank-2 Dense
            return self.output_dense(ops.reshape(context, (-1, self.num_heads * self._value_dim)))
        context = ops.transpose(context, (0, 2, 1, 3))  # (B, Tq, H, dv)
        shape = (*ops.shape(context)[:-2], self.num_heads * self._value_dim)
        context = ops.reshape(context, shape)  # (B, Tq, H*dv)
        return self.output_dense(context)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            key_dim=self.key_dim,
            value_dim=self.value_dim,
            num_key_value_heads=self.num_key_value_heads,
            output_dim=self.output_dim,
            use_bias=self.use_bias,
            **self._kernel_config(),
        )
        return config
