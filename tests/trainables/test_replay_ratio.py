"""``updates_per_env_step``: RLlib's replay ratio (``training_intensity``) per trial from its batch size and
how sampling is cut up, and refused where it has no meaning. No Ray: configs are built in this process."""

from __future__ import annotations

import pytest
from ray.rllib.algorithms.dqn.dqn import calculate_rr_weights

import rlsweep
from rlsweep.errors import SpecError
from rlsweep.trainables._config import build_config

SPACE = {
    "env_runners.rollout_fragment_length": {"randint": [1, 10]},
    "training.train_batch_size_per_learner": {"choice": [4, 64, 2048]},
}


def _spec(algorithm: str = "SAC", env: str = "Pendulum-v1", preflight: bool = True, **fields):
    return rlsweep.load_spec({
        "name": "ratio", "algorithm": algorithm, "env": env, "search_space": SPACE,
        "budget": {"env_steps": 1000}, "mlflow": None, **fields,
    }, preflight=preflight)


@pytest.mark.parametrize("fragment", [1, 2, 7, 10])
@pytest.mark.parametrize("batch", [4, 64, 2048])
def test_one_update_per_env_step_whatever_the_batch_and_fragment(fragment, batch):
    # RLlib's round: sample one fragment, then run the second weight's updates (dqn.py training_step).
    spec = _spec(updates_per_env_step=1)
    config = build_config(spec, {"env_runners.rollout_fragment_length": fragment, "training.train_batch_size_per_learner": batch})
    assert calculate_rr_weights(config) == [1, fragment]


def test_remote_env_runners_each_sample_a_fragment_a_round():
    # Two env runners of 2 envs, fragments of 3: a round samples 12 env steps (the local runner samples none,
    # though RLlib's native ratio counts it). Three CPUs a trial: built here without the pre-flight's resource
    # check (this machine has two).
    spec = _spec(updates_per_env_step=1, preflight=False,
                 config={"env_runners.num_env_runners": 2, "env_runners.num_envs_per_env_runner": 2})
    config = build_config(spec, {"env_runners.rollout_fragment_length": 3, "training.train_batch_size_per_learner": 64})
    assert calculate_rr_weights(config) == [1, 12]


def test_half_an_update_per_env_step_samples_two_rounds_per_update():
    spec = _spec(updates_per_env_step=0.5)
    config = build_config(spec, {"env_runners.rollout_fragment_length": 1, "training.train_batch_size_per_learner": 64})
    assert calculate_rr_weights(config) == [2, 1]
    assert config.training_intensity == 32


def test_unset_keeps_rllibs_own_ratio():
    config = build_config(_spec(), {"env_runners.rollout_fragment_length": 5, "training.train_batch_size_per_learner": 64})
    assert config.training_intensity is None and calculate_rr_weights(config) == [1, 1]


def test_refused_where_no_training_step_reads_it():
    with pytest.raises(SpecError, match=r"updates_per_env_step: .*only DQN's training step reads \(SAC, DQN\), not PPO's: "
                                        r"remove updates_per_env_step, got 2$"):
        rlsweep.load_spec({"name": "ratio", "algorithm": "PPO", "env": "CartPole-v1", "updates_per_env_step": 2,
                           "budget": {"env_steps": 1000}, "mlflow": None})
    # CQL's config inherits SAC's training_intensity, but CQL trains from offline data.
    with pytest.raises(SpecError, match=r"not CQL's"):
        rlsweep.load_spec({"name": "ratio", "algorithm": "CQL", "env": "Pendulum-v1", "updates_per_env_step": 1,
                           "budget": {"env_steps": 1000}, "mlflow": None})


def test_refused_beside_a_spec_that_sets_the_ratio_or_samples_whole_episodes():
    with pytest.raises(SpecError, match=r"updates_per_env_step: .*config\.training\.training_intensity sets it to 5: "
                                        r"keep one, got 1$"):
        _spec(updates_per_env_step=1, config={"training.training_intensity": 5})
    searched = {**SPACE, "training.training_intensity": {"choice": [1, 2]}}
    with pytest.raises(SpecError, match=r"search_space\.training\.training_intensity searches it: keep one"):
        _spec(updates_per_env_step=1, search_space=searched)
    with pytest.raises(SpecError, match=r"env_runners\.batch_mode complete_episodes samples whole episodes"):
        _spec(updates_per_env_step=1, config={"env_runners.batch_mode": "complete_episodes"})
    _spec(updates_per_env_step=1, config={"env_runners.batch_mode": "truncate_episodes"})  # RLlib's default: fine


def test_refused_when_no_update_fits_the_budget():
    # One update per 1,001 env steps in a budget of 1,000: RLlib would sample 1,001 rounds before the first.
    with pytest.raises(SpecError, match=r"updates_per_env_step: one update per 1,001 env steps: no update within "
                                        r"budget\.env_steps \(1,000\).*got 0\.000999"):
        _spec(updates_per_env_step=1 / 1001)
    _spec(updates_per_env_step=1 / 1000)  # exactly one: accepted
    with pytest.raises(SpecError, match=r"updates_per_env_step: must be > 0, got 0"):
        _spec(updates_per_env_step=0)
