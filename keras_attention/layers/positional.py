"""Absolute positional encodings for Transformer inputs: fixed sinusoids and a learned table.

Both layers take `(B, T, d)` inputs and, by default, return them with the
encoding of each row's position added (`mode="add"`); `mode="encoding"`
returns the encoding alone, broadcast to the inputs' shape. Positions are
`start_index + t` for row `t`, so a decoding step at position `t` gets row
`t` of the encoding, or explicit integer `positions` `(T,)` or `(B, T)`.
A Keras mask on the inputs passes through unchanged.

For rotary encodings, applied to queries and keys inside attention, see
`keras_attention.rotary` and `MultiHead(rotary=True)`.
"""

import numbers

import keras
from keras import ops

from keras_attention import validation
from keras_attention.layers.kernel_args import sublayer_initializer

MODES = ("add", "encoding")


class _PositionalBase(keras.layers.Layer):
    """Positions, the static checks and the `mode` shared by the two layers."""

    def __init__(self, mode="add", **kwargs):
        super().__init__(**kwargs)
        self.mode = validation.choice(type(self).__name__, "mode", mode, MODES)
        self.supports_masking = True

    @property
    def _owner(self):
        return f"{type(self).__name__} (layer '{self.name}')"

    def _check_inputs(self, inputs, start_index, positions):
        if len(inputs.shape) != 3:
            validation.fail(
                self._owner,
                "inputs",
                "a rank-3 tensor (batch, time, features)",
                f"shape {tuple(inputs.shape)}",
            )
        if isinstance(start_index, numbers.Integral) or not hasattr(start_index, "shape"):
            start_index = validation.integer(self._owner, "start_index", start_index, minimum=0)
        else:  # checked, but kept in its own integer dtype
            validation.int_or_scalar_tensor(self._owner, "start_index", start_index, minimum=0)
        if positions is not None and len(positions.shape) not in (1, 2):
            validation.fail(
                self._owner,
                "positions",
                "a (time,) or (batch, time) integer tensor",
                f"shape {tuple(positions.shape)}",
            )
        return start_index

    def _positions(self, inputs, start_index, positions):
        """int32 `(T,)` or `(B, T)` positions of the rows of `inputs`."""
        if positions is not None:
            return ops.cast(positions, "int32")
        length = ops.shape(inputs)[1]
        return ops.cast(start_index, "int32") + ops.arange(length, dtype="int32")  # (T,)

    def _output(self, inputs, encoding):
        encoding = ops.cast(encoding, self.compute_dtype)  # (T, d) or (B, T, d)
        if self.mode == "add":
            return ops.cast(inputs, self.compute_dtype) + encoding
        return ops.broadcast_to(encoding, ops.shape(inputs))

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(mode=self.mode)
        return config


@keras.saving.register_keras_serializable(package="keras_attention")
class SinusoidalPositionalEncoding(_PositionalBase):
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
        features = validation.static(inputs.shape[-1])
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


@keras.saving.register_keras_serializable(package="keras_attention")
class LearnedPositionalEmbedding(_PositionalBase):
    """A learned table of `max_length` position vectors (Gehring et al., 2017; BERT).

    Row `t` of the inputs gets the table's row `start_index + t` (or
    `positions[t]`).

    Lengths: a sequence whose length is known when the layer is called
    (eagerly, or a static dimension under tracing) and reaches past
    `max_length` (`start_index + T > max_length` for a Python-int
    `start_index`) raises a `ValueError`. When the length or the start is
    only known at run time (a `None` time dimension under `jit`, a tensor
    `start_index`, explicit `positions`), no check can run without a
    data-dependent branch, so positions are clipped to `[0, max_length - 1]`:
    rows past the table reuse its last row, on every backend. Size
    `max_length` for the longest sequence the model will see.

    Args:
        max_length: number of positions in the table, a positive integer.
        mode: `"add"` (default) returns `inputs + table[positions]`;
            `"encoding"` returns the table rows broadcast to the inputs' shape.
        embeddings_initializer, embeddings_regularizer,
        embeddings_constraint: of the `(max_length, d)` table.
        **kwargs: base layer arguments.

    Call arguments:
        inputs: `(B, T, d)`.
        start_index: position of the first row (Python int or scalar tensor).
        positions: optional integer positions `(T,)` or `(B, T)`.

    Returns:
        `(B, T, d)` in the compute dtype; the inputs' Keras mask passes through.

    Example:

    >>> import numpy as np
    >>> from keras_attention import LearnedPositionalEmbedding
    >>> layer = LearnedPositionalEmbedding(max_length=16)
    >>> tuple(layer(np.zeros((2, 5, 8), "float32")).shape)
    (2, 5, 8)

    References:
        Gehring et al., "Convolutional Sequence to Sequence Learning", ICML 2017.
        Devlin et al., "BERT", NAACL 2019.
    """

    def __init__(
        self,
        max_length,
        mode="add",
        embeddings_initializer="glorot_uniform",
        embeddings_regularizer=None,
        embeddings_constraint=None,
        **kwargs,
    ):
        super().__init__(mode=mode, **kwargs)
        self.max_length = validation.integer(type(self).__name__, "max_length", max_length)
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.embeddings_regularizer = keras.regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = keras.constraints.get(embeddings_constraint)

    def build(self, inputs_shape):
        features = inputs_shape[-1]
        if not isinstance(features, int):
            validation.fail(
                self._owner,
                "inputs",
                "a known feature size (last dimension)",
                f"shape {tuple(inputs_shape)}",
            )
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_length, features),
            initializer=sublayer_initializer(self.embeddings_initializer, "embeddings"),
            regularizer=self.embeddings_regularizer,
            constraint=self.embeddings_constraint,
        )

    def call(self, inputs, start_index=0, positions=None):
        start_index = self._check_inputs(inputs, start_index, positions)
        length = validation.static(inputs.shape[1])
        if positions is None and length is not None and isinstance(start_index, int):
            if start_index + length > self.max_length:
                validation.fail(
                    self._owner,
                    "inputs",
                    f"at most max_length={self.max_length} positions "
                    f"(start_index + time <= {self.max_length})",
                    f"shape {tuple(inputs.shape)} with start_index={start_index}",
                )
        position = ops.clip(self._positions(inputs, start_index, positions), 0, self.max_length - 1)
        return self._output(inputs, ops.take(self.embeddings, position, axis=0))

    def get_config(self):
        config = super().get_config()
        config.update(
            max_length=self.max_length,
            embeddings_initializer=keras.initializers.serialize(self.embeddings_initializer),
            embeddings_regularizer=keras.regularizers.serialize(self.embeddings_regularizer),
            embeddings_constraint=keras.constraints.serialize(self.embeddings_constraint),
        )
        return config
