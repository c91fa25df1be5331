"""Location-relative attention (Battenberg et al., 2020) as pure `keras.ops` functions.

Location-relative mechanisms compute each step's alignment from the previous
one (and the decoder state), without comparing the decoder state with the
memory's content, which lets text-to-speech models read utterances far
longer than those seen in training. Two families:

- GMM attention (Graves, 2013; the "V2" form of Battenberg et al.): a
  mixture of `K` Gaussians over the memory positions, whose means only move
  forward. `gmm_parameters` maps the query MLP's output to the mixture,
  `gmm_alignment` evaluates it.
- Dynamic convolution attention (DCA): additive energies of convolutions of
  the previous alignment, by learned static filters, by filters predicted
  from the query (`dynamic_convolution`), and a fixed causal prior filter
  (`beta_binomial_prior`, `prior_logits`).

A shared filter bank (`convolve`, Keras's `Conv1D`) is one matrix product of
the alignment's `W`-wide windows (`windows`); a per-example filter
(`dynamic_convolution`) is one batched product of the same windows, and the
prior a weighted sum over them, with no loop over the batch.

Shape letters: `B` batch, `Tv` memory positions, `K` mixture components,
`C` filters (`C_in` channels read), `W` filter width.
"""

from __future__ import annotations

import math

import numpy as np
from keras import ops

from keras_attention import backends

__all__ = [
    "MIN_SCALE",
    "PRIOR_FLOOR",
    "beta_binomial_prior",
    "convolve",
    "dynamic_convolution",
    "gmm_alignment",
    "gmm_parameters",
    "prior_logits",
    "windows",
    "windows_at",
]

# The smallest scale `σ` of a mixture component: `softplus` underflows to 0
# for pre-activations below about -100 in float32, and `N(j; μ, 0)` is a 0/0.
MIN_SCALE = 1e-5
# DCA's prior is floored before its log (Battenberg et al.: log(max(prior, 1e-6))).
PRIOR_FLOOR = 1e-6


# ----------------------------------------------------------------------------
# GMM attention.
# ----------------------------------------------------------------------------
def gmm_parameters(parameters):
    """`(w, Δ, σ)`, each `(B, K)`, from the `(B, 3K)` output `[ŵ, Δ̂, σ̂]` of the query MLP.

    `w = softmax(ŵ)` (the mixture weights), `Δ = softplus(Δ̂)` (how far each
    mean moves forward this step), `σ = max(softplus(σ̂), MIN_SCALE)` (the
    components' scales): Battenberg et al.'s V2 parameterization.
    """
    parameters = ops.convert_to_tensor(parameters)
    mixture_logits, delta_logits, scale_logits = ops.split(parameters, 3, axis=-1)
    # A softmax written out: Keras warns about a softmax over one component (K = 1).
    mixture = ops.exp(mixture_logits - ops.logsumexp(mixture_logits, axis=-1, keepdims=True))
    delta = ops.softplus(delta_logits)
    scale = ops.maximum(ops.softplus(scale_logits), MIN_SCALE)
    return mixture, delta, scale


def gmm_alignment(mixture, means, scales, length):
    """`α[j] = Σ_k w_k · N(j; μ_k, σ_k²)` at the memory positions `j = 0 .. length - 1`.

    The normalized Gaussian density `exp(-(j - μ)² / (2σ²)) / √(2πσ²)` of
    Graves (2013) and Battenberg et al.'s V1/V2, evaluated at the integer
    positions themselves (no half-position offset): it is a density, not a
    difference of CDFs, so a mean at `j` means "at position `j`". The result
    is not normalized over the positions (it sums to about 1 only when the
    mixture lies well inside the memory).

    Args:
        mixture: `(B, K)` mixture weights `w` (they sum to 1).
        means: `(B, K)` means `μ`, in memory positions.
        scales: `(B, K)` standard deviations `σ > 0`.
        length: `Tv`, an int or a scalar tensor.

    Returns:
        `(B, Tv)` weights in the dtype of `means`.
    """
    means = ops.convert_to_tensor(means)
    mixture, scales = ops.cast(mixture, means.dtype), ops.cast(scales, means.dtype)
    positions = ops.cast(ops.arange(length), means.dtype)[None, None, :]  # (1, 1, Tv)
    distance = (positions - means[..., None]) / scales[..., None]  # (B, K, Tv)
    density = ops.exp(-0.5 * ops.square(distance)) / (math.sqrt(2.0 * math.pi) * scales[..., None])
    return ops.sum(mixture[..., None] * density, axis=1)  # (B, Tv)


# ----------------------------------------------------------------------------
# Convolutions over the memory axis, and dynamic convolution attention.
# ----------------------------------------------------------------------------
def windows(x, width: int, before: int | None = None):
    """The `W`-wide window of `x` `(B, Tv, ...)` at each position: `(B, Tv, W, ...)`.

    `out[:, j, k] = x[:, j + k - before]`, zero outside the memory, gathered at
    once from the padded `x` (one gather; stacking the `W` slices is slower
    under XLA on CPU). `before` defaults to `(W - 1) // 2`, the centring of
    Keras's `padding="same"`; `W - 1` makes the window causal (position `j`
    and the `W - 1` before it).
    """
    x = ops.convert_to_tensor(x)
    before = (width - 1) // 2 if before is None else before
    padding = ((0, 0), (before, width - 1 - before)) + ((0, 0),) * (len(x.shape) - 2)
    padded = ops.pad(x, padding)  # (B, Tv + W - 1, ...)
    index = ops.arange(ops.shape(x)[1])[:, None] + ops.arange(width)[None]  # (Tv, W)
    return ops.take(padded, index, axis=1)  # (B, Tv, W, ...)


def windows_at(x, positions, width: int, before: int | None = None):
    """The `W`-wide windows of `x` `(B, Tv, ...)` at each example's own positions.

    `positions` `(B, n)` ints: `out[b, i, k] = x[b, positions[b, i] + k - before]`
    `(B, n, W, ...)`, zero outside the memory (any position, inside or not,
    is allowed). `windows(x, W)` is `windows_at` at every position; this
    gathers only `n` of them (a decoding step's inference window).
    """
    x = ops.convert_to_tensor(x)
    before = (width - 1) // 2 if before is None else before
    length = ops.shape(x)[1]
    padded = ops.pad(x, ((0, 0), (1, 1)) + ((0, 0),) * (len(x.shape) - 2))  # zero at -1 and Tv
    index = ops.cast(positions, "int32")[:, :, None] + (ops.arange(width, dtype="int32") - before)
    index = ops.clip(index, -1, length) + 1  # (B, n, W) into `padded`
    flat = ops.reshape(index, (ops.shape(index)[0], -1) + (1,) * (len(x.shape) - 2))
    taken = ops.take_along_axis(padded, flat, axis=1)  # (B, n * W, ...)
    return ops.reshape(taken, tuple(ops.shape(index)) + tuple(ops.shape(x)[2:]))


def convolve(alignment, kernel, positions=None):
    """The static ("same", cross-correlation) convolution of Keras's `Conv1D`, no bias.

    `alignment` `(B, Tv)` with `kernel` `(W, C)`, or `(B, Tv, C_in)` with
    `kernel` `(W, C_in, C)` (a `Conv1D` kernel): `(B, Tv, C)`, computed in
    the kernel's dtype as one rank-2 matrix product of the windows
    `(B * Tv, W * C_in)` by the kernel `(W * C_in, C)`. With `positions`
    `(B, n)`, only the outputs at those positions: `(B, n, C)`. On CPU that is
    faster than Keras's convolution for the few channels an alignment has,
    and than `W` multiply-adds of the shifted copies when `C` is large; a
    rank-2 product is a plain `MatMul`, whose gradient XLA compiles inside a
    while loop (a Tensordot's it cannot).
    """
    kernel = ops.convert_to_tensor(kernel)
    alignment = ops.cast(alignment, kernel.dtype)
    if len(alignment.shape) == 2:
        alignment, kernel = alignment[..., None], kernel[:, None]  # (B, Tv, 1), (W, 1, C)
    width, channels = kernel.shape[0], kernel.shape[1]
    if positions is None:
        taps = windows(alignment, width)  # (B, Tv, W, C_in)
    else:
        taps = windows_at(alignment, positions, width)  # (B, n, W, C_in)
    shape = ops.shape(taps)
    taps = ops.reshape(taps, (-1, width * channels))  # (B*n, W*C_in)
    flat = backends.matmul(taps, ops.reshape(kernel, (width * channels, -1)))  # (B*n, C)
    return ops.reshape(flat, (shape[0], shape[1], -1))  # (B, n, C)


def dynamic_convolution(alignment, filters):
    """A "same" convolution by filters of each example's own: `(B, Tv), (B, C, W) -> (B, Tv, C)`.

    `out[b, j, c] = Σ_k filters[b, c, k] · alignment[b, j + k - (W - 1) // 2]`:
    one batched matrix product of each example's `windows` `(Tv, W)` by its
    filters `(W, C)`, with no loop over the batch. (Written as `W`
    multiply-adds of shifted copies it was ~20 ops a step, and several times
    that with the gradient: in a training RNN's loop, run op by op, that cost
    more than the arithmetic.)
    """
    filters = ops.convert_to_tensor(filters)
    alignment = ops.cast(alignment, filters.dtype)
    taps = windows(alignment, filters.shape[-1])  # (B, Tv, W)
    return ops.matmul(taps, ops.swapaxes(filters, 1, 2))  # (B, Tv, C)


def beta_binomial_prior(length: int, alpha: float, beta: float) -> np.ndarray:
    """The beta-binomial pmf `P[k]`, `k = 0 .. length - 1` (`n = length - 1` trials), float64.

    `P[k] = C(n, k) · B(k + α, n - k + β) / B(α, β)`, with the Beta function
    from `math.lgamma` (no SciPy). DCA's prior filter: with `α = 0.1`,
    `β = 0.9` and 11 taps, 0.74 of the mass is on `k = 0` (stay) and the
    rest spread thinly over moves forward by `k = 1 .. 10` (0.075 to 0.013).
    """

    def log_beta(a: float, b: float) -> float:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)

    n = length - 1
    return np.array(
        [
            math.comb(n, k) * math.exp(log_beta(k + alpha, n - k + beta) - log_beta(alpha, beta))
            for k in range(length)
        ]
    )


def prior_logits(alignment, prior, floor: float = PRIOR_FLOOR):
    """`log(max(P ∗ α, floor))` of DCA: the causal prior filter over the previous alignment.

    `(P ∗ α)[j] = Σ_k P[k] · α[j - k]`: the mass of `α` that the prior moves
    forward by `k` lands on `j`. `alignment` `(B, Tv)`, `prior` `(L,)`;
    returns `(B, Tv)` in the alignment's dtype.
    """
    alignment = ops.convert_to_tensor(alignment)
    length = len(prior)
    taps = windows(alignment, length, before=length - 1)  # (B, Tv, L): α[j - L + 1], ..., α[j]
    kernel = ops.convert_to_tensor(np.asarray(prior, "float64")[::-1].copy(), alignment.dtype)
    filtered = ops.sum(taps * kernel, axis=-1)  # (B, Tv)
    return ops.log(ops.maximum(filtered, floor))  # (B, Tv)
