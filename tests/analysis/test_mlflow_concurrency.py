"""Several writers of one sweep to a real ``mlflow server``: two ``rlsweep export`` processes at once, an
export while the live logger writes, and a server that stops and comes back while the live logger writes.
Checked point by point through ``MlflowClient``: one parent, one run per trial, every row once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from rlsweep import load_spec, store
from rlsweep.analysis._ui import free_port, start_server, stop_server
from tests.conftest import REPO, TINY_SPEC
from tests.experiments import new_experiment, write_trial

pytestmark = pytest.mark.slow

TRIALS, ROWS = 12, 20


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real ``mlflow server`` on 127.0.0.1 with a SQLite store, shared by this module's tests (each writes
    sweeps of its own ids, and checks runs by sweep id); (url, stop, start), where stop and start end it by
    its process group and start it again on the same port and store (a test that stops it starts it again)."""
    port, backend = free_port(), f"sqlite:///{tmp_path_factory.mktemp('server') / 'server.db'}"
    state = {"process": start_server(backend, port)[0]}

    def stop() -> None:
        stop_server(state["process"])

    def start() -> None:
        state["process"] = start_server(backend, port)[0]

    yield f"http://127.0.0.1:{port}", stop, start
    stop_server(state["process"])


def _sweep(root: Path, sweep_id: str, rows: int = ROWS) -> Path:
    spec = {**TINY_SPEC, "mlflow": {"tracking_uri": "unused", "experiment": "race"}}
    new_experiment(root, spec, sweep_id=sweep_id)
    for i in range(TRIALS):
        write_trial(root, f"t{i:02d}", [float(i + r) for r in range(rows)], config={"training.lr": 0.001 * (i + 1)},
                    settings={"settings": {"training.lr": 0.001 * (i + 1)}, "config": {"training.lr": 0.001 * (i + 1)}})
    return root


def _export_process(root: Path, url: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rlsweep.cli", "export", str(root), "--tracking-uri", url, "--experiment", "race"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _check_once(url: str, sweep_id: str, rows_by_trial: dict[str, int]) -> None:
    """One parent, one child per trial with its params, and each metric's history has each row once."""
    client = MlflowClient(tracking_uri=url)
    experiment = client.get_experiment_by_name("race")
    runs = client.search_runs([experiment.experiment_id], f"tags.`rlsweep.sweep_id` = '{sweep_id}'", max_results=1000)
    parents = [r for r in runs if r.data.tags.get("rlsweep.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("rlsweep.kind") == "trial"]
    assert len(parents) == 1, [r.info.run_id for r in parents]
    assert sorted(r.data.tags["rlsweep.trial_id"] for r in children) == sorted(rows_by_trial)
    for run in children:
        expected = rows_by_trial[run.data.tags["rlsweep.trial_id"]]
        assert run.data.params, run.info.run_id
        for key in ("env_steps", "return_mean"):
            steps = [m.step for m in client.get_metric_history(run.info.run_id, key)]
            assert sorted(steps) == [1000 * (i + 1) for i in range(expected)], (key, steps)
        assert int(run.data.tags["rlsweep.rows_exported"]) == expected


def test_two_exports_at_once_write_everything_once(tmp_path, server):
    url, _, _ = server
    for round_ in range(3):
        sweep_id = f"race{round_}"
        root = _sweep(tmp_path / sweep_id, sweep_id)
        first, second = _export_process(root, url), _export_process(root, url)
        for process in (first, second):
            _, err = process.communicate(timeout=600)
            assert process.returncode == 0, err[-2000:]
        _check_once(url, sweep_id, {f"t{i:02d}": ROWS for i in range(TRIALS)})


TAILER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from rlsweep import load_spec, store
    from rlsweep.analysis._live import MlflowTailer
    from tests.experiments import write_trial

    root, url, trials, rows = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    spec = load_spec({**yaml_spec, "mlflow": {"tracking_uri": url, "experiment": "race", "live": True}}, preflight=False)
    tailer = MlflowTailer(spec, root, store.read_sweep_info(root)["sweep_id"])
    folders = {p.name.split("_")[1]: p for p in root.glob("train_*")}
    # As Tune writes them: a row at a time to each trial's result.json, the live logger flushing between.
    for r in range(1, rows):
        for trial_id, folder in sorted(folders.items()):
            with (folder / store.RESULT_FILE).open("a") as out:
                out.write(json.dumps({"trial_id": trial_id, "env_steps": 1000 * (r + 1), "return_mean": float(r),
                                      "timestamp": r + 1}) + "\\n")
        tailer.flush({t: (str(f), str(f), {"training.lr": 0.001}) for t, f in folders.items()})
    print("done")
    """
)


def test_an_export_while_the_live_logger_writes_duplicates_nothing(tmp_path, server):
    url, _, _ = server
    root = _sweep(tmp_path / "live", "live-race", rows=1)  # the live logger appends the rest
    script = tmp_path / "tailer.py"
    script.write_text("import json\nfrom tests.conftest import TINY_SPEC as yaml_spec\n" + TAILER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    tailer = subprocess.Popen([sys.executable, str(script), str(root), url, str(TRIALS), str(ROWS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    exports = 0
    while tailer.poll() is None:
        done = _export_process(root, url)
        _, err = done.communicate(timeout=600)
        assert done.returncode == 0, err[-2000:]
        exports += 1
    out, err = tailer.communicate()
    assert tailer.returncode == 0 and "done" in out, err[-3000:]
    assert exports >= 2, "the exports did not overlap the live logger"
    _check_once(url, "live-race", {f"t{i:02d}": ROWS for i in range(TRIALS)})


def test_the_live_logger_sends_what_it_missed_while_the_server_was_down(tmp_path, server):
    from rlsweep.analysis._live import MlflowTailer

    url, stop, start = server
    root = _sweep(tmp_path / "restart", "restart", rows=5)
    spec = load_spec({**TINY_SPEC, "mlflow": {"tracking_uri": url, "experiment": "race", "live": True}}, preflight=False)
    tailer = MlflowTailer(spec, root, "restart")
    folders = {p.name.split("_")[1]: p for p in root.glob("train_*")}
    everything = {t: (str(f), str(f), {"training.lr": 0.001}) for t, f in folders.items()}
    tailer.flush(everything)
    _check_once(url, "restart", {t: 5 for t in folders})

    def append(rows: range) -> None:
        for trial_id, folder in folders.items():
            with (folder / store.RESULT_FILE).open("a") as out:
                for r in rows:
                    out.write(json.dumps({"trial_id": trial_id, "env_steps": 1000 * (r + 1), "return_mean": 1.0,
                                          "timestamp": r + 1}) + "\n")

    stop()
    append(range(5, 12))
    started = time.monotonic()
    with pytest.raises(ConnectionError):
        tailer.flush(everything)  # the rows wait in the files
    assert time.monotonic() - started < 30, "a flush against a stopped server should give up in seconds"
    start()
    append(range(12, 15))
    tailer.flush(everything)
    _check_once(url, "restart", {t: 15 for t in folders})
    # And the export after it finds nothing to add.
    done = _export_process(root, url)
    assert done.wait(timeout=600) == 0
    _check_once(url, "restart", {t: 15 for t in folders})


def test_an_export_to_an_address_where_nothing_answers_fails_in_seconds(tmp_path):
    root = _sweep(tmp_path / "nowhere", "nowhere", rows=2)
    started = time.monotonic()
    done = _export_process(root, f"http://127.0.0.1:{free_port()}")
    _, err = done.communicate(timeout=300)
    assert done.returncode == 1 and "nothing answers" in err and "Traceback" not in err
    assert time.monotonic() - started < 60
