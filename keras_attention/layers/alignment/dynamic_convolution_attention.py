import keras
from keras import ops

from keras_attention import backends
from keras_attention import location_relative
from keras_attention import ops as attention_ops
from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.alignment.alignment_attention import AlignmentAttention
from keras_attention.layers.kernel_args import KernelArgsMixin
from keras_attention.layers.kernel_args import sublayer_initializer


@keras.saving.register_keras_serializable(package="keras_attention")
class DynamicConvolutionAttention(KernelArgsMixin, AlignmentAttention):
    """Dynamic convolution attention (DCA, Battenberg et al., 2020).

    A location-relative additive attention: the energies come from
    convolutions of the previous alignment, never from comparing the query
    with the memory's content. At step `i`

    ```
    f_i = F ∗ α_{i-1}                  static filters F, learned: (B, Tv, C_s)
    g_i = G(q_i) ∗ α_{i-1}             dynamic filters G(q) = W_G tanh(W_h q + b_h): (B, Tv, C_d)
    p_i = P ∗ α_{i-1}                  a fixed causal prior filter (beta-binomial pmf)
    e_i[j] = vᵀ tanh(W f_i[j] + U g_i[j] + b) + log(max(p_i[j], 1e-6))
    α_i = softmax_j(e_i)               over the unmasked positions
    ```

    with `α_0` a one-hot on memory position 0. The convolutions of `F` and
    `G` are centred (Keras's `"same"`); the prior's is causal,
    `p_i[j] = Σ_k P[k] α_{i-1}[j - k]`, with `P` the beta-binomial pmf of
    `prior_length - 1` trials and parameters `(prior_alpha, prior_beta)`:
    it favours staying or moving forward a little, and forbids going back.
    It is computed in NumPy at build (`location_relative.beta_binomial_prior`)
    and never trained. The dynamic filters are each example's own: the
    convolution is `W` multiply-adds of shifted copies of the alignment by
    each example's taps (`location_relative.dynamic_convolution`), with no
    loop over the batch; since `W (F ∗ α) = (F W) ∗ α`, each filter bank is folded with its
    projection first, and with equal widths (the default) a step is a single
    convolution of the previous weights by `F W + G(q) U`, straight to the
    attention size. The defaults are the paper's: attention size 128, 8 static and 8
    dynamic filters of width 21, a 128-unit MLP for the dynamic filters, a
    prior of length 11 with `alpha = 0.1`, `beta = 0.9`.

    The query enters only through the dynamic filters: there is no content
    term, and the key is only read for its length.

    Args:
        units: attention size, the width of `W`, `U`, `b` and `v` (default 128).
        static_filters: `C_s` (default 8).
        static_kernel_size: width of the static filters (default 21).
        dynamic_filters: `C_d` (default 8).
        dynamic_kernel_size: width of the dynamic filters (default 21).
        dynamic_units: size of the tanh hidden layer of the MLP that
            predicts the dynamic filters (default 128).
        prior_length: length `L` of the prior filter (default 11).
        prior_alpha, prior_beta: the beta-binomial's parameters (default 0.1,
            0.9).
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for `F`, `W`,
            `U`, `W_h`, `W_G`, `v` (kernel) and `b_h`, `b` (bias), each weight
            its own copy.
        **kwargs: base layer arguments.

    Call arguments and returns: those of `AlignmentAttention`: the state is
    `{"weights": α_{i-1}}`. Context `(B, Tq, dv)`, weights `(B, Tq, Tv)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention import DynamicConvolutionAttention
    >>> layer = DynamicConvolutionAttention(units=16, dynamic_units=16)
    >>> decoder = np.random.rand(2, 3, 8).astype("float32")
    >>> encoder = np.random.rand(2, 7, 6).astype("float32")
    >>> context, weights = layer(decoder, encoder, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 6), (2, 3, 7))

    References:
        Battenberg, Skerry-Ryan, Mariooryad, Stanton, Kao, Shannon & Bagby,
        "Location-Relative Attention Mechanisms for Robust Long-Form Speech
        Synthesis", ICASSP 2020.
    """

    def __init__(
        self,
        units=128,
        static_filters=8,
        static_kernel_size=21,
        dynamic_filters=8,
        dynamic_kernel_size=21,
        dynamic_units=128,
        prior_length=11,
        prior_alpha=0.1,
        prior_beta=0.9,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        owner = "DynamicConvolutionAttention"
        super().__init__(**kwargs)
        for name, value in (
            ("units", units),
            ("static_filters", static_filters),
            ("static_kernel_size", static_kernel_size),
            ("dynamic_filters", dynamic_filters),
            ("dynamic_kernel_size", dynamic_kernel_size),
            ("dynamic_units", dynamic_units),
            ("prior_length", prior_length),
        ):
            setattr(self, name, validation.integer(owner, name, value))
        self.prior_alpha = validation.positive_number(owner, "prior_alpha", prior_alpha)
        self.prior_beta = validation.positive_number(owner, "prior_beta", prior_beta)
        self._set_kernel_args(
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            kernel_constraint,
            bias_constraint,
        )
        self.prior = location_relative.beta_binomial_prior(
            self.prior_length, self.prior_alpha, self.prior_beta
        )  # (L,) NumPy float64, a constant of the config

    def build(self, query_shape, value_shape=None, key_shape=None):
        self.static_kernel = self.add_weight(
            name="static_kernel",
            shape=(self.static_kernel_size, self.static_filters),
            initializer=sublayer_initializer(self.kernel_initializer, "static_kernel"),
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.static_dense = self._dense(self.units, "static_dense", input_dim=self.static_filters)
        self.filter_hidden_dense = self._dense(
            self.dynamic_units, "filter_hidden_dense", use_bias=True, input_dim=query_shape[-1]
        )
        self.filter_dense = self._dense(
            self.dynamic_filters * self.dynamic_kernel_size,
            "filter_dense",
            input_dim=self.dynamic_units,
        )
        self.dynamic_dense = self._dense(
            self.units, "dynamic_dense", input_dim=self.dynamic_filters
        )
        self.v = self._score_vector_weight("v", self.units)
        self.b = self._bias_weight("b", self.units)

    def _initial_alignment(self, zeros, value_mask):
        return {"weights": self._first_position(zeros, value_mask)}

    def _project_memory(self, key, value):
        return key[..., :1], value  # no content term: only the memory's length is read

    def _project_query(self, query):
        # The dynamic filters G(q), flat: (B, [Tq,] C_d * W_d).
        return self.filter_dense(ops.tanh(self.filter_hidden_dense(query)))

    def _alignment(self, query_features, key_features, mask, state, training, noise):
        previous = ops.cast(state["weights"], query_features.dtype)  # (B, Tv)
        batch = ops.shape(previous)[0]
        # W (F ∗ α) + U (G ∗ α) = (F W) ∗ α + (G U) ∗ α: the filters and their
        # projections are linear, so each pair folds into one (W, U) kernel and
        # a step convolves straight to the attention size, without the C
        # channels in between (the products are rank 2: a rank-3 Dense is a
        # Tensordot, whose gradient XLA cannot compile in an RNN's while loop).
        static = backends.matmul(self.static_kernel, self.static_dense.kernel)  # (W_s, U)
        filters = ops.reshape(
            query_features, (-1, self.dynamic_filters, self.dynamic_kernel_size)
        )  # (B, C_d, W_d)
        filters = ops.reshape(ops.swapaxes(filters, 1, 2), (-1, self.dynamic_filters))
        dynamic = backends.matmul(filters, ops.cast(self.dynamic_dense.kernel, filters.dtype))
        dynamic = ops.reshape(dynamic, (batch, self.dynamic_kernel_size, self.units))
        static = ops.cast(static, dynamic.dtype)
        if self.static_kernel_size == self.dynamic_kernel_size:  # one convolution
            kernels = ops.swapaxes(dynamic + static[None], 1, 2)  # (B, U, W)
            hidden = location_relative.dynamic_convolution(previous, kernels)  # (B, Tv, U)
        else:
            hidden = location_relative.convolve(previous, static)
            hidden = hidden + location_relative.dynamic_convolution(
                previous, ops.swapaxes(dynamic, 1, 2)
            )
        hidden = ops.tanh(scores.add_bias(hidden, ops.cast(self.b, hidden.dtype)))  # (B, Tv, U)
        energy = scores.AdditiveScore.project(hidden, ops.cast(self.v, hidden.dtype))  # (B, Tv)
        prior = location_relative.prior_logits(state["weights"], self.prior)  # (B, Tv) float32
        logits = ops.cast(energy, prior.dtype) + prior
        weights = ops.cast(attention_ops.attention_weights(logits, mask), self._state_dtype)
        return weights, {"weights": weights}

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            static_filters=self.static_filters,
            static_kernel_size=self.static_kernel_size,
            dynamic_filters=self.dynamic_filters,
            dynamic_kernel_size=self.dynamic_kernel_size,
            dynamic_units=self.dynamic_units,
            prior_length=self.prior_length,
            prior_alpha=self.prior_alpha,
            prior_beta=self.prior_beta,
            **self._kernel_config(),
        )
        return config
