"""Recipes in files, ``--config FILE`` and ``--set KEY=VALUE`` for ``train.py``."""

import argparse
import dataclasses
import json
import pathlib
import re
import shutil

import pytest

from examples.common.recipes import to_dict
from examples.nmt import cli
from examples.nmt import runs
from examples.nmt import settings
from examples.nmt import train
from examples.nmt.config import Config
from examples.nmt.training import recipes

pytestmark = pytest.mark.backend_independent


def test_a_runs_config_json_repeats_the_run(tmp_path):
    argv = ["--dataset", "cmu_pronouncing_dictionary", "--epochs", "3", "--patience", "off"]
    argv += ["--attention", "location", "--output-dir", str(tmp_path / "run"), "--no-export"]
    args = train.parse_args(argv)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**to_dict(args), "keras_backend": "jax"}))  # as runs writes it
    again = train.parse_args(["--config", str(path)])
    assert isinstance(again, Config) and again == args
    # A flag given wins over the file, and --set over the file too.
    assert train.parse_args(["--config", str(path), "--epochs", "7"]).epochs == 7
    assert train.parse_args(["--config", str(path), "--set", "epochs=5"]).epochs == 5


def test_a_toml_file_and_sets_fill_what_flags_leave(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('units = 64\nattention = "luong"\ndropout = 0.25\nno_export = true\n')
    args = train.parse_args(["--config", str(path), "--set", "patience=off", "--set", "seed=4"])
    assert (args.units, args.attention, args.dropout, args.no_export) == (64, "luong", 0.25, True)
    assert args.patience is None and args.seed == 4
    assert args.epochs == recipes.RECIPES["date"]["epochs"]  # the rest: the recipe's


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--set", "epoch=3"], "unknown setting 'epoch'"),
        (["--set", "epochs=0"], r"epochs: expected an integer >= 1, received 0"),
        (["--set", "attention=dot"], r"attention expects one of \["),
        (["--set", "epochs"], "expected KEY=VALUE"),
        (["--set", "no_export=3"], "no_export expects true or false"),
        (["--set", "config=x.toml"], "unknown setting 'config'"),
    ],
)
def test_bad_settings_are_usage_errors_naming_the_key(extra, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train.parse_args(extra)
    assert exit_info.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def test_a_bad_config_file_is_a_usage_error(tmp_path, capsys):
    for name, text, message in [
        ("missing.toml", None, "no such file"),
        ("broken.toml", "units = = 3", "not a TOML or JSON recipe"),
        ("unknown.json", '{"unit": 3}', "unknown setting 'unit'"),
    ]:
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        with pytest.raises(SystemExit):
            train.parse_args(["--config", str(path)])
        assert message in capsys.readouterr().err


def test_every_recipe_file_holds_flags_and_values_the_flags_accept():
    parser = train.make_parser()
    assert set(recipes.RECIPES) == {"date", "real", "g2p"}
    for name in recipes.RECIPES:
        assert recipes.ARCHITECTURES[name] in ("rnn", "transformer")
        for table in (recipes.RECIPES[name], recipes.TRANSFORMER_RECIPES[name]):
            for key, value in table.items():
                assert cli.checked_setting(parser, key, value, name) == value, (name, key)
    # The recipe a run records is the file's: the date task's RNN, values as written.
    args = train.parse_args([])
    for key, value in recipes.RECIPES["date"].items():
        assert getattr(args, key) == value, key


def test_a_recipe_file_without_an_architecture_is_refused(tmp_path):
    (tmp_path / "odd.toml").write_text("epochs = 3\n")
    with pytest.raises(ValueError, match="expected architecture = 'rnn' or 'transformer'"):
        recipes.read_recipes(str(tmp_path))


def test_help_lists_the_everyday_flags_and_help_all_every_flag(capsys):
    with pytest.raises(SystemExit) as exit_:
        train.make_parser(everyday=True).parse_args(["--help"])
    assert exit_.value.code == 0
    short = capsys.readouterr().out
    assert "--epochs" in short and "--help-all" in short
    assert "--ff-dim" not in short and "--label-smoothing" not in short
    with pytest.raises(SystemExit):
        train.make_parser(everyday=True).parse_args(["--help-all"])
    full = capsys.readouterr().out
    assert "--ff-dim" in full and "--label-smoothing" in full
    assert len(re.findall(r"^  --", full, re.M)) > 2 * len(re.findall(r"^  --", short, re.M))
    # A flag folded out of --help still parses, as a flag and as a --set.
    args = train.parse_args(["--keep-checkpoints", "2", "--set", "label_smoothing=0.2"])
    assert (args.keep_checkpoints, args.label_smoothing) == (2, 0.2)


def test_a_config_json_of_2026_12_07_still_resumes(tmp_path):
    """The default run's config.json as train.py wrote it on 2026-12-07: a run folder of that
    day resumes with the same command (flags added since take their defaults)."""
    fixture = pathlib.Path(__file__).parents[2] / "fixtures" / "nmt_config_2026-12-07.json"
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(fixture, out / runs.CONFIG)
    saved = runs.saved_settings(str(out))
    assert saved["architecture"] == "rnn" and saved["keras_backend"] == "tensorflow"
    assert runs.prepare_output_dir(train.parse_args(["--output-dir", str(out)])) is True
    with pytest.raises(cli.RunError, match="--epochs 2 there, 3 here"):
        runs.prepare_output_dir(train.parse_args(["--output-dir", str(out), "--epochs", "3"]))


def test_every_setting_is_one_typed_config_field_with_the_flags_default():
    fields = {field.name: field for field in dataclasses.fields(Config)}
    parser = train.make_parser()
    dests = {action.dest for action in parser._actions} - {"help", "config", "set"}
    assert dests == set(fields)
    for name, field in fields.items():
        assert parser.get_default(name) == field.default, name
    # Each value the command line gives is checked against its field's type.
    with pytest.raises(cli.RunError, match="units expects int or none"):
        settings.to_config(argparse.Namespace(**{**to_dict(Config()), "units": "64"}))
    # A config.json from before a setting existed loads: it takes the field's default.
    assert train.parse_args(["--set", "dataset=cmu_pronouncing_dictionary"]).ema == Config.ema
