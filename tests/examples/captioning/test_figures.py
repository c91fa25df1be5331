"""The word-by-word overlay: one panel per written token, the end token only when written."""

import numpy as np
import pytest

from examples.captioning.evaluate import draw

pytestmark = pytest.mark.backend_independent


@pytest.mark.parametrize("caption, panels", [("12", ["1", "2", "</s>"]), ("1234", list("1234"))])
def test_one_panel_per_written_token(tmp_path, caption, panels, monkeypatch):
    import keras_attention

    seen = {}
    original = keras_attention.plot_image_attention

    def spy(image, weights, tokens, **kwargs):
        seen["tokens"], seen["shape"] = list(tokens), np.shape(weights)
        return original(image, weights, tokens, **kwargs)

    monkeypatch.setattr(keras_attention, "plot_image_attention", spy)
    attention = np.full((4, 6, 16), 1 / 96)  # a search of 4 steps; "1234" never ended
    draw(np.zeros((24, 64), "uint8"), attention, caption, str(tmp_path / "a"), "title")
    assert seen["tokens"] == panels and seen["shape"] == (len(panels), 6, 16)
    assert (tmp_path / "a.png").is_file() and (tmp_path / "a.html").is_file()
