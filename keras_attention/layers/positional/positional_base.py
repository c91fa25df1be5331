"""What the positional layers share: positions, the static checks and `mode`."""

import numbers

import keras
from keras import ops

from keras_attention import validation

MODES = ("add", "encoding")


class PositionalBase(keras.layers.Layer):
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
