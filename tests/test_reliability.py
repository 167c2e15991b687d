"""Faults a sweep meets, tried for real: a driver killed with SIGKILL and resumed, trials whose env raises,
a two-node Ray cluster, garbled result files, missing checkpoints, an MLflow server that is down, and a
spec edited between run and resume."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

import rlsweep
from rlsweep.analysis import load
from rlsweep.analysis._mlflow import ExportError
from rlsweep.analysis._ui import free_port, start_server
from rlsweep.errors import SpecError, SweepError
from tests.conftest import REPO, small_ppo

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "RAY_DEDUP_LOGS": "1"}


def _rows_by_trial(path: Path) -> dict[str, list[int]]:
    """trial id -> env steps of every row Tune appended so far (a line being written is left out)."""
    steps = {}
    for result in path.glob("*/result.json"):
        rows = []
        for line in result.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
        if rows:
            steps[rows[0]["trial_id"]] = [int(r["env_steps"]) for r in rows]
    return steps


def test_a_sweep_killed_with_sigkill_resumes_without_losing_or_repeating_work(tmp_path, ray_runtime):
    budget, batch = 3000, 500
    document = small_ppo(
        "killed",
        tmp_path / "results",
        batch=batch,
        epochs=1,
        searcher={"name": "optuna", "seed": 0},
        # One trial at a time: the kill finds one trial finished, one mid-way and one not started.
        budget={"env_steps": budget, "trials": 3, "max_concurrent": 1},
        checkpoint={"every_env_steps": 1000},
    )
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(document))
    experiment = tmp_path / "results" / "killed"
    driver = subprocess.Popen(
        [sys.executable, "-m", "rlsweep.cli", "run", str(spec_file), "--set", "ray.num_cpus=2"],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )
    try:
        # Kill the driver once the second trial reported 2500: one iteration after its checkpoint at 2000,
        # which Tune has recorded by then (it snapshots its state after every `keep` checkpoints). The
        # driver's progress lines say when, as each result arrives.
        finished, latest = set(), {}
        deadline = time.monotonic() + 400
        for line in driver.stdout:
            if match := re.match(r"\[(\w+)\] env_steps\s+(\d+)/", line):
                latest[match.group(1)] = int(match.group(2))
            elif match := re.match(r"\[(\w+)\] finished", line):
                finished.add(match.group(1))
            if finished and any(2500 <= s < budget for t, s in latest.items() if t not in finished):
                break
            assert time.monotonic() < deadline
        assert driver.poll() is None, "the sweep ended before it could be killed"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        # The driver's own Ray runtime: every process of the session this test started, by its group.
        try:
            os.killpg(driver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    before = _rows_by_trial(experiment)
    finished_before = {t for t, s in before.items() if max(s) >= budget}
    midway = {t for t, s in before.items() if max(s) < budget}
    assert len(finished_before) == 1 and len(midway) == 1 and len(before) == 2

    result = rlsweep.resume(experiment)
    assert result.errored_trials == 0
    sweep = load(experiment)
    assert len(sweep.trials) == 3 == len({t.trial_id for t in sweep.trials})
    expected = list(range(batch, budget + 1, batch))
    after = _rows_by_trial(experiment)
    for trial in sweep.trials:
        assert trial.state == "TERMINATED"
        # Counted once, one batch per row, up to the budget.
        assert [r["env_steps"] for r in trial.rows] == expected, trial.trial_id
        old = before.get(trial.trial_id, [])
        new = after[trial.trial_id][len(old):]
        if trial.trial_id in finished_before:
            # Not rerun: at most the restored final report, no training.
            assert new in ([], [budget])
        elif trial.trial_id in midway:
            # Continued from its checkpoint at 2000 with its env-step count, not from scratch.
            assert new[0] == 2000 + batch, (old, new)
        else:
            # Planned but not started at the kill: started once by the resumed sweep.
            assert new == expected
    configs = [json.dumps(t.config, sort_keys=True) for t in sweep.trials]
    assert len(set(configs)) == 3


def _flaky_spec(tmp_path: Path, modes: list[str], retries: int) -> rlsweep.SweepSpec:
    return rlsweep.load_spec(
        small_ppo(
            "flaky",
            tmp_path / "results",
            batch=250,
            epochs=1,
            env="tests.envs.flaky:FlakyCorridor",
            env_config={"length": 3, "max_steps": 20},
            search_space={
                "environment.env_config": {
                    "grid": [{"length": 3, "mode": m, "fail_at": 300, "marker": str(tmp_path / "failed-once")} for m in modes]
                }
            },
            searcher="grid",
            budget={"env_steps": 1000, "trials": len(modes)},
            checkpoint={"every_env_steps": 250},
            failure={"max_retries": retries},
        )
    )


def test_a_failing_trial_is_retried_from_its_checkpoint(tmp_path, ray_runtime):
    result = rlsweep.run(_flaky_spec(tmp_path, ["once"], retries=1), verbose=0)
    assert result.errored_trials == 0
    (trial,) = load(result.path).trials
    assert trial.state == "TERMINATED" and trial.error is None and trial.failures == 1
    # The env raised in the second iteration; the retry restored the checkpoint at 250 and went on.
    assert [r["env_steps"] for r in trial.raw_rows] == [250, 500, 750, 1000]


def test_a_trial_that_keeps_failing_is_recorded_and_the_rest_finish(tmp_path, ray_runtime):
    result = rlsweep.run(_flaky_spec(tmp_path, ["always", "never"], retries=1), verbose=0)
    assert result.errored_trials == 1
    trials = {t.config["environment.env_config"]["mode"]: t for t in load(result.path).trials}
    assert trials["never"].state == "TERMINATED" and trials["never"].rows[-1]["env_steps"] == 1000
    failed = trials["always"]
    assert failed.state == "ERROR" and failed.failures == 2
    assert "flaky env raised on purpose" in failed.error
    assert result.best is not None and result.best.trial_id == trials["never"].trial_id
    table = load(result.path).table()
    assert "flaky env raised" in table.loc[table["trial_id"] == failed.trial_id, "error"].iloc[0]


def test_a_non_finite_loss_fails_the_trial_naming_the_loss_and_it_is_retried_from_its_checkpoint(tmp_path, ray_runtime):
    # A real loss going non-finite: the env's reward turns NaN at its 300th step, so the update after the
    # iteration that sampled it has a NaN loss. A retry makes a new env that counts from 0 again, so each
    # attempt fails one iteration after the checkpoint it restored.
    env = {"length": 3, "max_steps": 20, "bad_reward": "nan"}
    spec = rlsweep.load_spec(
        small_ppo(
            "nonfinite",
            tmp_path / "results",
            batch=250,
            epochs=1,
            env="tests.envs.nonfinite:NonFiniteCorridor",
            env_config=env,
            search_space={"environment.env_config": {"grid": [{**env, "bad_at": 300}, {**env, "bad_at": 0}]}},
            searcher="grid",
            budget={"env_steps": 1000, "trials": 2},
            checkpoint={"every_env_steps": 250},
            failure={"max_retries": 1},
        )
    )
    result = rlsweep.run(spec, verbose=0)
    assert result.errored_trials == 1
    trials = {t.config["environment.env_config"]["bad_at"]: t for t in load(result.path).trials}
    failed, healthy = trials[300], trials[0]

    # Failed, retried once (failure.max_retries 1), then recorded as failed; the error names the loss.
    assert failed.state == "ERROR" and failed.failures == 2
    losses = re.findall(r"non-finite loss at (\d+) env steps: ([^;]*);", failed.error)
    # The first attempt failed at 500; the retry restored the checkpoint at 250 and failed at 750. A retry
    # from scratch would have failed at 500 again.
    assert [int(steps) for steps, _ in losses] == [500, 750], failed.error
    for _, named in losses:
        assert re.search(r"default_policy/\w*loss=nan", named), named
    # The retry's first result is the batch after that checkpoint (500), from a new actor. (Whether the
    # first attempt's row at 250 is still in result.json is up to Tune: on a restart it copies the file
    # back from its last sync to the storage folder, which can predate that row.)
    rows = [(r["env_steps"], r["iterations_since_restore"]) for r in failed.raw_rows]
    assert rows[-1] == (500, 1) and set(rows) <= {(250, 1), (500, 1)}, rows

    # The rest of the sweep is unaffected, and the failed trial is no candidate for best.
    assert healthy.state == "TERMINATED" and healthy.failures == 0 and healthy.error is None
    assert [r["env_steps"] for r in healthy.raw_rows] == [250, 500, 750, 1000]
    assert all(math.isfinite(r["return_mean"]) for r in healthy.rows)
    assert result.best is not None and result.best.trial_id == healthy.trial_id


CLUSTER_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from ray.cluster_utils import Cluster
    import rlsweep
    from rlsweep.analysis import load
    from tests.conftest import small_ppo

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        spec = rlsweep.load_spec(small_ppo("cluster", sys.argv[1], budget={"env_steps": 1500, "trials": 4}))
        result = rlsweep.run(spec, address=cluster.address, verbose=0)
        sweep = load(result.path)
        print(json.dumps({
            "nodes": sorted({n.node_id for n in cluster.list_all_nodes()}),
            "trials": {t.trial_id: {"node": t.rows[-1].get("node_id"), "state": t.state,
                                      "env_steps": t.rows[-1]["env_steps"]} for t in sweep.trials},
        }))
    finally:
        import ray

        ray.shutdown()
        cluster.shutdown()
    """
)


def test_a_sweep_runs_on_a_two_node_cluster(tmp_path):
    # Its own process: this test's Ray session must not be the cluster's driver.
    script = tmp_path / "cluster.py"
    script.write_text(CLUSTER_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "results")], env=_env(), cwd=REPO,
        capture_output=True, text=True, timeout=600, start_new_session=True,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(report["nodes"]) == 2
    trials = report["trials"]
    assert len(trials) == 4
    assert all(t["state"] == "TERMINATED" and t["env_steps"] >= 1500 for t in trials.values())
    # One CPU per node and one per trial: the trials ran on both nodes.
    assert {t["node"] for t in trials.values()} == set(report["nodes"])


@pytest.fixture
def finished(tmp_path, ray_runtime):
    spec = rlsweep.load_spec(
        small_ppo("finished", tmp_path / "results", budget={"env_steps": 1000, "trials": 2}, checkpoint={"every_env_steps": 500, "keep": 2})
    )
    return rlsweep.run(spec, verbose=0).path


def test_garbled_result_lines_and_missing_checkpoints_lose_nothing_else(finished):
    sweep = load(finished)
    trial = sweep.trials[0]
    result_file = trial.path / "result.json"
    lines = result_file.read_text().splitlines()
    # A garbled line in the middle and a truncated last line.
    result_file.write_text("\n".join([lines[0], "{not json", *lines[1:], lines[-1][: len(lines[-1]) // 2]]) + "\n")
    again = next(t for t in load(finished).trials if t.trial_id == trial.trial_id)
    assert [r["env_steps"] for r in again.rows] == [r["env_steps"] for r in trial.rows]

    best = load(finished).best(rule="max")
    shutil.rmtree(best.checkpoint)
    other = load(finished).best(rule="max")
    assert other.checkpoint is None or (other.checkpoint != best.checkpoint and other.checkpoint.exists())
    with pytest.raises(SweepError, match="not an RLlib algorithm checkpoint"):
        rlsweep.load_policy(best.checkpoint)


def test_an_mlflow_server_that_is_down_fails_the_export_and_a_rerun_completes_it(finished, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    with pytest.raises(ExportError, match="run `rlsweep export .*` again"):
        load(finished).to_mlflow(tracking_uri=uri, experiment="down")
    process, url = start_server(f"sqlite:///{tmp_path / 'store.db'}", port)
    try:
        assert url == uri
        run_id = load(finished).to_mlflow(tracking_uri=uri, experiment="down")
        from mlflow import MlflowClient

        runs = MlflowClient(tracking_uri=uri).search_runs(
            [MlflowClient(tracking_uri=uri).get_experiment_by_name("down").experiment_id]
        )
        assert len(runs) == 3 and any(r.info.run_id == run_id for r in runs)
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_a_spec_edited_between_run_and_resume_is_refused_with_the_differences(finished, tmp_path):
    spec_file = finished / "rlsweep_spec.yaml"
    document = yaml.safe_load(spec_file.read_text())
    document["budget"]["trials"] = 5
    document["search_space"]["training.lr"] = {"loguniform": [1.0e-5, 1.0e-2]}
    spec_file.write_text(yaml.safe_dump(document))
    with pytest.raises(SpecError) as info:
        rlsweep.resume(finished)
    messages = "\n".join(p.message for p in info.value.problems)
    assert "budget.trials: 2 -> 5" in messages
    assert "search_space.training.lr.loguniform" in messages
    # Through the CLI: exit 2 and the same list.
    done = subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", "resume", str(finished)], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "budget.trials: 2 -> 5" in done.stderr
