"""A copied or moved sweep folder keeps its sweep id: an export (or a resumed copy's live logger) of the copy
must never write into the original's MLflow runs, and an export that fails part-way leaves no run RUNNING."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rlsweep import cli, store
from rlsweep.analysis._live import MlflowTailer
from rlsweep.analysis._mlflow import COPY_OF_TAG, PATH_TAG
from rlsweep import load_spec
from tests.conftest import TINY_SPEC
from tests.experiments import new_experiment, write_trial


def _sweep(root: Path) -> Path:
    new_experiment(root, path=str(root.resolve()))
    write_trial(root, "aaa", [10, 20, 30, 40], checkpoints=[2000, 4000], config={"training.lr": 0.01}, done=True)
    write_trial(root, "bbb", [5, 50, 60, 70], checkpoints=[2000, 4000], config={"training.lr": 0.001}, done=True)
    return root


def _export(capsys: pytest.CaptureFixture[str], root: Path, uri: str) -> tuple[int, str]:
    code = cli.main(["export", str(root), "--tracking-uri", uri, "--experiment", "copies"])
    _, err = capsys.readouterr()
    return code, err


def _runs(uri: str) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("copies")
    return list(client.search_runs([experiment.experiment_id], max_results=1000)) if experiment else []


def _state(uri: str) -> dict[str, tuple]:
    """Every run: its status, tags and metric histories' lengths, by run id."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    return {
        r.info.run_id: (r.info.status, dict(r.data.tags), {k: len(client.get_metric_history(r.info.run_id, k)) for k in r.data.metrics})
        for r in _runs(uri)
    }


def _parents(uri: str) -> list:
    return [r for r in _runs(uri) if r.data.tags.get("rlsweep.kind") == "sweep"]


@pytest.fixture
def exported(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    original = _sweep(tmp_path / "exp")
    assert _export(capsys, original, uri)[0] == 0
    return original, uri


def test_exporting_a_copy_leaves_the_original_run_as_it_was(tmp_path, capsys, caplog, exported):
    original, uri = exported
    before = _state(uri)
    copy = tmp_path / "exp-copy"
    shutil.copytree(original, copy, symlinks=True)
    write_trial(copy, "ccc", [1, 2], config={"training.lr": 0.1})  # a stray trial, only in the copy
    code, err = _export(capsys, copy, uri)
    assert code == 0, err
    assert f"{copy} is a copy of the sweep at {original}" in caplog.text
    after = _state(uri)
    assert {k: after[k] for k in before} == before  # not one tag, status or metric point of the original changed
    copy_parents = [r for r in _parents(uri) if r.info.run_id not in before]
    assert len(copy_parents) == 1
    parent = copy_parents[0]
    assert parent.data.tags[COPY_OF_TAG] == "abc" and parent.data.tags[PATH_TAG] == str(copy)
    assert parent.data.tags["rlsweep.best_checkpoint"].startswith(str(copy))
    children = [r for r in _runs(uri) if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(r.data.tags["rlsweep.trial_id"] for r in children) == ["aaa", "bbb", "ccc"]
    # Exporting the copy again finds its own runs: nothing new anywhere.
    again = _state(uri)
    assert _export(capsys, copy, uri)[0] == 0
    assert set(_state(uri)) == set(again)


def test_a_copy_exported_before_its_original_still_leaves_the_original_its_own_runs(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    original = _sweep(tmp_path / "exp")
    copy = tmp_path / "exp-copy"
    shutil.copytree(original, copy)
    assert _export(capsys, copy, uri)[0] == 0
    assert _export(capsys, original, uri)[0] == 0
    by_path = {r.data.tags[PATH_TAG]: r for r in _parents(uri)}
    assert set(by_path) == {str(original), str(copy)}
    assert COPY_OF_TAG not in by_path[str(original)].data.tags and by_path[str(copy)].data.tags[COPY_OF_TAG] == "abc"


def test_a_moved_sweep_keeps_its_runs(tmp_path, capsys, caplog, exported):
    original, uri = exported
    before = _state(uri)
    moved = tmp_path / "moved"
    original.rename(moved)
    code, err = _export(capsys, moved, uri)
    assert code == 0 and f"moved from {original} to {moved}" in caplog.text, err
    assert set(_state(uri)) == set(before)  # no new run
    (parent,) = _parents(uri)
    assert parent.data.tags[PATH_TAG] == str(moved) and parent.data.tags["rlsweep.best_checkpoint"].startswith(str(moved))


def test_a_copy_whose_export_fails_leaves_no_run_running_and_the_original_untouched(tmp_path, capsys, exported):
    original, uri = exported
    before = _state(uri)
    copy = tmp_path / "exp-copy"
    shutil.copytree(original, copy)
    # A confirmation whose config MLflow refuses as a param name: the export fails while it logs the
    # confirmation, after the sweep's runs and the confirmation's run were made.
    (copy / store.CONFIRMATION_FILE).write_text(json.dumps({
        "metric": "return_mean", "test_seeds": [1], "ties": [], "created": 1,
        "configurations": [{"trial_id": "bbb", "config": {"training.lr!": 0.001}, "per_seed": {"1": 1.0}, "missing": [],
                            "iqm": 1.0, "ci_low": 0.0, "ci_high": 2.0, "tuning_value": 1.0, "rank": 1,
                            "p_beats": {}, "tie_with_winner": False, "tuning_seeds": [0]}],
    }))
    code, err = _export(capsys, copy, uri)
    assert code != 0 and "Traceback" not in err
    after = _state(uri)
    assert {k: after[k] for k in before} == before
    made = [tags.get("rlsweep.kind") for k, (_, tags, _) in after.items() if k not in before]
    assert sorted(made) == ["confirmation", "sweep", "trial", "trial"]  # it failed after making these
    assert [status for status, _, _ in after.values() if status == "RUNNING"] == []


def test_a_resumed_copys_live_logger_writes_to_the_copys_runs(tmp_path, capsys, exported):
    original, uri = exported
    before = _state(uri)
    copy = tmp_path / "exp-copy"
    shutil.copytree(original, copy)
    spec = load_spec({**TINY_SPEC, "mlflow": {"tracking_uri": uri, "experiment": "copies"}}, preflight=False)
    trial = next(copy.glob("train_aaa_*"))
    with (trial / store.RESULT_FILE).open("a") as rows:  # a row the resumed copy reported
        rows.write(json.dumps({"trial_id": "aaa", "env_steps": 5000, "return_mean": 45, "timestamp": 5}) + "\n")
    MlflowTailer(spec, copy, "abc").flush({"aaa": (str(trial), str(trial), {"training.lr": 0.01})})
    after = _state(uri)
    assert {k: after[k] for k in before} == before
    (parent,) = [r for r in _parents(uri) if r.info.run_id not in before]
    assert parent.data.tags[COPY_OF_TAG] == "abc"


def test_the_first_export_to_a_new_sqlite_store_says_nothing_of_mlflows_tables(tmp_path, capfd):
    # MLflow logs "Creating initial MLflow database tables..." at INFO when it makes a store; a sweep's
    # output is rlsweep's lines only.
    root = _sweep(tmp_path / "exp")
    code = cli.main(["export", str(root), "--tracking-uri", f"sqlite:///{tmp_path / 'new.db'}", "--experiment", "x"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "database tables" not in out + err and "INFO" not in out + err, err


def test_a_copy_whose_original_cannot_be_read_here_leaves_the_original_alone(tmp_path, capsys, caplog, exported):
    # The original is there but unreadable from here (a disk not mounted the same way, no permission): the
    # folder being exported may be a copy, so it is not taken for the original moved.
    original, uri = exported
    before = _state(uri)
    copy = tmp_path / "exp-copy"
    shutil.copytree(original, copy)
    (original / store.SWEEP_FILE).write_text("unreadable")
    assert _export(capsys, copy, uri)[0] == 0
    after = _state(uri)
    assert {k: after[k] for k in before} == before and len(after) > len(before)
