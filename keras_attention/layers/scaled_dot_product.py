import math

import keras

from keras_attention import ops as attention_ops
from keras_attention.layers.base import BaseAttention
from keras_attention.layers.base import _static


@keras.saving.register_keras_serializable(package="keras_attention")
class ScaledDotProduct(BaseAttention):
    """Scaled dot-product attention (Vaswani et al., 2017), no weights.

    `context = softmax(q kᵀ · scale) v`, with `scale = 1/√dk` by default.

    Args:
        scale: a float multiplying the scores; `None` means `1/√dk`.
        probability_fn: `"softmax"`, `"sparsemax"` or `"hardmax"`.
        dropout: dropout rate on the attention weights.
        seed: seed of the dropout.
        implementation: `"auto"`, `"exact"` or `"chunked"` (memory-efficient
            tiles for long sequences); see `BaseAttention`.
        block_size: queries and keys per tile of the chunked path.
        **kwargs: base layer arguments.

    Call arguments:
        query: `(B, Tq, dk)`, or `(B, dk)` for one decoding step.
        value: `(B, Tv, dv)`.
        key: `(B, Tv, dk)`; defaults to `value`.
        query_mask, value_mask, attention_mask, use_causal_mask,
        return_attention_scores, training: as in `BahdanauAttention`.

    Returns:
        The context `(B, Tq, dv)` (or `(B, dv)`), and with
        `return_attention_scores=True` also the weights `(B, Tq, Tv)`
        (or `(B, Tv)`).

    Example:

    >>> import numpy as np
    >>> from keras_attention import ScaledDotProduct
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> tuple(ScaledDotProduct()(x, x, use_causal_mask=True).shape)
    (2, 5, 8)

    References:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    _score_kind = "dot"

    def __init__(self, scale=None, probability_fn="softmax", dropout=0.0, seed=None, **kwargs):
        super().__init__(probability_fn=probability_fn, dropout=dropout, seed=seed, **kwargs)
        if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
            raise ValueError(
                f"ScaledDotProduct: `scale` must be a number or None. Received: scale={scale!r}"
            )
        self.scale = None if scale is None else float(scale)

    def _validate_features(self, query, key, value):
        dq, dk = _static(query.shape[-1]), _static(key.shape[-1])
        if dq is not None and dk is not None and dq != dk:
            self._fail("key", f"the query's feature size {dq}", f"key feature size {dk}")
        if self.scale is None and dq is None and dk is None:
            self._fail(
                "query",
                "a static feature size for the default scale 1/sqrt(d_k) (or pass `scale`)",
                f"query shape {tuple(query.shape)}, key shape {tuple(key.shape)}",
            )

    def _default_scale(self, query, key):
        if self.scale is not None:
            return self.scale
        size = _static(query.shape[-1])
        return 1.0 / math.sqrt(size if size is not None else _static(key.shape[-1]))

    def _scores(self, query, key):
        return attention_ops.dot_product_scores(query, key, self._default_scale(query, key))

    def _blockwise_inputs(self, query, key):
        return query, key, self._default_scale(query, key)

    def get_config(self):
        config = super().get_config()
        config.update(scale=self.scale)
        return config
