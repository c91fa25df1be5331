"""The call contract shared by every attention layer of the package.

A subclass creates its weights in `build`, and overrides only:

- `_project_memory(key, value)`: what depends on keys/values alone (cacheable,
  exposed as `project_memory`);
- `_project_query(query)`: what depends on the query alone, for a `(B, Tq, d)`
  query and for a `(B, d)` single step (the step axis is added afterwards, at
  -2, so a step is projected with rank-2 ops);
- `_score(query, key)`: its score, `(score, query, key, params)`: a
  `keras_attention.scores` object and the tensors its methods take. The
  exact, chunked and fused paths all compute the logits from it;
- `_merge(context)`: back from heads to `(B, Tq, d)`, or from `(B, H, dv)` to
  `(B, d)` for a single step (multi-head only).

Validation (`keras_attention.validation`), masks, normalization, dropout,
rank-2 queries, the choice of path and the optional weights output live here
once.

Attention with an alignment state (location-sensitive, monotonic: layers that
read where they attended before) extends the contract, in
`alignment_attention.AlignmentAttention`:

- `layer.has_alignment_state` is True (False for every content-based layer:
  the one attribute that asks the question);
- `layer.alignment_state_keys` names the state's tensors, e.g.
  `("weights", "cumulative")`;
- `layer.initial_alignment_state(memory, value_mask=None)` returns the state
  before the first step: a dict of float `(B, n)` tensors, one per key, `n`
  being `Tv` for the weights and any tensor over the memory positions, and
  its own size otherwise (the `(B, K)` means of `GMMAttention`;
  `layer.alignment_state_sizes(Tv)` gives each; `memory` is any `(B, Tv,
  ...)` tensor: the value or its projection);
- `layer.attend(query, key_features, value_features, ...,
  alignment_state=None)` takes one step, a rank-2 `(B, dq)` query, and
  returns `(context, new_state)`, or `(context, weights, new_state)` with
  `return_attention_scores=True` (`alignment_state=None`: the initial one);
- `layer(query, value, ...)` with a `(B, Tq, dq)` query runs the recurrence
  over the `Tq` queries from the initial state (teacher forcing) and returns
  what every layer returns: the context, and the weights.

Every state tensor has the batch as its leading axis, so a search can tile
and reorder it like any other state; `AttentionRNNCell` carries it.
"""

import keras
from keras import ops

from keras_attention import backends
from keras_attention import masks as masks_lib
from keras_attention import memory_efficient
from keras_attention import ops as attention_ops
from keras_attention import validation
from keras_attention.validation import static


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
            without returned weights. `"auto"` picks by backend, device and
            size (`memory_efficient.choose_implementation`), and takes a
            backend's fused kernel where one applies.
        block_size: queries and keys per tile of the chunked path; `None`
            means 512 for dot-product scores and 32 for additive scores.
        window: a sliding (local, banded) window, on every call and every
            path: `None` (default: none), a positive int `w` (query at
            position `p` sees keys `|p - j| < w`; with `use_causal_mask` its
            `w` most recent keys, itself included) or a `(left, right)` pair
            (keys `p - left <= j <= p + right`). Query `i` is at position
            `p = i + Tv - Tq`, as for the causal mask (see
            `masks.sliding_window_mask`). The chunked path skips the tiles
            outside the band.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(B, Tq, dq)`, or `(B, dq)` for one decoding step.
        value: `(B, Tv, dv)`; defaults to `query` (self-attention).
        key: `(B, Tv, dk)`; defaults to `value`.
        query_mask: boolean `(B, Tq)`; masked queries get zero context.
        value_mask: boolean `(B, Tv)`; masked keys get zero weight, and
            whatever the masked positions hold (even NaN) never reaches the
            output or the gradients.
        attention_mask: boolean `(B, Tq, Tv)`.
        use_causal_mask: query `i` sees keys `j <= i + Tv - Tq` only.
        return_attention_scores: also return the weights.
        training: enables dropout.
        mask: the Keras mask of a lone query, filled by Keras in `layer(x)`
            (self-attention); used as `query_mask` and `value_mask`.

    Returns:
        The context `(B, Tq, d_out)` (or `(B, d_out)`), and with
        `return_attention_scores=True` also the float weights `(B, [H,] Tq,
        Tv)` (or `(B, [H,] Tv)`), after normalization and before dropout.
    """

    # Whether the logits and weights carry a heads axis, (B, H, Tq, Tv), of
    # `num_heads` heads: the one spelling of "is this multi-head?".
    has_heads = False
    # Whether `attend` reads and returns an alignment state (see the module
    # docstring and `AlignmentAttention`).
    has_alignment_state = False

    def __init__(
        self,
        probability_fn="softmax",
        dropout=0.0,
        seed=None,
        implementation="auto",
        block_size=None,
        window=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.probability_fn = validation.choice(
            owner, "probability_fn", probability_fn, attention_ops.PROBABILITY_FNS
        )
        self.dropout = validation.rate(owner, "dropout", dropout)
        self.seed = seed
        self.implementation = validation.choice(
            owner, "implementation", implementation, memory_efficient.IMPLEMENTATIONS
        )
        self.block_size = validation.integer(owner, "block_size", block_size, allow_none=True)
        self.window = validation.window(owner, "window", window)
        if implementation == "chunked" and probability_fn != "softmax":
            validation.fail(
                owner,
                "probability_fn",
                "'softmax' with implementation='chunked' (the chunked path never "
                "materializes the weights that sparsemax and hardmax need)",
                probability_fn,
            )
        self.supports_masking = True
        if self.dropout > 0:
            self.seed_generator = keras.random.SeedGenerator(seed)

    @property
    def _owner(self):
        return f"{type(self).__name__} (layer '{self.name}')"

    # --------------------------------------------------------------- hooks
    def build(self, query_shape, value_shape=None, key_shape=None):
        # Layers with weights override this; the names are the call's.
        self.built = True

    def project_memory(self, key, value, value_mask=None):
        """Return `(key_features, value_features)` for `attend`.

        Everything that depends only on the keys and values happens here, so
        a decoder can compute it once per source sentence and call `attend`
        at every step with the result. With `value_mask`, masked positions
        are zeroed first, so whatever they hold (even NaN) never reaches the
        output or the gradients. The layer must be built (called once, or
        `layer.build(query_shape, value_shape[, key_shape])`).
        """
        if not self.built:
            raise ValueError(
                f"{self._owner}: `project_memory` needs the layer built; call it once or "
                "use `layer.build(query_shape, value_shape[, key_shape])` first. "
                "Received: an unbuilt layer"
            )
        if value_mask is not None:
            keep = ops.expand_dims(ops.cast(value_mask, "bool"), -1)  # (B, Tv, 1)
            key, value = masks_lib.zero_masked(key, keep), masks_lib.zero_masked(value, keep)
        return self._project_memory(key, value)

    def _project_memory(self, key, value):
        return key, value

    def _project_query(self, query):
        return query

    def _score(self, query, key):
        raise TypeError(f"{type(self).__name__} must override `_score`.")

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
        mask=None,
    ):
        value, key, query_mask, value_mask = self._resolve_inputs(
            query, value, key, query_mask, value_mask, attention_mask, mask
        )
        memory = self.project_memory(key, value, value_mask)
        masks = (query_mask, value_mask, attention_mask, use_causal_mask)
        return self.attend(query, *memory, *masks, return_attention_scores, training)

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
            window=self.window,
        )
        dropout = self.dropout if training and self.dropout > 0 else 0.0
        score, query_in, key_in, params = self._score(query_features, key_features)
        path = self._choose_path(
            score, query_in, value_features, masks, dropout, return_attention_scores
        )
        # Only masked calls need the guard; with `value_mask` alone, masked
        # positions were zeroed before projection (`project_memory`). The
        # chunked path guards itself.
        guard = path != "chunked" and (
            use_causal_mask
            or self.window is not None
            or query_mask is not None
            or attention_mask is not None
        )
        if guard:
            key_in, value_features, hits = masks_lib.guard_memory(
                key_in, value_features, ops.shape(query_in)[-2], **masks
            )
        weights = None
        if path == "exact":
            logits = score.logits(score.prepare(query_in), key_in, *params)
            context, weights = self._normalize_and_sum(logits, value_features, masks, dropout)
        elif path == "fused":
            context = memory_efficient.fused_dot_product_attention(
                query_in,
                key_in,
                value_features,
                scale=score.scale if score.scale is not None else 1.0,
                query_mask=masks["query_mask"],
                use_causal_mask=masks["use_causal_mask"],
            )
        else:
            context = memory_efficient.chunked_attention(
                score,
                query_in,
                key_in,
                value_features,
                *params,
                **masks,
                dropout_rate=dropout,
                seed=self.seed_generator if dropout else None,
                block_size=self.block_size,
            )
        if guard:
            context = masks_lib.poison(context, hits)
        if single_step:  # (B, [H,] 1, ·) -> (B, [H,] ·)
            context = ops.squeeze(context, -2)
            weights = None if weights is None else ops.squeeze(weights, -2)
        # In the layer's compute dtype on every backend (a float64 Dense on
        # torch returns float32, `scores.matmul`).
        context = ops.cast(self._merge(context), self.compute_dtype)
        if return_attention_scores:
            return context, weights
        return context

    def _normalize_and_sum(self, logits, value_features, masks, dropout):
        """The exact path after the logits: `(B, [H,] Tq, dv)` context and weights."""
        mask = masks_lib.attention_mask_from(
            masks["query_mask"],
            masks["value_mask"],
            masks["attention_mask"],
            masks["use_causal_mask"],
            ops.shape(logits)[-2],
            ops.shape(logits)[-1],
            masks["window"],
        )  # (B, Tq, Tv)
        if mask is not None and self.has_heads:
            mask = ops.expand_dims(mask, 1)  # (B, 1, Tq, Tv)
        weights = attention_ops.attention_weights(logits, mask, self.probability_fn)
        weights = ops.cast(weights, self.compute_dtype)
        dropped = weights
        if dropout:
            dropped = keras.random.dropout(weights, dropout, seed=self.seed_generator)
        return attention_ops.weighted_sum(dropped, value_features), weights

    def _choose_path(self, score, query, value_features, masks, dropout, return_weights):
        """ "exact", "chunked" or "fused" for this call (see `choose_implementation`)."""
        query_length = static(query.shape[-2])
        value_length = static(value_features.shape[-2])
        dk, dv = static(query.shape[-1]), static(value_features.shape[-1])
        device = backends.device_kind(query)
        fused = score.kind == "dot" and memory_efficient.fused_attention_available(
            dtype=self.compute_dtype,
            head_dim=dk if dk == dv else None,
            query_length=query_length,
            value_length=value_length,
            use_causal_mask=bool(masks["use_causal_mask"]),
            has_value_mask=masks["value_mask"] is not None,
            has_attention_mask=masks["attention_mask"] is not None,
            has_window=masks["window"] is not None,
            dropout=dropout,
            device=device,
        )
        return memory_efficient.choose_implementation(
            self.implementation,
            score=score.kind,
            probability_fn=self.probability_fn,
            return_attention_scores=return_weights,
            query_length=query_length,
            value_length=value_length,
            batch_size=static(query.shape[0]),
            heads=self.num_heads if self.has_heads else 1,
            units=getattr(self, "units", None),
            fused_available=fused,
            device=device,
        )

    def _resolve_inputs(self, query, value, key, query_mask, value_mask, attention_mask, mask):
        """`(value, key, query_mask, value_mask)` with the defaults of the contract, checked."""
        # Keras fills `mask` (not `query_mask`) when the query is the only
        # tensor argument: `layer(x)` after `Embedding(mask_zero=True)`.
        query_mask = mask if query_mask is None else query_mask
        if value is None:  # self-attention, e.g. inside `keras.Sequential`
            value, value_mask = query, query_mask if value_mask is None else value_mask
        key = value if key is None else key
        validation.check_call(
            self._owner, query, value, key, query_mask, value_mask, attention_mask
        )
        self._validate_features(query, key, value)
        return value, key, query_mask, value_mask

    def _validate_features(self, query, key, value):
        """Subclasses check feature sizes their score needs."""

    # --------------------------------------------------------------- shapes
    def _output_features(self, query_shape, value_shape):
        """Features of the context: the value's (multi-head: its output's)."""
        return value_shape[-1]

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        return (*query_shape[:-1], self._output_features(query_shape, value_shape))

    def compute_output_spec(
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
        mask=None,
    ):
        # From the shapes alone, after the checks `call` makes: symbolic calls
        # (Functional models, Sequential without data) never trace the math.
        value, key, query_mask, value_mask = self._resolve_inputs(
            query, value, key, query_mask, value_mask, attention_mask, mask
        )
        shape = self.compute_output_shape(query.shape, value.shape, key.shape)
        context = keras.KerasTensor(shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return context
        heads = (self.num_heads,) if self.has_heads else ()
        weights_shape = (query.shape[0], *heads, *query.shape[1:-1], value.shape[1])
        return context, keras.KerasTensor(weights_shape, dtype=self.compute_dtype)

    def _fail(self, argument, expected, received):
        validation.call_fail(self._owner, argument, expected, received)

    # -------------------------------------------------------------- config
    def get_config(self):
        config = super().get_config()
        config.update(
            probability_fn=self.probability_fn,
            dropout=self.dropout,
            seed=self.seed,
            implementation=self.implementation,
            block_size=self.block_size,
            window=self.window,
        )
        return config
