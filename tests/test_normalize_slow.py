"""``normalize.observations`` end to end: one tiny PPO trial on CartPole seen through an offset and a scale
(tests/envs/offset.py, every episode from the same start state, so a greedy policy scores the same episode
wherever it runs). Its checkpoint holds the MeanStdFilter statistics; ``load_policy``, ``evaluate`` and the
``eval`` rule score what RLlib's own evaluation scored, and the same policy without the statistics does not."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

import rlsweep
from rlsweep.analysis import load
from rlsweep.analysis._evaluate import _single_agent_episode
from rlsweep.policy import OBSERVATION_FILTER_DIRS
from tests.conftest import small_ppo
from tests.envs.offset import OffsetCartPole

BUDGET = 4000


@pytest.fixture(scope="module")
def normalized_sweep(ray_runtime, tmp_path_factory):
    """One trial, one checkpoint and one greedy evaluation, both at the budget."""
    storage = tmp_path_factory.mktemp("normalize")
    document = small_ppo(
        "normalized", storage,
        env="tests.envs.offset:OffsetCartPole",
        search_space={},
        budget={"env_steps": BUDGET, "trials": 1},
        checkpoint={"every_env_steps": BUDGET},
        evaluation={"episodes": 2},
        normalize={"observations": True},
    )
    document["config"]["training.lr"] = 1.0e-3
    result = rlsweep.run(rlsweep.load_spec(document), verbose=0)
    assert result.errored_trials == 0
    sweep = load(result.path)
    best = sweep.best("last")
    return sweep, best, sweep.trials[0].rows[-1]


@pytest.mark.slow
def test_the_checkpoint_holds_the_statistics_of_every_observation_trained_on(normalized_sweep):
    _, best, row = normalized_sweep
    assert row["env_steps"] == BUDGET and best.checkpoint_env_steps == BUDGET
    folder = Path(best.checkpoint) / OBSERVATION_FILTER_DIRS[0]
    state = pickle.loads((folder / "state.pkl").read_bytes())
    assert state[None]["running_stats"][0]["num_pushes"] >= BUDGET


@pytest.mark.slow
def test_load_policy_evaluate_and_the_eval_rule_score_what_rllibs_evaluation_scored(normalized_sweep):
    sweep, best, row = normalized_sweep
    policy = rlsweep.load_policy(best)
    assert list(policy.observation_filters) == [None]
    env = OffsetCartPole()
    assert _single_agent_episode(env, policy, seed=7) == pytest.approx(row["eval_return_mean"])
    table = sweep.evaluate(1, episodes=2, seeds=[7, 8])
    assert table.loc[0, "eval_return_mean"] == pytest.approx(row["eval_return_mean"])
    assert sweep.best("eval").value == pytest.approx(row["eval_return_mean"])


@pytest.mark.slow
def test_the_policy_without_its_statistics_scores_differently(normalized_sweep):
    _, best, row = normalized_sweep
    policy = rlsweep.load_policy(best)
    raw = dataclasses.replace(policy, observation_filters={})
    assert _single_agent_episode(OffsetCartPole(), raw, seed=7) != pytest.approx(row["eval_return_mean"])
