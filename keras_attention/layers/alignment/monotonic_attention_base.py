import keras
from keras import ops

from keras_attention import masks as masks_lib
from keras_attention import monotonic
from keras_attention import validation
from keras_attention.layers.alignment.alignment_attention import AlignmentAttention
from keras_attention.layers.kernel_args import KernelArgsMixin


class MonotonicAttentionBase(KernelArgsMixin, AlignmentAttention):
    """What `BahdanauMonotonicAttention` and `LuongMonotonicAttention` share.

    From a subclass's energy `e_i` `(B, Tv)`: `p_i = sigmoid(e_i + r + noise)`
    (`r` the learned score bias; `p_i = [e_i + r + noise > 0]` in `"hard"`
    mode), zero at masked positions, then `keras_attention.monotonic.
    monotonic_attention(p_i, α_{i-1}, mode)`. The state is `{"weights":
    α_{i-1}}`, a one-hot on memory position 0 before the first step (zeros
    where that position is masked). A subclass overrides `_energy(query_features, key_features)`;
    a different recurrence overrides `_modes` (the accepted `mode`s),
    `_step_mode(training)` (the mode of one step, `self.mode` here) and
    `_next_alignment(p_choose_i, previous, mask, mode)`.
    """

    _modes = monotonic.MODES

    def __init__(
        self,
        sigmoid_noise=0.0,
        score_bias_init=0.0,
        mode="parallel",
        seed=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.seed = seed
        self.sigmoid_noise = validation.number(owner, "sigmoid_noise", sigmoid_noise)
        if self.sigmoid_noise < 0:
            validation.fail(owner, "sigmoid_noise", "a number >= 0", sigmoid_noise)
        self.score_bias_init = validation.number(owner, "score_bias_init", score_bias_init)
        self.mode = validation.choice(owner, "mode", mode, self._modes)
        if self.sigmoid_noise > 0:
            self.noise_seed_generator = keras.random.SeedGenerator(seed)
        self._set_kernel_args(
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            kernel_constraint,
            bias_constraint,
        )

    def _build_score_bias(self):
        self.score_bias = self.add_weight(
            name="score_bias",
            shape=(),
            initializer=keras.initializers.Constant(self.score_bias_init),
        )

    def _energy(self, query_features, key_features):
        raise TypeError(f"{type(self).__name__} must override `_energy`.")

    def _initial_alignment(self, zeros, value_mask):
        return {"weights": self._first_position(zeros, value_mask)}

    def draw_noise(self, shape, training=None):
        if not training or self.sigmoid_noise == 0:
            return None
        noise = keras.random.normal(shape, dtype=self._state_dtype, seed=self.noise_seed_generator)
        return self.sigmoid_noise * noise

    def _alignment(self, query_features, key_features, mask, state, training, noise):
        energy = ops.cast(self._energy(query_features, key_features), self._state_dtype)
        energy = energy + ops.cast(self.score_bias, self._state_dtype)  # (B, Tv)
        if noise is not None:
            energy = energy + noise
        mode = self._step_mode(training)
        if mode == "hard":
            p_choose_i = ops.cast(energy > 0, energy.dtype)
        else:
            p_choose_i = ops.sigmoid(energy)
        weights = self._next_alignment(p_choose_i, state["weights"], mask, mode)
        return weights, {"weights": weights}

    def _step_mode(self, training):
        """The mode of one step (a subclass may decide it from `training`)."""
        return self.mode

    def _next_alignment(self, p_choose_i, previous, mask, mode):
        """`α_i` `(B, Tv)`: masked positions get `p = 0`, the attention passes over them."""
        p_choose_i = masks_lib.zero_masked(p_choose_i, mask)
        return monotonic.monotonic_attention(p_choose_i, previous, mode)

    def get_config(self):
        config = super().get_config()
        config.update(
            seed=self.seed,
            sigmoid_noise=self.sigmoid_noise,
            score_bias_init=self.score_bias_init,
            mode=self.mode,
            **self._kernel_config(),
        )
        return config
