import keras

from keras_attention import masks as masks_lib
from keras_attention import monotonic
from keras_attention.layers.alignment.bahdanau_monotonic_attention import BahdanauMonotonicAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class StepwiseMonotonicAttention(BahdanauMonotonicAttention):
    """Stepwise monotonic attention (He, Deng & He, 2019), with an additive energy.

    At each step the attention stays where it is or moves forward by exactly
    one memory position, so it can neither skip an input nor go back (the
    failures of text-to-speech attention that this recurrence removes). At
    step `i`, with `α_0` a one-hot on memory position 0,

    ```
    e_i[j] = vᵀ tanh(W_q q_i + W_k k_j [+ b]) + r           (BahdanauMonotonicAttention's energy)
    p_i[j] = sigmoid(e_i[j] + N(0, sigmoid_noise²))         the probability of staying
                                                            ([e_i[j] > 0] in "hard" mode)
    α_i[j] = α_{i-1}[j] · p_i[j] + α_{i-1}[j-1] · (1 - p_i[j-1])
    ```

    (`keras_attention.monotonic.stepwise_monotonic_attention`), zero at
    masked positions: the mass that moves past the last unmasked position
    leaves, and `α_i` may sum to less than 1. In `"hard"` mode the weights
    are one-hot: the attention stays, or moves on by one.

    `mode="auto"` (the default) is the paper's recipe: the expectation
    (`"soft"`) when `training` is true (`model.fit`), hard decisions
    otherwise (`predict`, a decoding loop, a direct call): one set of
    weights trains soft and decodes hard, without building the layer again.
    `"soft"` and `"hard"` force one of them.

    Args:
        units: size `U` of the hidden layer inside the tanh.
        normalize: weight-normalize `v` and add a bias `b` inside the tanh,
            as `BahdanauMonotonicAttention`.
        sigmoid_noise: standard deviation of the noise added to the energy
            before the sigmoid, in training only (He et al. use noise, as
            Raffel et al., to push `p` towards 0 or 1 for hard decoding).
        score_bias_init: initial value of the learned scalar `r`; a positive
            value starts the attention staying longer, a negative one moving.
        mode: `"auto"` (default), `"soft"` or `"hard"`.
        seed: seed of the noise.
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for `W_q`,
            `W_k`, `v` (kernel) and `b` (bias), each weight its own copy.
        **kwargs: base layer arguments.

    Call arguments and returns: those of `AlignmentAttention`: `attend`
    takes one `(B, dq)` step and an `alignment_state` (`{"weights": α}`);
    calling the layer on `(B, Tq, dq)` runs every step. Context `(B, Tq,
    dv)`, weights `(B, Tq, Tv)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention import StepwiseMonotonicAttention
    >>> layer = StepwiseMonotonicAttention(units=16)
    >>> decoder = np.random.rand(2, 3, 8).astype("float32")
    >>> encoder = np.random.rand(2, 5, 8).astype("float32")
    >>> context, weights = layer(decoder, encoder, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 8), (2, 3, 5))

    References:
        He, Deng & He, "Robust Sequence-to-Sequence Acoustic Modeling with
        Stepwise Monotonic Attention for Neural TTS", Interspeech 2019.
    """

    _modes = monotonic.STEPWISE_MODES

    def __init__(
        self,
        units,
        normalize=False,
        sigmoid_noise=0.0,
        score_bias_init=0.0,
        mode="auto",
        seed=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        super().__init__(
            units=units,
            normalize=normalize,
            sigmoid_noise=sigmoid_noise,
            score_bias_init=score_bias_init,
            mode=mode,
            seed=seed,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint,
            **kwargs,
        )

    def _step_mode(self, training):
        if self.mode == "auto":
            return "soft" if training else "hard"
        return self.mode

    def _next_alignment(self, p_choose_i, previous, mask, mode):
        weights = monotonic.stepwise_monotonic_attention(p_choose_i, previous)
        return masks_lib.zero_masked(weights, mask)
