"""The pre-flight memory check on real trials: the reading predicts what a real trial at the space's hungriest
corner peaks at; on a Ray cluster with little memory, ``rlsweep validate`` prints what fits and refuses what
does not (exit 2, with the numbers), and ``rlsweep run`` runs no more trials at once than the memory holds."""

from __future__ import annotations

import textwrap

import pytest

import rlsweep
import rlsweep.api
from rlsweep import store
from rlsweep.analysis import load
from rlsweep.trainables import MemoryReading
from tests.conftest import small_ppo
from tests.test_reliability import _most_at_once, _on_a_cluster

pytestmark = pytest.mark.slow


def test_the_reading_predicts_the_peak_of_a_trial_at_the_corner(tmp_path, ray_runtime):
    # One remote env runner: the trial's process and the runner's are each measured and each reserved.
    document = small_ppo(
        "corner", tmp_path / "results", budget={"env_steps": 2000, "trials": 1}, ray={"memory_check": "measure"},
        search_space={"training.lr": {"loguniform": [1.0e-4, 3.0e-3]},
                      "rl_module.model_config.fcnet_hiddens": {"choice": [[256, 256]]}},
    )
    document["config"]["env_runners.num_env_runners"] = 1
    result = rlsweep.run(rlsweep.load_spec(document), verbose=0)
    reading = MemoryReading.from_dict(store.read_sweep_info(result.path)["memory"])
    assert reading.draw["rl_module.model_config.fcnet_hiddens"] == [256, 256]
    assert len(reading.env_runner_mb) == 1 and reading.replay_mb == 0
    (trial,) = load(result.path).trials
    peak = max(r["peak_memory_mb"] for r in trial.rows)
    # The trial trains twice as long as the measurement, and checkpoints; its peak is the prediction's within 5%.
    assert abs(peak - reading.predicted_mb) <= 0.05 * peak, (peak, reading)
    # What it reserves covers the peak.
    assert reading.trial_mb >= peak
    # The bound from the settings alone is above that real peak too; on this runtime (2 CPUs, memory for
    # many such trials) a sweep that does not ask for a measurement starts with it, measuring nothing.
    found = rlsweep.api.check_memory(rlsweep.load_spec({**document, "ray": {"memory_check": True}}))
    assert found is not None and found.reading.estimated and found.reading.predicted_mb >= peak, found
    assert "not measured, since twice that fits the nodes" in found.lines()[0]


MEMORY_SCRIPT = textwrap.dedent(
    """
    import contextlib, io, json, subprocess, sys
    from pathlib import Path

    import ray
    import yaml
    from ray.cluster_utils import Cluster

    from tests.conftest import small_ppo

    storage = Path(sys.argv[1])
    # Two CPUs, and memory for one trial of PPO without env runners (~0.5 GB), not two.
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "memory": 800 * 2**20})
    report = {}
    try:
        document = small_ppo("fits", storage, batch=250, epochs=1, budget={"env_steps": 1500, "trials": 3},
                             ray={"memory_check": True})
        spec = storage.parent / "spec.yaml"
        spec.write_text(yaml.safe_dump(document))

        def cli(*args):
            done = subprocess.run([sys.executable, "-m", "rlsweep.cli", *args, "--address", cluster.address],
                                  capture_output=True, text=True, timeout=600)
            return {"exit": done.returncode, "out": done.stdout, "err": done.stderr[-3000:]}

        def cli_here(*args):
            # The three validate commands share this process, so RLlib is imported once, not three times:
            # what each prints and returns is the CLI's own (main() is what `rlsweep` runs).
            from rlsweep.cli import main
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main([*args, "--address", cluster.address])
            return {"exit": code, "out": out.getvalue(), "err": err.getvalue()[-3000:]}

        report["validate"] = cli_here("validate", str(spec))
        report["too_many"] = cli_here("validate", str(spec), "--set", "budget.max_concurrent=2")
        report["too_big"] = cli_here("validate", str(spec), "--set", "config.env_runners.num_env_runners=1")
        report["run"] = cli("run", str(spec))
    finally:
        ray.shutdown()  # this process's connection, from cli_here, before its node goes
        cluster.shutdown()
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def on_little_memory(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("memory")
    return _on_a_cluster(tmp_path, MEMORY_SCRIPT), tmp_path / "results"


def test_validate_prints_the_trials_memory_and_the_concurrency_it_allows(on_little_memory):
    report, _ = on_little_memory
    validate = report["validate"]
    assert validate["exit"] == 0, validate["err"]
    assert "peaks at" in validate["out"] and "trial process" in validate["out"]
    assert "Ray has 0.8 GB for trials on 1 node" in validate["out"]
    assert "1 trial(s) at once by memory, 2 by CPUs; up to 1 at once" in validate["out"], validate["out"]
    assert "reused" not in validate["out"]  # the first command to need this trial's reading measures it


def test_validate_refuses_a_concurrency_the_memory_cannot_hold(on_little_memory):
    report, _ = on_little_memory
    refused = report["too_many"]
    assert refused["exit"] == 2, refused
    assert "budget.max_concurrent: 2 trials at once need" in refused["err"]
    assert "800 MB for trials on 1 node(s), room for 1; set budget.max_concurrent to 1 or less" in refused["err"]


def test_validate_refuses_a_trial_no_node_can_hold(on_little_memory):
    # A remote env runner is a second process of ~0.4 GB: the trial no longer fits the node's 0.8 GB.
    report, _ = on_little_memory
    refused = report["too_big"]
    assert refused["exit"] == 2, refused
    # The trial's own process would fit: what to lower is the env runners, set in config.
    assert "config.env_runners.num_env_runners: one trial at the space's hungriest corner" in refused["err"]
    assert "env runner" in refused["err"] and "the largest Ray node has 800 MB" in refused["err"]


def test_run_says_what_fits_and_runs_no_more_trials_at_once(on_little_memory):
    report, results = on_little_memory
    run = report["run"]
    assert run["exit"] == 0, run["err"]
    lines = run["out"].splitlines()
    memory = [i for i, line in enumerate(lines) if line.startswith("memory:")]
    # The run's first lines, before any trial.
    assert memory[:2] == [1, 2], lines[:5]
    assert "up to 1 at once" in lines[2]
    # validate measured this trial: run reuses that reading (same spec, versions, machine) instead of
    # training it again before the sweep.
    assert "reused: same spec, versions and machine" in lines[1], lines[1]
    sweep = load(results / "fits")
    assert len(sweep.trials) == 3 and all(t.state == "TERMINATED" for t in sweep.trials)
    # Two CPUs would run two at once (random search has no concurrency limit of its own): the trials'
    # memory reservations kept them one at a time.
    assert _most_at_once(sweep.trials) == 1
