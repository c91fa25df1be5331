"""Independent NumPy truth for the attention math, written from the papers.

Deliberately naive (explicit loops over rows, float64, no fill values): it
shares no code and no tricks with `keras_attention.ops`.
"""

import numpy as np


def _apply(row_fn, logits, mask):
    logits = np.asarray(logits, np.float64)
    mask = np.ones(logits.shape, bool) if mask is None else np.broadcast_to(mask, logits.shape)
    out = np.zeros_like(logits)
    for index in np.ndindex(*logits.shape[:-1]):
        keep = np.asarray(mask[index], bool)
        if keep.any():
            row = np.zeros(logits.shape[-1])
            row[keep] = row_fn(logits[index][keep])
            out[index] = row
    return out


def _softmax_row(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def _sparsemax_row(z):
    """Martins & Astudillo (2016), Algorithm 1."""
    z_sorted = np.sort(z)[::-1]
    k_max = 0
    for k in range(1, len(z) + 1):
        if 1 + k * z_sorted[k - 1] > z_sorted[:k].sum():
            k_max = k
    tau = (z_sorted[:k_max].sum() - 1) / k_max
    return np.maximum(z - tau, 0)


def _hardmax_row(z):
    out = np.zeros_like(z)
    out[np.argmax(z)] = 1.0
    return out


def _sigmoid_row(z):
    """Chorowski et al. (2015)'s smoothing: a sigmoid, then normalize."""
    s = 1.0 / (1.0 + np.exp(-z))
    return s / s.sum()


def softmax(logits, mask=None):
    return _apply(_softmax_row, logits, mask)


def sparsemax(logits, mask=None):
    return _apply(_sparsemax_row, logits, mask)


def hardmax(logits, mask=None):
    return _apply(_hardmax_row, logits, mask)


def normalized_sigmoid(logits, mask=None):
    return _apply(_sigmoid_row, logits, mask)


NORMALIZERS = {
    "softmax": softmax,
    "sparsemax": sparsemax,
    "hardmax": hardmax,
    "sigmoid": normalized_sigmoid,
}


def causal(tq, tv):
    """Query i may see key j iff j <= i + tv - tq (end-aligned)."""
    return np.array([[j <= i + tv - tq for j in range(tv)] for i in range(tq)])


def dense(x, kernel, bias=None):
    y = np.asarray(x, np.float64) @ np.asarray(kernel, np.float64)
    return y if bias is None else y + bias


def dot_scores(q, k):
    return np.einsum("...qd,...kd->...qk", q, k)


def additive_scores(qp, kp, v, b=None):
    """v · tanh(qp_i + kp_j + b) for every pair, by explicit loops over (i, j)."""
    b = 0.0 if b is None else b
    batch, tq, tv = qp.shape[0], qp.shape[1], kp.shape[1]
    out = np.zeros((batch, tq, tv))
    for n in range(batch):
        for i in range(tq):
            for j in range(tv):
                out[n, i, j] = np.dot(v, np.tanh(qp[n, i] + kp[n, j] + b))
    return out


def attend(logits, value, mask=None, probability_fn="softmax"):
    weights = NORMALIZERS[probability_fn](logits, mask)
    return np.einsum("...qk,...kd->...qd", weights, value), weights


def sinusoid(positions, features, base=10000.0):
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(...), one entry at a time."""
    out = np.zeros((len(positions), features))
    for row, position in enumerate(positions):
        for k in range(features):
            angle = position / base ** (2 * (k // 2) / features)
            out[row, k] = np.sin(angle) if k % 2 == 0 else np.cos(angle)
    return out


def rotate_half(x, positions, base=10000.0, inverse_frequencies=None, magnitude=1.0):
    """RoPE, rotate-half pairing: features (k, k + d/2) turned by a 2x2 rotation.

    The angle of pair k at position p is p / base^(2k/d) (or p ·
    `inverse_frequencies[k]`), and the pair is multiplied by `magnitude`
    (YaRN's `0.1 ln s + 1`); `positions` broadcasts against `x.shape[:-1]`.
    """
    x = np.asarray(x, np.float64)
    half = x.shape[-1] // 2
    positions = np.broadcast_to(positions, x.shape[:-1])
    out = np.empty_like(x)
    for index in np.ndindex(*x.shape[:-1]):
        for k in range(half):
            if inverse_frequencies is None:
                theta = positions[index] / base ** (2 * k / x.shape[-1])
            else:
                theta = positions[index] * inverse_frequencies[k]
            rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
            pair = magnitude * rotation @ np.array([x[index + (k,)], x[index + (k + half,)]])
            out[index + (k,)], out[index + (k + half,)] = pair
    return out


# ----------------------------------------------------------------------------
# Today's Transformer options, from their papers.
# ----------------------------------------------------------------------------
def rope_scaled_frequencies(features, base, rope_type, factor, original_length=None):
    """`(θ_k per pair, magnitude)` of RoPE extended `factor` times, pair by pair.

    - "linear": position interpolation (Chen et al. 2023), positions m -> m/s;
    - "dynamic": NTK-aware (YaRN paper, eq. 16), base b -> b · s^(d/(d-2));
    - "yarn" (Peng et al. 2023, "NTK-by-parts" + temperature): pair k turns
      r_k = L / λ_k times over the L original positions (λ_k = 2π b^(2k/d));
      it keeps θ_k above β = 32 turns, takes θ_k / s below α = 1 turn, and in
      between mixes them with a ramp linear in k (the authors' code) from the
      k where r = 32 to the k where r = 1; q and k are multiplied by
      sqrt(1/t) = 0.1 ln s + 1.
    """
    d = features
    thetas, magnitude = [], 1.0
    for k in range(d // 2):
        theta = base ** (-2 * k / d)
        if rope_type == "linear":
            theta = theta / factor
        elif rope_type == "dynamic":
            theta = (base * factor ** (d / (d - 2))) ** (-2 * k / d)
        elif rope_type == "yarn":
            wavelength = 2 * np.pi * base ** (2 * k / d)
            turns = original_length / wavelength
            assert turns > 0

            def pair_of(r):  # the (fractional) k that turns r times
                return d * np.log(original_length / (2 * np.pi * r)) / (2 * np.log(base))

            low, high = max(pair_of(32.0), 0.0), min(pair_of(1.0), d // 2 - 1)
            interpolation = min(max((k - low) / max(high - low, 1e-3), 0.0), 1.0)
            theta = (1 - interpolation) * theta + interpolation * theta / factor
            magnitude = 0.1 * np.log(factor) + 1.0
        thetas.append(theta)
    return np.array(thetas), magnitude


def rms_norm(x, scale, epsilon=1e-6):
    """Zhang & Sennrich (2019): `x / sqrt(mean(x²) + ε) · g` over the last axis, row by row."""
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    for index in np.ndindex(*x.shape[:-1]):
        row = x[index]
        out[index] = row / np.sqrt(np.mean(row * row) + epsilon) * scale
    return out


def soft_cap(logits, cap):
    """Gemma 2: logits bounded to (-cap, cap) by `cap · tanh(logits / cap)`."""
    return cap * np.tanh(np.asarray(logits, np.float64) / cap)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


# ----------------------------------------------------------------------------
# Attention with an alignment state, written from the papers.
# ----------------------------------------------------------------------------
def monotonic_recurrence(p_choose, previous):
    """Raffel et al. (2017), the expected alignment one position at a time.

    q[j] = (1 - p[j-1]) q[j-1] + previous[j] (q[-1] = 0), alignment[j] = p[j] q[j].
    """
    p_choose, previous = np.asarray(p_choose, np.float64), np.asarray(previous, np.float64)
    out = np.zeros_like(p_choose)
    for n in range(p_choose.shape[0]):
        q = 0.0
        for j in range(p_choose.shape[1]):
            stay = 1.0 if j == 0 else 1.0 - p_choose[n, j - 1]
            q = stay * q + previous[n, j]
            out[n, j] = p_choose[n, j] * q
    return out


def monotonic_hard(p_choose, previous):
    """Hard monotonic attention: from the previous position, stop at the first p = 1.

    `previous` is one-hot (or all zeros: the attention already left the memory).
    """
    out = np.zeros(np.shape(p_choose))
    for n in range(out.shape[0]):
        if not np.any(previous[n] > 0):
            continue
        for j in range(int(np.argmax(previous[n] > 0)), out.shape[1]):
            if p_choose[n, j] > 0.5:
                out[n, j] = 1.0
                break
    return out


def conv1d_same(x, kernel):
    """Keras `Conv1D(padding="same")`, no bias: `(B, T, C) * (K, C, F) -> (B, T, F)`.

    "same" pads K - 1 positions in all, (K - 1) // 2 of them before.
    """
    x, kernel = np.asarray(x, np.float64), np.asarray(kernel, np.float64)
    width, before = kernel.shape[0], (kernel.shape[0] - 1) // 2
    out = np.zeros((x.shape[0], x.shape[1], kernel.shape[2]))
    for n in range(x.shape[0]):
        for t in range(x.shape[1]):
            for k in range(width):
                source = t + k - before
                if 0 <= source < x.shape[1]:
                    out[n, t] += x[n, source] @ kernel[k]
    return out


def stepwise_monotonic(p_stay, previous):
    """He et al. (2019), one position at a time: stay at j with p[j], or move to j + 1.

    The mass that moves on from the last position leaves.
    """
    p_stay, previous = np.asarray(p_stay, np.float64), np.asarray(previous, np.float64)
    out = np.zeros_like(p_stay)
    for n in range(p_stay.shape[0]):
        for j in range(p_stay.shape[1]):
            out[n, j] += previous[n, j] * p_stay[n, j]
            if j + 1 < p_stay.shape[1]:
                out[n, j + 1] += previous[n, j] * (1.0 - p_stay[n, j])
    return out


def gmm_density(mixture, means, scales, length):
    """Σ_k w_k N(j; μ_k, σ_k²) at j = 0 .. length - 1, one position and component at a time."""
    out = np.zeros((len(means), length))
    for n in range(len(means)):
        for j in range(length):
            for k in range(len(means[n])):
                variance = scales[n][k] ** 2
                gauss = np.exp(-((j - means[n][k]) ** 2) / (2 * variance))
                out[n, j] += mixture[n][k] * gauss / np.sqrt(2 * np.pi * variance)
    return out


def beta_binomial(length, alpha, beta):
    """The beta-binomial pmf of n = length - 1 trials as a Pólya urn, with rising factorials:

    P(k) = C(n, k) · α^(k) β^(n-k) / (α + β)^(n),  x^(m) = x (x + 1) ... (x + m - 1).
    """
    from math import comb

    def rising(x, m):
        value = 1.0
        for i in range(m):
            value *= x + i
        return value

    n = length - 1
    return np.array(
        [comb(n, k) * rising(alpha, k) * rising(beta, n - k) / rising(alpha + beta, n)
         for k in range(length)]
    )  # fmt: skip


def causal_filter(x, taps):
    """out[n, j] = Σ_k taps[k] · x[n, j - k] (x = 0 before the start)."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for n in range(x.shape[0]):
        for j in range(x.shape[1]):
            for k in range(len(taps)):
                if j - k >= 0:
                    out[n, j] += taps[k] * x[n, j - k]
    return out
