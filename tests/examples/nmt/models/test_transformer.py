"""The example's Transformer: blocks against NumPy, cached decoding, search, saving, export."""

import keras
import numpy as np
import pytest
import tiny
from keras.ops import convert_to_numpy as to_numpy

from examples.nmt.models.decoding import search_start
from examples.nmt.models.transformer import EncoderBlock
from examples.nmt.models.transformer import build_transformer
from examples.nmt.text import special
from keras_attention import decoding

SOURCE, TARGET_IN, HEADS = tiny.SOURCE, tiny.TARGET_IN, tiny.HEADS


def tiny_transformer(alignment_layer=-1, layers=2):
    return tiny.tiny_model("transformer", alignment_layer=alignment_layer, layers=layers)


def _layer_norm(x, layer):
    gamma, beta = (to_numpy(w) for w in layer.weights)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + layer.epsilon) * gamma + beta


def _dense(x, layer):
    kernel, bias = (to_numpy(w) for w in layer.weights)
    return x @ kernel + bias


def _multi_head(x, mask, layer):
    """NumPy self-attention of ``(B, T, d)`` over its real tokens, as Vaswani et al."""
    q, k, v = (_dense(x, d) for d in (layer.query_dense, layer.key_dense, layer.value_dense))
    b, t, _ = x.shape
    h, dk = layer.num_heads, layer.key_dim
    q, k, v = (a.reshape(b, t, h, dk).transpose(0, 2, 1, 3) for a in (q, k, v))
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk)  # (B, H, T, T)
    logits = np.where(mask[:, None, None, :], logits, -np.inf)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    context = (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, h * dk)
    return _dense(context, layer.output_dense)


def test_encoder_block_matches_a_numpy_pre_layer_norm_block(rng):
    block = EncoderBlock(d_model=8, num_heads=HEADS, ff_dim=16)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[True] * 5, [True, True, True, False, False]])
    got = to_numpy(block(x, padding_mask=mask))
    h = x + _multi_head(_layer_norm(x, block.attention_norm), mask, block.self_attention)
    inner = np.maximum(_dense(_layer_norm(h, block.ff_norm), block.ff_inner), 0.0)
    expected = h + _dense(inner, block.ff_outer)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_decoder_is_causal_and_ignores_source_padding():
    model = tiny_transformer()
    logits = to_numpy(model([SOURCE, TARGET_IN]))
    changed_future = TARGET_IN.copy()
    changed_future[:, 2:] = 3
    np.testing.assert_allclose(
        to_numpy(model([SOURCE, changed_future]))[:, :2], logits[:, :2], atol=1e-5
    )
    padded = np.pad(SOURCE, [[0, 0], [0, 3]])  # more padding: same logits
    np.testing.assert_allclose(to_numpy(model([padded, TARGET_IN])), logits, atol=1e-5)


@pytest.mark.parametrize("alignment_layer", [0, -1])
def test_cached_step_by_step_equals_teacher_forcing(alignment_layer):
    model = tiny_transformer(alignment_layer)
    expected = to_numpy(model([SOURCE, TARGET_IN]))  # (B, Tt, V) logits
    heads = to_numpy(model.cross_attention(SOURCE, TARGET_IN)[alignment_layer])  # (B, H, Tt, Ts)
    assert heads.shape == (3, HEADS, 4, 5)
    np.testing.assert_allclose(heads.sum(-1), 1.0, atol=1e-5)
    padding = np.broadcast_to((SOURCE == 0)[:, None, None, :], heads.shape)
    assert np.all(heads[padding] == 0)  # no head looks at padding
    state, memory = model.initial_state(SOURCE, max_length=6)
    steps, weights = [], []
    for t in range(TARGET_IN.shape[1]):
        logits, state, step_weights = model.step(TARGET_IN[:, t], state, memory, t)
        steps.append(to_numpy(logits))
        weights.append(to_numpy(step_weights))
    real = TARGET_IN != 0  # the prefix: padded steps differ by design
    np.testing.assert_allclose(np.stack(steps, 1)[real], expected[real], atol=1e-5)
    np.testing.assert_allclose(np.stack(weights, 1)[real], heads.mean(1)[real], atol=1e-6)


def test_beam_size_one_equals_greedy_and_wider_beams_score_no_worse():
    model = tiny_transformer()
    greedy = tiny.search(model, SOURCE, max_length=7)
    step, state = search_start(model, SOURCE, 7)
    beam = decoding.beam_search(step, state, special.START_ID, special.END_ID, 7, beam_size=1)
    np.testing.assert_array_equal(to_numpy(beam.ids[:, 0]), to_numpy(greedy.ids))
    np.testing.assert_allclose(
        to_numpy(beam.log_probs[:, 0]), to_numpy(greedy.log_probs), atol=1e-5
    )
    wide = tiny.search(model, SOURCE, beam_size=4, max_length=7)
    assert np.all(to_numpy(wide.log_probs) >= to_numpy(greedy.log_probs) - 1e-5)


def test_saved_and_reloaded_transformer_decodes_like_the_original(tmp_path):
    model = tiny_transformer(alignment_layer=0)
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras", compile=False)
    assert type(reloaded) is type(model) and reloaded.get_config() == model.get_config()
    expected = tiny.search(model, SOURCE, beam_size=2, max_length=5)
    got = tiny.search(reloaded, SOURCE, beam_size=2, max_length=5)
    np.testing.assert_array_equal(to_numpy(got.ids), to_numpy(expected.ids))
    np.testing.assert_allclose(to_numpy(got.attention), to_numpy(expected.attention), atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(d_model=10, num_heads=4), "num_heads dividing d_model"),
        (dict(layers=0), "layers >= 1"),
        (dict(layers=2, alignment_layer=2), "alignment_layer"),
    ],
)
def test_bad_sizes_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_transformer(12, 10, **kwargs)


def test_mixed_precision_decoding_follows_teacher_forcing():
    """mixed_float16: the caches hold float16, the logits stay float32."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = tiny_transformer()
        expected = to_numpy(model([SOURCE, TARGET_IN]))
        state, memory = model.initial_state(SOURCE, max_length=4)
        assert keras.backend.standardize_dtype(state["cache"][0][0].dtype) == "float16"
        steps = []
        for t in range(TARGET_IN.shape[1]):
            logits, state, _ = model.step(TARGET_IN[:, t], state, memory, t)
            assert keras.backend.standardize_dtype(logits.dtype) == "float32"
            steps.append(to_numpy(logits))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    real = TARGET_IN != 0
    np.testing.assert_allclose(np.stack(steps, 1)[real], expected[real], atol=2e-2)
