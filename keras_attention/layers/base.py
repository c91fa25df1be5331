"""The call contract shared by every attention layer of the package.

A subclass creates its weights in `build`, and overrides only:

- `_project_memory(key, value)`: what depends on keys/values alone (cacheable,
  exposed as `project_memory`);
- `_project_query(query)`: what depends on the query alone, for a `(B, Tq, d)`
  query and for a `(B, d)` single step (the step axis is added afterwards, at
  -2, so a step is projected with rank-2 ops);
- `_scores(query, key)`: the logits `(B, Tq, Tv)` or `(B, H, Tq, Tv)`;
- `_merge(context)`: back from heads to `(B, Tq, d)`, or from `(B, H, dv)` to
  `(B, d)` for a single step (multi-head only).

Validation, masks, normalization, dropout, rank-2 queries and the optional
weights output live here once.
"""

import keras
from keras import ops

from keras_attention import masks as masks_lib
from keras_attention import memory_efficient
from keras_attention import ops as attention_ops


def _static(dim):
    """A dimension as a Python int, or None when unknown or symbolic."""
    return dim if isinstance(dim, int) else None


class BaseAttention(keras.layers.Layer):
    """Base class of the package's attention layers (not used directly).

    Args:
        probability_fn: `"softmax"` (default), `"sparsemax"` (exact zeros,
            Martins & Astudillo 2016) or `"hardmax"` (one-hot forward pass,
            softmax gradient backward).
        dropout: fraction of the attention weights dropped in training.
        seed: seed of the dropout.
        implementation: `"auto"` (default), `"exact"` or `"chunked"`. The
            exact path materializes the `(B, [H,] Tq, Tv)` weights; the
            chunked path (`keras_attention.memory_efficient`) works on
            `block_size` tiles with an online softmax and a recomputing
            backward pass, in `O(Tq + Tv)` memory, for softmax attention
            without returned weights. `"auto"` takes the chunked path (or a
            backend's fused kernel, see `memory_efficient.fused_attention_available`)
            only when the weights are not requested, `probability_fn` is
            softmax, the lengths are static and the problem is large
            (`memory_efficient.choose_implementation`).
        block_size: queries and keys per tile of the chunked path; `None`
            means 512 for dot-product scores and 32 for additive scores.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).
    """

    # Whether the logits carry a heads axis: (B, H, Tq, Tv).
    _has_heads = False
    # "dot" or "additive" when the score has a blockwise form (chunked path).
    _score_kind = None

    def __init__(
        self,
        probability_fn="softmax",
        dropout=0.0,
        seed=None,
        implementation="auto",
        block_size=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if probability_fn not in attention_ops.PROBABILITY_FNS:
            raise ValueError(
                f"{type(self).__name__}: `probability_fn` must be one of "
                f"{attention_ops.PROBABILITY_FNS}. Received: "
                f"probability_fn={probability_fn!r}"
            )
        if not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
            raise ValueError(
                f"{type(self).__name__}: `dropout` must be a float in [0, 1). "
                f"Received: dropout={dropout!r}"
            )
        self._validate_implementation(implementation, block_size, probability_fn)
        self.probability_fn = probability_fn
        self.dropout = float(dropout)
        self.seed = seed
        self.implementation = implementation
        self.block_size = block_size
        self.supports_masking = True
        if self.dropout > 0:
            self.seed_generator = keras.random.SeedGenerator(seed)

    # --------------------------------------------------------------- hooks
    def build(self, query_shape, value_shape=None, key_shape=None):
        # Layers with weights override this; the names are the call's.
        self.built = True

    def project_memory(self, key, value):
        """Return `(key_features, value_features)` for `attend`.

        Everything that depends only on the keys and values happens here, so
        a decoder can compute it once per source sentence and call `attend`
        at every step with the result. The layer must be built (called once,
        or `layer.build(query_shape, value_shape)`).
        """
        if not self.built:
            raise ValueError(
                f"{type(self).__name__} (layer '{self.name}'): `project_memory` needs "
                "the layer built; call it once or use `layer.build(query_shape, "
                "value_shape[, key_shape])` first. Received: an unbuilt layer"
            )
        return self._project_memory(key, value)

    def _project_memory(self, key, value):
        return key, value

    def _project_query(self, query):
        return query

    def _scores(self, query, key):
        raise TypeError(f"{type(self).__name__} must override `_scores`.")

    def _merge(self, context):
        return context

    def _blockwise_inputs(self, query, key):
        """`(query, key, parameter)` for the chunked path's score.

        `query` comes from `_project_query`, `key` from `project_memory`. The
        parameter is the scale (a float) of a "dot" score, the scoring vector
        `(U,)` of an "additive" one; anything learned in the score (a gain, a
        bias) is folded into these tensors so autodiff reaches it.
        """
        raise TypeError(f"{type(self).__name__} has no blockwise score.")

    # ------------------------------------------------------------ contract
    def call(
        self,
        query,
        value=None,
        key=None,
        query_mask=None,
        value_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        if value is None:  # self-attention, e.g. inside `keras.Sequential`
            value, value_mask = query, query_mask if value_mask is None else value_mask
        key = value if key is None else key
        self._validate(query, value, key, query_mask, value_mask, attention_mask)
        key_features, value_features = self._project_memory(key, value)
        return self.attend(
            query,
            key_features,
            value_features,
            query_mask=query_mask,
            value_mask=value_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )

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
        """Attend with memory from `project_memory`; same arguments as `call`."""
        single_step = len(query.shape) == 2
        if single_step:
            query_mask = None if query_mask is None else ops.expand_dims(query_mask, 1)
            if attention_mask is not None:
                attention_mask = ops.expand_dims(attention_mask, 1)
        # A single step is projected while still rank 2: on TensorFlow a Dense
        # on (B, 1, d) is a Tensordot, whose gradient XLA cannot compile inside
        # a while loop (an RNN over AttentionRNNCell under jit_compile=True).
        query_features = self._project_query(query)
        if single_step:
            query_features = ops.expand_dims(query_features, -2)  # (B, [H,] 1, d)
        masks = dict(
            query_mask=query_mask,
            value_mask=value_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
        )
        dropout = self.dropout if training and self.dropout > 0 else 0.0
        memory = (key_features, value_features)
        path = self._choose_path(query_features, memory, masks, dropout, return_attention_scores)
        if path == "exact":
            context, weights = self._attend_exact(query_features, *memory, masks, dropout)
        else:
            context = self._attend_blockwise(path, query_features, *memory, masks, dropout)
            weights = None
        if single_step:  # (B, [H,] 1, ·) -> (B, [H,] ·)
            context = ops.squeeze(context, -2)
            weights = None if weights is None else ops.squeeze(weights, -2)
        context = self._merge(context)
        if return_attention_scores:
            return context, weights
        return context

    def _attend_exact(self, query_features, key_features, value_features, masks, dropout):
        """Unmerged `(B, [H,] Tq, dv)` context and float32 `(B, [H,] Tq, Tv)` weights."""
        mask = masks_lib.attention_mask_from(
            masks["query_mask"],
            masks["value_mask"],
            masks["attention_mask"],
            masks["use_causal_mask"],
            ops.shape(query_features)[-2],
            ops.shape(value_features)[-2],
        )  # (B, Tq, Tv)
        if mask is not None and self._has_heads:
            mask = ops.expand_dims(mask, 1)  # (B, 1, Tq, Tv)
        logits = self._scores(query_features, key_features)
        weights = attention_ops.normalize(logits, mask, self.probability_fn)
        weights = ops.cast(weights, self.compute_dtype)
        dropped = weights
        if dropout:
            dropped = keras.random.dropout(weights, dropout, seed=self.seed_generator)
        return attention_ops.attend(dropped, value_features), weights

    def _attend_blockwise(self, path, query_features, key_features, value_features, masks,
                          dropout):
        """Unmerged `(B, [H,] Tq, dv)` context of the chunked or fused path."""
        query, key, parameter = self._blockwise_inputs(query_features, key_features)
        if path == "fused":
            return memory_efficient.fused_dot_product_attention(
                query,
                key,
                value_features,
                scale=parameter,
                query_mask=masks["query_mask"],
                use_causal_mask=masks["use_causal_mask"],
            )
        seed = self.seed_generator if dropout else None
        options = dict(masks, dropout_rate=dropout, seed=seed, block_size=self.block_size)
        if self._score_kind == "dot":
            return memory_efficient.chunked_dot_product_attention(
                query, key, value_features, scale=parameter, **options
            )
        return memory_efficient.chunked_additive_attention(
            query, key, value_features, parameter, **options
        )

    def _choose_path(self, query, memory, masks, dropout, return_attention_scores):
        """"exact", "chunked" or "fused" for this call (see `choose_implementation`)."""
        key_features, value_features = memory
        query_length = _static(query.shape[-2])
        value_length = _static(value_features.shape[-2])
        dk, dv = _static(key_features.shape[-1]), _static(value_features.shape[-1])
        fused = self._score_kind == "dot" and memory_efficient.fused_attention_available(
            dtype=self.compute_dtype,
            head_dim=dk if dk == dv else None,
            query_length=query_length,
            value_length=value_length,
            use_causal_mask=bool(masks["use_causal_mask"]),
            has_value_mask=masks["value_mask"] is not None,
            has_attention_mask=masks["attention_mask"] is not None,
            dropout=dropout,
        )
        return memory_efficient.choose_implementation(
            self.implementation,
            score=self._score_kind,
            probability_fn=self.probability_fn,
            return_attention_scores=return_attention_scores,
            query_length=query_length,
            value_length=value_length,
            batch_size=_static(query.shape[0]),
            heads=getattr(self, "num_heads", 1),
            units=getattr(self, "units", None),
            fused_available=fused,
        )

    # ---------------------------------------------------------- validation
    def _fail(self, argument, expected, received):
        raise ValueError(
            f"{type(self).__name__} (layer '{self.name}'): argument `{argument}` "
            f"expected {expected}. Received: {received}"
        )

    def _validate(self, query, value, key, query_mask, value_mask, attention_mask):
        """Static checks that raise a clear ValueError before any backend op."""
        for name, tensor, ranks in (
            ("query", query, (2, 3)),
            ("value", value, (3,)),
            ("key", key, (3,)),
        ):
            if len(tensor.shape) not in ranks:
                expected = " or ".join(f"rank {r}" for r in ranks)
                self._fail(
                    name,
                    f"a tensor of {expected} (batch, [time,] features)",
                    f"shape {tuple(tensor.shape)}",
                )
        tv, tk = _static(value.shape[1]), _static(key.shape[1])
        if tv is not None and tk is not None and tv != tk:
            self._fail(
                "key",
                f"the same length as `value` ({tv})",
                f"key shape {tuple(key.shape)}, value shape {tuple(value.shape)}",
            )
        batch = _static(query.shape[0])
        tq = _static(query.shape[1]) if len(query.shape) == 3 else None
        tv = tv if tv is not None else tk
        single = len(query.shape) == 2
        expected_shapes = {
            "query_mask": (batch,) if single else (batch, tq),
            "value_mask": (batch, tv),
            "attention_mask": (batch, tv) if single else (batch, tq, tv),
        }
        for name, mask in (
            ("query_mask", query_mask),
            ("value_mask", value_mask),
            ("attention_mask", attention_mask),
        ):
            if mask is not None:
                self._check_mask(name, mask, expected_shapes[name])
        self._validate_features(query, key, value)

    def _check_mask(self, name, mask, expected):
        dtype = keras.backend.standardize_dtype(mask.dtype)
        if dtype != "bool" and "int" not in dtype:
            self._fail(
                name,
                "a boolean mask (True = may attend) or 0/1 integers",
                f"dtype {dtype}",
            )
        shape = tuple(mask.shape)
        if len(shape) != len(expected) or any(
            _static(got) is not None and want is not None and got not in (want, 1)
            for got, want in zip(shape, expected)
        ):
            self._fail(name, f"shape {expected}", f"shape {shape}")

    def _validate_features(self, query, key, value):
        """Subclasses check feature sizes their score needs."""

    def _validate_implementation(self, implementation, block_size, probability_fn):
        if implementation not in memory_efficient.IMPLEMENTATIONS:
            raise ValueError(
                f"{type(self).__name__}: `implementation` must be one of "
                f"{memory_efficient.IMPLEMENTATIONS}. Received: "
                f"implementation={implementation!r}"
            )
        if block_size is not None and (
            isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1
        ):
            raise ValueError(
                f"{type(self).__name__}: `block_size` must be a positive integer "
                f"or None. Received: block_size={block_size!r}"
            )
        if implementation == "chunked" and probability_fn != "softmax":
            raise ValueError(
                f"{type(self).__name__}: implementation='chunked' supports only "
                "probability_fn='softmax' (it never materializes the weights "
                "that sparsemax and hardmax need). Received: "
                f"probability_fn={probability_fn!r}"
            )

    # -------------------------------------------------------------- config
    def get_config(self):
        config = super().get_config()
        config.update(
            probability_fn=self.probability_fn,
            dropout=self.dropout,
            seed=self.seed,
            implementation=self.implementation,
            block_size=self.block_size,
        )
        return config


class KernelArgsMixin:
    """Initializer / regularizer / constraint arguments of layers with kernels."""

    _KERNEL_ARGS = (
        "kernel_initializer",
        "bias_initializer",
        "kernel_regularizer",
        "bias_regularizer",
        "kernel_constraint",
        "bias_constraint",
    )

    def _set_kernel_args(self, **kwargs):
        getters = {
            "initializer": keras.initializers.get,
            "regularizer": keras.regularizers.get,
            "constraint": keras.constraints.get,
        }
        for name in self._KERNEL_ARGS:
            setattr(self, name, getters[name.split("_")[1]](kwargs[name]))

    def _dense(self, units, name, use_bias=False, input_dim=None):
        """A `Dense` sublayer built now (when `input_dim` is given) with our policy."""
        dense = keras.layers.Dense(
            units,
            use_bias=use_bias,
            name=name,
            dtype=self.dtype_policy,
            **{arg: getattr(self, arg) for arg in self._KERNEL_ARGS},
        )
        if input_dim is not None:
            dense.build((None, input_dim))
        return dense

    def _kernel_config(self):
        serializers = {
            "initializer": keras.initializers.serialize,
            "regularizer": keras.regularizers.serialize,
            "constraint": keras.constraints.serialize,
        }
        return {
            name: serializers[name.split("_")[1]](getattr(self, name))
            for name in self._KERNEL_ARGS
        }
