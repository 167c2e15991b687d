"""``searcher.warm_start: zoo`` reads rl-zoo3's entries through the mapping ``rlsweep convert --from zoo`` uses:
one mapping, so a warm-start point is the converted spec's values (schedules at their start), and what the
converter lists as not carried is what warm start refuses."""

from __future__ import annotations

import pytest

import rlsweep
from rlsweep._zoo import ALGORITHMS, map_entry, start_value
from rlsweep.warm_start import zoo_point, zoo_table

BASE = {"name": "w", "budget": {"env_steps": 1000, "trials": 2}, "searcher": {"name": "optuna", "seed": 0}}


def space(algorithm: str, env: str, searched: dict, **extra) -> rlsweep.SweepSpec:
    return rlsweep.load_spec({**BASE, "algorithm": algorithm, "env": env, "search_space": searched, **extra}, preflight=False)


@pytest.mark.parametrize(("stem", "env"), [(s, e) for s in ALGORITHMS for e in zoo_table()[s]])
def test_every_shipped_entry_warm_starts_the_settings_convert_writes(stem, env):
    algorithm = ALGORITHMS[stem]
    mapping = map_entry(algorithm, env, zoo_table()[stem][env])
    assert not mapping.problems
    # Search every number convert writes over a wide range: the point is the converted value (a schedule's start).
    numbers = {p: s.value for p, s in mapping.settings.items()
               if isinstance(start_value(s.value), (int, float)) and not isinstance(start_value(s.value), bool)}
    if mapping.updates_per_env_step is not None:  # RLlib's own ratio, for a space that searches it: at the entry's batch
        batch = mapping.settings["training.train_batch_size_per_learner"].value
        numbers["training.training_intensity"] = mapping.updates_per_env_step.value * batch
    searched = {p: {"choice": [start_value(v), start_value(v) + 1]} for p, v in numbers.items()}
    refused = [i for i in mapping.unmapped if not i.approximate]
    # What changes learning and RLlib cannot do is refused: gSDE, reward normalization.
    published = zoo_table()[stem][env]
    assert ("use_sde" in published) <= ("use_sde" in {i.key for i in refused})
    assert (published.get("normalize") is True) <= ("normalize.norm_reward" in {i.key for i in refused})
    normalize = {"normalize": {"observations": True}} if mapping.normalize.get("observations") else {}
    spec = space(algorithm, env, {}, **normalize)
    if refused:
        with pytest.raises(rlsweep.SpecError) as caught:
            zoo_point(algorithm, env, space(algorithm, env, searched, **normalize).search_space, normalize_observations=bool(normalize))
        assert {p.message.split(" set ")[1].split("=")[0] for p in caught.value.problems} == {i.key for i in refused}
        return
    point, _ = zoo_point(algorithm, env, space(algorithm, env, searched, **normalize).search_space, normalize_observations=bool(normalize))
    assert point == {p: start_value(v) for p, v in numbers.items()}
    assert spec.algorithm == algorithm


def test_dqn_warm_starts_from_its_zoo_entry():
    spec = space("DQN", "CartPole-v1", {"training.lr": {"loguniform": [1e-4, 1e-2]},
                                        "training.target_network_update_freq": {"choice": [10, 100]},
                                        "training.train_batch_size_per_learner": {"choice": [32, 64]}})
    point, notes = zoo_point("DQN", "CartPole-v1", spec.search_space)
    assert point == {"training.lr": 0.0023, "training.target_network_update_freq": 10, "training.train_batch_size_per_learner": 64}
    assert notes == []


def test_a_searched_rllib_replay_ratio_takes_the_zoo_entrys_updates_at_its_batch():
    # The converted spec says updates_per_env_step (0.5: 128 gradient steps per 256 env steps); a space that
    # searches RLlib's own training_intensity instead starts at the env steps that replays at the entry's batch of 64.
    spec = space("DQN", "CartPole-v1", {"training.training_intensity": {"uniform": [1.0, 64.0]}})
    point, _ = zoo_point("DQN", "CartPole-v1", spec.search_space)
    assert point == {"training.training_intensity": 32.0}


def test_a_searched_schedule_takes_the_zoo_schedules_ends():
    spec = space("PPO", "CartPole-v1", {"training.lr": {"schedule": "linear", "from": {"loguniform": [1e-4, 1e-2]}, "to": 0.0}})
    point, notes = zoo_point("PPO", "CartPole-v1", spec.search_space)
    assert point == {"training.lr.from": 0.001}  # lin_0.001: from 0.001 to 0
    # Nothing about lr is kept constant: the schedule is searched as a schedule.
    assert notes == []


@pytest.mark.parametrize(("searched", "expected"), [
    # rl-zoo3's CartPole DQN: epsilon 1.0 to 0.04 over the first 16% of its 50,000 env steps.
    ({"points": [[0, {"uniform": [0.5, 1.0]}], [8000, {"uniform": [0.01, 0.1]}]]},
     {"training.epsilon.points.0": 1.0, "training.epsilon.points.1": 0.04}),
    ({"points": [[0, 1.0], [8000, {"uniform": [0.01, 0.1]}], [40_000, {"uniform": [0.0, 0.1]}]]},
     {"training.epsilon.points.1": 0.04}),  # the zoo's schedule has no third point: no value for it
    ({"schedule": "linear", "from": {"uniform": [0.5, 1.0]}, "to": {"uniform": [0.01, 0.1]}},
     {"training.epsilon.from": 1.0, "training.epsilon.to": 0.04}),  # a piecewise zoo schedule's ends
])
def test_a_searched_epsilon_schedule_takes_the_zoo_schedules_points(searched, expected):
    schedule = {"schedule": "piecewise", **searched} if "points" in searched else searched
    spec = space("DQN", "CartPole-v1", {"training.epsilon": schedule}, budget={"env_steps": 50_000, "trials": 2})
    if len(expected) < sum(isinstance(p[1], dict) for p in searched.get("points", [])):
        with pytest.raises(rlsweep.SpecError) as caught:
            zoo_point("DQN", "CartPole-v1", spec.search_space)
        (problem,) = caught.value.problems
        assert problem.path == "search_space.training.epsilon.points.2" and "have no value for it" in problem.message
        return
    point, _ = zoo_point("DQN", "CartPole-v1", spec.search_space)
    assert point == expected


def test_the_spec_must_normalize_observations_as_the_zoo_entry_does():
    # DQN on CartPole is trained without normalization by rl-zoo3.
    doc = {**BASE, "algorithm": "DQN", "env": "CartPole-v1", "normalize": {"observations": True},
           "search_space": {"training.lr": {"loguniform": [1e-4, 1e-2]}}}
    doc["searcher"] = {**BASE["searcher"], "warm_start": "zoo"}
    with pytest.raises(rlsweep.SpecError) as caught:
        rlsweep.load_spec(doc, preflight=False)
    (problem,) = caught.value.problems
    assert problem.path == "searcher.warm_start" and "without normalized observations" in problem.message
    doc["normalize"] = {"observations": False}
    assert rlsweep.load_spec(doc, preflight=False).searcher.options["warm_start"] == "zoo"


def test_reward_normalization_the_mapping_cannot_carry_is_refused():
    # rl-zoo3's Acrobot PPO normalizes observations and rewards; RLlib has no reward normalization.
    doc = {**BASE, "algorithm": "PPO", "env": "Acrobot-v1", "normalize": {"observations": True},
           "search_space": {"training.gamma": {"uniform": [0.9, 0.999]}}}
    doc["searcher"] = {**BASE["searcher"], "warm_start": "zoo"}
    with pytest.raises(rlsweep.SpecError) as caught:
        rlsweep.load_spec(doc, preflight=False)
    (problem,) = caught.value.problems
    assert "set normalize.norm_reward=True" in problem.message and "reward-normalizing" in problem.message
