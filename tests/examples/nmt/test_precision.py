"""``--precision``: the dtype policy a run trains in, and the recipe's ``auto``.

``auto`` is ``mixed_bfloat16`` only where it was measured faster (a CPU that
computes bfloat16, no GPU, TensorFlow, or PyTorch for the Transformer) and
float32 elsewhere;
``--mixed-precision`` stays ``mixed_float16``; a run from before the flag
(``"mixed_precision": true`` in its config.json) reads as the policy it
trained in. Training in bfloat16 and saving in float32 is in
training/test_fit.py.
"""

import json

import pytest

from examples.nmt import backend
from examples.nmt import runs
from examples.nmt import train
from examples.nmt.training import recipes

INTEL_AMX = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
INTEL_OLD = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni\n"
ARM_BF16 = "processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\n"
ARM_OLD = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes\n"


@pytest.mark.parametrize(
    "cpuinfo, native",
    [(INTEL_AMX, True), (INTEL_OLD, False), (ARM_BF16, True), (ARM_OLD, False), ("", False)],
)
def test_native_bfloat16_is_read_from_the_cpu_flags(tmp_path, cpuinfo, native):
    path = tmp_path / "cpuinfo"
    path.write_text(cpuinfo)
    assert backend.native_bfloat16_cpu(str(path)) is native


def test_an_unreadable_cpuinfo_means_no_bfloat16(tmp_path):
    assert backend.native_bfloat16_cpu(str(tmp_path / "missing")) is False


def _machine(monkeypatch, name="tensorflow", gpus=(), bfloat16=True):
    monkeypatch.setattr(backend, "name", lambda: name)
    monkeypatch.setattr(backend, "accelerators", lambda: list(gpus))
    monkeypatch.setattr(backend, "native_bfloat16_cpu", lambda: bfloat16)


@pytest.mark.parametrize(
    "machine, architecture, policy",
    [
        ({}, "transformer", "mixed_bfloat16"),
        ({}, "rnn", "mixed_bfloat16"),
        ({"name": "torch"}, "transformer", "mixed_bfloat16"),
        ({"name": "torch"}, "rnn", "float32"),  # PyTorch's GRU: slower in bfloat16
        ({"name": "jax"}, "transformer", "float32"),  # not measured faster on JAX's CPU
        ({"name": "jax"}, "rnn", "float32"),
        ({"bfloat16": False}, "transformer", "float32"),  # emulated: slower than float32
        ({"bfloat16": False}, "rnn", "float32"),
        ({"gpus": ["NVIDIA H100"]}, "transformer", "float32"),  # CPU flags: not a GPU
        ({"gpus": ["NVIDIA H100"]}, "rnn", "float32"),
    ],
)
def test_auto_is_bfloat16_only_where_it_was_measured_faster(
    monkeypatch, machine, architecture, policy
):
    _machine(monkeypatch, **machine)
    assert recipes.resolve_precision("auto", architecture) == policy
    for given in ("float32", "mixed_float16", "mixed_bfloat16"):
        assert recipes.resolve_precision(given, architecture) == given


@pytest.mark.parametrize(
    "extra, policy, bfloat16_cpu",
    [
        (("--dataset", "tsv:pairs.tsv"), "mixed_bfloat16", True),
        (("--dataset", "tsv:pairs.tsv"), "float32", False),
        (("--dataset", "tsv:pairs.tsv", "--architecture", "rnn"), "float32", True),
        ((), "float32", True),  # date
        (("--dataset", "dict:words.dict"), "float32", True),
        (("--dataset", "dict:words.dict", "--architecture", "transformer"), "float32", True),
        (("--dataset", "tsv:pairs.tsv", "--precision", "float32"), "float32", True),
        (("--precision", "auto"), "mixed_bfloat16", True),
        (("--mixed-precision",), "mixed_float16", True),
        (("--precision", "mixed_bfloat16"), "mixed_bfloat16", False),
    ],
)
def test_the_recipe_picks_the_precision(monkeypatch, extra, policy, bfloat16_cpu):
    """Only the real recipe's Transformer trains in bfloat16 (where auto allows it)."""
    _machine(monkeypatch, bfloat16=bfloat16_cpu)
    assert train.parse_args(list(extra)).precision == policy


@pytest.mark.parametrize(
    "architecture, policy", [("transformer", "mixed_bfloat16"), ("rnn", "float32")]
)
def test_auto_follows_the_architecture_on_pytorch(monkeypatch, architecture, policy):
    _machine(monkeypatch, name="torch")
    argv = ["--dataset", "tsv:pairs.tsv", "--architecture", architecture, "--precision", "auto"]
    assert train.parse_args(argv).precision == policy


@pytest.mark.parametrize("bad", ["bfloat16", "float16", "mixed"])
def test_an_unknown_precision_is_refused(capsys, bad):
    with pytest.raises(SystemExit) as error:
        train.parse_args(["--precision", bad])
    assert error.value.code == 2
    assert "--precision: invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize(
    "saved, policy", [(True, "mixed_float16"), (False, "float32"), (None, "float32")]
)
def test_a_run_from_before_the_flag_reads_as_its_policy(tmp_path, saved, policy):
    config = {"epochs": 2} if saved is None else {"epochs": 2, "mixed_precision": saved}
    (tmp_path / runs.CONFIG).write_text(json.dumps(config))
    loaded = runs.saved_settings(str(tmp_path))  # as resuming reads it
    assert loaded["precision"] == policy and "mixed_precision" not in loaded
    assert loaded["epochs"] == 2 and loaded["architecture"] == "rnn"  # the date recipe's
