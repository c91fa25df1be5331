"""Utterance assembly, gold spans, WAV reading, splits and the download path, in NumPy."""

import hashlib
import io
import os
import wave
import zipfile

import numpy as np
import pytest

from examples.common.runs import RunError
from examples.speech import data

pytestmark = pytest.mark.backend_independent


def wav_bytes(samples, rate=8000, width=2, channels=1) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as file:
        file.setnchannels(channels)
        file.setsampwidth(width)
        file.setframerate(rate)
        file.writeframes(np.asarray(samples).tobytes())
    return buffer.getvalue()


def test_join_clips_places_each_clip_after_its_gap():
    waveform, spans = data.join_clips(
        [np.ones(3, "float32"), np.full(2, 2.0, "float32")], gaps=[1, 2, 0]
    )
    np.testing.assert_array_equal(waveform, [0, 1, 1, 1, 0, 0, 2, 2])
    np.testing.assert_array_equal(spans, [[1, 4], [6, 8]])


def test_join_clips_wants_one_gap_more_than_clips():
    with pytest.raises(ValueError, match="one gap more than clips"):
        data.join_clips([np.ones(3)], gaps=[1])


def clip(digit, speaker="a", take=0, size=4):
    """A clip whose samples say its digit and speaker: ``digit + 1`` (a) or ``digit + 11`` (b)."""
    value = digit + (1 if speaker == "a" else 11)
    return data.Clip(digit, speaker, take, np.full(size, value, "float32"))


def test_utterances_join_one_speakers_clips_at_their_spans():
    clips = [clip(d, s, size=3 + d) for s in "ab" for d in range(10)]
    rng = np.random.default_rng(0)
    utterances = data.make_utterances(clips, 20, (2, 3), rng, gap_seconds=(0.001, 0.002))
    assert {len(u.digits) for u in utterances} == {2, 3}
    for utterance in utterances:
        speakers = set()
        for digit, (start, end) in zip(utterance.digits, utterance.spans):
            assert end - start == digit + 3  # the whole clip of that digit
            (value,) = set(utterance.waveform[start:end].tolist())
            speakers.add("a" if value == digit + 1 else "b" if value == digit + 11 else "?")
            assert 8 <= start and utterance.waveform[start - 8 : start].max() == 0  # a gap
        assert speakers in ({"a"}, {"b"})


def test_to_arrays_pads_and_shifts_the_tokens():
    first = data.Utterance(np.ones(5, "float32"), (4, 0), np.array([[0, 2], [3, 5]]))
    second = data.Utterance(np.ones(3, "float32"), (9,), np.array([[1, 3]]))
    arrays = data.to_arrays([first, second])
    np.testing.assert_array_equal(arrays["lengths"], [5, 3])
    np.testing.assert_array_equal(arrays["waveform"][1], [1, 1, 1, 0, 0])
    np.testing.assert_array_equal(arrays["decoder_in"], [[1, 7, 3], [1, 12, 0]])
    np.testing.assert_array_equal(arrays["targets"], [[7, 3, 2], [12, 2, 0]])
    np.testing.assert_array_equal(arrays["spans"][1], [[1, 3], [-1, -1]])
    np.testing.assert_array_equal(arrays["digit_count"], [2, 1])


def test_read_wav_scales_16_bit_and_averages_channels():
    samples, rate = data.read_wav(wav_bytes(np.array([16384, -32768], "<i2")))
    assert rate == 8000
    np.testing.assert_allclose(samples, [0.5, -1.0])
    stereo = np.array([[16384, 0], [-16384, -16384]], "<i2")
    samples, _ = data.read_wav(wav_bytes(stereo, channels=2))
    np.testing.assert_allclose(samples, [0.25, -0.5])
    samples, _ = data.read_wav(wav_bytes(np.array([128, 192], "uint8"), width=1))
    np.testing.assert_allclose(samples, [0.0, 0.5])


def test_read_wav_names_the_file_of_empty_or_corrupt_audio(tmp_path):
    with pytest.raises(ValueError, match="empty.wav: an empty recording"):
        data.read_wav(wav_bytes(np.array([], "<i2")), "empty.wav")
    with pytest.raises(ValueError, match="Expected a PCM WAV file.*noise.wav"):
        data.read_wav(b"RIFF not really a wave file", "noise.wav")
    path = tmp_path / "cut.wav"
    path.write_bytes(wav_bytes(np.arange(100, dtype="<i2"))[:30])
    with pytest.raises(ValueError, match="cut.wav"):
        data.read_wav(str(path))
    with pytest.raises(ValueError, match="24-bit"):
        data.read_wav(wav_bytes(np.zeros(6, "uint8"), width=3), "wide.wav")


def test_resample_keeps_a_tone_at_its_frequency():
    pytest.importorskip("scipy")
    seconds = np.arange(16000) / 16000
    tone = np.sin(2 * np.pi * 440 * seconds).astype("float32")
    resampled = data.resample(tone, 16000)
    assert resampled.shape == (8000,)
    spectrum = np.abs(np.fft.rfft(resampled))
    assert np.argmax(spectrum) == 440  # 1 Hz bins over one second
    assert data.resample(tone, 8000) is tone


def write_recordings(folder, names):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(wav_bytes(np.full(80, 1000, "<i2")))


def test_load_clips_reads_a_folder_or_a_zip(tmp_path):
    names = ["3_ann_0.wav", "7_bob_12.wav", "README.md"]
    write_recordings(tmp_path / "set" / "recordings", names[:2])
    clips = data.load_clips(str(tmp_path / "set"))
    assert [(c.digit, c.speaker, c.take) for c in clips] == [(3, "ann", 0), (7, "bob", 12)]
    with zipfile.ZipFile(tmp_path / "set.zip", "w") as archive:
        for name in names[:2]:
            archive.write(tmp_path / "set" / "recordings" / name, f"fsdd/recordings/{name}")
    zipped = data.load_clips(str(tmp_path / "set.zip"))
    assert [(c.digit, c.speaker, c.take) for c in zipped] == [(3, "ann", 0), (7, "bob", 12)]
    np.testing.assert_allclose(zipped[0].audio, 1000 / 32768)


def test_load_clips_errors_name_the_path(tmp_path):
    with pytest.raises(RunError, match="no such file or folder"):
        data.load_clips(str(tmp_path / "missing.zip"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunError, match="no recordings named"):
        data.load_clips(str(tmp_path / "empty"))
    (tmp_path / "plain.txt").write_text("hello")
    with pytest.raises(RunError, match="expected a folder of FSDD WAV files or a zip"):
        data.load_clips(str(tmp_path / "plain.txt"))


def test_splits_keep_the_datasets_takes_and_hold_a_speaker_out():
    clips = [clip(1, speaker, take) for speaker in ("a", "b") for take in (0, 4, 5, 9, 10, 49)]
    splits = data.split_clips(clips, "b")
    assert [(c.speaker, c.take) for c in splits["test"]] == [("a", 0), ("a", 4)]
    assert [(c.speaker, c.take) for c in splits["validation"]] == [("a", 5), ("a", 9)]
    assert [(c.speaker, c.take) for c in splits["train"]] == [("a", 10), ("a", 49)]
    assert {c.speaker for c in splits["held_out"]} == {"b"} and len(splits["held_out"]) == 6
    with pytest.raises(RunError, match="held_out_speaker 'c' has no recordings; speakers: a, b"):
        data.split_clips(clips, "c")


def test_fetch_downloads_a_pinned_archive_and_checks_its_hash(tmp_path):
    """The download path, pointed at a local archive (a file:// origin) instead of GitHub."""
    write_recordings(tmp_path / "src" / "recordings", ["5_ann_1.wav"])
    archive = tmp_path / "fsdd-test.zip"
    with zipfile.ZipFile(archive, "w") as file:
        file.write(tmp_path / "src" / "recordings" / "5_ann_1.wav", "fsdd/recordings/5_ann_1.wav")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    cache = tmp_path / "cache"
    folder = data.fetch(archive.as_uri(), digest, cache_dir=str(cache))
    assert os.path.isdir(folder)
    assert [(c.digit, c.speaker) for c in data.load_clips(folder)] == [(5, "ann")]
    with pytest.raises(RunError, match="pass --data path/to/fsdd.zip"):
        data.fetch(archive.as_uri(), "0" * 64, cache_dir=str(tmp_path / "other"))
