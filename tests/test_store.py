"""The experiment store: the directory's files written and read back in one place."""

from __future__ import annotations

import json

import pytest

from rlsweep import store
from rlsweep.errors import SweepError


def _experiment(tmp_path, **facts):
    path = tmp_path / "exp"
    store.create_experiment(path, spec_yaml="name: exp\n", document={"name": "exp"}, **facts)
    return path


def _trial(root, name, rows, *, error=None):
    trial = root / name
    trial.mkdir()
    (trial / store.PARAMS_FILE).write_text(json.dumps({"training.lr": 0.1}))
    (trial / store.RESULT_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    if error:
        (trial / store.ERROR_FILE).write_text(error)
    return trial


def test_a_new_experiment_records_its_spec_and_facts_and_gets_an_id(tmp_path):
    path = _experiment(tmp_path, searcher="optuna", restores_other_trials=False)
    info = store.read_sweep_info(path)
    assert len(info["sweep_id"]) == 32 and info["searcher"] == "optuna" and info["spec"] == {"name": "exp"}
    assert store.read_spec_yaml(path) == "name: exp\n"
    with pytest.raises(FileExistsError):
        _experiment(tmp_path)


def test_a_folder_that_is_no_experiment_is_a_sweep_error(tmp_path):
    with pytest.raises(SweepError, match="not an rlsweep experiment directory"):
        store.read_sweep_info(tmp_path)
    (tmp_path / store.SWEEP_FILE).write_text("{}")
    with pytest.raises(SweepError, match="no sweep_id"):
        store.read_sweep_info(tmp_path)


def test_rows_redone_after_a_restore_count_once_and_raw_rows_keep_the_file(tmp_path):
    root = _experiment(tmp_path)
    steps = [500, 1000, 1500, 1000, 1500, 2000]  # restored from the checkpoint at 500, redid 1000 and 1500
    _trial(root, "train_abcde_00000_0", [{"trial_id": "abcde_00000", "env_steps": s, "return_mean": i} for i, s in enumerate(steps)])
    (trial,) = store.read_trials(root, budget_env_steps=2000)
    assert [r["env_steps"] for r in trial.rows] == [500, 1000, 1500, 2000]
    assert [r["return_mean"] for r in trial.rows] == [0, 3, 4, 5]  # the redone rows replace the old ones
    assert [r["env_steps"] for r in trial.raw_rows] == steps
    assert trial.state == store.TERMINATED and trial.env_steps == 2000 and trial.failures == 0


def test_trials_that_restore_other_trials_keep_every_row(tmp_path):
    root = _experiment(tmp_path, restores_other_trials=True)
    steps = [500, 1000, 600, 1100]  # PBT: exploited a trial at 600 env steps
    _trial(root, "train_abcde_00000_0", [{"trial_id": "abcde_00000", "env_steps": s} for s in steps])
    (trial,) = store.read_trials(root, budget_env_steps=2000)
    assert [r["env_steps"] for r in trial.rows] == steps and trial.state == store.RUNNING


def test_a_garbled_line_is_skipped_and_the_rest_kept(tmp_path):
    root = _experiment(tmp_path)
    trial = _trial(root, "train_abcde_00000_0", [{"trial_id": "abcde_00000", "env_steps": 500}])
    with (trial / store.RESULT_FILE).open("a") as out:
        out.write('{"trial_id": "abcde_00000", "env_st\n[1, 2]\n' + json.dumps({"trial_id": "abcde_00000", "env_steps": 1000}) + "\n")
    assert store.read_rows(trial / store.RESULT_FILE)[1] == 2
    (read,) = store.read_trials(root, budget_env_steps=2000)
    assert [r["env_steps"] for r in read.rows] == [500, 1000]


def test_an_error_file_makes_a_trial_errored_and_counts_its_failures(tmp_path):
    root = _experiment(tmp_path)
    _trial(root, "train_abcde_00000_0", [{"trial_id": "abcde_00000", "env_steps": 500}], error="Failure # 1\nboom\nFailure # 2\nboom")
    (trial,) = store.read_trials(root, budget_env_steps=2000)
    assert trial.state == store.ERROR and trial.failures == 2 and "boom" in trial.error


def test_settings_and_checkpoint_metadata_round_trip(tmp_path):
    from pathlib import Path

    root = _experiment(tmp_path)
    trial = _trial(root, "train_abcde_00000_0", [{"trial_id": "abcde_00000", "env_steps": 500}])
    store.write_trial_settings(lambda name, text: (trial / name).write_text(text), {"settings": {"env": Path("/e")}})
    (trial / "checkpoint_000000").mkdir()  # cut off by a crash: no metadata, not offered
    for index, steps in enumerate((500, 1000), start=1):
        directory = trial / f"checkpoint_{index:06d}"
        (directory / store.ALGORITHM_STATE).mkdir(parents=True)
        store.write_checkpoint_meta(directory, {"metrics": {"env_steps": steps}, "where": Path("/c")})
    directory = trial / "checkpoint_000003"
    (directory / store.ALGORITHM_STATE).mkdir(parents=True)
    store.write_checkpoint_meta(directory, {"carried": {}})  # no metrics: counts as 0 env steps
    for name, meta in (("checkpoint_000004", {"metrics": {"env_steps": 1500}}), ("checkpoint_000005", [1500])):
        # Damaged: its algorithm state lost, or metadata that is not rlsweep's. Neither is offered.
        (trial / name).mkdir()
        (trial / name / store.CHECKPOINT_META).write_text(json.dumps(meta))
    (trial / "checkpoint_000005" / store.ALGORITHM_STATE).mkdir()
    (read,) = store.read_trials(root, budget_env_steps=2000)
    assert read.settings == {"settings": {"env": "/e"}} and read.path == trial
    assert [c.env_steps for c in read.checkpoints] == [500, 1000, 0] and read.latest_checkpoint.env_steps == 1000
    assert store.read_checkpoint_meta(trial / "checkpoint_000001")["where"] == "/c"
    with pytest.raises(SweepError):
        store.read_checkpoint_meta(trial / "checkpoint_000000")


def test_the_config_in_force_and_a_done_row_and_an_error_in_bad_bytes(tmp_path):
    root = _experiment(tmp_path)
    rows = [
        {"trial_id": "abcde_00000", "env_steps": 500, "config": {"training.lr": 0.1}},
        # PBT mutated the trial; Tune marks its last row done before the budget (a stop threshold).
        {"trial_id": "abcde_00000", "env_steps": 1000, "config": {"training.lr": 0.3}, "done": True},
    ]
    trial = _trial(root, "train_abcde_00000_0", rows)
    (read,) = store.read_trials(root, budget_env_steps=2000)
    assert dict(read.config) == {"training.lr": 0.3} and read.state == store.TERMINATED
    (trial / store.ERROR_FILE).write_bytes(b"Failure # 1\nbad \xff byte")
    (read,) = store.read_trials(root, budget_env_steps=2000)
    assert read.state == store.ERROR and "bad" in read.error and read.failures == 1


def test_a_missing_spec_file_is_a_sweep_error_naming_the_folder(tmp_path):
    with pytest.raises(SweepError, match=f"{tmp_path}: cannot read the sweep's spec .No such file"):
        store.read_spec_yaml(tmp_path)


def test_an_experiment_goes_into_new_parent_folders_and_keeps_values_json_cannot_hold(tmp_path):
    from datetime import datetime
    from pathlib import Path

    path = tmp_path / "results" / "nested" / "exp"
    store.create_experiment(path, spec_yaml="", document={"storage": Path("/x")}, when=Path("/y"))
    info = store.read_sweep_info(path)
    assert info["spec"] == {"storage": "/x"} and info["when"] == "/y"
    assert datetime.fromisoformat(info["created"]).year >= 2024


def test_trial_folders_are_those_tune_made(tmp_path):
    root = _experiment(tmp_path)
    _trial(root, "train_abcde_00000_0", [{"trial_id": "abcde_00000", "env_steps": 500}])
    pending = root / "train_abcde_00001_1"
    pending.mkdir()
    (pending / store.PARAMS_FILE).write_text(json.dumps({"training.lr": 0.2}))  # never reported
    (root / "checkpoint_tmp").mkdir()  # not a trial
    (root / "notes.json").write_text("{}")
    trials = store.read_trials(root, budget_env_steps=2000)
    assert [(t.trial_id, t.state, dict(t.config)) for t in trials] == [
        ("abcde_00000", store.RUNNING, {"training.lr": 0.1}),
        ("abcde_00001", store.PENDING, {"training.lr": 0.2}),
    ]


def test_tune_state_decides_status_and_failures(tmp_path):
    root = _experiment(tmp_path)
    _trial(root, "train_abcde_00000_0", [{"trial_id": "abcde_00000", "env_steps": 500}], error="Failure # 1\nboom")
    _trial(root, "train_abcde_00001_1", [{"trial_id": "abcde_00001", "env_steps": 2000}])
    _trial(root, "train_abcde_00002_2", [{"trial_id": "abcde_00002", "env_steps": 500}])
    _trial(root, "train_abcde_00003_3", [{"trial_id": "abcde_00003", "env_steps": 500}])
    older = {"trial_data": [[json.dumps({"trial_id": "abcde_00000", "status": "ERROR"}), "{}"]]}
    newer = {
        "trial_data": [
            "not a trial entry",
            [json.dumps(["not", "a", "trial"]), "{}"],
            ["{garbled", "{}"],
            # Retried after its failure, now running again: the failure is history, not its error.
            [json.dumps({"trial_id": "abcde_00000", "status": "RUNNING"}), json.dumps({"num_failures": 3})],
            [json.dumps({"trial_id": "abcde_00001", "status": "PAUSED"}), json.dumps({"num_failures": "3"})],
            [json.dumps({"trial_id": "abcde_00002"})],  # no runtime part, no status
            [json.dumps({"trial_id": "abcde_00003", "status": "TERMINATED"}), json.dumps({})],
        ]
    }
    # Named by start time; the newest is read whatever the files' modification times.
    (root / "experiment_state-2026-01-02_00-00-00.json").write_text(json.dumps(newer))
    (root / "experiment_state-2026-01-01_00-00-00.json").write_text(json.dumps(older))
    (root / "experiment_state-2025-12-31_00-00-00.json").write_text(json.dumps(older))
    first, second, third, fourth = store.read_trials(root, budget_env_steps=2000)
    assert (first.state, first.error, first.failures) == (store.RUNNING, None, 3)
    assert (second.state, second.failures) == (store.PAUSED, 0)
    assert (third.state, third.failures) == (store.PENDING, 0)
    assert (fourth.state, fourth.failures) == (store.TERMINATED, 0)
    assert store.has_tune_state(root)


def test_rows_survive_blank_lines_bad_bytes_and_lines_that_are_no_row(tmp_path):
    path = tmp_path / store.RESULT_FILE
    good = [json.dumps({"env_steps": s}).encode() for s in (1, 2, 3)]
    path.write_bytes(b"\n".join([good[0], b"", b'{"env_steps": 9\xff', b"[1]", b"not json", good[1], b"", good[2]]) + b"\n")
    rows, bad = store.read_rows(path)
    assert [r["env_steps"] for r in rows] == [1, 2, 3] and bad == 3


@pytest.mark.parametrize("value", [None, "12", True, float("inf"), float("nan")])
def test_a_missing_or_non_numeric_metric_reads_as_nan(tmp_path, value):
    import math

    row = {"trial_id": "abcde_00000", "env_steps": 500}
    if value is not None:
        row["return_mean"] = value
    root = _experiment(tmp_path)
    _trial(root, "train_abcde_00000_0", [row, {"trial_id": "abcde_00000", "env_steps": 1000, "return_mean": 5}])
    (trial,) = store.read_trials(root, budget_env_steps=2000)
    first, second = trial.values("return_mean")
    assert math.isnan(first) and second == 5.0


def test_settings_that_are_not_a_mapping_are_not_settings(tmp_path):
    (tmp_path / store.TRIAL_FILE).write_text("[1, 2]")
    assert store.read_trial_settings(tmp_path) is None
    with pytest.raises(SweepError, match=str(tmp_path)):
        store.read_checkpoint_meta(tmp_path)


def test_a_second_sweep_of_the_same_name_gets_a_dated_folder(tmp_path):
    first = store.new_experiment_dir(tmp_path / "results", "exp")
    assert first == (tmp_path / "results" / "exp").resolve()
    store.create_experiment(first, spec_yaml="", document={})
    second = store.new_experiment_dir(tmp_path / "results", "exp")
    assert second.parent == first.parent and second.name.startswith("exp-") and len(second.name) == len("exp-20260101-000000")


def test_the_mlflow_lock_serializes_writers_and_a_read_only_directory_still_exports(tmp_path, caplog):
    import threading
    import time

    root = _experiment(tmp_path)
    order: list[str] = []

    def writer(name: str) -> None:
        with store.mlflow_lock(root):
            order.append(f"{name} in")
            time.sleep(0.2)
            order.append(f"{name} out")

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # One writer at a time: each leaves before the other enters (flock is per open file, so threads count).
    assert order[0].split()[0] == order[1].split()[0] and order[2].split()[0] == order[3].split()[0], order
    # A lock file that cannot be opened for writing (here: a folder in its place, as a read-only directory
    # refuses it too): the writer goes on without the lock, with a warning.
    (root / store.MLFLOW_LOCK).unlink()
    (root / store.MLFLOW_LOCK).mkdir()
    entered = []
    with store.mlflow_lock(root):
        entered.append(True)
    assert entered and "no MLflow lock" in caplog.text


# --- a damaged file is not an empty one ----------------------------------------------------------------------


def _rows(n):
    return [{"trial_id": "abcde_00000", "env_steps": 500 * i, "return_mean": float(i)} for i in range(1, n + 1)]


def test_a_results_file_of_nul_bytes_or_mostly_garbage_is_unreadable_not_empty(tmp_path):
    root = _experiment(tmp_path)
    trial = _trial(root, "train_abcde_00000_0", _rows(4))
    result = trial / store.RESULT_FILE
    # Overwritten with zeros, same size (a disk's or a copy's damage): before, one skipped line and a trial
    # with no rows, counted as finished.
    result.write_bytes(b"\0" * result.stat().st_size)
    (read,) = store.read_trials(root, budget_env_steps=2000)
    assert read.state == store.UNREADABLE and read.rows == ()
    assert read.damage == (f"{result}: is damaged (NUL bytes: 1 of its 1 line(s) are not result rows): the trial's results cannot be read",)
    # More garbled lines than rows: another file's text, not a trial's results.
    result.write_text(json.dumps(_rows(1)[0]) + "\nnot a row\n[1, 2]\n")
    (read,) = store.read_trials(root, budget_env_steps=2000)
    assert read.state == store.UNREADABLE and "is damaged (garbled: 2 of its 3 line(s) are not result rows)" in read.damage[0]


def test_a_results_file_cut_short_or_with_a_stray_line_is_read_with_a_note(tmp_path, caplog):
    root = _experiment(tmp_path)
    trial = _trial(root, "train_abcde_00000_0", _rows(1))
    result = trial / store.RESULT_FILE
    # A sweep killed mid-write: its one complete row and the start of the next, at any byte of it.
    whole = json.dumps(_rows(2)[1])
    for cut in (1, len(whole) // 2, len(whole) - 1):
        result.write_text(json.dumps(_rows(1)[0]) + "\n" + whole[:cut])
        (read,) = store.read_trials(root, budget_env_steps=2000)
        assert (read.state, len(read.rows), read.damage) == (store.RUNNING, 1, ()), cut
    assert "skipped 1 unreadable line(s) of result.json" in caplog.text
    # The only line, cut short: a trial killed as it wrote its first row has none yet.
    result.write_text(whole[: len(whole) // 2])
    (read,) = store.read_trials(root, budget_env_steps=2000)
    assert (read.state, read.rows, read.damage) == (store.PENDING, (), ())
    # As many rows as garbled lines is no damage either: each row read is whole.
    result.write_text(json.dumps(_rows(1)[0]) + "\n\0\0\0\n")
    (read,) = store.read_trials(root, budget_env_steps=2000)
    assert (len(read.rows), read.damage) == (1, ())


@pytest.mark.parametrize("content", [b'{"settings": {"debugging.se', b"\0" * 64, b"", b"[1, 2]"],
                         ids=["cut off", "NUL bytes", "empty", "not an object"])
def test_a_settings_file_that_cannot_be_read_is_damage_not_a_trial_that_never_started(tmp_path, content):
    root = _experiment(tmp_path)
    trial = _trial(root, "train_abcde_00000_0", _rows(4))
    (trial / store.TRIAL_FILE).write_bytes(content)
    (read,) = store.read_trials(root, budget_env_steps=2000)
    # The trial's results are whole: it finished; what it ran with cannot be read, and says so.
    assert read.state == store.TERMINATED and len(read.rows) == 4 and read.settings is None and read.seed is None
    (problem,) = read.damage
    assert problem.startswith(f"{trial / store.TRIAL_FILE}: ") and problem.endswith("the settings and seed the trial ran with cannot be read")
    # No file at all is a trial that recorded nothing (it ran before rlsweep recorded settings): no damage.
    (trial / store.TRIAL_FILE).unlink()
    assert store.read_trials(root, budget_env_steps=2000)[0].damage == ()


def test_a_params_file_that_cannot_be_read_is_damage_where_the_config_comes_from_it(tmp_path):
    root = _experiment(tmp_path)
    trial = _trial(root, "train_abcde_00000_0", _rows(4))
    (trial / store.PARAMS_FILE).write_bytes(b"\0" * 20)
    (read,) = store.read_trials(root, budget_env_steps=2000)
    assert read.config == {} and read.damage == (f"{trial / store.PARAMS_FILE}: is not JSON (NUL bytes): garbled, the trial's config cannot be read",)
    # Rows that carry their config (as Tune writes them) do not need params.json: nothing is lost.
    (trial / store.RESULT_FILE).write_text("".join(json.dumps({**r, "config": {"training.lr": 0.2}}) + "\n" for r in _rows(4)))
    (read,) = store.read_trials(root, budget_env_steps=2000)
    assert read.config == {"training.lr": 0.2} and read.damage == ()


def test_checkpoint_metadata_cut_off_is_skipped_with_a_note_and_garbage_in_it_is_damage(tmp_path, caplog):
    root = _experiment(tmp_path)
    trial = _trial(root, "train_abcde_00000_0", _rows(4))
    for index, content in enumerate((b'{"metrics": {"env_ste', b"\0" * 30, b'{"metrics": {"env_steps": 1500}}')):
        (trial / f"checkpoint_{index:06d}" / store.ALGORITHM_STATE).mkdir(parents=True)
        (trial / f"checkpoint_{index:06d}" / store.CHECKPOINT_META).write_bytes(content)
    with caplog.at_level("WARNING"):
        (read,) = store.read_trials(root, budget_env_steps=2000)
    # A save interrupted leaves the first; zeros are no save of rlsweep's.
    assert [c.path.name for c in read.checkpoints] == ["checkpoint_000002"]
    assert read.damage == (f"{trial / 'checkpoint_000001'}: not a complete rlsweep checkpoint ({trial / 'checkpoint_000001' / store.CHECKPOINT_META}: "
                           "is not JSON (NUL bytes)): the checkpoint cannot be read",)
    assert f"{trial / 'checkpoint_000000'}: not a complete rlsweep checkpoint" in caplog.text


@pytest.mark.parametrize("content", [b"\0" * 100, b'{"trial_data": [["{\\"tri', b"[]"], ids=["NUL bytes", "cut off", "not Tune's"])
def test_a_tune_state_that_cannot_be_read_is_the_experiments_damage(tmp_path, caplog, content):
    root = _experiment(tmp_path)
    _trial(root, "train_abcde_00000_0", _rows(4))
    state = root / "experiment_state-2026-01-01_00-00-00.json"
    state.write_bytes(content)
    found = store.read_experiment(root, budget_env_steps=2000)
    # The trial's state is then guessed from its own files: an answer that says it is incomplete.
    (problem,) = found.damage
    assert problem.startswith(f"{state}: ") and found.trials[0].state == store.TERMINATED and problem in caplog.text
    state.write_text(json.dumps({"trial_data": []}))
    assert store.read_experiment(root, budget_env_steps=2000).damage == ()


# --- the sweep info tells its own damage from an edited spec file -------------------------------------------


def test_the_sweep_info_carries_a_checksum_that_tells_damage_from_an_edit(tmp_path):
    path = _experiment(tmp_path, searcher="optuna")
    info = store.read_sweep_info(path)
    assert store.sweep_info_problem(path, info) is None and store.spec_as_run(info) == {"name": "exp"}
    # One byte of the file changed, still JSON: the spec it keeps is not the one the sweep ran.
    (path / store.SWEEP_FILE).write_text((path / store.SWEEP_FILE).read_text().replace('"exp"', '"exq"'))
    info = store.read_sweep_info(path)
    assert store.sweep_info_problem(path, info) == f"{path / store.SWEEP_FILE}: is damaged (its content does not match its sha256 checksum)"
    assert store.spec_as_run(info) is None  # readers fall back to the spec file, saying why
    assert f"{path / store.SWEEP_FILE}: is damaged" in "; ".join(store.resume_problems(path))
    # A sweep from before the checksum: only a spec that is no document is known to be damage.
    (path / store.SWEEP_FILE).write_text(json.dumps({"sweep_id": "abc", "spec": [1]}))
    assert "the spec kept in it is [1], not a spec document" in store.sweep_info_problem(path, store.read_sweep_info(path))
    (path / store.SWEEP_FILE).write_text(json.dumps({"sweep_id": "abc", "spec": {"name": "exq"}}))
    assert store.sweep_info_problem(path, store.read_sweep_info(path)) is None


# --- a folder Tune's state does not list ----------------------------------------------------------------------


def test_a_folder_tunes_state_does_not_list_is_unlisted_and_named_not_a_pending_trial(tmp_path, caplog):
    root = _experiment(tmp_path)
    _trial(root, "train_abcde_00000_0", _rows(4))
    stray = root / "PPO_deadbeef_00099_x"
    stray.mkdir()
    (stray / store.PARAMS_FILE).write_text(json.dumps({"training.lr": 0.2}))
    # Without a state that lists trials, every folder with Tune's files is a trial (a sweep that has not
    # saved one yet, a folder written by hand): nothing to tell a stray folder by.
    assert [(t.trial_id, t.state) for t in store.read_trials(root, budget_env_steps=2000)] == [
        ("deadbeef_00099", store.PENDING), ("abcde_00000", store.TERMINATED)]
    state = root / "experiment_state-2026-01-01_00-00-00.json"
    state.write_text(json.dumps({"trial_data": [[json.dumps({"trial_id": "abcde_00000", "status": "TERMINATED"}), "{}"]]}))
    first, second = store.read_trials(root, budget_env_steps=2000)
    assert (first.trial_id, first.state, first.path) == ("deadbeef_00099", store.UNLISTED, stray)
    assert f"{stray}: a trial folder not in Tune's experiment state ({state.name}): shown as UNLISTED, not as a trial of this sweep" in caplog.text
    # Named, not damage: nothing of the sweep Tune ran is left unread (and a running sweep has such folders).
    assert (first.damage, second.state, second.damage) == ((), store.TERMINATED, ())
    # resume names it once, and what to do.
    assert [p for p in store.resume_problems(root) if str(stray) in p] == [
        f"{stray}: a trial folder {state.name} does not list (Tune would never continue it): move it out of the directory"]
    # An entry of the state that names no trial may be the folder's: it is read as a trial, the entry named.
    state.write_text(json.dumps({"trial_data": [[json.dumps({"trial_id": "abcde_00000", "status": "TERMINATED"}), "{}"], "?"]}))
    assert store.read_trials(root, budget_env_steps=2000)[0].state == store.PENDING


def test_a_tune_state_cut_off_while_tune_copies_it_is_read_again_before_it_counts_as_damage(tmp_path, monkeypatch):
    root = _experiment(tmp_path)
    _trial(root, "train_abcde_00000_0", _rows(2))
    state = root / "experiment_state-2026-01-01_00-00-00.json"
    whole = json.dumps({"trial_data": [[json.dumps({"trial_id": "abcde_00000", "status": "TERMINATED"}), "{}"]]})
    state.write_text(whole[: len(whole) // 2])
    # The copy ends while the reader waits (forced here: the wait is where it finishes).
    monkeypatch.setattr(store.time, "sleep", lambda seconds: state.write_text(whole))
    found = store.read_experiment(root, budget_env_steps=4000)
    # Tune's word, not a guess from the trial's files (which would say RUNNING: 2,000 of 4,000 env steps).
    assert found.damage == () and found.trials[0].state == store.TERMINATED
    # Still cut off after the wait: damage, named.
    state.write_text(whole[: len(whole) // 2])
    monkeypatch.setattr(store.time, "sleep", lambda seconds: None)
    found = store.read_experiment(root, budget_env_steps=4000)
    assert found.damage[0].startswith(f"{state}: is not JSON") and found.trials[0].state == store.RUNNING


def test_a_trial_id_in_a_folder_name_is_written_in_0_to_9():
    # Tune's ids are "<hex>_<5 digits 0-9>"; a folder "PPO_deadbeef_٠٠٠٩٩_x" is no trial of Tune's numbering.
    from rlsweep.store import _trial_id_from_dirname

    assert _trial_id_from_dirname("PPO_deadbeef_00099_x") == "deadbeef_00099"
    assert _trial_id_from_dirname("PPO_deadbeef_\u0660\u0660\u0660\u0669\u0669_x") == "PPO_deadbeef_\u0660\u0660\u0660\u0669\u0669_x"
