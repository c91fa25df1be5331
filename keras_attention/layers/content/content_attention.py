"""The base of content attention: a score of the query and the keys.

`ContentAttention` owns what only content attention has: the normalizer
(`probability_fn`), attention dropout, the exact / chunked / fused paths
(`implementation`, `block_size`) and the sliding `window`. A subclass
creates its weights in `build`, and overrides only:

- `_project_memory(key, value)`: what depends on keys/values alone (cacheable,
  exposed as `project_memory`);
- `_project_query(query)`: what depends on the query alone, for a `(B, Tq, d)`
  query and for a `(B, d)` single step (the step axis is added afterwards, at
  -2, so a step is projected with rank-2 ops);
- `_score(query, key)`: its score, `(score, query, key, params)`: a
  `keras_attention.scores` object and the tensors its methods take. The
  exact, chunked and fused paths all compute the logits from it;
- `_merge(context)`: back from heads to `(B, Tq, d)`, or from `(B, H, dv)` to
  `(B, d)` for a single step (multi-head only);
- `_locality(query, key_features, value_mask)`: optionally, the positions
  each query may attend and a factor on its normalized weights, `(B, [Tq,]
  Tv)` each (local-p's window and Gaussian); `(None, None)` by default.

Validation (`keras_attention.validation`), masks, normalization, dropout,
rank-2 queries, the choice of path and the optional weights output live here
once. Its `step` is `attend` on one query, with an empty alignment state.

A memory may be a grid, `(B, *grid, d)` (an image's features): `attend`
flattens it to one axis of positions at its start and hands the weights back
shaped like the grid (`keras_attention.layers.grid`), so every path and the
step see a sequence.
"""

import keras
from keras import ops

from keras_attention import call_checks
from keras_attention import masks as masks_lib
from keras_attention import memory_efficient
from keras_attention import ops as attention_ops
from keras_attention import validation
from keras_attention.layers import grid as grid_lib
from keras_attention.layers.base import BaseAttention
from keras_attention.memory_efficient.paths import call_path


class ContentAttention(BaseAttention):
    """Base class of content attention (not used directly): the contract of
    `BaseAttention` with a score of the query and the keys.

    Args:
        probability_fn: `"softmax"` (default), `"sparsemax"` (exact zeros,
            Martins & Astudillo 2016), `"hardmax"` (one-hot forward pass,
            softmax gradient backward) or `"sigmoid"` (`σ(e_j) / Σ_k σ(e_k)`,
            Chorowski et al. 2015's smoothing).
        dropout: fraction of the attention weights dropped in training.
        seed: seed of the dropout.
        implementation: `"auto"` (default), `"exact"`, `"chunked"` or
            `"fused"`. The exact path materializes the `(B, [H,] Tq, Tv)`
            weights; the chunked path (`keras_attention.memory_efficient`)
            works on `block_size` tiles with an online softmax and a
            recomputing backward pass, in `O(Tq + Tv)` memory, for softmax
            attention without returned weights; the fused path is the
            backend's kernel (`keras.ops.dot_product_attention`), for the
            calls it takes (`memory_efficient.fused_attention_refusal` says
            why not; `"fused"` then raises). `"auto"` picks by backend,
            device and size (`memory_efficient.choose_implementation`), and
            takes a backend's fused kernel where one applies.
        block_size: queries and keys per tile of the chunked path; `None`
            means 32 for additive scores and, for dot-product scores, 512
            (1024 on PyTorch where it fits: `memory_efficient.chunked.dot_block_size`).
        window: a sliding (local, banded) window, on every call and every
            path: `None` (default: none), a positive int `w` (query at
            position `p` sees keys `|p - j| < w`; with `use_causal_mask` its
            `w` most recent keys, itself included) or a `(left, right)` pair
            (keys `p - left <= j <= p + right`). Query `i` is at position
            `p = i + Tv - Tq`, as for the causal mask (see
            `masks.sliding_window_mask`). The chunked path skips the tiles
            outside the band.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments and returns: those of `BaseAttention`, whose memory may be
    a grid: `value` and `key` `(B, *grid, d)`, `value_mask` `(B, *grid)`,
    `attention_mask` `(B, [Tq,] *grid)` and weights `(B, [Tq,] *grid)` (its
    positions in row-major order for `use_causal_mask` and `window`).
    `step(query, key_features, value_features, value_mask=None,
    alignment_state=None, training=None)` returns `(context, weights, {})`:
    content attention reads nothing from earlier steps.
    """

    accepts_grids = True

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
        if self.dropout > 0:
            self.seed_generator = keras.random.SeedGenerator(seed)

    def step(
        self,
        query,
        key_features,
        value_features,
        value_mask=None,
        alignment_state=None,
        training=None,
    ):
        """One `(B, dq)` query: `(context (B, d_out), weights (B, [H,] Tv or *grid), {})`."""
        call_checks.step_query(self._owner, query)
        context, weights = self.attend(
            query,
            key_features,
            value_features,
            value_mask=value_mask,
            return_attention_scores=True,
            training=training,
        )
        return context, weights, {}

    def _locality(self, query, key_features, value_mask):
        """`(allowed, factor)`, `(B, [Tq,] Tv)` each or None: none by default."""
        return None, None

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
        if self.attends_axes and grid_lib.folds(self.attention_axes, query, value, key):
            masks = dict(
                query_mask=query_mask,
                value_mask=value_mask,
                attention_mask=attention_mask,
                use_causal_mask=use_causal_mask,
                mask=mask,
            )  # (B, *axes, d) -> (B·O, N, d), and back
            return grid_lib.call_over_axes(
                self,
                self._call_sequence,
                query,
                value,
                key,
                masks,
                return_attention_scores,
                training,
            )
        return self._call_sequence(
            query,
            value,
            key,
            query_mask,
            value_mask,
            attention_mask,
            use_causal_mask,
            return_attention_scores,
            training,
            mask,
        )

    def _call_sequence(
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
        grid = grid_lib.memory_grid(key_features, value_features, self.has_heads)
        if grid is not None:  # (B, *grid, ·) -> (B, N, ·), one axis of positions
            key_features, value_features, value_mask, attention_mask = grid_lib.flatten_memory(
                key_features, value_features, value_mask, attention_mask, grid, single_step
            )
        allowed, factor = self._locality(query, key_features, value_mask)  # (B, [Tq,] Tv)
        attention_mask = masks_lib.combine_masks(attention_mask, allowed)
        if single_step:
            query_mask = None if query_mask is None else ops.expand_dims(query_mask, 1)
            if attention_mask is not None:
                attention_mask = ops.expand_dims(attention_mask, 1)
            factor = None if factor is None else ops.expand_dims(factor, 1)
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
        path = "exact"  # a factor on the normalized weights needs them
        if factor is None:
            path = call_path(
                self, score.kind, query_in, value_features, masks, dropout, return_attention_scores
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
            context, weights = self._normalize_and_sum(
                logits, value_features, masks, dropout, factor
            )
        elif path == "fused":
            context = memory_efficient.fused_dot_product_attention(
                query_in,
                key_in,
                value_features,
                scale=score.scale if score.scale is not None else 1.0,
                query_mask=masks["query_mask"],
                use_causal_mask=masks["use_causal_mask"],
                window=masks["window"],
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
        if grid is not None and weights is not None:
            weights = grid_lib.unflatten(weights, grid)  # (B, [Tq,] *grid)
        # In the layer's compute dtype on every backend (a float64 Dense on
        # torch returns float32, `backends.matmul`).
        context = ops.cast(self._merge(context), self.compute_dtype)
        if return_attention_scores:
            return context, weights
        return context

    def _normalize_and_sum(self, logits, value_features, masks, dropout, factor=None):
        """The exact path after the logits: `(B, [H,] Tq, dv)` context and weights.

        `factor` `(B, Tq, Tv)` multiplies the normalized weights (`_locality`).
        """
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
        if factor is not None:
            weights = weights * ops.cast(factor, weights.dtype)
        weights = ops.cast(weights, self.compute_dtype)
        dropped = weights
        if dropout:
            dropped = keras.random.dropout(weights, dropout, seed=self.seed_generator)
        return attention_ops.weighted_sum(dropped, value_features), weights

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
