"""Memory attributed to policies, on real multi-agent PPO trials: each policy's weights and optimizer state
times the processes that hold a copy, so a league of frozen opponents shows what it costs per env runner."""

from __future__ import annotations

import pytest

import rlsweep
from rlsweep.analysis import load
from tests.conftest import small_ppo

pytestmark = pytest.mark.slow

ENV = "ray.rllib.examples.envs.classes.multi_agent:MultiAgentCartPole"


def _league(tmp_path, name, opponents, **config):
    """One trained policy and ``opponents`` frozen ones, one agent each, same network."""
    policies = {"map": {"0": "main", **{str(i): f"opponent{i}" for i in range(1, opponents + 1)}}, "train": ["main"]}
    document = small_ppo(
        name, tmp_path / "results", budget={"env_steps": 500 * (opponents + 1), "trials": 1},
        env=ENV, env_config={"num_agents": opponents + 1}, policies=policies,
    )
    document["config"] = {**document["config"], "rl_module.model_config": {"fcnet_hiddens": [64, 64]}, **config}
    (trial,) = load(rlsweep.run(rlsweep.load_spec(document), verbose=0).path).trials
    assert trial.state == "TERMINATED", trial.error
    return trial.rows[-1]


def _per_policy(row):
    return {k.split("/", 1)[1]: v for k, v in row.items() if k.startswith("policy_memory_mb/")}


def test_a_frozen_policy_costs_its_weights_per_copy_and_a_trained_one_its_optimizer_state_too(tmp_path, ray_runtime):
    row = _league(tmp_path, "league1", opponents=1)
    per_policy = _per_policy(row)
    assert set(per_policy) == {"main", "opponent1"}
    assert row["policy_memory_mb"] == pytest.approx(sum(per_policy.values()))
    # Same network: the frozen opponent is its weights in the env runner and the learner (2 copies); the
    # trained policy adds Adam's two moments per weight in the learner: 4 weights' worth.
    assert per_policy["main"] == pytest.approx(2 * per_policy["opponent1"], rel=0.01)
    # The weights themselves: a [64, 64] policy and value net on CartPole's 4 observations, 2 actions, in
    # float32. Policy: 4*64+64 + 64*64+64 + 64*2+2; value: 4*64+64 + 64*64+64 + 64*1+1.
    params = (4 * 64 + 64 + 64 * 64 + 64 + 64 * 2 + 2) + (4 * 64 + 64 + 64 * 64 + 64 + 64 * 1 + 1)
    assert per_policy["opponent1"] == pytest.approx(2 * params * 4 / 2**20, rel=0.01)


def test_policy_memory_grows_with_opponents_and_with_env_runners(tmp_path, ray_runtime):
    small = _league(tmp_path, "league1", opponents=1)
    large = _league(tmp_path, "league3", opponents=3)
    assert len(_per_policy(large)) == 4
    assert large["policy_memory_mb"] == pytest.approx(small["policy_memory_mb"] + 2 * _per_policy(small)["opponent1"], rel=0.01)
    # A remote env runner holds one more copy of every policy; RLlib's local env runner keeps its own
    # module beside it (checked on the algorithm), so 3 copies of a frozen opponent instead of 2.
    spread = _league(tmp_path, "league1-runners", opponents=1, **{"env_runners.num_env_runners": 1})
    assert _per_policy(spread)["opponent1"] == pytest.approx(1.5 * _per_policy(small)["opponent1"], rel=0.01)
