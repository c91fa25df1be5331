"""benchmarks/train_step.py: the example's configurations timed in turn, costs against the first."""

import importlib.util
import sys

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based", allow_module_level=True)

pytest.importorskip("tensorflow")

import tiny

BENCHMARKS = tiny.ROOT / "benchmarks"


def write_dictionary(path, count):
    """Made-up words (digits as letters) spelled out as one phoneme a letter."""
    letters, phonemes = "abcdefghij", ("AA", "B", "K", "D", "EH", "F", "G", "HH", "IY", "JH")
    lines = [
        f"{''.join(letters[int(d)] for d in f'{i:03d}')} "
        + " ".join(phonemes[int(d)] for d in f"{i:03d}")
        for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def benchmark():
    sys.path.insert(0, str(BENCHMARKS))  # the script imports its folder's measure.py
    try:
        spec = importlib.util.spec_from_file_location("train_step", BENCHMARKS / "train_step.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_each_configuration_trains_on_its_batches_and_costs_against_the_first(
    benchmark, tmp_path, capsys
):
    dictionary = write_dictionary(tmp_path / "words.dict", count=200)
    small = "--units 8 --embedding-dim 8 --batch-size 16"
    results = benchmark.main(
        ["--dataset", f"dict:{dictionary}", "--max-examples", "200", "--batches", "2",
         "--rounds", "2", "--config", f"small={small}",
         "--config", f"wide={small.replace('--units 8', '--units 64')}"]
    )  # fmt: skip
    assert list(results) == ["small", "wide"]
    assert results["small"]["cost_ratio"] == 1.0
    for row in results.values():
        assert row["ms_per_step"] > 0 and row["us_per_example"] > 0
    expected = results["wide"]["us_per_example"] / results["small"]["us_per_example"]
    assert results["wide"]["cost_ratio"] == pytest.approx(expected, rel=0.01)
    assert "wide" in capsys.readouterr().out


@pytest.mark.parametrize("config", ["=--units 8", "no-equals-sign"])
def test_a_configuration_without_a_name_is_a_usage_error(benchmark, config, capsys):
    with pytest.raises(SystemExit) as error:
        benchmark.main(["--config", config])
    assert error.value.code == 2
    assert "Expected --config NAME=FLAGS" in capsys.readouterr().err
