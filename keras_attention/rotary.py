"""Rotary position embeddings (RoPE, Su et al. 2021) as pure `keras.ops` functions.

RoPE encodes a position by rotating pairs of features of the queries and the
keys by angles proportional to the position, so the dot product of a query at
position `m` and a key at position `n` depends on `m - n` only.

Convention: "rotate half" (GPT-NeoX, Llama). Feature `i` is paired with
feature `i + d/2` (not with its neighbour `i + 1`, the interleaved layout of
the paper and of GPT-J); pair `i` turns by `position · base^(-2i/d)`:

```text
x1, x2 = x[..., :d/2], x[..., d/2:]
out = [x1 cos θ - x2 sin θ,  x2 cos θ + x1 sin θ]      θ_i = position · base^(-2i/d)
```

Both layouts give the same attention once the projections are trained; they
differ only in which features form a pair, so weights trained with one
convention do not load into the other.

Context extension (`rope_scaling`, the `rope_type`s of KerasHub's
`RotaryEmbedding` and Hugging Face's `rope_scaling` dicts), for a model trained
on `L` positions run on about `s · L` (`s` the `factor`), `θ_i = base^(-2i/d)`:

```text
"linear"   θ_i / s                                   (position interpolation)
"dynamic"  (base · s^(d/(d-2)))^(-2i/d)              (NTK-aware: a larger base)
"yarn"     (1 - γ_i) θ_i / s + γ_i θ_i,  queries and keys times 0.1 ln s + 1
           γ_i = 1 - clip((i - low) / (high - low), 0, 1)  (1 keeps θ_i, 0 divides by s)
           low, high: the i where L θ_i / 2π = beta_fast, beta_slow rotations
```

"dynamic" takes its factor as given (as KerasHub does): Dynamic NTK's `s =
max(1, l / L)` for the current length `l` would turn the cached keys of a
decoder by other angles than a full call, so pass the `s` of the longest
length you run. KerasHub's own "dynamic" divides every `θ_i` by `s^(d/(d-2))`;
this module follows the papers' base change, which keeps `θ_0 = 1`. YaRN's ramp
is linear in the pair index `i` between the pairs that turn `beta_fast` and
`beta_slow` times over `L`, as in the YaRN authors' code, Hugging Face and
KerasHub; `truncate=True` rounds `low` down and `high` up (KerasHub also clamps
the positions to `L` then; this module does not).

Shape letters: `T` positions, `d` features (even); `...` any leading axes.
"""

from __future__ import annotations

import math

from keras import ops

from keras_attention import call_checks
from keras_attention import validation
from keras_attention.precision import math_dtype

__all__ = [
    "rotary_angles",
    "rotary_attention_factor",
    "rotary_embedding",
    "rotary_inverse_frequencies",
    "yarn_correction_range",
]


def yarn_correction_range(features: int, base: float, rope_scaling: dict) -> tuple[float, float]:
    """`(low, high)`: the pair indices where YaRN's ramp starts and ends.

    Pair `i` turns `L / (2π base^(2i/d))` times over the `L` original
    positions; `low` is the (fractional) `i` of `beta_fast` turns, `high` the
    `i` of `beta_slow` turns, clamped to `[0, d/2 - 1]`.
    """
    length = rope_scaling["original_max_position_embeddings"]

    def pair_turning(turns: float) -> float:
        return features * math.log(length / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_turning(rope_scaling["beta_fast"]), pair_turning(rope_scaling["beta_slow"])
    if rope_scaling["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0.0), min(high, features // 2 - 1.0)


def rotary_inverse_frequencies(
    features: int, base: float = 10000.0, rope_scaling=None, dtype: str = "float32"
):
    """`(features/2,)` angles per position in `dtype`, `θ_i = base^(-2i/features)`, scaled.

    `rope_scaling`: None, or a dict of `validation.rope_scaling` (see the module
    docstring for the three rules).
    """
    rope_scaling = validation.rope_scaling(
        "rotary_inverse_frequencies", "rope_scaling", rope_scaling
    )
    exponents = ops.arange(0, features // 2, dtype=dtype) * (2.0 / features)
    kind = None if rope_scaling is None else rope_scaling["rope_type"]
    if kind == "dynamic" and features > 2:
        base = base * rope_scaling["factor"] ** (features / (features - 2))
    inverse = ops.power(ops.cast(base, dtype), -exponents)  # (d/2,)
    if kind == "linear":
        return inverse / rope_scaling["factor"]
    if kind == "yarn":
        low, high = yarn_correction_range(features, base, rope_scaling)
        pairs = ops.arange(0, features // 2, dtype=dtype)
        interpolated = ops.clip((pairs - low) / max(high - low, 1e-3), 0.0, 1.0)  # (d/2,)
        return inverse * (1.0 - interpolated) + inverse / rope_scaling["factor"] * interpolated
    return inverse


def rotary_attention_factor(rope_scaling=None) -> float:
    """What YaRN multiplies rotated queries and keys by, `0.1 ln s + 1` (else 1).

    Both are multiplied, so the logits grow by its square: YaRN's `1/t`.
    """
    if rope_scaling is None or rope_scaling["rope_type"] != "yarn":
        return 1.0
    return 0.1 * math.log(rope_scaling["factor"]) + 1.0


def rotary_angles(
    positions, features: int, base: float = 10000.0, rope_scaling=None, dtype: str = "float32"
):
    """`(..., T, features/2)` angles in `dtype`, `position · θ_i` (`rotary_inverse_frequencies`).

    Args:
        positions: integer or float positions, `(T,)` or any `(..., T)`.
        features: `d`, the (even) number of features that will be rotated.
        base: the wavelength base (10,000 in the paper).
        rope_scaling: None, or a context-extension dict (module docstring).
    """
    positions = ops.cast(positions, dtype)
    inverse_frequencies = rotary_inverse_frequencies(features, base, rope_scaling, dtype)  # (d/2,)
    return positions[..., None] * inverse_frequencies  # (..., T, d/2)


def rotary_embedding(x, positions, base: float = 10000.0, rope_scaling=None):
    """Rotate the features of `x` `(..., T, d)` by their positions (RoPE, rotate-half).

    Args:
        x: queries or keys, `(..., T, d)` with an even `d`, e.g. `(B, H, T, dk)`.
        positions: the position of each of the `T` rows: `(T,)`, or any shape
            that broadcasts against `x.shape[:-1]` (`(B, 1, T)` for a
            `(B, H, T, d)` input). Integers or floats.
        base: the wavelength base; a positive number.
        rope_scaling: None (default), or a context-extension dict:
            `{"rope_type": "linear" | "dynamic", "factor": s}` or
            `{"rope_type": "yarn", "factor": s,
            "original_max_position_embeddings": L}` (module docstring).

    Returns:
        A tensor of `x`'s shape and dtype. The angles and the rotation are
        computed in float32 (float64 for float64 `x`), so float16 inputs
        lose no position precision.

    Raises:
        ValueError: `d` is odd, `base` is not positive, or `rope_scaling`
            is not a valid dict (a TypeError when it is not a dict).

    Example:

    >>> import numpy as np
    >>> from keras_attention.rotary import rotary_embedding
    >>> q = np.random.rand(2, 4, 5, 8).astype("float32")  # (B, H, T, dk)
    >>> tuple(rotary_embedding(q, np.arange(5)).shape)
    (2, 4, 5, 8)

    References:
        Su et al., "RoFormer: Enhanced Transformer with Rotary Position
        Embedding", 2021 (arXiv:2104.09864).
        Chen et al., "Extending Context Window of Large Language Models via
        Positional Interpolation", 2023 (arXiv:2306.15595): "linear".
        Peng et al., "YaRN: Efficient Context Window Extension of Large
        Language Models", ICLR 2024 (arXiv:2309.00071): "dynamic" (NTK-aware)
        and "yarn".
    """
    owner = "rotary_embedding"
    base = validation.positive_number(owner, "base", base)
    rope_scaling = validation.rope_scaling(owner, "rope_scaling", rope_scaling)
    x = ops.convert_to_tensor(x)
    features = call_checks.static(x.shape[-1])
    if features is None or features % 2:
        validation.fail(
            owner,
            "x",
            "a tensor whose last dimension is a known even number",
            f"a tensor of shape {tuple(x.shape)}",
        )
    dtype = math_dtype(x)
    angles = rotary_angles(positions, features, base, rope_scaling, dtype)  # (..., T, d/2)
    factor = rotary_attention_factor(rope_scaling)
    cos, sin = ops.cos(angles) * factor, ops.sin(angles) * factor
    values = ops.cast(x, dtype)
    first, second = values[..., : features // 2], values[..., features // 2 :]
    rotated = ops.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)
    return ops.cast(rotated, x.dtype)  # (..., T, d)
