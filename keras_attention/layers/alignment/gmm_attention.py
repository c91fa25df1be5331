import keras
from keras import ops

from keras_attention import location_relative
from keras_attention import masks as masks_lib
from keras_attention import validation
from keras_attention.layers.alignment.alignment_attention import AlignmentAttention
from keras_attention.layers.kernel_args import KernelArgsMixin


@keras.saving.register_keras_serializable(package="keras_attention")
class GMMAttention(KernelArgsMixin, AlignmentAttention):
    """GMM attention, the "GMMv2b" of Battenberg et al. (2020), after Graves (2013).

    A mixture of `K` Gaussians over the memory positions whose means only
    move forward; the query decides how far, how wide and with which weights,
    and never compares itself with the memory's content. At step `i`

    ```
    [ŵ_i; Δ̂_i; σ̂_i] = W_2 tanh(W_1 q_i + b_1) + b_2            an MLP, (B, 3K)
    w_i = softmax(ŵ_i),  Δ_i = softplus(Δ̂_i),  σ_i = softplus(σ̂_i)
    μ_i = μ_{i-1} + Δ_i                                          μ_0 = 0
    α_i[j] = Σ_k w_ik · exp(-(j - μ_ik)² / (2σ_ik²)) / √(2πσ_ik²)
    ```

    (`keras_attention.location_relative.gmm_parameters` and
    `gmm_alignment`). `j` runs over the memory positions `0 .. Tv - 1`
    themselves, with no 0.5 offset: the weights are a density evaluated at
    each position (V1/V2), not the difference of CDFs at `j ± 0.5` that a
    discretized mixture would use, so `μ = j` puts a component's peak on
    position `j`. Masked positions get weight 0 and nothing is
    renormalized (this is not a softmax): the weights sum to about 1 while
    the mixture lies inside the memory, and to less near its ends or once
    the means have passed the last position.

    The state is `{"weights": α_{i-1}, "means": μ_{i-1}}`, the means a
    `(B, K)` tensor (`alignment_state_sizes`), zeros before the first step.

    "b" is the variant with initial biases on the Δ̂ and σ̂ outputs, so
    that the attention starts moving forward by about one position per step
    with components a few positions wide: `Δ̂` starts at 1 (`Δ ≈ 1.31`) and
    `σ̂` at 10 (`σ ≈ 10`), the values of Mozilla TTS's GMMv2b implementation
    of the paper (its `GravesAttention`; the paper names the variant without
    printing the values); `ŵ` starts at the `bias_initializer`'s (zeros).
    The defaults: `K = 5` components, as in Battenberg et al.'s GMM
    experiments, and 128 hidden units, the attention size the paper uses
    throughout (DCA's attention and dynamic-filter MLP).

    Args:
        num_mixtures: `K`, the number of Gaussian components (default 5).
        units: size of the MLP's tanh hidden layer (default 128).
        delta_bias_init: initial bias of `Δ̂` (default 1.0).
        sigma_bias_init: initial bias of `σ̂` (default 10.0).
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for `W_1`,
            `W_2` (kernel) and `b_1` and the bias of `ŵ` (bias), each weight
            its own copy; the regularizer and constraint also apply to the Δ̂
            and σ̂ biases.
        **kwargs: base layer arguments.

    Call arguments and returns: those of `AlignmentAttention`. The memory's
    content is only summed (`value`); `key` is accepted for the contract,
    and only its length matters. Context `(B, Tq, dv)`, weights `(B, Tq, Tv)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention import GMMAttention
    >>> layer = GMMAttention(num_mixtures=3, units=16)
    >>> decoder = np.random.rand(2, 3, 8).astype("float32")
    >>> encoder = np.random.rand(2, 7, 6).astype("float32")
    >>> context, weights = layer(decoder, encoder, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 6), (2, 3, 7))

    References:
        Graves, "Generating Sequences With Recurrent Neural Networks", 2013.
        Battenberg, Skerry-Ryan, Mariooryad, Stanton, Kao, Shannon & Bagby,
        "Location-Relative Attention Mechanisms for Robust Long-Form Speech
        Synthesis", ICASSP 2020.
    """

    alignment_state_keys = ("weights", "means")

    def __init__(
        self,
        num_mixtures=5,
        units=128,
        delta_bias_init=1.0,
        sigma_bias_init=10.0,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        owner = "GMMAttention"
        super().__init__(**kwargs)
        self.num_mixtures = validation.integer(owner, "num_mixtures", num_mixtures)
        self.units = validation.integer(owner, "units", units)
        self.delta_bias_init = validation.number(owner, "delta_bias_init", delta_bias_init)
        self.sigma_bias_init = validation.number(owner, "sigma_bias_init", sigma_bias_init)
        self._set_kernel_args(
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            kernel_constraint,
            bias_constraint,
        )

    def build(self, query_shape, value_shape=None, key_shape=None):
        mixtures = self.num_mixtures
        self.hidden_dense = self._dense(
            self.units, "hidden_dense", use_bias=True, input_dim=query_shape[-1]
        )
        self.parameter_dense = self._dense(3 * mixtures, "parameter_dense", input_dim=self.units)
        self.mixture_bias = self._bias_weight("mixture_bias", mixtures)
        self.delta_bias = self._constant_bias("delta_bias", self.delta_bias_init)
        self.sigma_bias = self._constant_bias("sigma_bias", self.sigma_bias_init)

    def _constant_bias(self, name, value):
        return self.add_weight(
            name=name,
            shape=(self.num_mixtures,),
            initializer=keras.initializers.Constant(value),
            regularizer=self.bias_regularizer,
            constraint=self.bias_constraint,
        )

    def alignment_state_sizes(self, value_length):
        return {"weights": value_length, "means": self.num_mixtures}

    def _initial_alignment(self, zeros, value_mask):
        means = ops.repeat(zeros[:, :1], self.num_mixtures, axis=1)  # (B, K)
        return {"weights": zeros, "means": means}

    def _project_memory(self, key, value):
        return key[..., :1], value  # no content term: only the memory's length is read

    def _project_query(self, query):
        return self.parameter_dense(ops.tanh(self.hidden_dense(query)))  # (B, [Tq,] 3K)

    def _alignment(self, query_features, key_features, mask, state, training, noise):
        # Each variable cast first: Keras 3.8's JAX concatenate cannot take Variables.
        biases = [
            ops.cast(bias, self._state_dtype)
            for bias in (self.mixture_bias, self.delta_bias, self.sigma_bias)
        ]
        parameters = ops.cast(query_features, self._state_dtype) + ops.concatenate(biases)  # 3K
        mixture, delta, scales = location_relative.gmm_parameters(parameters)  # (B, K) each
        means = state["means"] + delta
        weights = location_relative.gmm_alignment(
            mixture, means, scales, ops.shape(key_features)[1]
        )
        weights = masks_lib.zero_masked(weights, mask)  # (B, Tv)
        return weights, {"weights": weights, "means": means}

    def get_config(self):
        config = super().get_config()
        config.update(
            num_mixtures=self.num_mixtures,
            units=self.units,
            delta_bias_init=self.delta_bias_init,
            sigma_bias_init=self.sigma_bias_init,
            **self._kernel_config(),
        )
        return config
