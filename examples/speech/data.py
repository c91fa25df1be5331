"""Recordings -> clips -> utterances of connected digits -> NumPy arrays -> batches.

The Free Spoken Digit Dataset (FSDD; Zohar Jackson and contributors, CC BY-SA
4.0) holds 3,000 clips ``{digit}_{speaker}_{take}.wav``: six speakers, 50
takes of each digit, 8 kHz mono 16-bit. ``load_clips(path)`` reads a folder
of them or a zip of one (``--data``); without a path, ``fetch()`` downloads
the archive the TFDS catalogue's ``spoken_digit`` is built from (v1.0.9,
pinned by its sha256) once through ``keras.utils.get_file``.

An utterance joins 2 to 7 clips of one speaker with silences between them
(``join_clips``): the span of each digit in the joined waveform is exact, the
gold alignment that no training step sees. ``split_clips`` keeps the
dataset's own split (takes 0-4 are test; takes 5-9 validate here) and holds
one speaker out; test utterances join only test clips.
"""

from __future__ import annotations

import dataclasses
import io
import os
import re
import wave
import zipfile
from collections.abc import Sequence

import numpy as np

from examples.common.runs import RunError
from examples.speech.config import Config

SAMPLING_RATE = 8000
# The archive TFDS's spoken_digit downloads, with the sha256 its checksums.tsv pins.
ORIGIN = "https://github.com/Jakobovski/free-spoken-digit-dataset/archive/v1.0.9.tar.gz"
ORIGIN_SHA256 = "8bc44cde129d505cbbb6b365c09f80c663f2aa77578afc634e6141a2f87100c0"
NAME = re.compile(r"(?:^|/)([0-9])_([A-Za-z]+)_([0-9]+)\.wav$")

# Output tokens: 0 pads, then start, end and the ten digits.
PAD, START, END = 0, 1, 2
VOCABULARY_SIZE = 13


def digit_token(digit: int) -> int:
    return digit + 3


@dataclasses.dataclass(frozen=True)
class Clip:
    """One recording: its digit, speaker, take and float32 samples in [-1, 1]."""

    digit: int
    speaker: str
    take: int
    audio: np.ndarray


# ------------------------------------------------------------------ WAV files
def read_wav(source: str | bytes, name: str | None = None) -> tuple[np.ndarray, int]:
    """``(samples float32 in [-1, 1], sampling rate)`` of a PCM WAV file (a path or its bytes).

    8-, 16- and 32-bit integer PCM; several channels are averaged to one.

    Raises:
        ValueError: not a PCM WAV file, or one without samples, naming the file.
    """
    name = name or (source if isinstance(source, str) else "WAV data")
    try:
        with wave.open(io.BytesIO(source) if isinstance(source, bytes) else source) as file:
            width, channels = file.getsampwidth(), file.getnchannels()
            rate, frames = file.getframerate(), file.readframes(file.getnframes())
    except (wave.Error, EOFError) as error:
        raise ValueError(
            f"Expected a PCM WAV file (8, 16 or 32-bit integer samples). Received {name}: {error}"
        ) from None
    kinds = {1: ("uint8", 128.0, 128.0), 2: ("<i2", 0.0, 32768.0), 4: ("<i4", 0.0, 2.0**31)}
    if width not in kinds:
        raise ValueError(
            f"Expected 8, 16 or 32-bit integer samples. Received {name}: {8 * width}-bit"
        )
    kind, offset, scale = kinds[width]
    usable = len(frames) // (width * channels) * width * channels
    samples = (np.frombuffer(frames[:usable], kind).astype("float32") - offset) / scale
    samples = samples.reshape(-1, channels).mean(axis=1)
    if samples.size == 0:
        raise ValueError(f"Expected audio samples. Received {name}: an empty recording")
    return samples.astype("float32"), rate


def resample(samples: np.ndarray, rate: int, target: int = SAMPLING_RATE) -> np.ndarray:
    """``samples`` at ``target`` Hz, through SciPy's polyphase filter (``resample_poly``).

    Raises:
        ValueError: another rate and SciPy is not installed.
    """
    if rate == target:
        return samples
    try:
        from scipy import signal  # noqa: PLC0415  (optional: only other rates need it)
    except ImportError:
        raise ValueError(
            f"Expected a {target} Hz recording, or SciPy installed to resample it. "
            f"Received: {rate} Hz"
        ) from None
    divisor = np.gcd(rate, target)
    return signal.resample_poly(samples, target // divisor, rate // divisor).astype("float32")


def fetch(origin: str | None = None, file_hash: str | None = None, **kwargs) -> str:
    """The recordings folder of the downloaded (or already cached) FSDD archive.

    ``keras.utils.get_file`` downloads ``origin`` (default ``ORIGIN``, with
    ``ORIGIN_SHA256``) once into ``~/.keras/datasets`` and checks its sha256
    ``file_hash``; ``kwargs`` go to it (``cache_dir``, for tests).

    Raises:
        RunError: no download (no network, or another hash), with what to pass instead.
    """
    if origin is None:
        origin, file_hash = ORIGIN, ORIGIN_SHA256
    import keras  # noqa: PLC0415  (only the download needs Keras here)

    try:
        path = keras.utils.get_file(
            origin=origin, file_hash=file_hash, extract=True, **kwargs
        )  # fmt: skip
    except Exception as error:  # get_file raises plain Exceptions for network errors
        raise RunError(
            f"could not download the Free Spoken Digit Dataset from {origin} ({error}); "
            "pass --data path/to/fsdd.zip (or a folder of its WAV files)"
        ) from None
    return path


def load_clips(path: str | None = None, max_per_speaker: int | None = None) -> list[Clip]:
    """Every ``{digit}_{speaker}_{take}.wav`` of a folder (searched through) or zip file.

    ``path`` None downloads the dataset (``fetch``). ``max_per_speaker``
    keeps, for each speaker and digit, its first takes of each split (test
    takes 0-4, validation 5-9, training 10-) up to that many clips a speaker:
    a few clips for tests.

    Raises:
        RunError: no such path, or no recordings in it.
    """
    path = fetch() if path is None else path
    if not os.path.exists(path):
        raise RunError(f"--data {path}: no such file or folder")
    entries: list[tuple[str, bytes]] = []
    if os.path.isdir(path):
        for folder, _, names in sorted(os.walk(path)):
            for name in sorted(names):
                if NAME.search(name):
                    with open(os.path.join(folder, name), "rb") as file:
                        entries.append((name, file.read()))
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            entries = [(n, archive.read(n)) for n in sorted(archive.namelist()) if NAME.search(n)]
    else:
        raise RunError(f"--data {path}: expected a folder of FSDD WAV files or a zip of one")
    if not entries:
        raise RunError(f"--data {path}: no recordings named {{digit}}_{{speaker}}_{{take}}.wav")
    keep = _kept_takes(max_per_speaker)
    clips = []
    for name, content in entries:
        digit, speaker, take = NAME.search(name).groups()
        if keep is not None and int(take) not in keep:
            continue
        samples, rate = read_wav(content, name)
        clips.append(Clip(int(digit), speaker, int(take), resample(samples, rate)))
    return clips


def _kept_takes(max_per_speaker: int | None) -> set[int] | None:
    if max_per_speaker is None:
        return None
    per_digit = max(1, max_per_speaker // 10)  # each split gets per_digit takes a digit
    return {start + index for start in (0, 5, 10) for index in range(min(per_digit, 5))}


def split_clips(clips: Sequence[Clip], held_out_speaker: str | None) -> dict[str, list[Clip]]:
    """``train`` (takes 10-49), ``validation`` (5-9), ``test`` (0-4: the dataset's own test set)
    of every speaker but ``held_out_speaker``, and ``held_out`` (all of that speaker's takes).

    Raises:
        RunError: ``held_out_speaker`` is not among the recordings' speakers.
    """
    speakers = sorted({clip.speaker for clip in clips})
    if held_out_speaker is not None and held_out_speaker not in speakers:
        raise RunError(
            f"held_out_speaker {held_out_speaker!r} has no recordings; speakers: "
            f"{', '.join(speakers)}"
        )
    splits: dict[str, list[Clip]] = {"train": [], "validation": [], "test": [], "held_out": []}
    for clip in clips:
        if clip.speaker == held_out_speaker:
            splits["held_out"].append(clip)
        else:
            splits["test" if clip.take < 5 else "validation" if clip.take < 10 else "train"].append(
                clip
            )
    return splits


# ------------------------------------------------------------------ utterances
def join_clips(audios: Sequence[np.ndarray], gaps: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Clips joined with silences: ``gaps[0]`` samples, clip 0, ``gaps[1]``, ..., ``gaps[n]``.

    Returns the waveform and the ``(n, 2)`` int32 spans ``[start, end)`` of
    each clip in it, in samples.
    """
    if len(gaps) != len(audios) + 1:
        raise ValueError(
            f"Expected one gap more than clips ({len(audios) + 1}). Received: {len(gaps)}"
        )
    parts, spans, position = [np.zeros(gaps[0], "float32")], [], gaps[0]
    for audio, gap in zip(audios, gaps[1:]):
        spans.append((position, position + len(audio)))
        parts += [np.asarray(audio, "float32"), np.zeros(gap, "float32")]
        position += len(audio) + gap
    return np.concatenate(parts), np.asarray(spans, "int32").reshape(-1, 2)


@dataclasses.dataclass(frozen=True)
class Utterance:
    waveform: np.ndarray  # (S,) float32
    digits: tuple[int, ...]
    spans: np.ndarray  # (n, 2) int32 [start, end) samples of each digit


def make_utterances(
    clips: Sequence[Clip],
    count: int,
    lengths: Sequence[int],
    rng: np.random.Generator,
    gap_seconds: tuple[float, float] = (0.05, 0.3),
    noise: float = 0.0,
) -> list[Utterance]:
    """``count`` utterances, each of one speaker's clips: a length drawn from ``lengths``,
    clips drawn with replacement, gaps uniform in ``gap_seconds``, Gaussian ``noise``."""
    by_speaker: dict[str, list[Clip]] = {}
    for clip in clips:
        by_speaker.setdefault(clip.speaker, []).append(clip)
    speakers = sorted(by_speaker)
    if not speakers:
        raise RunError("no clips to join into utterances")
    low, high = (round(seconds * SAMPLING_RATE) for seconds in gap_seconds)
    utterances = []
    for _ in range(count):
        pool = by_speaker[speakers[rng.integers(len(speakers))]]
        n = int(lengths[rng.integers(len(lengths))])
        chosen = [pool[i] for i in rng.integers(len(pool), size=n)]
        gaps = rng.integers(low, high + 1, size=n + 1)
        waveform, spans = join_clips([clip.audio for clip in chosen], gaps)
        if noise:
            waveform = waveform + rng.normal(0.0, noise, waveform.shape).astype("float32")
        utterances.append(Utterance(waveform, tuple(clip.digit for clip in chosen), spans))
    return utterances


def to_arrays(utterances: Sequence[Utterance]) -> dict[str, np.ndarray]:
    """The utterances as padded arrays, ``N`` rows; ``T`` the most digits, ``S`` the most samples.

    ``waveform`` (N, S) float32 (zeros after the end), ``lengths`` (N,) int32
    samples, ``decoder_in`` (N, T + 1) int32 ``[START, d_1..d_n]``,
    ``targets`` (N, T + 1) ``[d_1..d_n, END]`` (0 pads both), ``spans`` (N, T,
    2) int32 (-1 pads), ``digit_count`` (N,) int32.
    """
    rows, samples = len(utterances), max(len(u.waveform) for u in utterances)
    most = max(len(u.digits) for u in utterances)
    arrays = {
        "waveform": np.zeros((rows, samples), "float32"),
        "lengths": np.zeros(rows, "int32"),
        "decoder_in": np.zeros((rows, most + 1), "int32"),
        "targets": np.zeros((rows, most + 1), "int32"),
        "spans": np.full((rows, most, 2), -1, "int32"),
        "digit_count": np.zeros(rows, "int32"),
    }
    for row, utterance in enumerate(utterances):
        n, tokens = len(utterance.digits), [digit_token(d) for d in utterance.digits]
        arrays["waveform"][row, : len(utterance.waveform)] = utterance.waveform
        arrays["lengths"][row] = len(utterance.waveform)
        arrays["decoder_in"][row, : n + 1] = [START, *tokens]
        arrays["targets"][row, : n + 1] = [*tokens, END]
        arrays["spans"][row, :n] = utterance.spans
        arrays["digit_count"][row] = n
    return arrays


def model_inputs(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the training model takes: waveform, lengths and the teacher-forced decoder input."""
    return {key: arrays[key] for key in ("waveform", "lengths", "decoder_in")}


def make_datasets(clips: Sequence[Clip], config: Config) -> dict[str, dict[str, np.ndarray]]:
    """Arrays of every set a run uses: ``train``, ``validation``, ``test``, ``held_out``
    (with ``held_out_speaker``), ``long_N`` for each of ``long_lengths`` (test clips) and
    ``validation_long_N`` (validation clips: long utterances to choose settings on).

    Each set draws from its own generator (``seed`` and the set's index), so
    changing one set's size leaves the others as they were.
    """
    splits = split_clips(clips, config.held_out_speaker)
    short = range(config.min_digits, config.max_digits + 1)
    plans = [
        ("train", "train", config.train_utterances, short),
        ("validation", "validation", config.validation_utterances, short),
        ("test", "test", config.test_utterances, short),
        ("held_out", "held_out", config.test_utterances, short),
        *[(f"long_{n}", "test", config.long_utterances, (n,)) for n in config.long_lengths],
        # Last, so that the sets above keep their generators (and utterances) of before.
        *[
            (f"validation_long_{n}", "validation", config.long_utterances, (n,))
            for n in config.long_lengths
        ],
    ]
    datasets = {}
    for index, (name, split, count, lengths) in enumerate(plans):
        if not splits[split] or count == 0:
            continue
        rng = np.random.default_rng([config.seed, index])
        utterances = make_utterances(
            splits[split], count, lengths, rng, config.gap_seconds, config.noise
        )
        datasets[name] = to_arrays(utterances)
    return datasets
