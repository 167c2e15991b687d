"""Experiment directories with missing, cut-off, edited or foreign files, read by the commands a user runs on
them (``status``, ``best``, ``export``, ``reproduce``, ``evaluate``, ``resume``): each either reads what is
intact or refuses with a clear error and exit 2, never a traceback, and never changes what is on disk (the
export's lock file aside)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rlsweep import cli, store
from tests.conftest import TINY_SPEC
from tests.experiments import new_experiment, write_trial

STATE = "experiment_state-2026-01-01_00-00-00.json"


def _sweep(root: Path) -> Path:
    """Two finished trials: ``aaa`` ends at 40, ``bbb`` at 70 (the best under max), both with checkpoints."""
    new_experiment(root)
    write_trial(root, "aaa", [10, 20, 30, 40], checkpoints=[2000, 4000], config={"training.lr": 0.01})
    write_trial(root, "bbb", [5, 50, 60, 70], checkpoints=[2000, 4000], config={"training.lr": 0.001})
    return root


def _trial(root: Path, trial_id: str) -> Path:
    return next(root.glob(f"train_{trial_id}_*"))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


DAMAGE: dict[str, Callable[[Path], None]] = {
    "params.json is a list": lambda r: (_trial(r, "aaa") / store.PARAMS_FILE).write_text("[1, 2]"),
    "checkpoint metadata is a list": lambda r: [
        m.write_text("[1]") for m in _trial(r, "aaa").glob(f"checkpoint_*/{store.CHECKPOINT_META}")
    ],
    "Tune's state is []": lambda r: (r / STATE).write_text("[]"),
    "Tune's state has odd trial data": lambda r: (r / STATE).write_text('{"trial_data": 5}'),
    "Tune's state is cut off": lambda r: (r / STATE).write_text('{"trial_data": [["{\\"trial_id'),
    "a result line is not an object": lambda r: (_trial(r, "aaa") / store.RESULT_FILE).open("a").write("[1, 2]\n"),
    "env_steps is not a number": lambda r: (_trial(r, "aaa") / store.RESULT_FILE).write_text(
        json.dumps({"trial_id": "aaa", "env_steps": "many", "return_mean": 1}) + "\n"
    ),
    "a foreign folder": lambda r: (r / "train_zzz_foreign").mkdir() or (r / "train_zzz_foreign" / "result.json").write_text("hi\n"),
    "error.txt is binary": lambda r: (_trial(r, "aaa") / store.ERROR_FILE).write_bytes(b"\xff\xfe" * 50),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_status_and_best_read_what_is_intact(tmp_path, capsys, damage):
    root = _sweep(tmp_path / "exp")
    DAMAGE[damage](root)
    before = _snapshot(root)
    code, out, err = _run(capsys, "status", str(root))
    assert code == 0, err
    assert "bbb" in out and "Traceback" not in out + err
    code, out, err = _run(capsys, "best", str(root), "--rule", "last", "--json")
    assert code == 0, err
    best = json.loads(out)
    # bbb is intact in every case and the best under max; its best checkpoint is its last one.
    assert best["trial_id"] == "bbb" and best["value"] == 70
    assert best["checkpoint"] == str(_trial(root, "bbb") / "checkpoint_000001")
    # The export logs what is intact: bbb with every row.
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code, _, err = _run(capsys, "export", str(root), "--tracking-uri", uri, "--experiment", "damaged")
    assert code == 0, err
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("damaged").experiment_id], "tags.`rlsweep.trial_id` = 'bbb'")
    assert [len(client.get_metric_history(r.info.run_id, "return_mean")) for r in runs] == [4]
    assert _snapshot(root) == {**before, **{k: v for k, v in _snapshot(root).items() if k == store.MLFLOW_LOCK}}


def test_a_damaged_checkpoint_is_never_offered_as_the_best(tmp_path, capsys, caplog):
    root = _sweep(tmp_path / "exp")
    # bbb's best checkpoint lost its algorithm state (a copy cut off, a disk cleaned by hand): evaluating it
    # would fail, so the best trial's checkpoint is its intact earlier one.
    shutil.rmtree(_trial(root, "bbb") / "checkpoint_000001" / store.ALGORITHM_STATE)
    code, out, err = _run(capsys, "best", str(root), "--rule", "last", "--json")
    assert code == 0 and json.loads(out)["checkpoint"] == str(_trial(root, "bbb") / "checkpoint_000000")
    assert "checkpoint_000001: skipped" in caplog.text


def test_status_of_a_sweep_with_no_trial_yet(tmp_path, capsys):
    root = new_experiment(tmp_path / "exp")
    code, out, err = _run(capsys, "status", str(root))
    assert code == 0 and "no trial has started yet" in out, err


def test_results_are_read_with_the_spec_the_sweep_ran_not_an_edited_file(tmp_path, capsys, caplog):
    root = _sweep(tmp_path / "exp")
    edited = store.spec_file(root).read_text().replace("mode: max", "mode: min")
    assert edited != store.spec_file(root).read_text()
    store.spec_file(root).write_text(edited)
    code, out, err = _run(capsys, "best", str(root), "--rule", "last", "--json")
    assert code == 0 and json.loads(out)["trial_id"] == "bbb" and json.loads(out)["mode"] == "max"
    assert "was edited" in caplog.text
    store.spec_file(root).unlink()  # gone altogether: the sweep still reads
    assert _run(capsys, "status", str(root))[0] == 0


def test_a_sweep_from_before_the_spec_was_kept_reads_its_spec_file(tmp_path, capsys):
    root = _sweep(tmp_path / "exp")
    (root / store.SWEEP_FILE).write_text(json.dumps({"sweep_id": "abc"}))
    store.spec_file(root).write_text(store.spec_file(root).read_text().replace("mode: max", "mode: min"))
    code, out, _ = _run(capsys, "best", str(root), "--rule", "last", "--json")
    assert code == 0 and json.loads(out)["trial_id"] == "aaa"


@pytest.mark.parametrize(
    "damage",
    [
        lambda r: (r / STATE).write_text('{"trial_data": [["{\\"trial_id'),
        lambda r: (r / STATE).write_text("[]"),
        lambda r: (r / STATE).write_text('{"trial_data": []}'),
        lambda r: (r / store.TUNER_FILE).unlink(),
    ],
    ids=["state cut off", "state is []", "state has no trials", "no tuner.pkl"],
)
def test_resume_refuses_a_damaged_state_and_changes_nothing(tmp_path, capsys, damage):
    root = _sweep(tmp_path / "exp")
    entry = [json.dumps({"trial_id": "aaa", "status": "RUNNING"}), json.dumps({"num_failures": 0})]
    (root / STATE).write_text(json.dumps({"trial_data": [entry]}))
    (root / store.TUNER_FILE).write_bytes(b"pickled tuner")
    damage(root)
    before = _snapshot(root)
    code, _, err = _run(capsys, "resume", str(root))
    assert code == 2 and "cannot resume safely" in err and "Traceback" not in err
    assert _snapshot(root) == before


def test_evaluate_refuses_a_negative_seed_before_loading_anything(tmp_path, capsys):
    root = _sweep(tmp_path / "exp")
    code, _, err = _run(capsys, "evaluate", str(root), "--seeds", "-1")
    assert code == 2 and "--seeds" in err


def test_reproduce_names_the_trials_when_one_is_unknown(tmp_path, capsys):
    root = _sweep(tmp_path / "exp")
    DAMAGE["params.json is a list"](root)
    code, _, err = _run(capsys, "reproduce", str(root), "zzz")
    assert code == 2 and "aaa, bbb" in err


def test_the_spec_kept_for_a_dict_spec_round_trips(tmp_path):
    # The hand-written directories keep their spec as rlsweep does; this guards the fixture itself.
    root = _sweep(tmp_path / "exp")
    assert store.spec_as_run(store.read_sweep_info(root)) == TINY_SPEC
