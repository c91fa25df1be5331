"""`SinusoidalPositionalEncoding`: fixed sines and cosines of each position."""

import keras
from keras import ops

from keras_attention import call_checks
from keras_attention import validation
from keras_attention.layers.positional.positional_base import PositionalBase


@keras.saving.register_keras_serializable(package="keras_attention")
class SinusoidalPositionalEncoding(PositionalBase):
    """Fixed sinusoidal positional encoding (Vaswani et al., 2017).

    ```text
    PE[pos, 2i]   = sin(pos / max_wavelength^(2i/d))
    PE[pos, 2i+1] = cos(pos / max_wavelength^(2i/d))
    ```

    Sines at even features, cosines at odd ones (the paper's interleaved
    layout); an odd `d` ends with a sine. The angles are computed in
    float32 and the result cast to the layer's compute dtype. No weights, any
    sequence length.

    Args:
        max_wavelength: the base of the wavelengths (10,000 in the paper); a
            positive number.
        mode: `"add"` (default) returns `inputs + PE`; `"encoding"` returns
            `PE` broadcast to the inputs' shape.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(B, T, d)`.
        start_index: position of the first row, a non-negative Python int or
            a scalar integer tensor (a decoding step at position `t` passes
            `start_index=t`). Default 0.
        positions: optional integer positions `(T,)` or `(B, T)`; replaces
            `start_index`.

    Returns:
        `(B, T, d)` in the compute dtype; the inputs' Keras mask passes through.

    Example:

    >>> import numpy as np
    >>> from keras_attention import SinusoidalPositionalEncoding
    >>> x = np.zeros((1, 3, 4), "float32")
    >>> encoding = SinusoidalPositionalEncoding()(x)
    >>> np.round(np.asarray(encoding)[0, 1], 4)    # sin 1, cos 1, sin 0.01, cos 0.01
    array([0.8415, 0.5403, 0.01  , 1.    ], dtype=float32)

    References:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017, section 3.5.
    """

    def __init__(self, max_wavelength=10000.0, mode="add", **kwargs):
        super().__init__(mode=mode, **kwargs)
        self.max_wavelength = validation.positive_number(
            type(self).__name__, "max_wavelength", max_wavelength
        )

    def call(self, inputs, start_index=0, positions=None):
        start_index = self._check_inputs(inputs, start_index, positions)
        features = call_checks.static(inputs.shape[-1])
        if features is None:
            validation.fail(
                self._owner,
                "inputs",
                "a known feature size (last dimension)",
                f"shape {tuple(inputs.shape)}",
            )
        position = ops.cast(self._positions(inputs, start_index, positions), "float32")
        feature = ops.arange(features, dtype="int32")  # (d,)
        even = ops.equal(feature % 2, 0)
        exponent = ops.cast(feature - feature % 2, "float32") / features  # 2i/d, (d,)
        inverse_wavelengths = ops.power(ops.cast(self.max_wavelength, "float32"), -exponent)
        angles = position[..., None] * inverse_wavelengths  # (..., T, d)
        return self._output(inputs, ops.where(even, ops.sin(angles), ops.cos(angles)))

    def get_config(self):
        config = super().get_config()
        config.update(max_wavelength=self.max_wavelength)
        return config
