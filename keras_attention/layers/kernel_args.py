"""Initializer / regularizer / constraint arguments of the layers with kernels."""

import zlib

import keras


def sublayer_initializer(initializer, name):
    """A fresh copy of `initializer` for the weight or sublayer called `name`.

    A Keras 3 initializer draws the same values on every call for the same
    shape, so one instance shared by several projections makes them equal
    (`W_q = W_k = W_v`). Each weight therefore gets its own copy: an unseeded
    initializer becomes a new unseeded one (which draws its own seed, from
    the global seed of `keras.utils.set_random_seed` when one is set); a
    seeded one gets the seed derived from its own seed and `name`, so the
    same seed builds the same layer again and its projections still differ.
    An initializer with a `SeedGenerator` keeps that generator, which moves
    on at every call. Callables that are not Keras initializers are kept.
    """
    if not isinstance(initializer, keras.initializers.Initializer):
        return initializer
    config = initializer.get_config()
    seed = config.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        config["seed"] = zlib.crc32(f"{seed}/{name}".encode()) % (2**31 - 1)
    elif seed is not None:  # a SeedGenerator: share it, it advances per call
        config["seed"] = initializer.seed
    return type(initializer).from_config(config)


class KernelArgsMixin:
    """The six kernel/bias arguments: stored as public attributes, serialized
    in the config, and handed to every sublayer and weight as its own
    initializer (`sublayer_initializer`)."""

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
        """A `Dense` sublayer with initializers of its own, built now (when
        `input_dim` is given) with our dtype policy."""
        dense = keras.layers.Dense(
            units,
            use_bias=use_bias,
            name=name,
            dtype=self.dtype_policy,
            kernel_initializer=sublayer_initializer(self.kernel_initializer, name),
            bias_initializer=sublayer_initializer(self.bias_initializer, f"{name}/bias"),
            kernel_regularizer=self.kernel_regularizer,
            bias_regularizer=self.bias_regularizer,
            kernel_constraint=self.kernel_constraint,
            bias_constraint=self.bias_constraint,
        )
        if input_dim is not None:
            dense.build((None, input_dim))
        return dense

    def _score_vector_weight(self, name, units):
        """The `(units,)` vector `v` of an additive score, initialized as the
        kernel of a `Dense(units -> 1)`: any kernel initializer applies (an
        orthogonal one gives a unit vector), and `v` gets its own seed."""
        initializer = sublayer_initializer(self.kernel_initializer, name)

        def as_column(shape, dtype=None):
            return keras.ops.reshape(initializer((shape[0], 1), dtype=dtype), shape)

        return self.add_weight(
            name=name,
            shape=(units,),
            initializer=as_column,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )

    def _bias_weight(self, name, units):
        """A `(units,)` bias with an initializer of its own."""
        return self.add_weight(
            name=name,
            shape=(units,),
            initializer=sublayer_initializer(self.bias_initializer, name),
            regularizer=self.bias_regularizer,
            constraint=self.bias_constraint,
        )

    def _kernel_config(self):
        serializers = {
            "initializer": keras.initializers.serialize,
            "regularizer": keras.regularizers.serialize,
            "constraint": keras.constraints.serialize,
        }
        return {
            name: serializers[name.split("_")[1]](getattr(self, name)) for name in self._KERNEL_ARGS
        }
