import math

import keras

from keras_attention import call_checks
from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.content.content_attention import ContentAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class ScaledDotProduct(ContentAttention):
    """Scaled dot-product attention (Vaswani et al., 2017), no weights.

    `context = softmax(q kᵀ · scale) v`, with `scale = 1/√dk` by default.

    Args:
        scale: a float multiplying the scores; `None` means `1/√dk`.
        probability_fn, dropout, seed, implementation, block_size, window: as
            in `ContentAttention`.
        **kwargs: base layer arguments.

    Call arguments and returns: the contract of `BaseAttention`, with queries
    and keys of the same size `dk`; the context is `(B, Tq, dv)` and the
    weights `(B, Tq, Tv)` (without `Tq` for a rank-2 query). Over a grid
    memory `(B, *grid, d)`, with a `(B, *grid)` mask, the weights are `(B,
    Tq, *grid)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention import ScaledDotProduct
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> tuple(ScaledDotProduct()(x, x, use_causal_mask=True).shape)
    (2, 5, 8)

    References:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    def __init__(
        self,
        scale=None,
        probability_fn="softmax",
        dropout=0.0,
        seed=None,
        implementation="auto",
        block_size=None,
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
        self.scale = validation.number("ScaledDotProduct", "scale", scale, allow_none=True)

    def _validate_features(self, query, key, value):
        dq, dk = call_checks.static(query.shape[-1]), call_checks.static(key.shape[-1])
        if dq is not None and dk is not None and dq != dk:
            self._fail("key", f"the query's feature size {dq}", f"key feature size {dk}")
        if self.scale is None and dq is None and dk is None:
            self._fail(
                "query",
                "a static feature size for the default scale 1/sqrt(d_k) (or pass `scale`)",
                f"query shape {tuple(query.shape)}, key shape {tuple(key.shape)}",
            )

    def _score(self, query, key):
        size = call_checks.static(query.shape[-1]) or call_checks.static(key.shape[-1])
        scale = self.scale if self.scale is not None else 1.0 / math.sqrt(size)
        return scores.DotScore(scale, size), query, key, ()

    def get_config(self):
        config = super().get_config()
        config.update(scale=self.scale)
        return config
