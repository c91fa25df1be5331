"""The call contract shared by every attention layer of the package.

Two families extend it: `content.ContentAttention` (a score of
the query and the keys: Bahdanau, Luong, local-p, scaled dot product,
multi-head) and `alignment.AlignmentAttention` (a state carried
from step to step: location-sensitive, monotonic, GMM, DCA). Here, once: the
call's inputs and their checks (`keras_attention.validation`), the memory
projection (`project_memory`, the hooks `_project_memory` and
`_project_query`), the output shapes, and the one decoding step.

One decoding step, the same for every layer, so a decoder never asks which
family it holds:

- `layer.initial_alignment_state(memory, value_mask=None)`: the state before
  the first step, a dict of float `(B, n)` tensors named by
  `layer.alignment_state_keys` (sizes: `layer.alignment_state_sizes(Tv)`);
  `{}` for content attention, which reads nothing from earlier steps;
- `layer.step(query, key_features, value_features, value_mask=None,
  alignment_state=None, training=None) -> (context, weights,
  alignment_state)`: one `(B, dq)` query over the memory of
  `project_memory`; the context `(B, d_out)`, the weights `(B, [H,] Tv)`
  (after normalization, before dropout) and the next state (`{}` for content
  attention; `alignment_state=None` means the initial one);
- `layer.draw_noise(shape, training)`: the random draws a loop makes before
  it starts (None: the layer draws nothing).

Every state tensor has the batch as its leading axis, so a search can tile
and reorder it like any other state. `call` and `attend` keep their returns
(`attend` of an alignment layer also returns the state).
"""

import keras
from keras import ops

from keras_attention import call_checks
from keras_attention import masks as masks_lib
from keras_attention.layers import grid as grid_lib


class BaseAttention(keras.layers.Layer):
    """Base class of the package's attention layers (not used directly).

    Subclass `ContentAttention` (content attention: a score of the query and
    the keys) or `AlignmentAttention` (a state carried from step to step).

    Args:
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
        training: enables dropout (and random draws of some layers).
        mask: the Keras mask of a lone query, filled by Keras in `layer(x)`
            (self-attention); used as `query_mask` and `value_mask`.

    Returns:
        The context `(B, Tq, d_out)` (or `(B, d_out)`), and with
        `return_attention_scores=True` also the float weights `(B, [H,] Tq,
        Tv)` (or `(B, [H,] Tv)`), after normalization and before dropout.
        Layers with `accepts_grids` also take a grid memory, `(B, *grid, d)`
        with masks `(B, *grid)` and `(B, [Tq,] *grid)`, and return weights
        `(B, [Tq,] *grid)`.
    """

    # Whether the logits and weights carry a heads axis, (B, H, Tq, Tv), of
    # `num_heads` heads: the one spelling of "is this multi-head?".
    has_heads = False
    # Whether the layer reads where it attended before (`AlignmentAttention`):
    # informative only; `step` works the same for both kinds.
    has_alignment_state = False
    # The names of the alignment state's tensors: none for content attention.
    alignment_state_keys = ()
    # Whether the memory may be a grid, `(B, *grid, d)` (`ContentAttention`).
    accepts_grids = False
    # Whether N-D inputs of one rank attend over `self.attention_axes`
    # (`MultiHead`, `keras.layers.MultiHeadAttention`'s meaning).
    attends_axes = False

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    @property
    def _owner(self):
        return f"{type(self).__name__} (layer '{self.name}')"

    # --------------------------------------------------------------- hooks
    def build(self, query_shape, value_shape=None, key_shape=None):
        # Layers with weights override this; the names are the call's.
        self.built = True

    def project_memory(self, key, value, value_mask=None):
        """Return `(key_features, value_features)` for `step` and `attend`.

        Everything that depends only on the keys and values happens here, so
        a decoder can compute it once per source sentence and call `step`
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
            keep = ops.expand_dims(ops.cast(value_mask, "bool"), -1)  # (B, Tv or *grid, 1)
            key, value = masks_lib.zero_masked(key, keep), masks_lib.zero_masked(value, keep)
        return self._project_memory(key, value)

    # ---------------------------------------------------------------- step
    def initial_alignment_state(self, memory, value_mask=None):
        """The state before the first `step`: `{}` (content attention keeps none)."""
        return {}

    def alignment_state_sizes(self, value_length):
        """`{key: n}` of the state's `(B, n)` tensors for a memory of `value_length`."""
        return {key: value_length for key in self.alignment_state_keys}

    def draw_noise(self, shape, training=None):
        """The layer's random draws for steps of `shape`: None, it draws none."""
        return None

    def step(
        self,
        query,
        key_features,
        value_features,
        value_mask=None,
        alignment_state=None,
        training=None,
    ):
        """One `(B, dq)` query: `(context (B, d_out), weights (B, [H,] Tv), alignment_state)`."""
        raise NotImplementedError(f"{type(self).__name__} must override `step`.")

    def _project_memory(self, key, value):
        return key, value

    def _project_query(self, query):
        return query

    def _resolve_inputs(self, query, value, key, query_mask, value_mask, attention_mask, mask):
        """`(value, key, query_mask, value_mask)` with the defaults of the contract, checked."""
        # Keras fills `mask` (not `query_mask`) when the query is the only
        # tensor argument: `layer(x)` after `Embedding(mask_zero=True)`.
        query_mask = mask if query_mask is None else query_mask
        if value is None:  # self-attention, e.g. inside `keras.Sequential`
            value, value_mask = query, query_mask if value_mask is None else value_mask
        key = value if key is None else key
        call_checks.check_call(
            self._owner,
            query,
            value,
            key,
            query_mask,
            value_mask,
            attention_mask,
            grids=self.accepts_grids,
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
        if self.attends_axes and grid_lib.folds(self.attention_axes, query, value, key):
            masks = dict(
                query_mask=query_mask, value_mask=value_mask, attention_mask=attention_mask
            )
            return grid_lib.output_spec_over_axes(
                self, query, value, key, dict(masks, mask=mask), return_attention_scores
            )
        value, key, query_mask, value_mask = self._resolve_inputs(
            query, value, key, query_mask, value_mask, attention_mask, mask
        )
        shape = self.compute_output_shape(query.shape, value.shape, key.shape)
        context = keras.KerasTensor(shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return context
        heads = (self.num_heads,) if self.has_heads else ()
        weights_shape = (query.shape[0], *heads, *query.shape[1:-1], *value.shape[1:-1])
        return context, keras.KerasTensor(weights_shape, dtype=self.compute_dtype)

    def _fail(self, argument, expected, received):
        call_checks.call_fail(self._owner, argument, expected, received)
