"""The module paths of the flat `layers/` folder, kept importable.

Until `layers/` split by family, every layer lived in a module right under
`keras_attention.layers` (`keras_attention.layers.location_sensitive`, ...).
A `.keras` file records that path in each layer's `"module"`; Keras finds our
classes by their registered names (`"keras_attention>LocationSensitiveAttention"`,
unchanged), but a Keras that misses the name in its registry imports the
recorded module and looks the class up in it, and user code may import from
those paths. `install()` makes each former path name the module that holds
its classes now (an entry of `sys.modules`: `import` and
`importlib.import_module` both find it once `keras_attention.layers` is
imported, which importing the former path does first; the package's
`__getattr__` gives it as an attribute).
"""

import importlib
import sys

PACKAGE = "keras_attention.layers"

# former module (under keras_attention.layers) -> the module that holds its classes now
FORMER_PATHS = {
    "alignment_attention": "alignment.alignment_attention",
    "attention_rnn": "recurrent.attention_rnn",
    "attention_rnn_cell": "recurrent.attention_rnn_cell",
    "attention_rnn_memory": "recurrent.memory_in_state",
    "attention_rnn_options": "recurrent.attention_rnn_options",
    "attention_rnn_state": "recurrent.attention_rnn_state",
    "bahdanau": "content.bahdanau_attention",
    "bahdanau_monotonic": "alignment.bahdanau_monotonic_attention",
    "content_attention": "content.content_attention",
    "dynamic_convolution_attention": "alignment.dynamic_convolution_attention",
    "gmm_attention": "alignment.gmm_attention",
    "head_options": "content.head_options",
    "kv_cache": "content.kv_cache",
    "location_sensitive": "alignment.location_sensitive_attention",
    "luong": "content.luong_attention",
    "luong_local_p": "content.luong_local_p_attention",
    "luong_monotonic": "alignment.luong_monotonic_attention",
    "monotonic_base": "alignment.monotonic_attention_base",
    "multi_head": "content.multi_head",
    "scaled_dot_product": "content.scaled_dot_product",
    "stepwise_monotonic": "alignment.stepwise_monotonic_attention",
    # `positional` is still a path: the package `layers/positional/` exports both classes.
}


def module(former: str):
    """The module that holds the classes of the former module `former` now."""
    return importlib.import_module(f"{PACKAGE}.{FORMER_PATHS[former]}")


def install() -> None:
    """Register every former path in `sys.modules` as the module that replaced it."""
    for former in FORMER_PATHS:
        sys.modules.setdefault(f"{PACKAGE}.{former}", module(former))
