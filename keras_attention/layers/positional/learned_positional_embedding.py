"""`LearnedPositionalEmbedding`: a learned table of position vectors."""

import keras
from keras import ops

from keras_attention import call_checks
from keras_attention import validation
from keras_attention.layers.kernel_args import sublayer_initializer
from keras_attention.layers.positional.positional_base import PositionalBase


@keras.saving.register_keras_serializable(package="keras_attention")
class LearnedPositionalEmbedding(PositionalBase):
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
        length = call_checks.static(inputs.shape[1])
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
