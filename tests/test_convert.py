"""``rlsweep convert`` on four of RLlib's old tuned examples (CartPole PPO, Pendulum SAC, CartPole IMPALA, a
PPO grid search; tests/data/rllib_old): every old key is carried over to
its new-API path or listed with a reason, the written spec validates, and a converted spec trains."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import rlsweep
from rlsweep.analysis import load
from rlsweep.convert import convert
from rlsweep.errors import UsageError
from tests.conftest import REPO

DATA = Path(__file__).parent / "data" / "rllib_old"
FILES = sorted(DATA.glob("*.yaml"))


def _old_keys(experiment: dict) -> set[str]:
    """Every leaf key of an old experiment the converter must account for: config keys (model and
    optimization by their sub-keys), stop keys, and top-level keys."""
    keys = set()
    for key, value in experiment.get("config", {}).items():
        if key in ("model", "optimization", "Q_model", "policy_model") and isinstance(value, dict):
            keys |= {f"config.{key}.{sub}" for sub in value}
        elif key not in ("env", "env_config"):
            keys.add(f"config.{key}")
    keys |= {f"stop.{key}" for key in experiment.get("stop", {})}
    keys |= {key for key in experiment if key not in ("run", "env", "config", "stop", "num_samples")}
    return keys


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_old_key_is_carried_over_or_listed_and_the_spec_validates(path):
    document = yaml.safe_load(path.read_text())
    (experiment,) = document.values()
    spec, unmapped = convert(document)
    rlsweep.load_spec(spec)  # validates, RLlib's own checks included
    listed = {item.key for item in unmapped}
    carried = set()
    for key in _old_keys(experiment):
        old = key.split(".")[-1]
        value = experiment["config"].get(old) if key.count(".") == 1 and key.startswith("config.") else None
        if key.startswith("config.") and key not in listed:
            # Carried: somewhere in config or the search space under its new name, with its value.
            new_values = list(spec["config"].values()) + [v["grid"] for v in spec["search_space"].values()]
            nested = key.count(".") == 2
            expected = experiment["config"][key.split(".")[1]][old] if nested else value
            expected = expected["grid_search"] if isinstance(expected, dict) and "grid_search" in expected else expected
            assert expected in new_values, (key, expected, spec)
            carried.add(key)
        elif key.startswith("stop.") and key not in listed:
            carried.add(key)
    assert carried | listed >= _old_keys(experiment), _old_keys(experiment) - carried - listed
    assert all(item.reason for item in unmapped)


def test_the_cartpole_ppo_file_maps_to_the_new_api_names():
    spec, unmapped = convert(yaml.safe_load((DATA / "cartpole-ppo.yaml").read_text()))
    assert spec["algorithm"] == "PPO" and spec["env"] == "CartPole-v1"
    assert spec["config"] == {
        "training.gamma": 0.99, "training.lr": 0.0003, "env_runners.num_env_runners": 1, "training.num_epochs": 6,
        "training.vf_loss_coeff": 0.01, "rl_module.model_config.fcnet_hiddens": [32],
        "rl_module.model_config.fcnet_activation": "linear", "rl_module.model_config.vf_share_layers": True,
    }
    assert spec["budget"] == {"env_steps": 100000, "trials": 1}
    assert spec["stop"] == {"return_mean": 150.0} and spec["metric"] == {"name": "return_mean", "mode": "max"}
    reasons = {item.key: item.reason for item in unmapped}
    assert set(reasons) == {"config.framework", "config.observation_filter", "config.enable_connectors"}
    assert "connector" in reasons["config.observation_filter"]


def test_sac_learning_rates_models_and_warmup_map_to_sacs_new_arguments():
    spec, unmapped = convert(yaml.safe_load((DATA / "pendulum-sac.yaml").read_text()))
    config = spec["config"]
    assert (config["training.actor_lr"], config["training.critic_lr"], config["training.alpha_lr"]) == (0.0003,) * 3
    assert config["training.num_steps_sampled_before_learning_starts"] == 256
    assert config["reporting.min_sample_timesteps_per_iteration"] == 1000
    assert config["rl_module.model_config.fcnet_hiddens"] == [256, 256]  # Q_model and policy_model agree
    assert config["debugging.seed"] == 42
    assert {"config.horizon", "config.no_done_at_end", "config.prioritized_replay"} <= {i.key for i in unmapped}


def test_grid_search_becomes_a_grid_and_the_trials_its_size():
    spec, unmapped = convert(yaml.safe_load((DATA / "cartpole-ppo-grid-search.yaml").read_text()))
    assert spec["search_space"] == {"training.num_epochs": {"grid": [1, 4]}, "training.minibatch_size": {"grid": [128, 256, 512]}}
    assert spec["searcher"] == "grid" and spec["budget"]["trials"] == 6
    # No timesteps_total: the budget is a default, said so; the time limit is listed.
    reasons = {item.key: item.reason for item in unmapped}
    assert "budget.env_steps set to 100,000" in reasons["stop"] and "stop.time_total_s" in reasons
    # A grid over a removed setting is listed, not searched: IMPALA's 3 seeds make 3 trials.
    spec, unmapped = convert(yaml.safe_load((DATA / "cartpole-impala.yaml").read_text()))
    assert spec["search_space"] == {"debugging.seed": {"grid": [512, 42, 144]}} and spec["budget"]["trials"] == 3
    assert "config._disable_execution_plan_api" in {i.key for i in unmapped}


def test_a_file_with_several_experiments_needs_one_named():
    two = {"a": {"run": "PPO", "env": "CartPole-v1"}, "b": {"run": "PPO", "env": "CartPole-v1"}}
    with pytest.raises(UsageError, match=r"2 experiments \['a', 'b'\]; pick one with --experiment"):
        convert(two)
    assert convert(two, "b")[0]["name"] == "b"
    with pytest.raises(UsageError, match="no experiment 'c'"):
        convert(two, "c")
    with pytest.raises(UsageError, match="no experiment with a 'run' key"):
        convert({"name": "tiny", "algorithm": "PPO"})


def test_the_cli_writes_a_spec_that_validates_and_lists_what_it_left(tmp_path):
    out = tmp_path / "spec.yaml"
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "rlsweep.cli", "convert", str(DATA / "pendulum-sac.yaml"), "-o", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "not converted: config.horizon: 200: removed from RLlib" in done.stderr
    assert f"{out}: valid" in done.stderr
    text = out.read_text()
    assert text.startswith("# Converted by `rlsweep convert`") and "#   config.framework: 'tf'" in text
    done = subprocess.run([sys.executable, "-m", "rlsweep.cli", "validate", str(out), "--no-memory-check"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_a_converted_spec_trains_with_the_old_files_settings(tmp_path, ray_runtime):
    spec, _ = convert(yaml.safe_load((DATA / "cartpole-ppo.yaml").read_text()))
    spec.update(storage=str(tmp_path / "results"), mlflow=None, ray={"memory_check": False})
    spec["budget"]["env_steps"] = 2000
    spec["config"]["env_runners.num_envs_per_env_runner"] = 1
    result = rlsweep.run(rlsweep.load_spec(spec), verbose=0)
    (trial,) = load(result.path).trials
    assert trial.state == "TERMINATED" and trial.rows[-1]["env_steps"] >= 2000
    # RLlib ran with the old file's settings under their new names.
    ran = trial.settings["settings"]
    assert ran["training.num_epochs"] == 6 and ran["rl_module.model_config.fcnet_hiddens"] == [32]
    assert ran["env_runners.num_env_runners"] == 1 and ran["training.vf_loss_coeff"] == 0.01
    # The value function trained (vf_loss_coeff carried over): a finite loss, not NaN.
    assert math.isfinite(trial.rows[-1]["rllib/learners/default_policy/vf_loss"])


def test_a_key_with_no_known_mapping_is_listed_never_dropped():
    old = {"x": {"run": "PPO", "env": "CartPole-v1", "checkpoint_freq": 5, "stop": {"training_iteration": 10},
                 "config": {"my_custom_flag": 3, "model": {"custom_model": "mine", "fcnet_hiddens": [8]}}}}
    spec, unmapped = convert(old)
    reasons = {item.key: item.reason for item in unmapped}
    assert "no mapping known" in reasons["config.my_custom_flag"]
    assert "no such setting" in reasons["config.model.custom_model"]
    assert "env steps" in reasons["stop.training_iteration"] and "checkpoint.every_env_steps" in reasons["checkpoint_freq"]
    assert spec["config"] == {"rl_module.model_config.fcnet_hiddens": [8]}
