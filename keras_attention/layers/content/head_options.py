"""`MultiHead`'s options of today's Transformers: RoPE scaling, QK-norm, soft cap, gate.

The mixin holds their arguments, checks and weights; the math is in pure
functions (`keras_attention.rotary`, `keras_attention.heads`,
`scores.soft_cap`). Where each acts, in the order of a call:

```text
q, k = W_q x, W_k m                     (B, H, T, dk) per head
q, k = rms_normalize(q, g_q), rms_normalize(k, g_k)         qk_norm=True
q, k = rotary_embedding(q|k, positions, base, rope_scaling)  rotary=True
s = soft_cap(q kᵀ / √dk, c)                                logit_soft_cap=c
context = softmax(masked s) v            (B, Tq, H·dv) once merged
context = context · sigmoid(W_g x)                          use_gate=True
out = W_o context
```
"""

import keras

from keras_attention import heads
from keras_attention import rotary
from keras_attention import validation


class HeadOptionsMixin:
    """`use_gate`, `qk_norm`, `logit_soft_cap` and `rope_scaling` of `MultiHead`."""

    def _set_head_options(self, use_gate, qk_norm, logit_soft_cap, rope_scaling):
        owner = type(self).__name__
        self.use_gate = validation.flag(owner, "use_gate", use_gate)
        self.qk_norm = validation.flag(owner, "qk_norm", qk_norm)
        if logit_soft_cap is not None:
            logit_soft_cap = validation.number(owner, "logit_soft_cap", logit_soft_cap)
            if not logit_soft_cap > 0:  # NaN too
                validation.fail(
                    owner, "logit_soft_cap", "None or a positive number", logit_soft_cap
                )
            if self.implementation == "fused":
                validation.fail(
                    owner,
                    "logit_soft_cap",
                    "None with implementation='fused' (no backend's fused kernel caps "
                    "the logits with a tanh; use 'auto', 'exact' or 'chunked')",
                    logit_soft_cap,
                )
        self.logit_soft_cap = logit_soft_cap
        self.rope_scaling = validation.rope_scaling(owner, "rope_scaling", rope_scaling)
        if self.rope_scaling is not None and not self.rotary:
            validation.fail(owner, "rope_scaling", "None unless rotary=True", rope_scaling)

    def _build_head_options(self, query_features):
        if self.use_gate:
            units = self.num_heads * self._value_dim
            self.gate_dense = self._dense(units, "gate", self.use_bias, query_features)
        if self.qk_norm:
            self.query_norm = self.add_weight(
                name="query_norm", shape=(self.key_dim,), initializer="ones"
            )
            self.key_norm = self.add_weight(
                name="key_norm", shape=(self.key_dim,), initializer="ones"
            )

    def _normalized(self, x, scale):
        """`(..., dk)` queries or keys of every head, RMS-normalized with `qk_norm`."""
        return heads.rms_normalize(x, scale) if self.qk_norm else x

    def _rotated(self, x, positions):
        return rotary.rotary_embedding(x, positions, self.rotary_base, self.rope_scaling)

    def _output(self, context, query):
        """`W_o (context · sigmoid(W_g query))`: merged `(B, [Tq,] H·dv)` -> `(B, [Tq,] d)`."""
        if self.use_gate:
            context = heads.gate_context(context, self.gate_dense(query))
        # In the compute dtype on every backend (a float64 Dense on torch returns float32).
        return keras.ops.cast(self.output_dense(context), self.compute_dtype)

    def attend(self, query, key_features, value_features, *args, **kwargs):
        """Attend with memory from `project_memory`; same arguments as `call`."""
        outputs = super().attend(query, key_features, value_features, *args, **kwargs)
        if isinstance(outputs, tuple):  # (context, weights)
            return self._output(outputs[0], query), outputs[1]
        return self._output(outputs, query)

    def _head_options_config(self):
        return dict(
            use_gate=self.use_gate,
            qk_norm=self.qk_norm,
            logit_soft_cap=self.logit_soft_cap,
            rope_scaling=self.rope_scaling,
        )
