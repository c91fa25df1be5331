"""Initializer / regularizer / constraint arguments of the layers with kernels."""

import keras


class KernelArgsMixin:
    """The six kernel/bias arguments: stored as public attributes, passed to every
    `Dense` sublayer, serialized in the config."""

    _KERNEL_ARGS = (
        "kernel_initializer",
        "bias_initializer",
        "kernel_regularizer",
        "bias_regularizer",
        "kernel_constraint",
        "bias_constraint",
    )

    def _set_kernel_args(self, *values):
        """Store the six arguments, given in `_KERNEL_ARGS` order."""
        getters = {
            "initializer": keras.initializers.get,
            "regularizer": keras.regularizers.get,
            "constraint": keras.constraints.get,
        }
        for name, value in zip(self._KERNEL_ARGS, values, strict=True):
            setattr(self, name, getters[name.split("_")[1]](value))

    def _dense(self, units, name, use_bias=False, input_dim=None):
        """A `Dense` sublayer built now (when `input_dim` is given) with our policy."""
        dense = keras.layers.Dense(
            units,
            use_bias=use_bias,
            name=name,
            dtype=self.dtype_policy,
            **{arg: getattr(self, arg) for arg in self._KERNEL_ARGS},
        )
        if input_dim is not None:
            dense.build((None, input_dim))
        return dense

    def _kernel_config(self):
        serializers = {
            "initializer": keras.initializers.serialize,
            "regularizer": keras.regularizers.serialize,
            "constraint": keras.constraints.serialize,
        }
        return {
            name: serializers[name.split("_")[1]](getattr(self, name)) for name in self._KERNEL_ARGS
        }
