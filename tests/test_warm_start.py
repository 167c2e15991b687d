"""``searcher.warm_start``: rl-baselines3-zoo's published hyperparameters tried first, and a previous sweep's
trials reaching the searcher without being rerun."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

import rlsweep
from rlsweep._compat import optuna_study
from rlsweep.analysis import load
from rlsweep.schedulers import SEARCHERS, search_request
from rlsweep.warm_start import zoo_point
from tests.conftest import REPO, TINY_SPEC
from tests.experiments import new_experiment, write_trial

#: rl_zoo3 2.9.2's hyperparams/ppo.yml, CartPole-v1: n_envs 8, n_steps 32, batch_size 256, gae_lambda 0.8,
#: gamma 0.98, n_epochs 20, ent_coef 0.0, learning_rate lin_0.001, clip_range lin_0.2; the rest SB3's
#: defaults (vf_coef 0.5, max_grad_norm 0.5, net_arch [64, 64], tanh), placed in examples/zoo_ppo_space.yaml.
ZOO_CARTPOLE_PPO = {
    "training.minibatch_size": 256,
    "training.train_batch_size": 512,  # 32 x 8 = 256, below the space's smallest choice
    "training.gamma": 0.98,
    "training.lr": 0.001,
    "training.entropy_coeff": 1e-8,  # 0.0, below the log domain's low bound
    "training.clip_param": 0.2,
    "training.num_epochs": 20,
    "training.lambda_": 0.8,
    "training.grad_clip": 0.5,
    "training.vf_loss_coeff": 0.5,
    "rl_module.model_config.fcnet_hiddens": [64, 64],
    "rl_module.model_config.fcnet_activation": "tanh",
}


def zoo_space_doc(**searcher: Any) -> dict[str, Any]:
    doc = yaml.safe_load((REPO / "examples" / "zoo_ppo_space.yaml").read_text())
    doc["searcher"] = {"name": "optuna", "seed": 0, **searcher}
    return doc


def test_the_zoo_point_is_rl_zoo3s_published_values_placed_in_the_declared_domains():
    spec = rlsweep.load_spec(zoo_space_doc(warm_start="zoo"), preflight=False)
    point, notes = zoo_point("PPO", "CartPole-v1", spec.search_space)
    assert point == ZOO_CARTPOLE_PPO
    assert isinstance(point["training.lr"], float) and isinstance(point["training.num_epochs"], int)
    # Each value that had to move, and each schedule kept constant, is said.
    assert any("train_batch_size" in n and "256 -> 512" in n for n in notes)
    assert any("entropy_coeff" in n and "0.0 -> 1e-08" in n for n in notes)
    assert any("training.lr" in n and "linearly" in n for n in notes)


def test_a_zoo_value_between_choices_takes_the_nearest_and_one_outside_a_range_its_bound():
    doc = zoo_space_doc(warm_start="zoo")
    doc["search_space"]["training.num_epochs"] = {"choice": [5, 15, 40]}  # zoo: 20
    doc["search_space"]["training.gamma"] = {"uniform": [0.99, 0.999]}  # zoo: 0.98
    doc["search_space"]["training.minibatch_size"] = {"qrandint": [16, 128, 16]}  # zoo: 256
    point, _ = zoo_point("PPO", "CartPole-v1", rlsweep.load_spec(doc, preflight=False).search_space)
    assert (point["training.num_epochs"], point["training.gamma"], point["training.minibatch_size"]) == (15, 0.99, 128)


@pytest.mark.parametrize("searcher", ["optuna", "hyperopt", "bohb"])
def test_each_searcher_suggests_the_zoo_point_first(searcher):
    doc = zoo_space_doc(warm_start="zoo")
    doc["searcher"]["name"] = searcher
    doc["scheduler"] = {"name": "bohb"} if searcher == "bohb" else doc["scheduler"]
    spec = rlsweep.load_spec(doc, preflight=False)
    first, second = rlsweep.sample(spec, 2)
    assert first == ZOO_CARTPOLE_PPO
    # Declared values, not the backend's labels or indices: a list for the choice of lists.
    assert first["rl_module.model_config.fcnet_hiddens"] == [64, 64]
    assert second != first


def test_the_zoo_point_comes_before_points_to_evaluate():
    other = {**ZOO_CARTPOLE_PPO, "training.lr": 0.01}
    spec = rlsweep.load_spec(zoo_space_doc(warm_start="zoo", points_to_evaluate=[other]), preflight=False)
    assert rlsweep.sample(spec, 2) == [ZOO_CARTPOLE_PPO, other]


def test_a_zoo_hyperparameter_rlsweep_cannot_map_is_an_error_naming_it():
    doc = zoo_space_doc(warm_start="zoo")
    doc["env"] = "Pendulum-v1"  # rl-zoo3's PPO there uses gSDE: use_sde, sde_sample_freq
    with pytest.raises(rlsweep.SpecError) as caught:
        rlsweep.load_spec(doc, preflight=False)
    lines = str(caught.value).splitlines()
    assert len(lines) == 2
    assert all(line.startswith("searcher.warm_start: ") for line in lines)
    assert "use_sde=True" in lines[0] and "sde_sample_freq=4" in lines[1]


def test_a_searched_parameter_the_zoo_says_nothing_about_is_an_error_at_its_path():
    doc = zoo_space_doc(warm_start="zoo")
    doc["search_space"]["training.kl_coeff"] = {"uniform": [0.1, 0.3]}
    with pytest.raises(rlsweep.SpecError) as caught:
        rlsweep.load_spec(doc, preflight=False)
    assert [p.path for p in caught.value.problems] == ["search_space.training.kl_coeff"]


def test_a_zoo_value_no_choice_stands_for_is_an_error():
    doc = copy.deepcopy(TINY_SPEC)
    doc["searcher"]["warm_start"] = "zoo"  # SB3's net_arch [64, 64]; the space offers [16] or [32, 32]
    with pytest.raises(rlsweep.SpecError) as caught:
        rlsweep.load_spec(doc, preflight=False)
    (problem,) = caught.value.problems
    assert problem.path == "search_space.rl_module.model_config.fcnet_hiddens"
    assert "[64, 64]" in problem.message


@pytest.mark.parametrize(
    ("change", "says"),
    [({"env": "Taxi-v3"}, "no PPO hyperparameters for env 'Taxi-v3'"), ({"algorithm": "APPO"}, "not 'APPO'")],
)
def test_no_published_entry_is_an_error(change, says):
    doc = {**zoo_space_doc(warm_start="zoo"), **change}
    with pytest.raises(rlsweep.SpecError, match=says):
        rlsweep.load_spec(doc, preflight=False)


def test_validate_prints_the_warm_start_error_and_exits_2(tmp_path, capsys):
    from rlsweep.cli import main

    doc = zoo_space_doc(warm_start="zoo")
    doc["env"] = "Pendulum-v1"
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 2
    assert "searcher.warm_start: rl-baselines3-zoo's PPO hyperparameters for Pendulum-v1 set use_sde" in capsys.readouterr().err


# --- a previous sweep ------------------------------------------------------------------------------


def previous_sweep(root: Path) -> Path:
    """Three finished trials of TINY_SPEC's space: lr 1e-4 (poor), 3e-4 (stopped early), 2e-3 (best)."""
    experiment = new_experiment(root)
    write_trial(experiment, "a", [10.0, 20.0, 30.0, 40.0], config={"training.lr": 1e-4, "rl_module.model_config.fcnet_hiddens": [16]})
    write_trial(experiment, "b", [12.0, 15.0], config={"training.lr": 3e-4, "rl_module.model_config.fcnet_hiddens": [16]}, done=True)
    write_trial(experiment, "c", [50.0, 120.0, 200.0, 260.0], config={"training.lr": 2e-3, "rl_module.model_config.fcnet_hiddens": [32, 32]})
    return experiment


def dir_spec(previous: Path, **searcher: Any) -> rlsweep.SweepSpec:
    doc = copy.deepcopy(TINY_SPEC)
    doc["searcher"] = {"name": "optuna", "seed": 0, "startup_trials": 2, "warm_start": str(previous), **searcher}
    return rlsweep.load_spec(doc, preflight=False)


def test_a_previous_sweeps_trials_reach_the_searcher_as_finished_and_pruned_trials(tmp_path):
    spec = dir_spec(previous_sweep(tmp_path / "before"))
    request = search_request(spec)
    study = optuna_study(SEARCHERS["optuna"].searcher(request))
    seen = {t.params["training.lr"]: (t.state.name, t.value, list(t.intermediate_values.values())) for t in study.trials}
    assert seen == {
        1e-4: ("COMPLETE", 40.0, [10.0, 20.0, 30.0, 40.0]),
        3e-4: ("PRUNED", None, [12.0, 15.0]),  # stopped at 2000 of 4000 env steps
        2e-3: ("COMPLETE", 260.0, [50.0, 120.0, 200.0, 260.0]),
    }


def test_what_the_searcher_learned_from_a_previous_sweep_changes_what_it_suggests(tmp_path):
    previous = previous_sweep(tmp_path / "before")
    doc = copy.deepcopy(TINY_SPEC)
    doc["searcher"] = {"name": "optuna", "startup_trials": 2}
    firsts = {"warm": [], "cold": []}
    for seed in range(5):
        firsts["warm"] += rlsweep.sample(dir_spec(previous, seed=seed), 1)
        doc["searcher"]["seed"] = seed
        firsts["cold"] += rlsweep.sample(rlsweep.load_spec(doc, preflight=False), 1)
    distance = {side: sum(abs(math.log(c["training.lr"] / 2e-3)) for c in configs) / 5 for side, configs in firsts.items()}
    # The earlier trials fill TPE's 2 startup trials, so its first suggestion already models them and lands
    # near the best one (lr 2e-3 with [32, 32]); without them it starts at random.
    assert distance["warm"] < 0.5 * distance["cold"]
    assert [c["rl_module.model_config.fcnet_hiddens"] for c in firsts["warm"]] == [[32, 32]] * 5


def test_warm_start_from_a_directory_needs_a_searcher_that_takes_evaluated_trials(tmp_path):
    doc = copy.deepcopy(TINY_SPEC)
    doc["searcher"] = {"name": "hyperopt", "warm_start": str(previous_sweep(tmp_path / "before"))}
    with pytest.raises(rlsweep.SpecError) as caught:
        rlsweep.load_spec(doc, preflight=False)
    (problem,) = caught.value.problems
    assert problem.path == "searcher.warm_start"
    assert "not 'hyperopt'" in problem.message and "use searcher optuna" in problem.message


def test_warm_start_from_a_directory_that_is_no_sweep_or_fits_no_trial_is_an_error(tmp_path):
    doc = copy.deepcopy(TINY_SPEC)
    doc["searcher"]["warm_start"] = str(tmp_path / "nowhere")
    with pytest.raises(rlsweep.SpecError, match="searcher.warm_start: .* is not an experiment directory"):
        rlsweep.load_spec(doc, preflight=False)
    # A sweep over another space: none of its trials is a point of this one.
    doc["searcher"]["warm_start"] = str(previous_sweep(tmp_path / "before"))
    doc["search_space"] = {"training.gamma": {"uniform": [0.9, 0.99]}}
    with pytest.raises(rlsweep.SpecError, match="no finished trial of .* fits this search space"):
        rlsweep.load_spec(doc, preflight=False)


# --- real sweeps ------------------------------------------------------------------------------------


def real_spec(tmp_path: Path, **searcher: Any) -> dict[str, Any]:
    doc = copy.deepcopy(TINY_SPEC)
    doc.update(name="warm", storage=str(tmp_path / "results"), mlflow=None)
    doc["search_space"]["rl_module.model_config.fcnet_hiddens"] = {"choice": [[16], [64, 64]]}
    doc["searcher"] = {"name": "optuna", "seed": 0, **searcher}
    doc["scheduler"] = "fifo"
    doc["budget"] = {"env_steps": 1000, "trials": 2, "max_concurrent": 1}
    doc["checkpoint"] = {"every_env_steps": 1000}
    return doc


@pytest.mark.slow
def test_a_sweep_runs_the_zoo_point_as_its_first_trial(ray_runtime, tmp_path):
    result = rlsweep.run(rlsweep.load_spec(real_spec(tmp_path, warm_start="zoo")), verbose=0)
    # Tune names a trial folder train_<id>_<creation index>_<config>_<time>.
    trials = sorted(load(result.path).trials, key=lambda t: int(t.path.name.split("_")[2]))
    assert len(trials) == 2
    first = dict(trials[0].config)
    assert first == {"training.lr": 0.001, "rl_module.model_config.fcnet_hiddens": [64, 64]}
    assert dict(trials[1].config) != first


@pytest.mark.slow
def test_a_sweep_warm_started_from_a_previous_one_reruns_none_of_its_trials(ray_runtime, tmp_path):
    previous = previous_sweep(tmp_path / "before")
    doc = real_spec(tmp_path, warm_start=str(previous), startup_trials=2)
    doc["budget"]["trials"] = 1
    doc["search_space"]["rl_module.model_config.fcnet_hiddens"] = {"choice": [[16], [32, 32]]}
    result = rlsweep.run(rlsweep.load_spec(doc), verbose=0)
    (trial,) = load(result.path).trials
    assert trial.state == "TERMINATED"
    assert trial.config["training.lr"] not in (1e-4, 3e-4, 2e-3)
