import keras
from keras import ops

from keras_attention import call_checks
from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.content.content_attention import ContentAttention
from keras_attention.layers.kernel_args import KernelArgsMixin

SCORE_MODES = ("dot", "general", "concat")


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongAttention(KernelArgsMixin, ContentAttention):
    """Multiplicative / concat attention (Luong, Pham & Manning, 2015).

    Scores, selected by `score_mode`:

    - `"dot"`: `qᵀ k` (needs `dq == dk`);
    - `"general"`: `qᵀ W k` (`W` maps the keys to the query's size);
    - `"concat"`: `vᵀ tanh(W [q; k])`, computed as `vᵀ tanh(W_q q + W_k k)`.

    With `use_scale=True`, the score is multiplied by a learned scalar `g`
    (initialized to 1), as in TensorFlow Addons' `LuongAttention(scale=True)`.
    The key projection (`general`, `concat`) depends only on the keys and is
    computed once by `project_memory`.

    Args:
        score_mode: `"dot"` (default), `"general"` or `"concat"`.
        use_scale: learn a scalar multiplier of the scores.
        units: hidden size of the `"concat"` score (required there, unused
            otherwise).
        probability_fn, dropout, seed, implementation, block_size: as in
            `ContentAttention` (tiles of 512 for `"dot"`/`"general"`, 32 for
            `"concat"` by default).
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for `W`, `v`
            (each weight its own copy, a seeded initializer a seed derived
            per weight; `v` initialized as the kernel of a `Dense(units -> 1)`).
        window: a sliding window, as in `ContentAttention`.
        **kwargs: base layer arguments.

    Call arguments and returns: the contract of `BaseAttention`; the context
    is `(B, Tq, dv)` and the weights `(B, Tq, Tv)` (without `Tq` for a rank-2
    query). `"dot"` needs `dq == dk`. Over a grid memory `(B, *grid, d)`,
    with a `(B, *grid)` mask, the weights are `(B, Tq, *grid)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention import LuongAttention
    >>> layer = LuongAttention(score_mode="general")
    >>> decoder = np.random.rand(2, 3, 8).astype("float32")
    >>> encoder = np.random.rand(2, 5, 6).astype("float32")
    >>> tuple(layer(decoder, encoder).shape)
    (2, 3, 6)

    References:
        Luong, Pham & Manning, "Effective Approaches to Attention-based
        Neural Machine Translation", EMNLP 2015.
    """

    def __init__(
        self,
        score_mode="dot",
        use_scale=False,
        units=None,
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
        owner = type(self).__name__  # LuongLocalPAttention's errors name it
        self.score_mode = validation.choice(owner, "score_mode", score_mode, SCORE_MODES)
        if score_mode == "concat":
            units = validation.integer(owner, "units", units, when=" when score_mode='concat'")
        self.use_scale = validation.flag(owner, "use_scale", use_scale)
        self.units = units
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
        query_dim, key_dim = query_shape[-1], key_shape[-1]
        if self.score_mode == "general":
            self.key_dense = self._dense(query_dim, "key_dense", input_dim=key_dim)
        elif self.score_mode == "concat":
            self.query_dense = self._dense(self.units, "query_dense", input_dim=query_dim)
            self.key_dense = self._dense(self.units, "key_dense", input_dim=key_dim)
            self.v = self._score_vector_weight("v", self.units)
        self.g = None
        if self.use_scale:
            self.g = self.add_weight(name="g", shape=(), initializer="ones")

    def _validate_features(self, query, key, value):
        dq, dk = call_checks.static(query.shape[-1]), call_checks.static(key.shape[-1])
        if self.score_mode == "dot" and dq is not None and dk is not None and dq != dk:
            self._fail(
                "key",
                f"the query's feature size {dq} for score_mode='dot' (use "
                "'general' or 'concat' to compare different sizes)",
                f"key feature size {dk}",
            )

    def _project_memory(self, key, value):
        if self.score_mode == "dot":
            return key, value
        return self.key_dense(key), value

    def _project_query(self, query):
        return self.query_dense(query) if self.score_mode == "concat" else query

    def _score(self, query, key):
        gain = None if self.g is None else ops.cast(self.g, query.dtype)
        if self.score_mode == "concat":
            v = ops.cast(self.v, query.dtype)
            return scores.AdditiveScore(), query, key, (v if gain is None else v * gain,)
        query = query if gain is None else query * gain
        return scores.DotScore(None, query.shape[-1]), query, key, ()

    def get_config(self):
        config = super().get_config()
        config.update(
            score_mode=self.score_mode,
            use_scale=self.use_scale,
            units=self.units,
            **self._kernel_config(),
        )
        return config
