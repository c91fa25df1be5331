"""The greedy search's end guard: END only once the attention has reached the end of the
audio, and nothing else once it stops there (against a NumPy reference, and on a fresh
model's search)."""

import dataclasses

import keras
import numpy as np
import pytest

from examples.common import recipes
from examples.speech import evaluate
from examples.speech import model as listener
from examples.speech import search
from examples.speech.config import RECIPES_DIR
from examples.speech.config import Config
from examples.speech.data import END

TINY = recipes.load(Config, f"{RECIPES_DIR}/tiny.toml")


def reference_guard(logits, weights, previous, mask, window):
    """A loop over rows: which tokens each row may emit."""
    out = logits.copy()
    for row in range(len(logits)):
        peak = int(np.argmax(weights[row]))
        last = int(mask[row].sum()) - 1
        if peak < last - window:
            out[row, END] = -1e9
        stalled = peak >= last - window and peak <= int(np.argmax(previous[row]))
        if stalled:
            out[row, [t for t in range(logits.shape[1]) if t != END]] = -1e9
    return out


@pytest.mark.parametrize("window", [0, 2, 5])
def test_end_guard_against_a_loop(window):
    rng = np.random.default_rng(window)
    rows, steps = 16, 12
    logits = rng.standard_normal((rows, 13)).astype("float32")
    counts = rng.integers(9, steps + 1, rows)
    mask = np.arange(steps)[None, :] < counts[:, None]
    weights = rng.random((rows, steps)).astype("float32") * mask
    # every peak position relative to the end, from far before it to the end itself
    for row in range(rows):
        weights[row, max(0, counts[row] - 1 - row % 8)] += 2.0
    # the previous token's peak: one position before, or the same (a stalled attention)
    previous = np.zeros_like(weights)
    for row in range(rows):
        previous[row, int(np.argmax(weights[row])) - (row // 8 == 0)] = 1.0
    found = search.end_guard(logits, weights, previous, mask, window)
    expected = reference_guard(logits, weights, previous, mask, window)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(found), expected)
    # the cases all occur: END blocked, END forced (stalled), either (moving near the end)
    blocked = expected[:, END] < -1e8
    forced = (expected < -1e8).sum(1) == 12
    assert blocked.any() and forced.any() and (~blocked & ~forced).any()


@pytest.mark.parametrize(
    "attention, window",
    [("location_sensitive", None), ("location_sensitive", 1), ("bahdanau", 1)],
)
def test_a_fresh_models_search_ends_only_at_the_end_of_the_audio(attention, window):
    """Content-only attention (bahdanau) decodes without the guard."""
    keras.utils.set_random_seed(3)
    model = listener.build_model(dataclasses.replace(TINY, attention=attention, end_window=window))
    rng = np.random.default_rng(0)
    waveform = (0.1 * rng.standard_normal((6, 6000))).astype("float32")
    lengths = np.array([6000, 5000, 4000, 3000, 2500, 2000], "int32")
    # a fresh model's END logit dominates from the first step: without the guard it ends at once
    bias = model.output_layer.bias
    bias.assign(keras.ops.convert_to_numpy(bias) + 10.0 * (np.arange(13) == END))
    found = evaluate.transcribe_arrays(model, waveform, lengths, 8)
    _, mask = model.encode(waveform, lengths)
    last = keras.ops.convert_to_numpy(mask).sum(-1) - 1
    peaks = found["attention"].argmax(-1)  # (B, T)
    for row in range(len(lengths)):
        emitted = int(found["length"][row])
        if window is None or attention in listener.CONTENT_ONLY:
            assert emitted == 1  # END first
            continue
        tokens = found["tokens"][row, :emitted]
        assert tokens[-1] == END and peaks[row, emitted - 1] >= last[row] - window
        stalled = (peaks[row, 1:emitted] <= peaks[row, : emitted - 1]) & (
            peaks[row, 1:emitted] >= last[row] - window
        )
        assert not stalled[: emitted - 2].any()  # no digit where the attention stopped


def test_end_window_is_checked_and_older_models_have_none():
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="Expected end_window a non-negative int"):
            listener.Listener(end_window=bad)
    config = listener.build_model(TINY).get_config()
    del config["end_window"]  # a model saved before the setting
    assert listener.Listener.from_config(config).settings["end_window"] is None
    assert evaluate.parse_end_window("3") == 3
    assert evaluate.parse_end_window("none") is None
    with pytest.raises(evaluate.runs.RunError, match="expected a non-negative int"):
        evaluate.parse_end_window("-2")
