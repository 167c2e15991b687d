"""rlsweep's FastEpisodeReplayBuffer samples what RLlib's EpisodeReplayBuffer samples, faster (no Ray runtime)."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer

from rlsweep.trainables._replay import FastEpisodeReplayBuffer, use_fast_replay_buffer

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
