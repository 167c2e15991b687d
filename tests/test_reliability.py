"""Faults a sweep meets, tried for real: a driver killed with SIGKILL and resumed, trials whose env raises,
Ray clusters of two nodes (one that joins and dies mid-sweep), garbled result files, missing checkpoints, an MLflow server that is down, and a
spec edited between run and resume."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

import rlsweep
from rlsweep.analysis import load
from rlsweep.analysis._ui import free_port, start_server
from rlsweep.errors import SpecError, SweepError
from rlsweep.metrics import NORMALIZED_METRICS
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


def _driver(tmp_path: Path, document: dict, stderr: int) -> tuple[subprocess.Popen, Path]:
    """``rlsweep run`` on ``document`` in a process (and session, with its own Ray runtime) of its own, a
    line per result on stdout (``--progress results``); and where its experiment directory goes."""
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(document))
    driver = subprocess.Popen(
        [sys.executable, "-m", "rlsweep.cli", "run", str(spec_file), "--set", "ray.num_cpus=2", "--progress", "results"],
        env=_env(), stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True,
    )
    return driver, Path(document["storage"]) / document["name"]


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
    driver, experiment = _driver(tmp_path, document, stderr=subprocess.DEVNULL)
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


def test_ctrl_c_during_run_exits_nonzero_says_how_to_resume_and_resume_finishes(tmp_path, ray_runtime):
    budget, batch = 2000, 500  # a checkpoint at 1000, the interrupt at 1500, what is left to run after it
    document = small_ppo(
        "interrupted", tmp_path / "results", batch=batch, epochs=1,
        budget={"env_steps": budget, "trials": 2, "max_concurrent": 1}, checkpoint={"every_env_steps": 1000},
    )
    driver, experiment = _driver(tmp_path, document, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 400
        for line in driver.stdout:
            # The first trial is mid-way, past its checkpoint at 1000: a user presses Ctrl-C.
            if (match := re.match(r"\[(\w+)\] env_steps\s+(\d+)/", line)) and 1500 <= int(match.group(2)) < budget:
                break
            assert time.monotonic() < deadline
        assert driver.poll() is None, "the sweep ended before it could be interrupted"
        os.kill(driver.pid, signal.SIGINT)
        out, err = driver.communicate(timeout=300)
    finally:
        try:
            os.killpg(driver.pid, signal.SIGKILL)  # its own Ray runtime, by the group this test started
        except ProcessLookupError:
            pass
    assert driver.returncode == 1, err[-3000:]
    assert f"rlsweep resume {experiment}" in err and "best so far" in out
    assert load(experiment).unfinished(), "the interrupted sweep has no unfinished trial on disk"

    result = rlsweep.resume(experiment)
    assert not result.interrupted and result.errored_trials == 0
    sweep = load(experiment)
    assert len(sweep.trials) == 2 == len({t.trial_id for t in sweep.trials})
    for trial in sweep.trials:
        assert trial.state == "TERMINATED"
        assert [r["env_steps"] for r in trial.rows] == list(range(batch, budget + 1, batch)), trial.trial_id


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


def test_a_failing_trial_is_retried_from_its_checkpoint_one_that_keeps_failing_is_recorded_and_the_rest_finish(tmp_path, ray_runtime):
    result = rlsweep.run(_flaky_spec(tmp_path, ["once", "always", "never"], retries=1), verbose=0)
    assert result.errored_trials == 1
    trials = {t.config["environment.env_config"]["mode"]: t for t in load(result.path).trials}
    # The env raised once, in the second iteration; the retry restored the checkpoint at 250 and went on.
    once = trials["once"]
    assert once.state == "TERMINATED" and once.error is None and once.failures == 1
    assert [r["env_steps"] for r in once.raw_rows] == [250, 500, 750, 1000]
    # One that raises every time: retried once (failure.max_retries), then recorded with its error.
    assert trials["never"].state == "TERMINATED" and trials["never"].rows[-1]["env_steps"] == 1000
    failed = trials["always"]
    assert failed.state == "ERROR" and failed.failures == 2
    assert "flaky env raised on purpose" in failed.error
    assert result.best is not None and result.best.trial_id in {once.trial_id, trials["never"].trial_id}
    table = load(result.path).table()
    assert "flaky env raised" in table.loc[table["trial_id"] == failed.trial_id, "error"].iloc[0]


def test_a_diverging_config_ends_its_trial_once_with_one_line_and_is_no_candidate_for_best(tmp_path, ray_runtime, capsys):
    # A real loss going non-finite: the env's reward turns NaN at its 300th step, so the update after the
    # iteration that sampled it (250-500 env steps) has a NaN loss. That is the config's doing: the trial
    # ends there, once, though failure.max_retries would allow a retry.
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
    result = rlsweep.run(spec, verbose=0, progress="none")
    out = capsys.readouterr().out
    assert result.errored_trials == 0
    sweep = load(result.path)
    trials = {t.config["environment.env_config"]["bad_at"]: t for t in sweep.trials}
    diverged, healthy = trials[300], trials[0]

    # Ended at its first non-finite loss, not retried, no error file; its last row names the losses.
    assert diverged.state == "TERMINATED" and diverged.failures == 0 and diverged.error is None
    assert [r["env_steps"] for r in diverged.raw_rows] == [250, 500]
    assert re.fullmatch(r"default_policy/\w*loss=nan(, default_policy/\w*loss=nan)*", diverged.diverged), diverged.diverged
    # One line says so, even with progress "none"; no traceback, no Tune ERROR line.
    lines = [line for line in out.splitlines() if diverged.trial_id in line]
    assert lines == [f"[{diverged.trial_id}] diverged at 500 env steps ({diverged.diverged})"], out
    assert "Traceback" not in out and "ERROR" not in out
    table = sweep.table().set_index("trial_id")
    assert table.loc[diverged.trial_id, "attempts"] == 1
    assert table.loc[diverged.trial_id, "ended"] == f"diverged at 500 env steps ({diverged.diverged})"
    assert table.loc[healthy.trial_id, "ended"] == "budget"

    # The rest of the sweep is unaffected, and the diverged config is no candidate for best.
    assert healthy.state == "TERMINATED" and healthy.failures == 0 and healthy.error is None
    assert [r["env_steps"] for r in healthy.raw_rows] == [250, 500, 750, 1000]
    assert all(math.isfinite(r["return_mean"]) for r in healthy.rows)
    assert result.best is not None and result.best.trial_id == healthy.trial_id
    assert [b.trial_id for b in sweep.ranked("max")] == [healthy.trial_id]


def _on_a_cluster(tmp_path: Path, script_text: str) -> dict:
    """Run a script that builds a local Ray cluster and sweeps on it, in its own process and session (this
    test's Ray session must not be the cluster's driver); returns the JSON report it prints last."""
    script = tmp_path / "cluster.py"
    script.write_text(script_text)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "results")], env=_env(), cwd=REPO,
        capture_output=True, text=True, timeout=900, start_new_session=True,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


NODE_SCRIPT = textwrap.dedent(
    """
    import json, subprocess, sys, time
    from pathlib import Path

    import yaml
    from ray.cluster_utils import Cluster

    from tests.conftest import small_ppo

    storage = Path(sys.argv[1])

    def rows():
        for result in (storage / "nodes").glob("*/result.json"):
            for line in result.read_text().splitlines():
                try:
                    yield json.loads(line)
                except ValueError:
                    continue

    def wait_for(found, what, timeout=300):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and driver.poll() is None:
            if (value := found()) is not None:
                return value
            time.sleep(0.1)
        raise SystemExit(f"gave up waiting for {what}: " + json.dumps({"exit": driver.poll(), "rows": len(list(rows()))}))

    # The sweep starts on a one-CPU head: one trial at a time.
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    report = {"head": cluster.head_node.node_id}
    driver = None
    try:
        document = small_ppo(
            "nodes", storage, batch=250, epochs=1, budget={"env_steps": 3000, "trials": 5},
            searcher={"name": "optuna", "seed": 0},  # model-based: suggests only what the cluster holds
            checkpoint={"every_env_steps": 500}, failure={"max_retries": 2},
        )
        spec = storage.parent / "spec.yaml"
        spec.write_text(yaml.safe_dump(document))
        # The sweep as a user starts it on a cluster: the CLI with --address.
        driver = subprocess.Popen(
            [sys.executable, "-m", "rlsweep.cli", "run", str(spec), "--address", cluster.address, "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        wait_for(lambda: next(rows(), None), "the first result")
        # A second machine joins while the sweep runs...
        worker = cluster.add_node(num_cpus=1)
        report["joined"] = worker.node_id
        # ...and once a trial on it is past its first checkpoint, it dies: its raylet and workers are
        # killed by PID (SIGKILL), as a lost machine would leave them.
        report["killed_at"] = wait_for(
            lambda: next(((r["trial_id"], r["env_steps"]) for r in rows()
                          if r.get("node_id") == worker.node_id and 750 <= r["env_steps"] < 3000), None),
            "a trial on the node that joined",
        )
        cluster.remove_node(worker, allow_graceful=False)
        out, err = driver.communicate(timeout=600)
        report.update(exit=driver.returncode, stderr=err[-3000:])
    finally:
        if driver is not None and driver.poll() is None:
            driver.kill()
        cluster.shutdown()
    print(json.dumps(report))
    """
)


def _most_at_once(trials: list) -> int:
    """The most trials that ran at one time: each from its start (its first row's time, less that row's
    time since the trial started, which counts its setup: RLlib's clock starts when the algorithm is
    built) to its last row. Row times are whole seconds (truncated), so a trial counts as still running
    only up to a second before its last row's time: trials run one after the other never count as two.
    (Subtracting the setup again made a trial that started in the previous one's worker right after it
    look as if it had started a few tenths of a second before the other ended.)"""
    spans = []
    for trial in trials:
        first = trial.raw_rows[0]
        start = first["timestamp"] - first["time_total_s"]
        spans.append((start, max(r["timestamp"] for r in trial.raw_rows) - 1))
    return max(sum(start <= moment < end for start, end in spans) for moment, _ in spans)


def test_a_node_joins_mid_sweep_and_is_used_then_dies_and_its_trial_resumes_on_the_head(tmp_path):
    report = _on_a_cluster(tmp_path, NODE_SCRIPT)
    assert report["exit"] == 0, report["stderr"]
    sweep = load(tmp_path / "results" / "nodes")
    # Every planned trial once, finished, each row once up to the budget.
    assert len(sweep.trials) == 5 == len({t.trial_id for t in sweep.trials})
    for trial in sweep.trials:
        assert trial.state == "TERMINATED", (trial.trial_id, trial.error)
        assert [r["env_steps"] for r in trial.rows] == list(range(250, 3001, 250)), trial.trial_id
    # Concurrency followed the cluster: the sweep began with one trial at a time on the 1-CPU head, and once
    # the second node joined two ran at once, one of them on the new node. (A trial takes a few seconds;
    # one on a node that just joined spends them starting a worker process, so its start counts.)
    assert _most_at_once(sweep.trials) == 2
    # The trial that was on the node that died failed and continued from a checkpoint on the head: its
    # first rows are the lost node's, the rest the head's, and its env-step count went on, never back to 0.
    lost_trial, lost_at = report["killed_at"]
    (trial,) = [t for t in sweep.trials if t.trial_id == lost_trial]
    assert trial.failures >= 1
    nodes = [r["node_id"] for r in trial.rows]
    moved = next(i for i, node in enumerate(nodes) if node != report["joined"])
    assert moved > 0 and set(nodes[moved:]) == {report["head"]}, nodes
    # It went on after a checkpoint (every 500 env steps), at or past the step it was seen at before the
    # kill (the kill lands an iteration or two later).
    resumed_at = trial.rows[moved]["env_steps"]
    assert resumed_at > 250 and (resumed_at - 250) % 500 == 0 and resumed_at >= lost_at - 250, (resumed_at, lost_at)
    assert [r["env_steps"] for r in trial.raw_rows].count(250) == 1, "the trial started over from 0"


UNSHARED_STORAGE_SCRIPT = textwrap.dedent(
    """
    import json, os, shutil, signal, subprocess, sys, time
    from pathlib import Path
    import psutil, ray
    from ray.cluster_utils import Cluster
    import rlsweep
    from rlsweep.errors import IncompatibleError
    from rlsweep.runtime import fit_cluster
    from tests.conftest import small_ppo

    results, shared = Path(sys.argv[1]), Path(sys.argv[1]).parent / "shared"
    results.mkdir(parents=True)
    shared.mkdir()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    # A second machine, as far as the storage folder goes: a node whose processes see an empty folder of
    # their own (a tmpfs in a private mount namespace) where this process sees `results`.
    ray_cli = str(Path(sys.executable).with_name("ray"))
    node = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         f"mount -t tmpfs tmpfs {results} && exec {ray_cli} start --address {cluster.address} --num-cpus 1 --block"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    report = {"refused": {}}
    try:
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        deadline = time.monotonic() + 120
        while sum(1 for n in ray.nodes() if n["Alive"]) < 2:
            if node.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the second node did not join: " + node.stderr.read()[-2000:])
            time.sleep(0.5)
        report["nodes"] = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
        report["head"] = ray.get_runtime_context().get_node_id()
        spec = rlsweep.load_spec(small_ppo("unshared", str(results), budget={"env_steps": 1000, "trials": 2}), preflight=False)
        try:
            rlsweep.run(spec, address=cluster.address, verbose=0)
        except IncompatibleError as exc:
            report["refused"] = {p.path: p.message for p in exc.problems}
        report["left_in_results"] = sorted(p.name for p in results.iterdir())
        # The same cluster with a folder both nodes see passes the check.
        fit_cluster(spec, cluster.address, shared)
        report["left_in_shared"] = sorted(p.name for p in shared.iterdir())
        print(json.dumps(report))
    finally:
        ray.shutdown()
        started = [node, *psutil.Process(node.pid).children(recursive=True)] if node.poll() is None else []
        for process in started:
            with __import__("contextlib").suppress(psutil.NoSuchProcess, ProcessLookupError):
                process.send_signal(signal.SIGKILL)
        node.wait(30)
        cluster.shutdown()
    """
)


def _can_unshare_mounts() -> bool:
    """``unshare --mount`` works here (it is installed, and we may use it: root). Asked when the test runs,
    not at import, so a machine without it skips one test instead of failing to collect the module."""
    try:
        return subprocess.run(["unshare", "--mount", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def test_a_storage_folder_that_a_node_does_not_see_is_refused_before_the_sweep_starts(tmp_path):
    """On a cluster whose second node has its own empty folder at the storage path (as a local disk on another
    machine is), the sweep is refused at ``storage``, naming that node, before any trial runs: Ray itself would
    fail each trial there at its first checkpoint. A folder both nodes see passes."""
    if not _can_unshare_mounts():
        pytest.skip("needs unshare --mount (root) to give a node a folder of its own")
    report = _on_a_cluster(tmp_path, UNSHARED_STORAGE_SCRIPT)
    (other,) = set(report["nodes"]) - {report["head"]}
    message = report["refused"]["storage"]
    assert "is not shared with every node" in message and other[:8] in message and report["head"][:8] not in message
    # Nothing was started or left behind: no experiment directory, no check file.
    assert report["left_in_results"] == [] and report["left_in_shared"] == []


LEARNERS_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from ray.cluster_utils import Cluster
    import rlsweep
    from rlsweep.analysis import load
    from rlsweep.errors import IncompatibleError
    from rlsweep.runtime import fit_cluster
    from tests.conftest import small_ppo

    # Two machines of 2 CPUs each; every trial is its own process plus one remote learner (2 CPUs).
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    report = {"nodes": sorted(n.node_id for n in cluster.list_all_nodes()), "refused": {}}
    try:
        def document(**config):
            # Two trials: the two run at once, one per node (each node holds one trial's 2 CPUs).
            doc = small_ppo("learners", sys.argv[1], budget={"env_steps": 1500, "trials": 2})
            doc["config"] = {**doc["config"], "learners.num_learners": 1, **config}
            return doc

        # What no node can host, though the cluster's 4 CPUs add up: refused before anything runs.
        for name, config in {"learner": {"learners.num_cpus_per_learner": 3},
                             "strict": {"learners.num_learners": 2, "resources.placement_strategy": "STRICT_PACK"}}.items():
            try:
                fit_cluster(rlsweep.load_spec(document(**config), preflight=False), cluster.address)
            except IncompatibleError as exc:
                report["refused"][name] = {p.path: p.message for p in exc.problems}
        result = rlsweep.run(rlsweep.load_spec(document()), address=cluster.address, verbose=0)
        sweep = load(result.path)
        report["trials"] = {t.trial_id: {"nodes": sorted({r.get("node_id") for r in t.rows}), "state": t.state,
                                         "env_steps": t.rows[-1]["env_steps"], "rows": t.rows} for t in sweep.trials}
        print(json.dumps(report, default=str))
    finally:
        import ray

        ray.shutdown()
        cluster.shutdown()
    """
)


def test_trials_with_a_remote_learner_each_run_across_two_nodes_and_what_no_node_hosts_is_refused(tmp_path):
    report = _on_a_cluster(tmp_path, LEARNERS_SCRIPT)
    # A learner asking for more CPUs than any node has, named at its setting, though the cluster has 4.
    learner = report["refused"]["learner"]["config.learners.num_cpus_per_learner"]
    assert "each learner of a trial asks for 3 CPU(s) on one node" in learner and "largest node of the Ray cluster has 2 CPU(s)" in learner
    strict = report["refused"]["strict"]["config.resources.placement_strategy"]
    assert "STRICT_PACK puts a whole trial on one node: it needs 3 CPU(s)" in strict
    trials = report["trials"]
    assert len(trials) == 2 and all(t["state"] == "TERMINATED" and t["env_steps"] >= 1500 for t in trials.values())
    # Two trials at a time, one per node (each node holds one trial's process and its learner), and the
    # learners themselves ran on both nodes: one remote learner per trial, two in all. (This is also the
    # suite's sweep on a two-node cluster: the trials' own processes were placed on both nodes.)
    assert {n for t in trials.values() for n in t["nodes"]} == set(report["nodes"])
    learners = {trial_id: {r["learner_node_ids"] for r in t["rows"]} for trial_id, t in trials.items()}
    assert all(len(nodes) == 1 and "," not in next(iter(nodes)) for nodes in learners.values()), learners
    assert {next(iter(nodes)) for nodes in learners.values()} == set(report["nodes"])
    # RLlib's PACK placement: each trial's learner on its own process's node.
    assert all(r["learner_node_ids"] == r["node_id"] for t in trials.values() for r in t["rows"])
    assert all("env_runner_node_ids" not in r for t in trials.values() for r in t["rows"])
    # The trial waits for its remote learner's update: that wait is its learning time, and it lies inside
    # the iteration's wall time with the sampling (other_time_s is the rest, so only this can be checked).
    for trial in trials.values():
        for row in trial["rows"]:
            assert row["learn_time_s"] > 0
            assert row["sample_time_s"] + row["learn_time_s"] <= row["iteration_time_s"] + 1e-6, row


@pytest.fixture(scope="module")
def finished_once(tmp_path_factory, ray_runtime) -> Path:
    """One finished 3-trial sweep (4 rows and 2 checkpoints a trial) for this module's tests that read it or
    damage it (each damages a copy: :func:`finished`), and for the interrupted export."""
    root = tmp_path_factory.mktemp("finished")
    spec = rlsweep.load_spec(
        small_ppo("finished", root / "results", batch=250, epochs=1, budget={"env_steps": 1000, "trials": 3},
                  checkpoint={"every_env_steps": 500, "keep": 2})
    )
    return rlsweep.run(spec, verbose=0).path


@pytest.fixture
def finished(finished_once, tmp_path) -> Path:
    """A copy of :func:`finished_once` of this test's own (``cp -a``: a sweep copied is still a sweep)."""
    copy = tmp_path / "results" / finished_once.name
    shutil.copytree(finished_once, copy, symlinks=True)
    return copy


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
    assert best.checkpoint.is_relative_to(finished)  # the copy's own, not the sweep the copy was made of
    shutil.rmtree(best.checkpoint)
    other = load(finished).best(rule="max")
    assert other.checkpoint is None or (other.checkpoint != best.checkpoint and other.checkpoint.exists())
    with pytest.raises(SweepError, match="not an RLlib algorithm checkpoint"):
        rlsweep.load_policy(best.checkpoint)


#: Runs ``rlsweep export`` (the CLI's own ``main``) with one hook in MLflow's client: after the
#: ``pause_after``-th child run of a trial is created, it writes that run's id to ``gate`` and waits until
#: ``release`` exists. The test stops the server in that pause, so the export always loses its server at
#: the same point mid-way (some child runs exist, others do not; one exists with no rows yet), instead of
#: racing a timer against an export that takes well under a second.
PAUSING_EXPORT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path

    from mlflow import MlflowClient

    gate, release, pause_after = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    create_run = MlflowClient.create_run
    created = []

    def pausing_create_run(self, experiment_id, *args, **kwargs):
        run = create_run(self, experiment_id, *args, **kwargs)
        if (kwargs.get("tags") or {}).get("rlsweep.kind") == "trial":
            created.append(run.info.run_id)
            if len(created) == pause_after:
                gate.write_text(run.info.run_id)
                while not release.exists():
                    time.sleep(0.05)
        return run

    MlflowClient.create_run = pausing_create_run
    from rlsweep.cli import main

    raise SystemExit(main(sys.argv[4:]))
    """
)


def _stop_server(process: subprocess.Popen, url: str) -> None:
    """End an ``mlflow server`` started by start_server and its worker (uvicorn runs as its child)."""
    children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(process.pid)], capture_output=True, text=True).stdout.split()
    process.terminate()
    process.wait(timeout=60)
    for pid in map(int, children):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2).close()
        except OSError:
            return
        time.sleep(0.2)
    raise AssertionError(f"the MLflow server at {url} still answers after it was stopped")


@pytest.fixture(scope="module")
def export_interrupted_then_rerun(tmp_path_factory, finished_once):
    """A 3-trial sweep exported to a real MLflow server that is stopped after the 2nd of 3 child runs was
    created; then the server is restarted on the same store and port and the export run again."""
    root = tmp_path_factory.mktemp("export-down")
    path = root / "results" / finished_once.name
    shutil.copytree(finished_once, path, symlinks=True)
    store, port = f"sqlite:///{root / 'store.db'}", free_port()
    # MLflow's job runner (huey consumers) would outlive the server; this test stops the server by hand.
    # An export waits for a server that stops answering (5 minutes by default): here 5 s, so the server's
    # going stops it, and the rerun completes it (a server back within the wait is tests/analysis/test_mlflow_server.py's).
    env = {**_env(), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
           "MLFLOW_HTTP_REQUEST_TIMEOUT": "10", "RLSWEEP_MLFLOW_WAIT_S": "5"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
        server, url = start_server(store, port)
    export = ["export", str(path), "--tracking-uri", url, "--experiment", "interrupted"]
    script, gate, release = root / "pausing_export.py", root / "gate", root / "release"
    script.write_text(PAUSING_EXPORT)
    exporter = subprocess.Popen(
        [sys.executable, str(script), str(gate), str(release), "2", *export],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not gate.exists():
            assert exporter.poll() is None, exporter.communicate()
            assert time.monotonic() < deadline, "the export never created its 2nd child run"
            time.sleep(0.05)
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=url)
        experiment_id = client.get_experiment_by_name("interrupted").experiment_id
        before = client.search_runs([experiment_id], filter_string="tags.`rlsweep.kind` = 'trial'")
        _stop_server(server, url)
    finally:
        release.write_text("go")
        stdout, stderr = exporter.communicate(timeout=300)
    failed = (exporter.returncode, stdout, stderr, [r.data.tags["rlsweep.trial_id"] for r in before])

    # Same store, same port: the address a rerun of the export is given again.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
        server, url_again = start_server(store, port)
    try:
        assert url_again == url
        rerun = subprocess.run([sys.executable, "-m", "rlsweep.cli", *export], env=env, cwd=REPO, capture_output=True,
                               text=True, timeout=300)
        yield load(path), url, failed, rerun
    finally:
        _stop_server(server, url)


def test_an_mlflow_server_stopped_mid_export_fails_it_and_a_rerun_completes_it_once(export_interrupted_then_rerun):
    from mlflow import MlflowClient

    sweep, url, (code, _, stderr, before), rerun = export_interrupted_then_rerun
    # When the server went away, 2 of the 3 trials had a child run.
    assert len(before) == 2 and set(before) < {t.trial_id for t in sweep.trials}
    # The export failed, saying how far it got and what to do.
    assert code == 1, stderr
    assert "stopped after 1 of 3 trials" in stderr and f"run `rlsweep export {sweep.path}` again" in stderr, stderr
    assert rerun.returncode == 0, rerun.stderr
    assert "exported 3 trials" in rerun.stdout

    # Point by point: one parent, one child per trial, every metric's history has each row exactly once.
    client = MlflowClient(tracking_uri=url)
    experiment_id = client.get_experiment_by_name("interrupted").experiment_id
    runs = client.search_runs([experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("rlsweep.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("rlsweep.kind") == "trial"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert sorted(r.data.tags["rlsweep.trial_id"] for r in children) == sorted(t.trial_id for t in sweep.trials)
    by_id = {t.trial_id: t for t in sweep.trials}
    for child in children:
        trial = by_id[child.data.tags["rlsweep.trial_id"]]
        assert child.info.status == "FINISHED" and child.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert len(trial.rows) == 4
        metrics = [name for name in NORMALIZED_METRICS if name in trial.rows[0]] + ["hp/training.lr"]
        assert set(metrics) <= set(child.data.metrics), sorted(set(metrics) - set(child.data.metrics))
        for name in metrics:
            history = sorted(client.get_metric_history(child.info.run_id, name), key=lambda m: m.step)
            assert [m.step for m in history] == [r["env_steps"] for r in trial.rows], (trial.trial_id, name)
            assert [m.value for m in history] == pytest.approx([float(r[name]) for r in trial.rows]), (trial.trial_id, name)


def test_after_an_interrupted_export_every_child_run_has_its_params(export_interrupted_then_rerun):
    from mlflow import MlflowClient

    sweep, url, *_ = export_interrupted_then_rerun
    client = MlflowClient(tracking_uri=url)
    experiment_id = client.get_experiment_by_name("interrupted").experiment_id
    children = client.search_runs([experiment_id], filter_string="tags.`rlsweep.kind` = 'trial'")
    by_id = {t.trial_id: t for t in sweep.trials}
    missing = [
        r.data.tags["rlsweep.trial_id"]
        for r in children
        if r.data.params.get("training.lr") != repr(by_id[r.data.tags["rlsweep.trial_id"]].config["training.lr"])
    ]
    assert not missing, f"child runs without their params: {missing}"


def test_a_spec_edited_between_run_and_resume_is_refused_with_the_differences(finished, tmp_path):
    spec_file = finished / "rlsweep_spec.yaml"
    document = yaml.safe_load(spec_file.read_text())
    document["budget"]["trials"] = 5
    document["search_space"]["training.lr"] = {"loguniform": [1.0e-5, 1.0e-2]}
    spec_file.write_text(yaml.safe_dump(document))
    with pytest.raises(SpecError) as info:
        rlsweep.resume(finished)
    messages = "\n".join(p.message for p in info.value.problems)
    assert "budget.trials: 3 -> 5" in messages
    assert "search_space.training.lr.loguniform" in messages
    # Through the CLI: exit 2 and the same list.
    done = subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", "resume", str(finished)], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "budget.trials: 3 -> 5" in done.stderr


STRAY_PROBE = """
import json, sys
import ray
import rlsweep
from rlsweep.runtime import ensure_ray
spec = rlsweep.load_spec(json.loads(sys.argv[1]), preflight=False)
cpus = ensure_ray(spec)
print(json.dumps({"cpus": cpus, "gcs": ray.get_runtime_context().gcs_address}))
"""


def _ours_under(base: Path) -> list[int]:
    """Processes whose command line names ``base`` (the stray cluster's session folder is under it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(base).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_local_sweep_never_joins_a_cluster_another_ray_start_left_running(tmp_path):
    """Ray's default (no address) joins the cluster the machine's last `ray start` recorded: another user's or
    job's, whose CPUs the trials would then queue for. rlsweep starts a runtime of its own; RAY_ADDRESS, a
    user's explicit choice, is still joined."""
    base = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))  # short: Ray's socket paths are under it
    env = {**_env(), "RAY_TMPDIR": str(base), "RAY_AUTH_MODE": "disabled"}
    try:
        started = subprocess.run(
            [str(Path(sys.executable).parent / "ray"), "start", "--head", "--num-cpus=0", "--port=0",
             "--include-dashboard=false", "--disable-usage-stats"],
            env=env, capture_output=True, text=True, timeout=120,
        )
        assert started.returncode == 0, started.stderr[-2000:]
        stray = (base / "ray" / "ray_current_cluster").read_text().strip()
        document = json.dumps(small_ppo("stray", tmp_path / "results", budget={"env_steps": 1000, "trials": 1}))

        def probe(**extra):
            done = subprocess.run([sys.executable, "-c", STRAY_PROBE, document], env={**env, **extra}, cwd=REPO,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
            return json.loads(done.stdout.strip().splitlines()[-1])

        own = probe()
        assert own["gcs"] != stray and own["cpus"] == os.cpu_count(), (own, stray)
        joined = probe(RAY_ADDRESS=stray)
        assert joined["gcs"] == stray and joined["cpus"] == 0, (joined, stray)
    finally:
        for pid in _ours_under(base):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)
