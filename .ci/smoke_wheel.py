"""Smoke test of the installed wheel; .ci/release runs it in a fresh virtual environment.

Run it from a folder outside the repository, with KERAS_BACKEND set and `python -I`, so
that only the environment's site-packages can provide `keras_attention`. It checks
where the package came from, runs one layer, saves and reloads a `.keras` file, writes
an HTML attention page from the installed assets, and prints the version.
"""

import importlib.metadata
import importlib.resources
import importlib.util
import pathlib
import sys
import sysconfig
import tempfile

import keras
import numpy as np

import keras_attention

DISTRIBUTION = "keras-attention-layers"
BACKENDS = ("tensorflow", "jax", "torch")


def check_environment() -> pathlib.Path:
    """The package comes from this environment's site-packages; no other backend is there."""
    package = pathlib.Path(keras_attention.__file__).resolve().parent
    site = pathlib.Path(sysconfig.get_paths()["purelib"]).resolve()
    if not package.is_relative_to(site):
        sys.exit(f"keras_attention was imported from {package}, not from {site}")
    others = [
        name
        for name in BACKENDS
        if name != keras.backend.backend() and importlib.util.find_spec(name) is not None
    ]
    if others:
        sys.exit(f"expected only the {keras.backend.backend()} backend; also found {others}")
    return package


def check_layer() -> np.ndarray:
    """One masked layer call: weights sum to 1 and padded keys get exactly 0."""
    rng = np.random.default_rng(0)
    query = rng.normal(size=(2, 3, 8)).astype("float32")
    value = rng.normal(size=(2, 5, 8)).astype("float32")
    value_mask = np.array([[True] * 5, [True, True, True, False, False]])
    layer = keras_attention.BahdanauAttention(units=16)
    context, weights = layer(query, value, value_mask=value_mask, return_attention_scores=True)
    weights = keras.ops.convert_to_numpy(weights)
    assert tuple(context.shape) == (2, 3, 8), context.shape
    assert weights.shape == (2, 3, 5), weights.shape
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    assert np.all(weights[1, :, 3:] == 0), weights[1]
    return weights


def check_saving(folder: pathlib.Path) -> None:
    """A model with a layer of the package survives a `.keras` round trip."""
    query = keras.Input((None, 8), name="query")
    value = keras.Input((None, 8), name="value")
    context = keras_attention.MultiHead(num_heads=2, key_dim=4)(query, value)
    model = keras.Model([query, value], context)
    path = folder / "model.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)  # safe mode: the import registered the classes
    rng = np.random.default_rng(1)
    inputs = [rng.normal(size=(2, 4, 8)).astype("float32") for _ in range(2)]
    expected = keras.ops.convert_to_numpy(model(inputs))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(reloaded(inputs)), expected, atol=1e-6)


def check_html_page(weights: np.ndarray, folder: pathlib.Path) -> None:
    """The page inlines the CSS and JavaScript shipped in the wheel."""
    page = keras_attention.save_attention_html(
        weights,
        ["le", "chat", "noir", "<pad>", "<pad>"],
        ["the", "black", "cat"],
        folder / "attention.html",
        index=1,
        source_length=3,
    )
    text = page.read_text(encoding="utf-8")
    assets = importlib.resources.files("keras_attention") / "plotting" / "assets"
    for name in ("attention.css", "attention.js"):
        assert (assets / name).read_text(encoding="utf-8") in text, name
    assert "ka-cell-2-2" in text and "ka-cell-0-3" not in text


def main() -> None:
    package = check_environment()
    version = importlib.metadata.version(DISTRIBUTION)
    assert version == keras_attention.__version__, (version, keras_attention.__version__)
    weights = check_layer()
    with tempfile.TemporaryDirectory() as folder:
        check_saving(pathlib.Path(folder))
        check_html_page(weights, pathlib.Path(folder))
    print(
        f"{DISTRIBUTION} {version} from {package}, Keras {keras.__version__} on "
        f"{keras.backend.backend()}: layer, .keras round trip and HTML page OK"
    )


if __name__ == "__main__":
    main()
