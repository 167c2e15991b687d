"""The command line: exit codes, errors on stderr with spec paths, --json output on stdout."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO, TINY_SPEC


def rlsweep(*args, cwd=None, timeout=600, home=None):
    env = {**os.environ, "PYTHONPATH": str(REPO), **({"HOME": str(home)} if home else {})}
    return subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout
    )


@pytest.fixture
def spec_file(tmp_path):
    def write(document=None, name="spec.yaml"):
        path = tmp_path / name
        path.write_text(yaml.safe_dump(document or TINY_SPEC))
        return path

    return write


def test_validate_ok_exits_0(spec_file):
    done = rlsweep("validate", spec_file())
    assert done.returncode == 0, done.stderr
    assert "valid" in done.stdout


def test_validate_lists_every_error_with_its_path_and_exits_2(spec_file):
    document = copy.deepcopy(TINY_SPEC)
    document["search_space"] = {"training.lr": {"loguniform": [0, 1]}, "training.gamma": {"uniform": [1, 0]}}
    document["budget"] = {"env_steps": 0}
    done = rlsweep("validate", spec_file(document))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert "search_space.training.lr: loguniform: low must be > 0 for a log scale, got low=0" in lines
    assert any(line.startswith("search_space.training.gamma: ") for line in lines)
    assert any(line.startswith("budget.env_steps: ") for line in lines)
    assert done.stdout == ""


def test_bad_arguments_exit_2(spec_file):
    assert rlsweep("validate").returncode == 2
    assert rlsweep("sample", spec_file(), "--searcher", "nope").returncode == 2
    assert rlsweep("best", "/no/such/dir").returncode == 2
    assert rlsweep("validate", "/no/such/spec.yaml").returncode == 2


@pytest.mark.parametrize("searcher", ["random", "optuna", "bohb"])
def test_sample_json_is_a_list_of_flat_configs(spec_file, searcher):
    done = rlsweep("sample", spec_file(), "-n", "4", "--searcher", searcher, "--json")
    assert done.returncode == 0, done.stderr
    configs = json.loads(done.stdout)
    assert len(configs) == 4
    for config in configs:
        assert set(config) == {"training.lr", "rl_module.model_config.fcnet_hiddens"}
        assert 1e-4 <= config["training.lr"] <= 3e-3
        assert config["rl_module.model_config.fcnet_hiddens"] in ([16], [32, 32])
    assert len({c["training.lr"] for c in configs}) == 4


def test_sample_is_reproducible_with_a_seed(spec_file):
    path = spec_file()
    first = rlsweep("sample", path, "-n", "3", "--json")
    second = rlsweep("sample", path, "-n", "3", "--json")
    assert json.loads(first.stdout) == json.loads(second.stdout)


@pytest.mark.slow
def test_run_best_export_from_the_shell(spec_file, tmp_path, monkeypatch):
    """A sweep, then what a user does with it from the shell. Every command runs with a HOME of its own:
    RLlib logs each algorithm built outside Tune's own trainable (the memory measurement before the sweep,
    `evaluate`'s policies) to a folder of ~/ray_results, and a trial a stop rule ends early skips its
    cleanup; rlsweep writes nothing outside its storage and the MLflow store. (The commands run in this
    process read HOME as this test sets it, but Ray fixes its default storage folder at its first import, so
    the ~/ray_results checks guard the `run` subprocesses.)"""
    document = copy.deepcopy(TINY_SPEC)
    document.update(
        budget={"env_steps": 2000, "trials": 2},
        scheduler={"name": "fifo"},
        checkpoint={"every_env_steps": 1000, "keep": 1},
        storage=str(tmp_path / "results"),
        mlflow={"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}", "experiment": "cli"},
        # Every trial ends at its first result (1000 env steps), by the rule; memory measured before the sweep.
        stop={"return_mean": 0},
        ray={"memory_check": "measure"},
    )
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))

    def rlsweep(*args):
        return globals()["rlsweep"](*args, home=home)

    def rlsweep_here(*args):
        # The commands that read the finished sweep run in this process: main() is what `rlsweep` runs, and
        # its exit code, stdout and stderr are the command's; RLlib and MLflow are imported once, not per command.
        import mlflow  # noqa: F401
        import ray.rllib  # noqa: F401
        import ray.tune  # noqa: F401

        from rlsweep.cli import main

        # Imported before stderr is redirected: Ray and RLlib bind their log handlers to the stderr of their
        # first import, which must not be this call's buffer for the tests that run after it in this worker.
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code
        return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())

    done = rlsweep("run", spec_file(document), "--quiet", "--set", "ray.num_cpus=2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "best trial:" in done.stdout and "checkpoint:" in done.stdout and "mlflow:" in done.stdout
    experiment = tmp_path / "results" / "tiny"
    assert experiment.is_dir()
    assert not (home / "ray_results").exists(), sorted(p.name for p in (home / "ray_results").iterdir())

    best = rlsweep_here("best", experiment, "--json", "--rule", "max")
    assert best.returncode == 0, best.stderr
    parsed = json.loads(best.stdout)
    assert parsed["rule"] == "max" and parsed["checkpoint"].startswith(str(experiment))
    assert set(parsed["config"]) == {"training.lr", "rl_module.model_config.fcnet_hiddens"}

    assert rlsweep_here("best", experiment, "--rule", "median").returncode == 2
    exported = rlsweep_here("export", experiment, "--tracking-uri", f"sqlite:///{tmp_path / 'other.db'}")
    assert exported.returncode == 0, exported.stderr
    status = rlsweep_here("status", experiment)
    assert status.returncode == 0 and "2 TERMINATED" in status.stdout

    evaluated = rlsweep_here("evaluate", experiment, "--top", "2", "--episodes", "2", "--seeds", "5", "6", "--json")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    rows = json.loads(evaluated.stdout)
    assert len(rows) == 2 and all(r["episodes"] == 4 for r in rows)
    assert rows[0]["eval_return_mean"] >= rows[1]["eval_return_mean"]
    assert {"eval_return_std", "seed_5", "seed_6"} <= set(rows[0])
    shown = rlsweep_here("evaluate", experiment, "--top", "1", "--episodes", "1")
    assert shown.returncode == 0 and "eval_return_mean" in shown.stdout and "checkpoint_" in shown.stdout
    assert rlsweep_here("evaluate", experiment, "--top", "0").returncode == 2

    # `run` checks the spec while Ray starts: a spec the pre-flight refuses still exits 2 naming the path,
    # before any experiment folder exists.
    refused = rlsweep("run", spec_file({**document, "env": "NoSuchEnv-v9", "name": "refused"}), "--quiet")
    assert refused.returncode == 2 and refused.stderr.startswith("env: "), refused.stderr[-3000:]
    assert not (tmp_path / "results" / "refused").exists() and "Traceback" not in refused.stderr
    assert not (home / "ray_results").exists(), sorted(p.name for p in (home / "ray_results").iterdir())


SAC_UNIFORM = {
    "name": "sac-uniform", "algorithm": "SAC", "env": "Pendulum-v1",
    "config": {"training.replay_buffer_config.type": "EpisodeReplayBuffer"},
    "search_space": {"training.actor_lr": {"loguniform": [1.0e-4, 1.0e-3]}},
    "budget": {"env_steps": 1000}, "mlflow": None,
}


def test_validate_says_what_a_buffer_type_without_a_capacity_holds(spec_file):
    # RLlib replaces the whole replay_buffer_config when its type changes: SAC's 1,000,000 becomes the class's 10,000.
    done = rlsweep("validate", spec_file(SAC_UNIFORM), "--no-memory-check")
    assert done.returncode == 0, done.stderr
    assert ("SAC: the replay buffer holds 10,000 env steps (EpisodeReplayBuffer's own default, not SAC's 1,000,000)"
            in done.stdout), done.stdout


@pytest.mark.parametrize("change", ["capacity set", "capacity searched", "no type", "the default type"])
def test_no_buffer_line_where_the_capacity_is_the_users_or_rllibs_default(change):
    from rlsweep import load_spec
    from rlsweep.trainables import replay_buffer_line

    document = copy.deepcopy(SAC_UNIFORM)
    if change == "capacity set":
        document["config"]["training.replay_buffer_config.capacity"] = 10_000
    elif change == "capacity searched":
        document["search_space"]["training.replay_buffer_config.capacity"] = {"choice": [10_000, 100_000]}
    elif change == "no type":
        document["config"] = {}
    else:  # SAC's own type: RLlib keeps its replay_buffer_config, capacity 1,000,000 included
        document["config"] = {"training.replay_buffer_config.type": "PrioritizedEpisodeReplayBuffer"}
    assert replay_buffer_line(load_spec(document)) is None


def test_a_searched_buffer_type_without_a_capacity_gets_the_line_too():
    from rlsweep import load_spec
    from rlsweep.trainables import replay_buffer_line

    document = copy.deepcopy(SAC_UNIFORM)
    document["config"] = {}
    document["search_space"]["training.replay_buffer_config.type"] = {
        "choice": ["EpisodeReplayBuffer", "PrioritizedEpisodeReplayBuffer"]}
    line = replay_buffer_line(load_spec(document))
    # Only the drawn type that is not SAC's own loses the capacity.
    assert line is not None and line.startswith(
        "SAC: the replay buffer holds 10,000 env steps where it is EpisodeReplayBuffer (EpisodeReplayBuffer's own "
        "default), not SAC's 1,000,000: search_space.training.replay_buffer_config.type draws"), line
    assert "PrioritizedEpisodeReplayBuffer" not in line


#: ``rlsweep CMD ...`` in a fresh interpreter that exits 99 where the command left a Ray runtime started.
_NO_RAY = "import sys, ray; from rlsweep.cli import main; code = main(sys.argv[1:]); sys.exit(99 if ray.is_initialized() else code)"


def test_validate_reads_the_memory_room_without_starting_ray(spec_file, tmp_path):
    """Where no trial needs measuring (its bound is far below the node's memory), validate answers from this
    machine's resources as a local Ray runtime would offer them: no runtime starts (Ray's start was about 17 s
    of a 30 s validate on a busy machine)."""
    document = {**copy.deepcopy(TINY_SPEC), "ray": {"memory_check": True}}
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = subprocess.run([sys.executable, "-c", _NO_RAY, "validate", str(spec_file(document))],
                          capture_output=True, text=True, env={**env, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "valid (PPO on CartPole-v1" in done.stdout
    assert "not measured, since twice that fits the nodes" in done.stdout, done.stdout
    assert "memory: Ray has" in done.stdout and "GB for trials on 1 node" in done.stdout, done.stdout


@pytest.mark.parametrize("storage", ["s3://bucket/sweeps", "a file"])
def test_run_refuses_a_storage_it_cannot_use_before_ray_starts(spec_file, tmp_path, storage):
    if storage == "a file":
        storage = tmp_path / "taken"
        storage.write_text("")
    done = subprocess.run([sys.executable, "-c", _NO_RAY, "run", str(spec_file()), "--storage", str(storage)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert done.stderr.startswith("storage: "), done.stderr
    assert list(tmp_path.glob("results*")) == []
