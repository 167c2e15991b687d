"""The MLflow export into a SQLite store: rows in bulk chunks that hold what MLflow's ``log_batch`` would, a
cut-off export going on from its last chunk, the progress line of a long export, no run left RUNNING by a
sweep no driver runs, and a SIGTERM'd export marking its runs as a failed one does."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from rlsweep import cli, store
from rlsweep.analysis import _mlflow, load
from rlsweep.errors import ExportError, UsageError
from tests.conftest import REPO, TINY_SPEC
from tests.experiments import new_experiment, write_trial


def _row(trial_id: str, step: int, value: float, stamp: float) -> dict:
    return {"trial_id": trial_id, "env_steps": step, "return_mean": value, "learn_time_s": value / 10,
            "hp/training.lr": 0.01, "timestamp": stamp}


def _resumed_trial(root: Path, trial_id: str, rows: list[dict]) -> None:
    folder = root / f"train_{trial_id}_00000_0_x"
    folder.mkdir()
    (folder / store.PARAMS_FILE).write_text(json.dumps({"training.lr": 0.01}))
    (folder / store.RESULT_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))


def _sweep(root: Path) -> Path:
    new_experiment(root, path=str(root.resolve()))
    # Rows redone after a resume (3000 and 2000 again, other values): the latest value of a key is MLflow's
    # (step, timestamp, value) maximum, here the third row's, not the last row's.
    _resumed_trial(root, "aaa", [_row("aaa", 1000, 5.0, 1), _row("aaa", 2000, 9.0, 2), _row("aaa", 4000, 1.0, 3),
                                 _row("aaa", 3000, 4.0, 4), _row("aaa", 2000, 7.0, 5), _row("aaa", 3000, 3.0, 6)])
    write_trial(root, "bbb", [float(v) for v in range(12)], config={"training.lr": 0.001}, done=True)
    return root


def _runs(uri: str, experiment: str = "e") -> dict[str, object]:
    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    return {r.data.tags.get("rlsweep.trial_id", "parent"): r for r in client.search_runs([found.experiment_id], max_results=100)}


def _held(uri: str) -> dict[str, tuple]:
    """Per trial: every metric point, the latest value of each key, the params and the row count."""
    client = MlflowClient(tracking_uri=uri)
    held = {}
    for trial, run in _runs(uri).items():
        if trial == "parent":
            continue
        points = sorted((k, m.step, m.timestamp, m.value) for k in run.data.metrics
                        for m in client.get_metric_history(run.info.run_id, k))
        held[trial] = (points, dict(run.data.metrics), dict(run.data.params), run.data.tags[_mlflow.ROWS_TAG])
    return held


def test_a_sqlite_store_takes_rows_in_bulk_chunks_holding_what_log_batch_would(tmp_path, monkeypatch):
    root = _sweep(tmp_path / "exp")
    bulk, batched = f"sqlite:///{tmp_path / 'bulk.db'}", f"sqlite:///{tmp_path / 'batched.db'}"
    # Chunks of two rows of 4 metrics (env_steps, return_mean, learn_time_s, hp/training.lr): the latest values
    # are chosen within a chunk and against the store's.
    monkeypatch.setattr(_mlflow._SqliteWriter, "chunk_size", 9)
    writers = []
    real = _mlflow.metric_writer
    monkeypatch.setattr(_mlflow, "metric_writer", lambda client: writers.append(real(client)) or writers[-1])
    load(root).to_mlflow(tracking_uri=bulk, experiment="e")
    assert writers and all(type(w) is _mlflow._SqliteWriter for w in writers)
    monkeypatch.setattr(_mlflow, "metric_writer", _mlflow._BatchWriter)
    load(root).to_mlflow(tracking_uri=batched, experiment="e")
    first = _held(bulk)
    assert first == _held(batched)
    assert first["aaa"][1]["return_mean"] == 1.0 and first["aaa"][3] == "6"
    assert len([p for p in first["aaa"][0] if p[0] == "return_mean"]) == 6

    # New rows, and the export again: only they are added, on both paths alike, each point once.
    with (root / "train_aaa_00000_0_x" / store.RESULT_FILE).open("a") as out:
        out.write(json.dumps(_row("aaa", 5000, 8.0, 7)) + "\n")
    monkeypatch.setattr(_mlflow, "metric_writer", real)
    load(root).to_mlflow(tracking_uri=bulk, experiment="e")
    load(root).to_mlflow(tracking_uri=bulk, experiment="e")
    monkeypatch.setattr(_mlflow, "metric_writer", _mlflow._BatchWriter)
    load(root).to_mlflow(tracking_uri=batched, experiment="e")
    again = _held(bulk)
    assert again == _held(batched)
    assert again["aaa"][1]["return_mean"] == 8.0 and again["aaa"][3] == "7"
    assert len(again["aaa"][0]) == len(set(again["aaa"][0])) == 7 * 4


def test_an_export_cut_off_between_chunks_goes_on_from_its_last_chunk(tmp_path, monkeypatch):
    root = _sweep(tmp_path / "exp")
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    monkeypatch.setattr(_mlflow._SqliteWriter, "chunk_size", 8)  # two rows of 4 metrics a chunk
    inserted = []
    real = _mlflow._SqliteWriter._insert

    def insert(self, run_id, metrics):
        if len(inserted) == 2:
            raise OSError(28, "No space left on device")
        inserted.append(len(metrics))
        real(self, run_id, metrics)

    monkeypatch.setattr(_mlflow._SqliteWriter, "_insert", insert)
    with pytest.raises(ExportError, match="stopped after 0 of 2 trials"):
        load(root).to_mlflow(tracking_uri=uri, experiment="e")
    run = _runs(uri)["aaa"]
    assert run.data.tags[_mlflow.ROWS_TAG] == "4" and run.info.status == "FAILED"
    monkeypatch.setattr(_mlflow._SqliteWriter, "_insert", real)
    sent = []
    monkeypatch.setattr(_mlflow, "row_metrics", lambda row, metric=None: sent.append(row) or real_row_metrics(row, metric))
    load(root).to_mlflow(tracking_uri=uri, experiment="e")
    assert [r["timestamp"] for r in sent[:2]] == [5, 6]  # aaa went on from its fifth row
    held = _held(uri)
    assert held["aaa"][3] == "6" and len(held["aaa"][0]) == len(set(held["aaa"][0])) == 6 * 4


real_row_metrics = _mlflow.row_metrics


def test_a_long_export_says_where_it_is(tmp_path, monkeypatch, capsys):
    root = _sweep(tmp_path / "exp")
    monkeypatch.setattr(_mlflow._SqliteWriter, "chunk_size", 8)
    monkeypatch.setattr(_mlflow, "QUIET_S", 0.0)
    monkeypatch.setattr(_mlflow, "EVERY_S", 0.02)
    said, heard = [], threading.Event()
    real_say, real_write = _mlflow.Progress.say, _mlflow._SqliteWriter.write

    def say(self, line):
        said.append(line)
        if "trial 1 of 2, 2 of 18 rows" in line:
            heard.set()
        real_say(self, line)

    def write(self, run_id, metrics, count):
        if count.value == "4":  # the second chunk waits until a line has told of the first
            assert heard.wait(60), said
        real_write(self, run_id, metrics, count)

    monkeypatch.setattr(_mlflow.Progress, "say", say)
    monkeypatch.setattr(_mlflow._SqliteWriter, "write", write)
    load(root).to_mlflow(tracking_uri=f"sqlite:///{tmp_path / 'm.db'}", experiment="e")
    err = capsys.readouterr().err
    assert "exporting to MLflow: trial 1 of 2, 2 of 18 rows" in err
    assert "exporting to MLflow: opening sqlite:///" in err  # before the store answered


# --- a sweep no driver runs leaves no run RUNNING --------------------------------------------------------


def _finished(root: Path) -> Path:
    new_experiment(root, path=str(root.resolve()))
    write_trial(root, "aaa", [1.0, 2.0, 3.0, 4.0], config={"training.lr": 0.01}, done=True)
    write_trial(root, "bbb", [5.0, 6.0, 7.0, 8.0], config={"training.lr": 0.001}, done=True)
    return root


def _statuses(uri: str) -> dict[str, str]:
    return {trial: run.info.status for trial, run in _runs(uri).items()}


def test_a_stray_folder_in_a_copied_sweep_leaves_no_run_running(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    copy = tmp_path / "copy"
    shutil.copytree(_finished(tmp_path / "exp"), copy)
    stray = copy / "PPO_deadbeef_00099_x"
    stray.mkdir()
    (stray / store.PARAMS_FILE).write_text(json.dumps({"training.lr": 0.5}))
    cli.main(["export", str(copy), "--tracking-uri", uri, "--experiment", "e"])
    assert "RUNNING" not in _statuses(uri).values(), _statuses(uri)


def test_an_interrupted_sweep_is_killed_in_mlflow_unless_its_driver_runs(tmp_path):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    root = _finished(tmp_path / "exp")
    write_trial(root, "ccc", [1.0, 2.0], config={"training.lr": 0.1})  # stopped half-way: RUNNING on disk
    driver = store.hold_driver_lock(root)  # as the live logger holds it from the sweep's start to its end
    assert driver is not None and store.driver_running(root)
    try:
        load(root).to_mlflow(tracking_uri=uri, experiment="e")
        assert _statuses(uri) == {"parent": "RUNNING", "aaa": "FINISHED", "bbb": "FINISHED", "ccc": "RUNNING"}
    finally:
        driver.close()
    assert not store.driver_running(root)
    load(root).to_mlflow(tracking_uri=uri, experiment="e")
    assert _statuses(uri) == {"parent": "KILLED", "aaa": "FINISHED", "bbb": "FINISHED", "ccc": "KILLED"}


# --- a SIGTERM'd export ------------------------------------------------------------------------------------


def _large(root: Path, trials: int = 3, rows: int = 4000) -> Path:
    """Rows of 20 metrics, as a trial reports them: 80,000 values a trial, four bulk chunks each."""
    from benchmarks.export import _row as bench_row

    new_experiment(root, path=str(root.resolve()))
    for t in range(trials):
        _resumed_trial(root, f"t{t}", [{"trial_id": f"t{t}", **bench_row(t, i, 1.0)} for i in range(rows)])
    return root


def _rows_exported(con: sqlite3.Connection) -> list[int]:
    return [int(v) for (v,) in con.execute("SELECT value FROM tags WHERE key = ?", (_mlflow.ROWS_TAG,))]


@pytest.mark.slow  # a real export of 240,000 values in a process of its own, twice: about 20 s
def test_a_sigterm_stops_an_export_as_a_failure_does_leaving_no_run_running(tmp_path):
    root = _large(tmp_path / "exp")
    db = tmp_path / "m.db"
    uri = f"sqlite:///{db}"
    process = subprocess.Popen(
        [sys.executable, "-m", "rlsweep.cli", "export", str(root), "--tracking-uri", uri, "--experiment", "e"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        deadline = time.monotonic() + 120
        # Hold the store until it has logged a chunk of rows, not all: its next write waits for the lock.
        while True:
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
            if not db.exists():
                continue
            holder = sqlite3.connect(db, timeout=30, isolation_level=None)
            try:
                holder.execute("BEGIN EXCLUSIVE")
                held = _safe(_rows_exported, holder)
            except sqlite3.Error:
                holder.close()
                continue
            if any(0 < n < 4000 for n in held):
                break
            holder.execute("COMMIT")
            holder.close()
        process.send_signal(signal.SIGTERM)
        holder.execute("COMMIT")
        holder.close()
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1 and "Traceback" not in err, err
    assert "ExportTerminated: the export was stopped by SIGTERM" in err and "again to complete it" in err, err
    statuses = _statuses(uri)
    assert "RUNNING" not in statuses.values() and "FAILED" in statuses.values(), statuses
    # The next export completes it.
    assert cli.main(["export", str(root), "--tracking-uri", uri, "--experiment", "e"]) == 0
    assert set(_statuses(uri).values()) == {"FINISHED"}
    with sqlite3.connect(db) as con:
        assert sorted(_rows_exported(con)) == [4000, 4000, 4000]


def _safe(read, con):
    try:
        return read(con)
    except sqlite3.Error:
        return []  # the store is still being made


def test_the_live_logger_holds_the_driver_lock_while_the_sweep_runs(tmp_path):
    from rlsweep import load_spec
    from rlsweep.analysis._live import live_logger

    root = _finished(tmp_path / "exp")
    spec = load_spec({**TINY_SPEC, "mlflow": {"tracking_uri": f"sqlite:///{tmp_path / 'm.db'}", "live": True}}, preflight=False)
    callback = live_logger(spec, root, "abc", flush_s=0.05)
    assert not store.driver_running(root)
    callback.setup()
    try:
        assert store.driver_running(root)
    finally:
        callback.on_experiment_end(trials=[])
    assert not store.driver_running(root)


def test_how_long_an_export_waits_for_a_server_is_five_minutes_or_what_the_environment_says(monkeypatch):
    from rlsweep.analysis._mlflow import server_wait_s
    from rlsweep.errors import ExportError

    monkeypatch.delenv("RLSWEEP_MLFLOW_WAIT_S", raising=False)
    assert server_wait_s() == 300.0
    monkeypatch.setenv("RLSWEEP_MLFLOW_WAIT_S", "7.5")
    assert server_wait_s() == 7.5
    for bad in ("-1", "nan", "soon", "inf"):
        monkeypatch.setenv("RLSWEEP_MLFLOW_WAIT_S", bad)
        with pytest.raises(ExportError, match="RLSWEEP_MLFLOW_WAIT_S must be a number of seconds >= 0"):
            server_wait_s()


def test_the_live_logger_looks_up_each_new_trials_run_alone_after_its_first_listing(tmp_path):
    """A sweep of n trials must not list all of its runs at each new trial (O(n^2) over the sweep): after
    the first listing, a new trial's run is looked up by its id, and one an export made is still found."""
    import rlsweep

    from rlsweep.analysis._live import MlflowTailer
    from rlsweep.analysis._mlflow import create_child

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    document = {**TINY_SPEC, "mlflow": {"tracking_uri": uri, "experiment": "e"}}
    root = new_experiment(tmp_path / "exp", document)
    folders = {t: write_trial(root, t, [1.0, 2.0], config={"training.lr": 0.001}) for t in ("t1", "t2", "t3")}
    queries: list[str] = []

    class Counting(MlflowClient):
        def search_runs(self, experiment_ids, filter_string="", *args, **kwargs):
            queries.append(filter_string)
            return super().search_runs(experiment_ids, filter_string, *args, **kwargs)

    tailer = MlflowTailer(rlsweep.load_spec(document, preflight=False), root, "abc")
    tailer.client = Counting(uri)
    flush = lambda *ids: tailer.flush({t: (str(folders[t]), str(folders[t]), {}) for t in ids})  # noqa: E731
    flush("t1")
    assert [q for q in queries if "kind` = 'trial'" in q] == ["tags.`rlsweep.sweep_id` = 'abc' and tags.`rlsweep.kind` = 'trial'"]
    queries.clear()
    # An export made t3's run in the meantime: looked up by its id, it is found and not made twice.
    create_child(tailer.client, tailer.experiment, tailer.sweep_id, tailer.parent, "t3", folders["t3"])
    flush("t1", "t2", "t3")
    looked = [q for q in queries if "kind` = 'trial'" in q]
    assert sorted(looked) == [f"tags.`rlsweep.sweep_id` = 'abc' and tags.`rlsweep.kind` = 'trial' and tags.`rlsweep.trial_id` = '{t}'"
                              for t in ("t2", "t3")]
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("e").experiment_id], "tags.`rlsweep.kind` = 'trial'")
    assert sorted(r.data.tags["rlsweep.trial_id"] for r in runs) == ["t1", "t2", "t3"]


def test_a_sweep_over_trial_runs_gives_the_best_a_child_run_and_every_trial_a_row_of_trials_csv(tmp_path, capsys):
    """Past a few thousand runs MLflow's pages and searches crawl: above ``mlflow.trial_runs`` only the best
    trials by the metric get a child run, every trial is in the parent's trials.csv, a run made before keeps
    being updated, and ``--trial-runs all`` adds the rest without doubling a run."""
    import pandas as pd

    root = new_experiment(tmp_path / "exp", {**TINY_SPEC, "mlflow": {"trial_runs": 2}}, path=str((tmp_path / "exp").resolve()))
    # Scores at the end (avg-last-3 of the last three rows): ddd 40, ccc 30, bbb 20, aaa 10.
    for trial_id, top in {"aaa": 10, "bbb": 20, "ccc": 30, "ddd": 40}.items():
        write_trial(root, trial_id, [top - 5, top, top, top], config={"training.lr": top / 1000}, done=True)
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    assert cli.main(["export", str(root), "--tracking-uri", uri, "--experiment", "e"]) == 0
    assert "child runs for the best 2 trials by return_mean" in capsys.readouterr().out
    runs = _runs(uri)
    assert set(runs) == {"parent", "ccc", "ddd"}
    parent = runs["parent"]
    assert parent.data.tags[_mlflow.TRIAL_RUNS_TAG].startswith("2 of 4 trials have a child run: the best 2 by return_mean")
    client = MlflowClient(tracking_uri=uri)
    table = pd.read_csv(client.download_artifacts(parent.info.run_id, _mlflow.TRIALS_ARTIFACT, str(tmp_path)))
    assert sorted(table["trial_id"]) == ["aaa", "bbb", "ccc", "ddd"]
    assert dict(zip(table["trial_id"], table["config/training.lr"])) == {"aaa": 0.01, "bbb": 0.02, "ccc": 0.03, "ddd": 0.04}
    assert dict(zip(table["trial_id"], table["return_mean"])) == {"aaa": 10, "bbb": 20, "ccc": 30, "ddd": 40}
    assert dict(zip(table["trial_id"], table["child_run"].fillna(""))) == {
        "aaa": "", "bbb": "", "ccc": runs["ccc"].info.run_id, "ddd": runs["ddd"].info.run_id}
    # aaa improves to the top: it gets a run; ccc, now third, keeps its run, and a row it adds reaches it.
    # bbb, with no run, reports last (its rows' times the latest).
    for trial_id, returns in (("aaa", [90, 90, 90, 90, 95]), ("ccc", [25, 30, 30, 30, 31]), ("bbb", [20] * 7)):
        shutil.rmtree(root / f"train_{trial_id}_00000_0_x")
        write_trial(root, trial_id, returns, config={"training.lr": {"aaa": 0.01, "bbb": 0.02, "ccc": 0.03}[trial_id]}, done=True)
    load(root).to_mlflow(tracking_uri=uri, experiment="e")
    runs = _runs(uri)
    assert set(runs) == {"parent", "aaa", "ccc", "ddd"}
    assert runs["aaa"].data.tags[_mlflow.ROWS_TAG] == "5" and runs["ccc"].data.tags[_mlflow.ROWS_TAG] == "5"
    assert runs["ccc"].data.metrics["return_mean"] == 31
    assert "and those that had one" in runs["parent"].data.tags[_mlflow.TRIAL_RUNS_TAG]
    # The summary metrics are logged once per state of the results, whichever trials have a run.
    points = len(client.get_metric_history(runs["parent"].info.run_id, "trials"))
    load(root).to_mlflow(tracking_uri=uri, experiment="e", trial_runs=4)
    assert len(client.get_metric_history(runs["parent"].info.run_id, "trials")) == points
    assert cli.main(["export", str(root), "--tracking-uri", uri, "--experiment", "e", "--trial-runs", "all"]) == 0
    runs = _runs(uri)
    assert set(runs) == {"parent", "aaa", "bbb", "ccc", "ddd"} and runs["parent"].data.tags[_mlflow.TRIAL_RUNS_TAG] == "all"
    assert len(client.search_runs([client.get_experiment_by_name("e").experiment_id])) == 5
    for wrong in (-1, "ALL", 2.0):
        with pytest.raises(UsageError, match=r"trial_runs: a whole number of trials \(0 or more\) or 'all'"):
            load(root).to_mlflow(tracking_uri=uri, experiment="e", trial_runs=wrong)


def test_the_trials_a_sweeps_answers_name_get_a_run_beyond_the_best(tmp_path):
    """The held-out stage's winner and entrants and the confirmed configurations are what the parent's tags and
    confirmation runs name: each gets a child run even where it is not among the best by tuning value."""
    root = new_experiment(tmp_path / "exp", {**TINY_SPEC, "mlflow": {"trial_runs": 1}}, path=str((tmp_path / "exp").resolve()))
    for trial_id, top in {"aaa": 10, "bbb": 20, "ccc": 30, "ddd": 40}.items():
        write_trial(root, trial_id, [top, top, top], config={"training.lr": top / 1000}, done=True)
    (root / store.HOLDOUT_FILE).write_text(json.dumps({
        "winner": "bbb", "held_out_iqm": 15.0, "interval": [10.0, 20.0], "tuning_value": 20.0, "metric": "eval_return_mean",
        "candidates": [{"candidate": "bbb", "values": {"1000": 15.0}}, {"candidate": "aaa", "values": {"1000": 5.0}}]}))
    assert _mlflow.trials_with_runs(load(root), 1) == {"ddd", "bbb", "aaa"}


def test_live_logging_a_sweep_over_trial_runs_is_refused_at_validate(tmp_path):
    from rlsweep import load_spec
    from rlsweep.errors import SpecError

    with pytest.raises(SpecError, match=r"mlflow\.live: .*budget\.trials is 300, over mlflow\.trial_runs \(200\)"):
        load_spec({**TINY_SPEC, "budget": {**TINY_SPEC["budget"], "trials": 300}, "mlflow": {"live": True}})
    assert load_spec({**TINY_SPEC, "budget": {**TINY_SPEC["budget"], "trials": 300}, "mlflow": {"live": True, "trial_runs": "all"}})
    # A count out of bounds is one problem at its path, not one per member of the union.
    for wrong in (-1, "ALL", 2.5):
        with pytest.raises(SpecError) as refused:
            load_spec({**TINY_SPEC, "mlflow": {"trial_runs": wrong}})
        assert str(refused.value).count("mlflow.trial_runs") == 1
        assert f"mlflow.trial_runs: is a whole number of trials from 0 to 1,000,000, or all; got {wrong!r}" in str(refused.value)
    # A sweep that ran so (made before the rule) still reads and exports.
    ran = {**TINY_SPEC, "budget": {**TINY_SPEC["budget"], "trials": 300}, "mlflow": {"live": True}}
    root = new_experiment(tmp_path / "exp", ran, path=str((tmp_path / "exp").resolve()))
    write_trial(root, "aaa", [1.0, 2.0], config={"training.lr": 0.01}, done=True)
    assert load(root).to_mlflow(tracking_uri=f"sqlite:///{tmp_path / 'm.db'}", experiment="e")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the drop this test makes
def test_a_sigterm_whose_raise_python_drops_in_a_callback_still_stops_the_export_at_its_next_step():
    """Python runs a signal's handler wherever the main thread is; inside a weakref callback or a __del__
    (SQLAlchemy's, as MLflow frees a row) what it raises is printed and dropped, and the export went on to
    exit 0. The export's next step raises it again."""
    import gc

    from rlsweep.analysis._mlflow import ExportTerminated, sigterm_raises, stop_if_terminated

    class FreedRow:
        def __del__(self):
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)  # the handler, run where Python drops its raise

    stop_if_terminated()  # nothing noted: nothing raised
    with sigterm_raises() as raised:
        FreedRow()
        gc.collect()
        assert len(raised) == 1
        with pytest.raises(ExportTerminated):
            stop_if_terminated()
    stop_if_terminated()  # once the export is over, nothing is left noted
