"""The input pipeline's splits, batches and gold alignments; its translator text steps
against the SavedModel's TensorFlow ones."""

import random
from types import SimpleNamespace

import numpy as np
import pytest

pytestmark = pytest.mark.backend_independent

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

import tiny  # noqa: E402

from examples.nmt import evaluation  # noqa: E402
from examples.nmt import translator  # noqa: E402
from examples.nmt.data import pronunciations  # noqa: E402
from examples.nmt.host import batches  # noqa: E402
from examples.nmt.host import splits  # noqa: E402
from examples.nmt.host import translation  # noqa: E402
from examples.nmt.host import vocabularies as host_vocabularies  # noqa: E402


def write_dictionary(path, count=300):
    words = [
        "".join(random.Random(i).choice("abcdefgh") for _ in range(1 + i % 9)) for i in range(count)
    ]
    lines = [
        f"{w}{'(2)' if i % 5 == 0 and i else ''} {' '.join(w.upper())}1"
        for i, w in enumerate(words)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_tsv(path, count=400):
    path.write_text(
        "".join(f"Sentence {i} is here.\tPhrase {i % 150} est là.\tCC-BY\n" for i in range(count)),
        encoding="utf-8",
    )
    return path


def test_the_bundled_dictionary_splits_are_tensorflows_hash_split():
    """Every word of the bundled CMUdict lands in the split TensorFlow's hash puts it in."""
    ours = splits.load_splits("cmu_pronouncing_dictionary")
    entries = list(pronunciations.read_pronunciations(pronunciations.DICTIONARY))
    assert sum(len(split) for split in ours.values()) == len(entries)
    words = sorted({word for word, _ in entries})
    keys = tf.strings.strip(tf.strings.lower(tf.constant(words), encoding="utf-8"))
    buckets = tf.strings.to_hash_bucket_fast(keys, 10_000).numpy().tolist()
    buckets = dict(zip(words, buckets))
    for name, (low, high) in {"validation": (0, 500), "test": (500, 1000)}.items():
        assert all(low <= buckets[word] < high for word, _ in ours[name]), name
    assert all(buckets[word] >= 1000 for word, _ in ours["train"])


def token_vocabularies():
    return host_vocabularies.Vocabularies(
        host_vocabularies.TokenVocabulary(tiny.TOKENS),
        host_vocabularies.TokenVocabulary(tiny.TOKENS),
    )


def random_pairs(seed, count, longest):
    """``count`` pairs of 1 to ``longest - 1`` of the tiny words a side."""
    rng = random.Random(seed)
    words = tiny.TOKENS[4:]
    return [
        tuple(" ".join(rng.choices(words, k=rng.randrange(1, longest))) for _ in "st")
        for _ in range(count)
    ]


def test_batches_hold_every_example_once_a_pass_and_each_pass_its_seed():
    vocabularies = token_vocabularies()
    pairs = random_pairs(0, 100, 20)
    stream = batches.make_batches(pairs, vocabularies, 8, training=True, max_length=12, passes=3)
    again = batches.make_batches(pairs, vocabularies, 8, training=True, max_length=12, passes=3)
    one = batches.make_batches(pairs, vocabularies, 8, training=True, max_length=12)
    assert [stream[i][1].tolist() for i in range(len(stream))] == [
        again[i][1].tolist() for i in range(len(again))
    ]
    assert [one[i][1].tolist() for i in range(len(one))] == [
        stream[i][1].tolist() for i in range(len(one))
    ]
    assert stream.skip(5)[0][1].tolist() == stream[5][1].tolist()  # a resumed run's batches
    assert len(stream) == 3 * len(one)
    encoded = []
    counting = SimpleNamespace(
        source=vocabularies.source,
        target=SimpleNamespace(
            encode=lambda texts: encoded.append(texts) or vocabularies.target.encode(texts)
        ),
    )
    first, streamed = batches.training_batches(pairs, counting, 8, max_length=12, passes=3)
    assert len(encoded) == 1  # fit's count and its stream share one encoding
    assert first.batches == one.batches and streamed.batches == stream.batches
    count, prior = batches.count_and_prior(first, len(tiny.TOKENS))
    assert count == len(one)
    np.testing.assert_allclose(prior, batches.target_log_prior(one, len(tiny.TOKENS)))
    ids = {token: index for index, token in enumerate(tiny.TOKENS)}
    expected = []  # each pair by hand: source cut at 12, [START] + target, target + [END]
    for source, target in pairs:
        source_ids = [ids[word] for word in source.split()][:12]
        target_ids = [ids[word] for word in target.split()][:11]
        expected.append((source_ids, [2, *target_ids], [*target_ids, 3]))
    seen = []
    for index in range(len(one)):
        (source, target_in), target_out = one[index]
        length = max(source.shape[1], target_in.shape[1])
        bucket = [b for b in batches.bucket_boundaries(12) if b >= length]
        assert source.shape[0] <= 8 and source.shape[1] <= 12 and target_in.shape[1] <= 12
        lengths = [max(np.count_nonzero(s), np.count_nonzero(t)) for s, t in zip(source, target_in)]
        low = max([0, *(b for b in batches.bucket_boundaries(12) if b <= min(lengths))])
        assert all(low <= n < (bucket[0] if bucket else 13) or n >= low for n in lengths)
        seen += [
            tuple(np.trim_zeros(x).tolist() for x in row)
            for row in zip(source, target_in, target_out)
        ]
    assert sorted(seen) == sorted(expected)  # every example once a pass, encoded alike
    padded = batches.pad_batches(one, 16, 8)
    for index in range(len(padded)):
        (source, target_in), target_out = padded[index]
        assert (
            source.shape[0] == 16
            and source.shape[1] % 8 == 0
            and target_in.shape == target_out.shape
        )
    counts = 1 + np.bincount(  # add-one smoothing; the padding id 0 is no target token
        [token for _, _, target_out in expected for token in target_out],
        minlength=len(tiny.TOKENS),
    )
    np.testing.assert_allclose(
        batches.target_log_prior(one, len(tiny.TOKENS)), np.log(counts / counts.sum()), rtol=1e-6
    )


def test_each_process_feeds_its_rows_of_every_padded_batch():
    vocabularies = token_vocabularies()
    pairs = random_pairs(1, 50, 12)
    stream = batches.make_batches(pairs, vocabularies, 6, training=True, max_length=12, passes=2)
    padded = batches.pad_batches(stream, 8, 4)
    shards = [
        padded.shard(index, 2).skip(1) for index in range(2)
    ]  # sharded, then skipped, as fit does
    for step in range(len(shards[0])):
        (source, target_in), target_out = padded[step + 1]
        parts = [shard[step] for shard in shards]
        assert all(part[0][0].shape == (4, source.shape[1]) for part in parts)  # one length
        np.testing.assert_array_equal(np.concatenate([p[0][0] for p in parts]), source)
        np.testing.assert_array_equal(np.concatenate([p[0][1] for p in parts]), target_in)
        np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), target_out)
    with pytest.raises(ValueError, match="divisible by 3 processes"):
        padded.shard(0, 3)
    with pytest.raises(ValueError, match="rows=None"):
        stream.shard(0, 2)


def test_translator_text_steps_are_the_tensorflow_ones():
    tokens = (*tiny.TOKENS, "▁")
    ours = host_vocabularies.Vocabularies(
        host_vocabularies.TokenVocabulary(tokens),
        host_vocabularies.TokenVocabulary(tokens, "letters"),
    )
    theirs = ours.tensorflow()
    texts = ["may 9 th , 1998", "", "zzz june", "a a a a a a a a a a a a"]
    mine = translation.encode_sources(ours, texts, 6)
    expected = translator.encode_sources(theirs, tf.constant(texts), 6)
    for name, value in expected.items():
        np.testing.assert_array_equal(mine[name], value.numpy(), err_msg=name)
    rng = np.random.default_rng(0)
    result = SimpleNamespace(
        ids=rng.integers(0, len(tokens), (4, 7)).astype("int32"),
        lengths=np.array([7, 3, 0, 5], "int32"),
        scores=rng.normal(size=4).astype("float32"),
        attention=rng.random((4, 7, 6)).astype("float32"),
    )
    mine = translation.decode_outputs(ours, mine, result)
    expected = translator.decode_outputs(
        theirs, {k: v.numpy() for k, v in expected.items()}, result
    )
    for name, value in expected.items():
        np.testing.assert_array_equal(mine[name], np.asarray(value), err_msg=name)


def test_bucket_boundaries_grow_by_the_step():
    assert batches.bucket_boundaries(64) == [8, 16, 32]  # the recipes' buckets before the step
    assert batches.bucket_boundaries(300, 2.0) == [8, 16, 32, 64, 128, 256]
    assert batches.bucket_boundaries(64, 1.1) == [
        *range(8, 21),
        22,
        24,
        26,
        28,
        30,
        33,
        36,
        39,
        42,
        46,
        50,
        55,
        60,
    ]
    assert batches.bucket_boundaries(64, 1.25) == [8, 10, 12, 15, 18, 22, 27, 33, 41, 51, 63]
    assert batches.bucket_boundaries(8, 1.1) == []
    for step in (1.0, 0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="length bucket step above 1"):
            batches.bucket_boundaries(64, step)
    with pytest.raises(ValueError, match="length bucket step above 1"):
        batches.make_batches([], token_vocabularies(), 8, training=True, bucket_step=1.0)


def _bucket(boundaries, source, target_in):
    """The bucket of an example: ``bucket_by_sequence_length``'s, of its longer side."""
    import bisect

    length = max(np.count_nonzero(source), np.count_nonzero(target_in))
    return bisect.bisect_right(boundaries, length)


@pytest.mark.parametrize("step", [2.0, 1.1])
def test_every_batch_holds_one_bucket(step):
    vocabularies = token_vocabularies()
    pairs = random_pairs(3, 400, 40)
    boundaries = batches.bucket_boundaries(48, step)
    host = batches.make_batches(
        pairs, vocabularies, 8, training=True, max_length=48, bucket_step=step
    )
    for batch_list in ([host[index] for index in range(len(host))],):
        rows = 0
        for (source, target_in), _ in batch_list:
            assert len({_bucket(boundaries, *row) for row in zip(source, target_in)}) == 1
            rows += len(source)
        assert rows == len(pairs)
        # The buckets' last, partial batches are shuffled into the pass, not
        # left one length after another at its end.
        partial = [len(source) < 8 for (source, _), _ in batch_list]
        assert sum(partial) >= 3 and not all(partial[-sum(partial) :])


def test_finer_buckets_pad_less():
    vocabularies = token_vocabularies()
    rng, words = random.Random(4), tiny.TOKENS[4:]
    lengths = [
        (n, max(1, n + rng.choice((-1, 0, 1)))) for n in (rng.randrange(1, 40) for _ in range(600))
    ]
    pairs = [tuple(" ".join(rng.choices(words, k=k)) for k in pair) for pair in lengths]

    def padded_tokens(step):
        stream = batches.make_batches(
            pairs, vocabularies, 16, training=True, max_length=48, bucket_step=step
        )
        return sum(stream[i][0][0].size + stream[i][0][1].size for i in range(len(stream)))

    real = sum(len(s) + len(t) for s, t, _ in batches.encode_pairs(pairs, vocabularies, 48))
    coarse, fine = padded_tokens(2.0), padded_tokens(1.1)
    # One length a bucket from 8 to 19 tokens, then ~10% wide: a quarter of the
    # padding of buckets 8, 16, 32 here (1.06x the tokens against 1.23x).
    assert real <= fine and fine - real < (coarse - real) / 3


@pytest.mark.parametrize("step", [2.0, 1.1])
def test_bucketed_evaluation_batches_hold_one_bucket_each_and_pad_less(step):
    """make_batches(bucketed=True) without training: each batch one bucket, every
    example once, in the same order every time (no shuffle), and less padding
    than batches of the examples in their order."""
    vocabularies = token_vocabularies()
    rng, words = random.Random(5), tiny.TOKENS[4:]
    lengths = [
        (n, max(1, n + rng.choice((-1, 0, 1)))) for n in (rng.randrange(1, 40) for _ in range(300))
    ]
    pairs = [tuple(" ".join(rng.choices(words, k=k)) for k in pair) for pair in lengths]
    boundaries = batches.bucket_boundaries(48, step)
    host = batches.make_batches(
        pairs, vocabularies, 16, max_length=48, bucket_step=step, bucketed=True
    )
    again = batches.make_batches(
        pairs, vocabularies, 16, max_length=48, bucket_step=step, bucketed=True
    )
    host_batches = [host[index] for index in range(len(host))]
    assert len(again) == len(host_batches)
    for index, ((source, target_in), target_out) in enumerate(host_batches):
        (a_source, a_in), a_out = again[index]
        np.testing.assert_array_equal(source, a_source)
        np.testing.assert_array_equal(target_in, a_in)
        np.testing.assert_array_equal(target_out, a_out)
        assert len({_bucket(boundaries, *row) for row in zip(source, target_in)}) == 1
    rows = sorted(
        tuple(np.trim_zeros(row, "b")) for (source, _), _ in host_batches for row in source
    )
    encoded = batches.encode_pairs(pairs, vocabularies, 48)
    assert rows == sorted(tuple(source) for source, _, _ in encoded)

    def padded(stream):
        return sum(stream[i][0][0].size + stream[i][0][1].size for i in range(len(stream)))

    real = sum(len(s) + len(t) for s, t, _ in encoded)
    in_order = batches.make_batches(pairs, vocabularies, 16, max_length=48)
    assert padded(host) - real < (padded(in_order) - real) / 2


def test_gold_alignments_ride_in_the_evaluation_batches():
    """Date pairs carry their links; the evaluation batches turn them into 0/1 matrices
    over the output tokens and the source tokens, cut as the sources and outputs are."""
    vocabularies = host_vocabularies.Vocabularies(
        host_vocabularies.TokenVocabulary((*tiny.TOKENS[:4], "may", "9", "1998")),
        host_vocabularies.TokenVocabulary((*tiny.TOKENS[:4], *"0123456789-"), "letters"),
    )
    links = [(0, 2), (1, 2), (2, 2), (3, 2), (5, 0), (6, 0), (8, 1), (9, 1)]
    pair = splits.AlignedPair("may 9 1998", "1998-05-09", np.array(links))
    assert pair == ("may 9 1998", "1998-05-09") and pair[0] == "may 9 1998"
    (batch,) = evaluation.text_batches([pair], vocabularies, 8, 64, with_alignment=True)
    expected = np.zeros((1, 11, 3), "float32")  # 10 characters and [END], 3 words
    for target_index, source_index in links:
        expected[0, target_index, source_index] = 1.0
    np.testing.assert_array_equal(batch["alignment"], expected)
    assert batch["source"] == ["may 9 1998"] and batch["target"] == ["1998-05-09"]
    cut = evaluation.gold_alignments([pair], vocabularies, max_length=2)
    # Two source words and one target character (+ [END]) are kept: only (0, 0)-(1, 1) links.
    np.testing.assert_array_equal(cut, np.zeros((1, 2, 2), "float32"))
    dates = splits.load_splits("date_normalization/small", max_examples=4)
    (plain,) = evaluation.text_batches(dates["test"], vocabularies, 8, 64, with_alignment=False)
    assert "alignment" not in plain and len(plain["source"]) == 4
