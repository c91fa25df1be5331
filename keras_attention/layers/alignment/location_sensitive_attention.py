import keras
from keras import ops

from keras_attention import location_relative
from keras_attention import ops as attention_ops
from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.alignment.alignment_attention import AlignmentAttention
from keras_attention.layers.kernel_args import KernelArgsMixin
from keras_attention.layers.kernel_args import sublayer_initializer

LOCATION_FEATURES = ("both", "previous", "cumulative")


@keras.saving.register_keras_serializable(package="keras_attention")
class LocationSensitiveAttention(KernelArgsMixin, AlignmentAttention):
    """Location-sensitive attention (Chorowski et al., 2015; Tacotron 2).

    An additive score that also sees where the attention was: at step `i`

    ```
    f_i  = F * [α_{i-1}; Σ_{k<i} α_k]                  (B, Tv, filters), a 1-D convolution
    e_ij = vᵀ tanh(W_q q_i + W_k k_j + U f_ij + b)
    α_i  = softmax_j(e_ij)                             (probability_fn)
    ```

    The convolution runs over the memory axis of the previous alignment, of
    the cumulative one, or of both as two channels (`location_features`).
    The defaults are Tacotron 2's (Shen et al., 2018): 128 units, 32 filters
    of width 31, both features. The state is `{"weights": α_{i-1},
    "cumulative": Σ_{k<i} α_k}`, zeros before the first step.

    With `inference_window=(back, forward)`, outside training each step may
    only attend positions `[m - back, m + forward]` around the peak `m` of
    the previous alignment (position 0 at the first step), which keeps a
    long synthesis from jumping or going back (TensorFlowTTS uses `(2, 3)`);
    such a step scores only the window's `back + forward + 1` positions, so
    its cost no longer grows with the memory's length (but for the context).

    Args:
        units: size of the hidden layer inside the tanh (default 128).
        filters: number of location filters (default 32).
        kernel_size: width of the location filters (default 31, odd keeps
            them centred).
        location_features: `"both"` (default), `"previous"` or
            `"cumulative"`: what the filters read.
        inference_window: `None` (default) or a pair of non-negative ints
            `(back, forward)`.
        use_bias: add a learned bias `b` inside the tanh.
        probability_fn: `"softmax"` (default), `"sparsemax"`, `"hardmax"` or
            `"sigmoid"` (the paper's smoothing: `σ(e_ij) / Σ_k σ(e_ik)`).
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for `W_q`,
            `W_k`, `F`, `U`, `v` (kernel) and `b` (bias), each weight its own
            copy (a seeded initializer a seed derived per weight).
        **kwargs: base layer arguments.

    Call arguments and returns: those of `AlignmentAttention`: `attend`
    takes one `(B, dq)` step and an `alignment_state`; calling the layer on
    `(B, Tq, dq)` runs every step. Context `(B, Tq, dv)`, weights `(B, Tq,
    Tv)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention import LocationSensitiveAttention
    >>> layer = LocationSensitiveAttention(units=16, filters=4, kernel_size=5)
    >>> decoder = np.random.rand(2, 3, 8).astype("float32")
    >>> encoder = np.random.rand(2, 7, 6).astype("float32")
    >>> context, weights = layer(decoder, encoder, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 6), (2, 3, 7))

    References:
        Chorowski, Bahdanau, Serdyuk, Cho & Bengio, "Attention-Based Models
        for Speech Recognition", NeurIPS 2015. Shen et al., "Natural TTS
        Synthesis by Conditioning WaveNet on Mel Spectrogram Predictions",
        ICASSP 2018.
    """

    alignment_state_keys = ("weights", "cumulative")

    def __init__(
        self,
        units=128,
        filters=32,
        kernel_size=31,
        location_features="both",
        inference_window=None,
        use_bias=True,
        probability_fn="softmax",
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        owner = "LocationSensitiveAttention"
        self.probability_fn = validation.choice(
            owner, "probability_fn", probability_fn, attention_ops.PROBABILITY_FNS
        )
        self.units = validation.integer(owner, "units", units)
        self.filters = validation.integer(owner, "filters", filters)
        self.kernel_size = validation.integer(owner, "kernel_size", kernel_size)
        self.location_features = validation.choice(
            owner, "location_features", location_features, LOCATION_FEATURES
        )
        if inference_window is not None:
            if not isinstance(inference_window, (list, tuple)) or len(inference_window) != 2:
                validation.fail(
                    owner, "inference_window", "None or a pair (back, forward)", inference_window
                )
            inference_window = tuple(
                validation.integer(owner, "inference_window", size, minimum=0)
                for size in inference_window
            )
        self.inference_window = inference_window
        self.use_bias = validation.flag(owner, "use_bias", use_bias)
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
        self.location_conv = keras.layers.Conv1D(
            self.filters,
            self.kernel_size,
            padding="same",
            use_bias=False,
            name="location_conv",
            dtype=self.dtype_policy,
            kernel_initializer=sublayer_initializer(self.kernel_initializer, "location_conv"),
            kernel_regularizer=self.kernel_regularizer,
            kernel_constraint=self.kernel_constraint,
        )
        channels = 2 if self.location_features == "both" else 1
        self.location_conv.build((None, None, channels))
        self.location_dense = self._dense(self.units, "location_dense", input_dim=self.filters)
        self.v = self._score_vector_weight("v", self.units)
        self.b = self._bias_weight("b", self.units) if self.use_bias else None

    def _project_memory(self, key, value):
        return self.key_dense(key), value

    def _project_query(self, query):
        return self.query_dense(query)

    def _location(self, state, like, positions=None):
        """`U (F * alignments)`: `(B, Tv, units)` in the dtype of `like`.

        With `positions` `(B, n)`, only at those memory positions: `(B, n, units)`.
        """
        channels = {
            "both": [state["weights"], state["cumulative"]],
            "previous": [state["weights"]],
            "cumulative": [state["cumulative"]],
        }[self.location_features]
        alignments = ops.cast(ops.stack(channels, axis=-1), like.dtype)  # (B, Tv, C)
        # The Conv1D's own kernel, as one product of the alignments' windows
        # (location_relative.convolve): faster on CPU than the convolution for
        # two input channels, with the same numbers and the same saved weights.
        kernel = ops.cast(self.location_conv.kernel, like.dtype)  # (W, C, filters)
        filtered = location_relative.convolve(alignments, kernel, positions)  # (B, n, filters)
        # A rank-2 product: a rank-3 Dense is a Tensordot, whose gradient XLA
        # cannot compile inside a while loop (the RNN of AttentionRNNCell).
        flat = self.location_dense(ops.reshape(filtered, (-1, self.filters)))  # (B*n, U)
        return ops.reshape(flat, ops.shape(like))  # (B, n, U)

    def _window_positions(self, previous):
        """The inference window's positions `(B, n)`, `n = back + forward + 1`,
        from `m - back` around the previous alignment's peak `m`; some may lie
        outside the memory."""
        back, forward = self.inference_window
        peak = ops.cast(ops.argmax(previous, axis=-1), "int32")[:, None]  # (B, 1)
        return peak - back + ops.arange(back + forward + 1, dtype="int32")[None]

    def _alignment(self, query_features, key_features, mask, state, training, noise):
        query = ops.expand_dims(query_features, 1)  # (B, 1, U)
        if self.b is not None:
            query = scores.add_bias(query, ops.cast(self.b, query.dtype))
        v = ops.cast(self.v, query.dtype)
        if self.inference_window is None or training:
            keys = key_features + self._location(state, key_features)  # (B, Tv, U)
            logits = scores.AdditiveScore().logits(query, keys, v)[:, 0]  # (B, Tv)
            weights = attention_ops.attention_weights(logits, mask, self.probability_fn)
        else:
            # Outside training with a window, positions outside it get no
            # weight: score only the window's n positions (the location term
            # is most of a step's multiply-adds), then place the weights.
            positions = self._window_positions(state["weights"])  # (B, n)

            def at(x):  # x (B, Tv, ...) at the window's positions, zero outside the memory
                return location_relative.windows_at(x, positions, 1, before=0)[:, :, 0]

            valid = ops.ones_like(key_features[..., 0]) if mask is None else mask
            valid = ops.broadcast_to(
                ops.cast(valid, key_features.dtype), ops.shape(key_features)[:2]
            )
            inside = at(valid) > 0  # (B, n): inside the memory and not masked
            keys = at(key_features)  # (B, n, U)
            keys = keys + self._location(state, keys, positions)
            logits = scores.AdditiveScore().logits(query, keys, v)[:, 0]  # (B, n)
            weights = attention_ops.attention_weights(logits, inside, self.probability_fn)
            # Back into the memory: position j holds window entry j - (m - back).
            start = -positions[:, :1]  # (B, 1)
            weights = location_relative.windows_at(weights, start, ops.shape(key_features)[1], 0)
            weights = weights[:, 0]  # (B, Tv)
        weights = ops.cast(weights, self._state_dtype)
        return weights, {"weights": weights, "cumulative": state["cumulative"] + weights}

    def get_config(self):
        config = super().get_config()
        config.update(
            probability_fn=self.probability_fn,
            units=self.units,
            filters=self.filters,
            kernel_size=self.kernel_size,
            location_features=self.location_features,
            inference_window=self.inference_window,
            use_bias=self.use_bias,
            **self._kernel_config(),
        )
        return config
