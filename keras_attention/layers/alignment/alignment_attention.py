import keras
from keras import ops

from keras_attention import backends
from keras_attention import call_checks
from keras_attention import masks as masks_lib
from keras_attention import ops as attention_ops
from keras_attention import validation
from keras_attention.layers.base import BaseAttention

# The content layers' constructor arguments that no alignment-state layer takes.
CONTENT_ARGUMENTS = ("dropout", "implementation", "block_size", "window")
NO_CONTENT_ARGUMENTS = (
    "an alignment-state layer has no attention dropout, chunked path or sliding "
    "window: its alignment decides where to attend"
)
# Taken by the layers that use them (location-sensitive: `probability_fn`;
# monotonic: `seed`, of its noise).
NO_PROBABILITY_FN = "the layer normalizes its alignment its own way"
NO_SEED = "the layer draws nothing at random"


class AlignmentAttention(BaseAttention):
    """Base class of attention with an alignment state (not used directly).

    Location-sensitive and monotonic attention read where they attended at
    the previous step, so each decoding step takes a state and returns the
    next one, through the one step of every layer (`keras_attention.layers.base`):

    - `alignment_state_keys` names the state's tensors (`"weights"`, the
      previous alignment, always first), and `has_alignment_state` is True;
    - `initial_alignment_state(memory, value_mask=None)`: a dict of float
      `(B, n)` tensors, float32 (float64 for a float64 layer) whatever the
      compute dtype, so cumulative sums and products stay accurate in mixed
      precision; `n` is `Tv` for a tensor over the memory positions (the
      weights) and may be another size (`alignment_state_sizes(Tv)` says
      which: the `(B, K)` means of `GMMAttention`); `memory` is any `(B, Tv)`
      or `(B, Tv, d)` tensor of the memory, of known or unknown length;
    - `step(query, key_features, value_features, value_mask=None,
      alignment_state=None, training=None, noise=None)` takes a `(B, dq)`
      query and returns `(context, weights, new_state)`; `attend(...,
      alignment_state=None, noise=None)` the same step with the masks of
      `call`, returning `(context, new_state)`, or `(context, weights,
      new_state)` with `return_attention_scores=True`;
    - `layer(query, value)` with a `(B, Tq, dq)` query runs the recurrence over
      the queries from the initial state, in a loop (`backends.scan_states`:
      `keras.ops.scan`, `tf.scan` on TensorFlow for XLA), so a symbolic or
      unknown `Tq` works and the graph does not grow with `Tq`; it returns
      the context `(B, Tq, dv)` and the weights `(B, Tq, Tv)`.

    A masked query (`query_mask`) gets zero context and zero weights and
    leaves the state as it was. `attention_mask` `(B, Tq, Tv)` (or `(B, Tv)`
    for one step) restricts the positions of each step; `use_causal_mask`
    has no meaning here (the queries attend a memory) and is refused. There
    is no attention dropout, sliding window or chunked path: the content
    layers' `dropout`, `implementation`, `block_size` and `window` are
    refused with a TypeError that names them, as are `probability_fn` and
    `seed` by the layers that have no use for them (location-sensitive
    attention takes a `probability_fn`, monotonic attention a `seed`).

    A subclass overrides `_project_memory`, `_project_query` as any layer,
    and `_alignment(query_features, key_features, mask, state, training,
    noise) -> (weights, new_state)` (one step, `(B, Tv)` float weights);
    optionally `_initial_alignment(zeros, value_mask)` (zeros by default) and
    `draw_noise(shape, training)` (random draws, made outside any loop).
    """

    has_alignment_state = True
    alignment_state_keys = ("weights",)

    def __init__(self, **kwargs):
        # Arguments of other layers that reach this base are not the layer's own:
        # refused by name, not by Python's "got multiple values" or Keras's
        # "unrecognized keyword arguments".
        owner = type(self).__name__
        validation.not_given(owner, kwargs, CONTENT_ARGUMENTS, NO_CONTENT_ARGUMENTS)
        validation.not_given(owner, kwargs, ("probability_fn",), NO_PROBABILITY_FN)
        validation.not_given(owner, kwargs, ("seed",), NO_SEED)
        super().__init__(**kwargs)

    @property
    def _state_dtype(self):
        if keras.backend.standardize_dtype(self.compute_dtype) == "float64":
            return "float64"
        return "float32"

    # --------------------------------------------------------------- state
    def initial_alignment_state(self, memory, value_mask=None):
        """The state before the first step: a dict of `(B, n)` tensors (`alignment_state_sizes`).

        `memory` is any `(B, Tv)` or `(B, Tv, d)` tensor of the memory (the
        value, or the key features of `project_memory`); `value_mask`
        boolean `(B, Tv)`.
        """
        memory = ops.convert_to_tensor(memory)
        rows = memory if len(memory.shape) == 2 else memory[:, :, 0]  # (B, Tv)
        zeros = ops.zeros_like(ops.cast(rows, self._state_dtype))
        value_mask = None if value_mask is None else ops.cast(value_mask, "bool")
        return self._initial_alignment(zeros, value_mask)

    def _initial_alignment(self, zeros, value_mask):
        return {key: zeros for key in self.alignment_state_keys}

    @staticmethod
    def _first_position(zeros, value_mask):
        """A one-hot on memory position 0 `(B, Tv)` (zeros where it is masked)."""
        # From a cumulative sum, not `arange(Tv)`: `Tv` may be unknown (a symbolic memory).
        first = ops.cast(ops.cumsum(zeros + 1.0, axis=1) < 1.5, zeros.dtype)  # (B, Tv)
        return masks_lib.zero_masked(first, value_mask)

    def _alignment(self, query_features, key_features, mask, state, training, noise):
        raise TypeError(f"{type(self).__name__} must override `_alignment`.")

    def draw_noise(self, shape, training=None):
        """The layer's random draws for steps of `shape` `(..., B, Tv)`, or None.

        None when the layer draws nothing (monotonic attention draws its
        `sigmoid_noise` in training only). A loop over decoding steps draws
        them before the loop and passes each step's `(B, Tv)` slice to
        `attend(..., noise=...)`: JAX cannot advance a `SeedGenerator`
        inside `lax.scan` (the new seed would leak out of the loop body).
        """
        return None

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
        self._refuse_causal(use_causal_mask)
        key_features, value_features = self.project_memory(key, value, value_mask)
        if len(query.shape) == 2:
            context, weights, _ = self.attend(
                query,
                key_features,
                value_features,
                query_mask,
                value_mask,
                attention_mask,
                return_attention_scores=True,
                training=training,
            )
        else:
            context, weights = self._teacher_forced(
                query,
                key_features,
                value_features,
                query_mask,
                value_mask,
                attention_mask,
                training,
            )
        return (context, weights) if return_attention_scores else context

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
        alignment_state=None,
        noise=None,
    ):
        """One step from `alignment_state`; returns `(context, [weights,] new_state)`.

        `noise`: this step's slice `(B, Tv)` of `draw_noise`, from a caller
        that draws outside its loop; None draws it here.
        """
        call_checks.step_query(
            self._owner,
            query,
            "attend",
            " (the layer carries an alignment state; call the layer on a (B, Tq, dq) "
            "query to run all steps)",
        )
        self._refuse_causal(use_causal_mask)
        if alignment_state is None:
            alignment_state = self.initial_alignment_state(key_features, value_mask)
        if noise is None:
            shape = (ops.shape(key_features)[0], ops.shape(key_features)[1])  # (B, Tv)
            noise = self.draw_noise(shape, training)
        else:
            noise = ops.cast(noise, self._state_dtype)
        context, weights, state = self._step(
            self._project_query(query),
            key_features,
            value_features,
            query_mask,
            value_mask,
            attention_mask,
            alignment_state,
            training,
            noise,
        )
        if return_attention_scores:
            return context, weights, state
        return context, state

    def step(
        self,
        query,
        key_features,
        value_features,
        value_mask=None,
        alignment_state=None,
        training=None,
        noise=None,
    ):
        """One `(B, dq)` query from `alignment_state`: `(context, weights, new_state)`.

        `noise`: this step's slice `(B, Tv)` of `draw_noise`, from a caller
        that draws outside its loop; None draws it here.
        """
        call_checks.step_query(self._owner, query)
        return self.attend(
            query,
            key_features,
            value_features,
            value_mask=value_mask,
            return_attention_scores=True,
            training=training,
            alignment_state=alignment_state,
            noise=noise,
        )

    def _teacher_forced(
        self, query, key_features, value_features, query_mask, value_mask, attention_mask, training
    ):
        """Every step of a `(B, Tq, dq)` query: `(context (B, Tq, dv), weights (B, Tq, Tv))`."""
        state = self.initial_alignment_state(key_features, value_mask)
        steps = {"query": ops.moveaxis(self._project_query(query), 1, 0)}  # (Tq, B, d)
        if query_mask is not None:
            steps["query_mask"] = ops.transpose(ops.cast(query_mask, "bool"))  # (Tq, B)
        if attention_mask is not None:
            steps["attention_mask"] = ops.moveaxis(ops.cast(attention_mask, "bool"), 1, 0)
        shape = (ops.shape(query)[1], ops.shape(key_features)[0], ops.shape(key_features)[1])
        noise = self.draw_noise(shape, training)  # (Tq, B, Tv), drawn once outside the loop
        if noise is not None:
            steps["noise"] = noise

        def step(carry, inputs):
            context, weights, state = self._step(
                inputs["query"], key_features, value_features, inputs.get("query_mask"),
                value_mask, inputs.get("attention_mask"), carry["state"], training,
                inputs.get("noise"),
            )  # fmt: skip
            return {"state": state, "context": context, "weights": weights}

        # The outputs ride in the carried state, which every step returns.
        carry = {
            "state": state,
            "context": ops.zeros_like(ops.cast(value_features[:, 0], self.compute_dtype)),
            "weights": ops.zeros_like(ops.cast(key_features[:, :, 0], self.compute_dtype)),
        }
        outputs = backends.scan_states(step, carry, steps)  # (Tq, B, ·) each
        return ops.moveaxis(outputs["context"], 0, 1), ops.moveaxis(outputs["weights"], 0, 1)

    def _step(
        self,
        query_features,
        key_features,
        value_features,
        query_mask,
        value_mask,
        attention_mask,
        state,
        training,
        noise,
    ):
        """One step on projected `(B, d)` query features: `(context, weights, state)`."""
        mask = masks_lib.combine_masks(value_mask, attention_mask)  # (B, Tv) or None
        state = {key: ops.cast(state[key], self._state_dtype) for key in self.alignment_state_keys}
        weights, new_state = self._alignment(
            query_features, key_features, mask, state, training, noise
        )
        weights = ops.cast(weights, self._state_dtype)  # (B, Tv)
        if query_mask is not None:
            keep = ops.cast(query_mask, "bool")[:, None]  # (B, 1)
            weights = masks_lib.zero_masked(weights, keep)
            new_state = {
                key: ops.where(keep, new_state[key], state[key])
                for key in self.alignment_state_keys
            }
        weights = ops.cast(weights, self.compute_dtype)
        context = attention_ops.weighted_sum(weights[:, None, :], value_features)[:, 0]  # (B, dv)
        return ops.cast(context, self.compute_dtype), weights, new_state

    def _refuse_causal(self, use_causal_mask):
        if use_causal_mask:
            self._fail(
                "use_causal_mask",
                "False (an alignment-state layer attends a memory, one step after the "
                "other; a causal mask has no meaning there)",
                "use_causal_mask=True",
            )
