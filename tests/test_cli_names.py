"""An experiment named by its sweep's name on the command line: every command that reads an experiment
folder takes the name where no such folder exists, and reads the newest folder of that name in the default
storage (saying which on stderr); an unknown name or one that cannot be told apart is invalid input (exit 2).
A path that exists, or that has a folder in it, is read as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlsweep import __version__, store
from rlsweep.cli import build_parser, main
from rlsweep.spec import DEFAULT_STORAGE
from tests.experiments import new_experiment, write_trial

CONFIG = {"training.lr": 1e-3, "rl_module.model_config.fcnet_hiddens": [16]}


def _sweep(root: Path, created: str, returns: list[float], name: str = "demo") -> Path:
    """An experiment folder at ``root`` of a sweep named ``name`` that started at ``created``, one trial."""
    from tests.conftest import TINY_SPEC

    new_experiment(root, {**TINY_SPEC, "name": name}, sweep_id=root.name.replace(".", "_"), created=created)
    write_trial(root, "aaaa", returns, config=CONFIG)
    return root


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default storage in a temporary working folder, as ``rlsweep run`` leaves it after two sweeps of
    the spec named ``demo``: the first in ``demo``, the second in a folder dated when it started."""
    monkeypatch.chdir(tmp_path)
    storage = tmp_path / DEFAULT_STORAGE
    _sweep(storage / "demo", "2026-12-06T10:00:00", [10, 20])
    _sweep(storage / "demo-20261206-110000", "2026-12-06T11:00:00", [30, 99])
    _sweep(storage / "other", "2026-12-06T12:00:00", [1], name="other")
    return storage


def _commands_reading_an_experiment() -> list[str]:
    parser = build_parser()
    (commands,) = [action for action in parser._actions if action.dest == "command"]
    return [name for name, sub in commands.choices.items() if any(a.dest == "dir" for a in sub._actions)]


def test_best_reads_the_newest_sweep_of_a_name_and_says_which_folder(results, capsys):
    assert main(["best", "demo", "--rule", "last", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["value"] == 99
    chosen = Path(DEFAULT_STORAGE) / "demo-20261206-110000"
    assert err.strip() == f"demo: the newest of 2 experiments of that name, {chosen} (started 2026-12-06 11:00:00)"
    # The same answer as from the folder itself, which says nothing on stderr.
    assert main(["best", str(chosen), "--rule", "last", "--json"]) == 0
    assert capsys.readouterr() == (out, "")


def test_the_newest_is_when_the_sweep_started_not_the_folders_name(results, capsys):
    """A sweep run after its undated folder was deleted gets the undated name again, and is the newest."""
    _sweep(results / "other-20261206-090000", "2026-12-06T09:00:00", [5], name="other")
    assert main(["status", "other"]) == 0
    assert f"{Path(DEFAULT_STORAGE) / 'other'} (started 2026-12-06 12:00:00)" in capsys.readouterr().err
    # A sweep info without its start (or unreadable) counts from when it was written.
    info_file = results / "other-20261206-090000" / store.SWEEP_FILE
    info = json.loads(info_file.read_text())
    del info["created"]
    info_file.write_text(json.dumps(info))
    assert main(["status", "other"]) == 0
    assert f"{Path(DEFAULT_STORAGE) / 'other-20261206-090000'} (started " in capsys.readouterr().err


def test_a_single_sweep_of_a_name_is_read_and_named(results, capsys):
    assert main(["status", "other"]) == 0
    out, err = capsys.readouterr()
    assert err.strip() == f"other: {Path(DEFAULT_STORAGE) / 'other'} (started 2026-12-06 12:00:00)"
    assert "1 trials" in out


def test_a_dated_folders_name_reads_that_folder(results, capsys):
    assert main(["best", "demo-20261206-110000", "--rule", "last", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == 99


def test_an_unknown_name_is_invalid_input_naming_it_where_it_looked_and_what_is_there(results, capsys):
    assert main(["best", "cartpole"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"DIR: no folder cartpole here, and no experiment of that name in {Path(DEFAULT_STORAGE)}/ (the default "
                   "storage); it holds experiments named demo, other")


def test_a_name_without_a_default_storage_here_says_where_it_looked(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["best", "demo"]) == 2
    err = capsys.readouterr().err
    assert f"no {Path(DEFAULT_STORAGE)}/ (the default storage) in {tmp_path}" in err and "give the experiment's folder" in err


def test_copies_of_one_sweep_are_ambiguous(results, capsys):
    """Two folders whose sweeps started at the same second cannot be told apart: neither is chosen."""
    _sweep(results / "other-20261206-130000", "2026-12-06T12:00:00", [7], name="other")
    assert main(["best", "other"]) == 2
    err = capsys.readouterr().err
    assert "other names 2 experiments" in err and "started at the same time" in err
    assert str(Path(DEFAULT_STORAGE) / "other") in err and str(Path(DEFAULT_STORAGE) / "other-20261206-130000") in err


def test_a_path_is_read_as_before(results, capsys):
    # A folder here of that name is read as the folder, not as a name, also when it is no experiment.
    (Path.cwd() / "demo").mkdir()
    assert main(["best", "demo"]) == 2
    assert capsys.readouterr().err.strip() == "DIR: not an rlsweep experiment directory (no rlsweep.json)"
    # A path with a folder in it is a path: no name lookup.
    assert main(["best", "nowhere/demo"]) == 2
    assert capsys.readouterr().err.strip() == "DIR: no such experiment directory"
    # A folder name that is not a sweep's is no name of an experiment.
    (results / "notes").mkdir()
    assert main(["best", "notes"]) == 2
    assert "no experiment of that name" in capsys.readouterr().err


@pytest.mark.parametrize("command", _commands_reading_an_experiment())
def test_every_command_that_reads_an_experiment_takes_its_name(command, results, capsys):
    """Each command with a DIR looks the name up before it does anything (an unknown name is refused with
    the lookup's message); a command added later is in this list by its argument."""
    extra = ["aaaa"] if command == "reproduce" else []
    assert main([command, "nothing-of-that-name", *extra]) == 2
    assert "no experiment of that name in" in capsys.readouterr().err


def test_the_commands_that_read_an_experiment_are_the_ones_expected():
    assert set(_commands_reading_an_experiment()) == {
        "resume", "reproduce", "confirm", "status", "best", "plot", "evaluate", "ui", "export"}


def test_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out.strip() == f"rlsweep {__version__}"


def test_python_load_takes_a_sweeps_name_as_the_command_line_does(results):
    import rlsweep
    from rlsweep.errors import SweepError

    assert rlsweep.load("demo").path == (Path(DEFAULT_STORAGE) / "demo-20261206-110000").resolve()
    assert rlsweep.load("demo").best(rule="last").value == 99
    with pytest.raises(SweepError, match="no experiment of that name in rlsweep_results/ .*experiments named demo, other"):
        rlsweep.load("nosuch")
