"""The public API of `keras_attention`, stated once: its modules and the names each exports.

`PUBLIC` maps each public module to the names it exports, in the order the API
reference shows them. A module's `__all__` holds the same names (Python's
`from m import *`, linters and the docs read `__all__`); `tests/test_public_api.py`
checks that the two agree, that every name imports, and that every module of the
package is classified, and `docs/scripts/api_pages.py` writes `docs/api/*.md`
from this list. Changing a tuple here is changing the public API: a name
removed or moved out of its public module is a breaking change (a major
version, a CHANGELOG entry), a name added is a feature.

Everything else is internal: the modules of `INTERNAL` (with everything under
them, and any module whose name starts with `_`, this one included), and the
names of a public module that are not listed (`INTERNAL_NAMES`: helpers the
package shares between its modules, importable but free to move). Internal
code may be reorganized in any release; the public names keep their import
paths.
"""

# The layers, in the order of the API reference (docs/api/layers.md): content
# attention, alignment attention, positions, the recurrent cell and RNN, and
# the base classes to subclass.
LAYERS = (
    "BahdanauAttention",
    "LuongAttention",
    "ScaledDotProduct",
    "MultiHead",
    "LuongLocalPAttention",
    "LocationSensitiveAttention",
    "BahdanauMonotonicAttention",
    "LuongMonotonicAttention",
    "StepwiseMonotonicAttention",
    "GMMAttention",
    "DynamicConvolutionAttention",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
    "AttentionRNNCell",
    "AttentionRNN",
    "AttentionRNNState",
    "BaseAttention",
    "ContentAttention",
    "AlignmentAttention",
)

# Layers that are bases to subclass, not layers to save: Keras registers the
# user's subclass, so these are not registered serializable.
BASE_CLASSES = ("BaseAttention", "ContentAttention", "AlignmentAttention")

PLOTS = (
    "plot_attention",
    "plot_heads",
    "reduce_heads",
    "save_attention_html",
    "plot_image_attention",
    "save_image_attention_html",
)

# The public submodules, in the order of the API reference.
SUBMODULES = (
    "scores",
    "rotary",
    "ops",
    "monotonic",
    "location_relative",
    "masks",
    "memory_efficient",
    "decoding",
    "plotting",
    "saving",
)

PUBLIC = {
    "keras_attention": (*LAYERS, *PLOTS, *SUBMODULES, "__version__"),
    # The same classes as the top level, for `from keras_attention.layers import ...`.
    "keras_attention.layers": LAYERS,
    "keras_attention.scores": (
        "DotScore",
        "AdditiveScore",
        "soft_cap",
        "weight_normalized",
        "add_bias",
    ),
    "keras_attention.rotary": (
        "rotary_embedding",
        "rotary_angles",
        "rotary_inverse_frequencies",
        "rotary_attention_factor",
        "yarn_correction_range",
    ),
    "keras_attention.ops": (
        "PROBABILITY_FNS",
        "dot_product_scores",
        "additive_scores",
        "masked_softmax",
        "masked_sparsemax",
        "masked_hardmax",
        "masked_normalized_sigmoid",
        "attention_weights",
        "weighted_sum",
        "scaled_dot_product_attention",
    ),
    "keras_attention.monotonic": (
        "MODES",
        "STEPWISE_MODES",
        "safe_cumprod",
        "monotonic_attention",
        "stepwise_monotonic_attention",
    ),
    "keras_attention.location_relative": (
        "MIN_SCALE",
        "PRIOR_FLOOR",
        "gmm_parameters",
        "gmm_alignment",
        "windows",
        "windows_at",
        "convolve",
        "dynamic_convolution",
        "beta_binomial_prior",
        "prior_logits",
    ),
    "keras_attention.masks": (
        "MASKED_LOGIT",
        "padding_mask",
        "causal_mask",
        "sliding_window_mask",
        "band_rule",
        "combine_masks",
        "attention_mask_from",
        "fill_masked",
        "zero_masked",
    ),
    "keras_attention.memory_efficient": (
        "chunked_attention",
        "chunked_dot_product_attention",
        "chunked_additive_attention",
        "fused_dot_product_attention",
        "choose_implementation",
        "fused_attention_available",
        "fused_attention_refusal",
        "IMPLEMENTATIONS",
        "DEFAULT_DOT_BLOCK_SIZE",
        "DEFAULT_ADDITIVE_BLOCK_SIZE",
        "AUTO_CHUNKED_MIN_ELEMENTS",
        "AUTO_CHUNKED_MIN_ELEMENTS_JAX",
    ),
    "keras_attention.decoding": (
        "greedy_search",
        "beam_search",
        "decode",
        "sample",
        "SearchResult",
        "ensemble_step",
        "length_penalty",
        "coverage_penalty",
        "tile_state",
        "reorder_state",
        "NEG_INF",
    ),
    "keras_attention.plotting": PLOTS,
    "keras_attention.saving": ("load_model",),
}

# A package's files: their names are public from the package, and may move between its files.
_FILE_OF_DECODING = "a file of `decoding`; its names are public from `keras_attention.decoding`"
_FILE_OF_MEMORY_EFFICIENT = "a file of `memory_efficient`; its names are public from the package"
_FILE_OF_PLOTTING = "a file of `plotting`; its names are public from `keras_attention.plotting`"

# Internal modules (each with everything under it), and why each is internal.
INTERNAL = {
    "keras_attention.validation": (
        "the argument checks every layer and function shares; their messages are"
        " public behaviour, the functions are not"
    ),
    "keras_attention.call_checks": (
        "the call contract's shape, dtype and mask checks every layer shares; their"
        " messages are public behaviour, the functions are not"
    ),
    "keras_attention.precision": (
        "the dtype the sensitive math runs in, a rule of the layers and `ops`, not a tool"
    ),
    "keras_attention.heads": (
        "MultiHead's per-head transforms (QK-norm, the gate), reached through"
        " `MultiHead(qk_norm=..., use_gate=...)`"
    ),
    "keras_attention.backends": (
        "each backend's own fast forms and device questions, imported only on its"
        " backend; the public functions choose them"
    ),
    "keras_attention.layers.base": "BaseAttention's file; the class is public from the top level",
    "keras_attention.layers.content": "the content layers' files; public from the top level",
    "keras_attention.layers.alignment": "the alignment layers' files; public from the top level",
    "keras_attention.layers.positional": "the positional layers' files; public from the top level",
    "keras_attention.layers.recurrent": "the recurrent layers' files; public from the top level",
    "keras_attention.layers.grid": "the folding of grids into sequences inside the layers' call",
    "keras_attention.layers.kernel_args": "the projections' initializer, regularizer... mixin",
    "keras_attention.layers.former_paths": (
        "keeps the former flat `keras_attention.layers.<module>` paths importable"
        " for older `.keras` files and imports"
    ),
    "keras_attention.decoding.beam": _FILE_OF_DECODING,
    "keras_attention.decoding.best": _FILE_OF_DECODING,
    "keras_attention.decoding.greedy": _FILE_OF_DECODING,
    "keras_attention.decoding.loop": _FILE_OF_DECODING,
    "keras_attention.decoding.penalties": _FILE_OF_DECODING,
    "keras_attention.decoding.state": _FILE_OF_DECODING,
    "keras_attention.decoding.ensemble": _FILE_OF_DECODING,
    "keras_attention.memory_efficient.chunked": _FILE_OF_MEMORY_EFFICIENT,
    "keras_attention.memory_efficient.fused": _FILE_OF_MEMORY_EFFICIENT,
    "keras_attention.memory_efficient.paths": _FILE_OF_MEMORY_EFFICIENT,
    "keras_attention.memory_efficient.tiles": "the chunked path's tiles and passes",
    "keras_attention.memory_efficient.dropout": "per-tile dropout masks of the chunked path",
    "keras_attention.plotting._inputs": "the checks and trimming of every plotting entry point",
    "keras_attention.plotting.figures": _FILE_OF_PLOTTING,
    "keras_attention.plotting.html_page": _FILE_OF_PLOTTING,
    "keras_attention.plotting.image": _FILE_OF_PLOTTING,
    "keras_attention._api": "this list, read by the tests and the API reference's generator",
}

# Names a public module defines (or imports from another module of the
# package) that are not part of its API: helpers the package shares.
INTERNAL_NAMES = {
    "keras_attention.masks": (
        "window_sides",  # the band of a validated `window`, for the paths
        "key_band",
        "visible_keys",
        "guard_non_finite",  # non-finite keys and values, for the exact and chunked paths
        "poison",
        "guard_memory",
    ),
    "keras_attention.scores": ("append_feature",),  # a tile's extra column (chunked path)
    "keras_attention.ops": ("MASKED_LOGIT",),  # imported; public in `keras_attention.masks`
}
