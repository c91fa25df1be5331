"""TFDS catalogue datasets: training end to end on mocked data, and the offline message."""

import time

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based (tf.data, TFDS)", allow_module_level=True)

tfds = pytest.importorskip("tensorflow_datasets")

import tiny  # noqa: E402

from examples.nmt import train  # noqa: E402
from examples.nmt.data import sources  # noqa: E402

CATALOGUE = ["ted_hrlr_translate/pt_to_en", "wmt14_translate/de-en"]


def tiny_args(name, data_dir, output_dir, *extra):
    return tiny.tiny_args(
        output_dir,
        *extra,
        dataset=name,
        data_dir=data_dir,
        examples=24,
        units=8,
        embedding_dim=4,
        batch_size=8,
        max_decode_length=6,
    )


@pytest.mark.parametrize("name", CATALOGUE)
def test_train_runs_end_to_end_on_a_mocked_catalogue_dataset(name, tmp_path):
    tiny.write_tfds_metadata(tmp_path / "tfds", name)
    out = tmp_path / "run"
    # The export is the same for every source: the first dataset runs it.
    exports = name == CATALOGUE[0]
    extra = () if exports else ("--no-export",)
    with tfds.testing.mock_data(num_examples=24, data_dir=str(tmp_path / "tfds")):
        metrics = train.main(tiny_args(name, tmp_path / "tfds", out, *extra))
    assert metrics["examples"] == 24 and 0.0 <= metrics["bleu"] <= 100.0
    for output in ("model.keras", "metrics.json"):
        assert (out / output).exists(), output
    assert (out / "saved_model" / "saved_model.pb").exists() == exports
    # The supervised keys give the direction: pt -> en, de -> en. The real
    # recipe learns one SentencePiece model per language.
    source, target = (out / f"{side}_sentencepiece.model" for side in ("source", "target"))
    assert source.read_bytes() != target.read_bytes()


@pytest.fixture
def no_download(monkeypatch):
    """Fails a test that would download (or prepare) a catalogue dataset."""
    calls = []

    def refuse(self, *args, **kwargs):
        calls.append(self.name)
        raise OSError(f"no network in this test ({self.name})")

    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", refuse)
    return calls


@pytest.mark.parametrize("name", CATALOGUE)
def test_unprepared_dataset_fails_fast_with_one_line(name, tmp_path, capsys, no_download):
    start = time.perf_counter()
    with pytest.raises(SystemExit) as exit_info:
        train.main(tiny_args(name, tmp_path / "empty", tmp_path / "run"))
    seconds = time.perf_counter() - start
    assert exit_info.value.code == 2
    assert no_download == []  # not even tried
    assert seconds < 10.0
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1, errors
    message = errors[0]
    for part in (name, "not prepared", str(tmp_path / "empty"), "--download", "tfds build"):
        assert part in message, part
    assert "Traceback" not in message


def test_download_flag_is_what_prepares_an_unprepared_dataset(tmp_path, no_download):
    name = CATALOGUE[0]
    with pytest.raises(sources.DatasetNotPreparedError, match="--data-dir"):
        sources.catalogue_builder(name, str(tmp_path))
    with pytest.raises(OSError, match="no network"):
        sources.catalogue_builder(name, str(tmp_path), download=True)
    assert no_download == [name.split("/")[0]]
    tiny.write_tfds_metadata(tmp_path, name)
    assert sources.catalogue_builder(name, str(tmp_path)).is_prepared()  # prepared: used as is


def test_unknown_dataset_is_a_one_line_value_error():
    with pytest.raises(ValueError, match="Received: 'no_such_dataset_xyz'") as error_info:
        sources.catalogue_builder("no_such_dataset_xyz")
    assert "\n" not in str(error_info.value)
