"""The call contract shared by every attention layer of the package.

A subclass creates its weights in `build`, and overrides only:

- `_project_memory(key, value)`: what depends on keys/values alone (cacheable,
  exposed as `project_memory`);
- `_project_query(query)`: what depends on the query alone;
- `_scores(query, key)`: the logits `(B, Tq, Tv)` or `(B, H, Tq, Tv)`;
- `_merge(context)`: back from heads to `(B, Tq, d)` (multi-head only).

Validation, masks, normalization, dropout, rank-2 queries and the optional
weights output live here once.
"""

import keras
from keras import ops

from keras_attention import masks as masks_lib
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
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).
    """

    # Whether the logits carry a heads axis: (B, H, Tq, Tv).
    _has_heads = False

    def __init__(self, probability_fn="softmax", dropout=0.0, seed=None, **kwargs):
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
        self.probability_fn = probability_fn
        self.dropout = float(dropout)
        self.seed = seed
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
        if single_step:  # (B, dq) -> (B, 1, dq)
            query = ops.expand_dims(query, 1)
            query_mask = None if query_mask is None else ops.expand_dims(query_mask, 1)
            if attention_mask is not None:
                attention_mask = ops.expand_dims(attention_mask, 1)
        value_axis = -2  # features last: (..., Tv, d)
        mask = masks_lib.attention_mask_from(
            query_mask,
            value_mask,
            attention_mask,
            use_causal_mask,
            ops.shape(query)[1],
            ops.shape(value_features)[value_axis],
        )  # (B, Tq, Tv)
        if mask is not None and self._has_heads:
            mask = ops.expand_dims(mask, 1)  # (B, 1, Tq, Tv)
        logits = self._scores(self._project_query(query), key_features)
        weights = attention_ops.normalize(logits, mask, self.probability_fn)
        weights = ops.cast(weights, self.compute_dtype)
        dropped = weights
        if training and self.dropout > 0:
            dropped = keras.random.dropout(
                weights, self.dropout, seed=self.seed_generator
            )
        context = self._merge(attention_ops.attend(dropped, value_features))
        if single_step:
            context = ops.squeeze(context, 1)  # (B, d)
            weights = ops.squeeze(weights, -2)  # (B, Tv) or (B, H, Tv)
        if return_attention_scores:
            return context, weights
        return context

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

    # -------------------------------------------------------------- config
    def get_config(self):
        config = super().get_config()
        config.update(
            probability_fn=self.probability_fn, dropout=self.dropout, seed=self.seed
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
