"""rlsweep's FastEpisodeReplayBuffer samples what RLlib's EpisodeReplayBuffer samples, faster (no Ray runtime)."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer

from rlsweep.trainables._replay import (
    FastEpisodeReplayBuffer,
    TransitionColumns,
    install_fast_replay_buffer,
    use_fast_replay_buffer,
)

OBS = gym.spaces.Box(-10.0, 10.0, (3,), np.float32)
ACT = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)


def episode(length: int, *, terminated: bool, seed: int) -> SingleAgentEpisode:
    rng = np.random.default_rng(seed)
    made = SingleAgentEpisode(
        observations=[rng.normal(size=3).astype(np.float32) for _ in range(length + 1)],
        actions=[rng.normal(size=1).astype(np.float32) for _ in range(length)],
        rewards=[float(r) for r in rng.normal(size=length)],
        infos=[{"t": t} for t in range(length + 1)],
        terminated=terminated,
        truncated=not terminated,
        observation_space=OBS,
        action_space=ACT,
        len_lookback_buffer=0,
    )
    made.to_numpy()
    return made


def episodes(lengths: list[int]) -> list[SingleAgentEpisode]:
    return [episode(n, terminated=i % 2 == 0, seed=i) for i, n in enumerate(lengths)]


def fill(buffer: EpisodeReplayBuffer, stored: list[int] | list[SingleAgentEpisode]) -> EpisodeReplayBuffer:
    """Adds the given episodes, or made ones of the given lengths."""
    made = [e if isinstance(e, SingleAgentEpisode) else episode(e, terminated=i % 2 == 0, seed=i) for i, e in enumerate(stored)]
    buffer.add(made)
    return buffer


def rows(episodes: list[SingleAgentEpisode]) -> list[tuple]:
    """Each transition as the learner's connectors read it: obs, next obs, action, reward, flags, columns."""
    return [
        (
            e.id_,
            e.t_started,
            len(e),
            e.get_observations(0).tolist(),
            e.get_observations(-1).tolist(),
            np.asarray(e.get_actions(0)).tolist(),
            round(float(e.get_rewards(0)), 12),  # lfilter and Horner's rule may differ in the last bit
            type(e.get_rewards(0)),
            e.is_terminated,
            e.is_truncated,
            e.get_infos(0),
            e.get_infos(-1),
            e.get_extra_model_outputs("n_step", 0).tolist(),
            e.get_extra_model_outputs("weights", 0).tolist(),
        )
        for e in episodes
    ]


# Derandomized: the same 20 examples each run. A random draw on 2026-11-28 hung inside RLlib's own buffer (the
# reference), in EpisodeReplayBuffer._sample_episodes, for over 5 minutes; that case is not yet pinned down.
@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    lengths=st.lists(st.integers(1, 12), min_size=1, max_size=4),
    n_step=st.integers(1, 4),
    batch=st.integers(1, 20),
    seed=st.integers(0, 2**16),
)
def test_same_batch_as_rllibs_uniform_buffer_for_the_same_generator(lengths, n_step, batch, seed):
    stored = episodes(lengths)
    reference = fill(EpisodeReplayBuffer(capacity=1000), copy.deepcopy(stored))
    fast = fill(FastEpisodeReplayBuffer(capacity=1000, seed=seed), copy.deepcopy(stored))
    reference.rng = np.random.default_rng(seed)
    kwargs = {"num_items": batch, "n_step": n_step, "gamma": 0.9, "sample_episodes": True}
    for _ in range(2):  # a second batch from where the first left the generator
        expected = rows(reference.sample(**kwargs))
        got = rows(fast.sample(**kwargs))
        assert got == expected
    assert fast.sampled_timesteps == reference.sampled_timesteps == 2 * batch
    assert fast.get_metrics() == reference.get_metrics()


def test_draws_transitions_uniformly_over_stored_env_steps():
    # Two episodes of 10 and 30 steps: a uniform draw over env steps picks the long one 3 times as often.
    fast = fill(FastEpisodeReplayBuffer(capacity=1000, seed=7), [10, 30])
    picks = [e.id_ for e in fast.sample(num_items=8000, n_step=1, sample_episodes=True)]
    long_id = fast.episodes[1].id_
    assert picks.count(long_id) / len(picks) == pytest.approx(0.75, abs=0.02)
    steps = [e.t_started for e in fast.sample(num_items=8000, n_step=1, sample_episodes=True) if e.id_ == long_id]
    counts = np.bincount(steps, minlength=30)
    assert len(counts) == 30 and counts.min() > 0.5 * counts.mean()


def test_same_seed_same_batch_and_other_seed_other_batch():
    def draw(seed: int) -> list[tuple]:
        return rows(fill(FastEpisodeReplayBuffer(capacity=1000, seed=seed), [20, 20]).sample(
            num_items=64, n_step=1, sample_episodes=True))

    same = draw(3)
    assert [r[1:] for r in same] == [r[1:] for r in draw(3)]  # ids differ per built episode; content does not
    assert [r[1:] for r in same] != [r[1:] for r in draw(4)]


def test_only_replaces_an_empty_uniform_buffer():
    class Algo:
        local_replay_buffer: object = None

    algo = Algo()
    algo.local_replay_buffer = EpisodeReplayBuffer(capacity=500, batch_size_B=32)
    use_fast_replay_buffer(algo, seed=1)
    assert type(algo.local_replay_buffer) is FastEpisodeReplayBuffer
    assert algo.local_replay_buffer.capacity == 500 and algo.local_replay_buffer.batch_size_B == 32
    with pytest.raises(ValueError, match="must be 'EpisodeReplayBuffer'.*got FastEpisodeReplayBuffer"):
        use_fast_replay_buffer(algo)
    algo.local_replay_buffer = fill(EpisodeReplayBuffer(capacity=500), [5])
    with pytest.raises(ValueError, match="already holds 1 episodes"):
        use_fast_replay_buffer(algo)


def _learner_pipelines():
    """RLlib's SAC learner connector pipeline, and the same with rlsweep's TransitionColumns first, with a module."""
    from ray.rllib.algorithms.sac import SACConfig

    config = SACConfig().environment(observation_space=OBS, action_space=ACT)
    module = config.get_multi_rl_module_spec(spaces={"default_policy": (OBS, ACT)}).build()
    default = config.build_learner_connector(OBS, ACT)
    ours = copy.deepcopy(config).learners(learner_connector=TransitionColumns).build_learner_connector(OBS, ACT)
    return module, default, ours


@pytest.mark.parametrize("n_step", [1, 3])
def test_learner_trains_on_the_same_batch_with_the_buffers_columns(n_step):
    module, default, ours = _learner_pipelines()
    stored = episodes([7, 3, 12, 1, 30])
    first = fill(FastEpisodeReplayBuffer(capacity=1000, seed=5), copy.deepcopy(stored))
    second = fill(FastEpisodeReplayBuffer(capacity=1000, seed=5), copy.deepcopy(stored))
    for _ in range(2):
        plain = first.sample(num_items=64, n_step=n_step, gamma=0.9, sample_episodes=True)
        handed = second.sample(num_items=64, n_step=n_step, gamma=0.9, sample_episodes=True)
        # n-step sampling is RLlib's own: no columns, and the batch comes from RLlib's pieces either way.
        assert hasattr(handed, "columns") == (n_step == 1)
        expected = default(rl_module=module, batch={}, episodes=list(plain), shared_data={})["default_policy"]
        got = ours(rl_module=module, batch={}, episodes=handed, shared_data={})["default_policy"]
        assert list(got) == list(expected)
        for column, tensor in expected.items():
            assert got[column].dtype == tensor.dtype and torch.equal(got[column], tensor), column
        # RLlib's AddObservationsFromEpisodesToBatch renames each episode it reads ("<id>_<i>"): with the
        # columns in hand it read none.
        assert any("_" in e.id_ for e in plain)
        assert all("_" not in e.id_ for e in handed) == (n_step == 1)


def test_an_agents_episodes_get_no_columns():
    # Multi-agent batches are keyed by (episode, agent, module): RLlib's pieces build those.
    stored = episodes([5, 8])
    for e in stored:
        e.agent_id, e.module_id = "a0", "m0"
    assert not hasattr(fill(FastEpisodeReplayBuffer(capacity=100, seed=1), stored).sample(
        num_items=8, n_step=1, sample_episodes=True), "columns")


def test_a_restored_buffer_goes_on_with_the_same_draws():
    stored = episodes([20, 20])
    original = fill(FastEpisodeReplayBuffer(capacity=1000, seed=11), copy.deepcopy(stored))
    original.sample(num_items=32, n_step=1, sample_episodes=True)
    restored = FastEpisodeReplayBuffer(capacity=1000, seed=99)
    restored.set_state(copy.deepcopy(original.get_state()))
    draws = [rows(b.sample(num_items=32, n_step=1, sample_episodes=True)) for b in (original, restored)]
    assert [r[1:] for r in draws[0]] == [r[1:] for r in draws[1]]


def _sac_config(**settings):
    import rlsweep
    from rlsweep.trainables._config import build_config

    spec = rlsweep.load_spec({
        "name": "fast-replay", "algorithm": "SAC", "env": "Pendulum-v1", "config": settings, "search_space": {},
        "budget": {"env_steps": 1000}, "storage": "/tmp/unused", "mlflow": None,
    })
    return build_config(spec, {})


def test_a_uniform_buffer_spec_gets_the_fast_buffer_and_its_columns():
    config = _sac_config(**{"training.replay_buffer_config": {"type": "EpisodeReplayBuffer", "capacity": 5000}})
    assert config._learner_connector is TransitionColumns
    assert install_fast_replay_buffer in config.callbacks_on_algorithm_init


def test_rllibs_prioritized_default_keeps_rllibs_parts():
    config = _sac_config()
    assert config._learner_connector is None
    assert install_fast_replay_buffer not in (config.callbacks_on_algorithm_init or [])


def test_the_fast_buffer_replaces_only_an_empty_uniform_one_and_takes_the_trials_seed():
    class Algo:
        local_replay_buffer: object = None
        config = type("Config", (), {"seed": 4})()

    algo = Algo()
    algo.local_replay_buffer = EpisodeReplayBuffer(capacity=500)
    install_fast_replay_buffer(algo)
    assert type(algo.local_replay_buffer) is FastEpisodeReplayBuffer
    seeded = FastEpisodeReplayBuffer(capacity=500, seed=4)
    assert algo.local_replay_buffer.rng.integers(10**9) == seeded.rng.integers(10**9)
    from ray.rllib.utils.replay_buffers.prioritized_episode_buffer import PrioritizedEpisodeReplayBuffer

    algo.local_replay_buffer = PrioritizedEpisodeReplayBuffer(capacity=500)
    install_fast_replay_buffer(algo)  # another distribution: left alone, no error
    assert type(algo.local_replay_buffer) is PrioritizedEpisodeReplayBuffer
