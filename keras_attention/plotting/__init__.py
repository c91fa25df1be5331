"""Heat-maps and an interactive HTML page for attention weights.

Static plots need matplotlib (the `plot` extra), imported lazily inside the
functions; the HTML page and `reduce_heads` need only NumPy. Figures are built
from `matplotlib.figure.Figure` with an Agg canvas, never through pyplot: they
work headless, never call `show()` and leave no open pyplot figures. Save them
with `ax.figure.savefig("attention.png")` (or `.svg`, `.pdf`).

Weights may be NumPy arrays or tensors of any Keras backend. Shape letters:
`B` batch, `H` heads, `Tq` target (query) tokens, `Tv` source (value) tokens.
Accepted shapes are `(Tq, Tv)`, `(H, Tq, Tv)` and, with `index=` picking one
example, `(B, Tq, Tv)` or `(B, H, Tq, Tv)`. Attention over an image's feature
grid, `(Tq, H', W')` (and the same with heads or a batch), is drawn over the
image by `plot_image_attention` and `save_image_attention_html`.
"""

# Split by concern: `_inputs` validates and trims the inputs of every entry
# point, `figures` draws with matplotlib, and `html_page` writes the page from
# the template, style sheet and script in `assets/` (shipped as package data).

from keras_attention.plotting._inputs import HeadSpec  # noqa: F401  (type of `head=`)
from keras_attention.plotting._inputs import reduce_heads
from keras_attention.plotting.figures import plot_attention
from keras_attention.plotting.figures import plot_heads
from keras_attention.plotting.html_page import save_attention_html
from keras_attention.plotting.html_page import save_image_attention_html
from keras_attention.plotting.image import plot_image_attention

__all__ = [
    "plot_attention",
    "plot_heads",
    "plot_image_attention",
    "reduce_heads",
    "save_attention_html",
    "save_image_attention_html",
]
