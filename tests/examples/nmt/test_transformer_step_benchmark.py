"""benchmarks/transformer_step.py: the Transformer with our MultiHead and with Keras's, in turn."""

import contextlib
import importlib.util
import io
import json
import sys

import keras
import numpy as np
import pytest
import tiny

import keras_attention

BENCHMARKS = tiny.ROOT / "benchmarks"
TINY = ["--batch-size", "4", "--length", "8", "--batches", "2", "--steps", "2", "--warmup", "1",
        "--flags", "--d-model 16 --num-heads 2 --ff-dim 32 --vocab-size 40 --layers 1"]  # fmt: skip


@pytest.fixture(scope="module")
def benchmark():
    sys.path.insert(0, str(BENCHMARKS))  # the script imports its folder's measure.py
    try:
        spec = importlib.util.spec_from_file_location(
            "transformer_step", BENCHMARKS / "transformer_step.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def run(benchmark):
    """``main``'s results and what it printed: one run (tracing two train steps is most of it)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        results = benchmark.main(TINY)
    return results, printed.getvalue()


def test_prints_both_models_and_the_ratio(benchmark, run):
    results, out = run
    models = results["models"]
    assert list(models) == [benchmark.OURS, benchmark.KERAS]
    assert models[benchmark.OURS]["parameters"] == models[benchmark.KERAS]["parameters"]
    for name, row in models.items():
        assert row["ms_per_step"] > 0
        assert f"{name} " in out
    expected = models[benchmark.OURS]["ms_per_step"] / models[benchmark.KERAS]["ms_per_step"]
    assert results["ratio"] == pytest.approx(expected, rel=0.05, abs=0.01)
    assert f"ratio ours / Keras: {results['ratio']:.3f}x" in out
    assert f"{keras.backend.backend()}: batch 4, length 8, vocabulary 40, median of 2" in out


def test_json_is_one_line(benchmark, run, capsys):
    results, _ = run
    benchmark.print_results(results, as_json=True)
    assert json.loads(capsys.readouterr().out) == results


def test_the_models_differ_only_in_their_attention_layers(benchmark):
    args = benchmark.recipe_args(["--d-model", "16", "--num-heads", "2", "--ff-dim", "32",
                                  "--vocab-size", "40"], batch_size=4)  # fmt: skip
    models = benchmark.compiled_models(args, benchmark.synthetic_batches(1, 4, 8, 40))
    for name, kind in ((benchmark.OURS, keras_attention.MultiHead),
                       (benchmark.KERAS, benchmark.KerasMultiHead)):  # fmt: skip
        model = models[name]
        attentions = [block.self_attention for block in model.encoder_blocks] + [
            layer
            for block in model.decoder_blocks
            for layer in (block.self_attention, block.cross_attention)
        ]
        assert len(attentions) == 3 * args.layers
        for layer in attentions:
            assert isinstance(layer, kind), layer
            assert (layer.num_heads, layer.key_dim) == (2, 8)
            assert layer.dropout == args.dropout > 0
    # The patch is undone: a block made afterwards has our attention again.
    assert isinstance(benchmark.transformer.EncoderBlock(16, 2, 32).self_attention,
                      keras_attention.MultiHead)  # fmt: skip


@pytest.mark.parametrize("causal", [False, True])
def test_the_adapter_computes_our_multi_head(benchmark, causal, rng):
    """Same weights, same outputs: padding mask and causal mask mean the same in both."""
    query, value = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 6, 8))
    value = query if causal else value
    value_mask = np.arange(value.shape[1]) < np.array([[value.shape[1]], [3]])  # (B, Tv)
    ours = keras_attention.MultiHead(2, 4)
    theirs = benchmark.KerasMultiHead(2, 4)
    ours.build(query.shape, value.shape)
    theirs.build(query.shape, value.shape)
    for mine, keras_dense in zip(
        (ours.query_dense, ours.key_dense, ours.value_dense, ours.output_dense),
        (theirs._query_dense, theirs._key_dense, theirs._value_dense, theirs._output_dense),
    ):
        for variable, target in zip(mine.weights, keras_dense.weights):
            variable.assign(np.reshape(keras.ops.convert_to_numpy(target), variable.shape))
    calls = dict(value_mask=value_mask, use_causal_mask=causal, return_attention_scores=True)
    context, weights = ours(query, value, **calls)
    expected_context, expected_weights = theirs(query, value, **calls)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(context), keras.ops.convert_to_numpy(expected_context), atol=1e-5
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(weights), keras.ops.convert_to_numpy(expected_weights), atol=1e-5
    )
