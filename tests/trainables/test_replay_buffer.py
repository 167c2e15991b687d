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
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger
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


def slots(e: SingleAgentEpisode) -> dict:
    """Every slot of an episode, arrays and lookback buffers as plain values (type, dtype and all)."""

    def plain(v):
        if isinstance(v, InfiniteLookbackBuffer):
            return ("buffer", plain(v.data), v.lookback, v.finalized, v.space)
        if isinstance(v, (np.ndarray, np.generic)):
            return (type(v).__name__, v.dtype.str, v.tolist())
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return {name: plain(getattr(e, name)) for name in SingleAgentEpisode.__slots__}


def test_a_sampled_transition_pickled_or_copied_is_rllibs_episode():
    """Sent to a remote learner or copied, a sampled transition is a plain SingleAgentEpisode, slot for slot the
    one RLlib's buffer samples: not the stored episode it was read from."""
    import pickle

    stored = episodes([6, 9])
    reference = fill(EpisodeReplayBuffer(capacity=100), copy.deepcopy(stored))
    reference.rng = np.random.default_rng(3)
    expected = [slots(e) for e in reference.sample(num_items=12, n_step=1, gamma=0.9, sample_episodes=True)]
    for turn in (lambda s: pickle.loads(pickle.dumps(s)), copy.deepcopy, copy.copy):
        fast = fill(FastEpisodeReplayBuffer(capacity=100, seed=3), copy.deepcopy(stored))
        sampled = fast.sample(num_items=12, n_step=1, gamma=0.9, sample_episodes=True)
        assert [len(e) for e in sampled] == [1] * 12 and not any(e.is_built for e in sampled)
        turned = [turn(e) for e in sampled]
        assert {type(e) for e in turned} == {SingleAgentEpisode}
        assert [slots(e) for e in turned] == expected
    # Set before anything looked into it (as RLlib renames the episodes it reads): it stays set.
    fast = fill(FastEpisodeReplayBuffer(capacity=100, seed=3), copy.deepcopy(stored))
    renamed = fast.sample(num_items=12, n_step=1, gamma=0.9, sample_episodes=True)[1]
    renamed.id_ = "renamed"
    assert renamed.get_observations(0).tolist() == expected[1]["observations"][1][0][2] and renamed.id_ == "renamed"


def test_a_transition_built_after_its_episode_grew_holds_what_was_sampled():
    """The env runner hands an ongoing episode over in chunks; the buffer joins a later chunk onto the stored
    episode (replacing its last info). A transition sampled before and built after is the one sampled."""
    rng = np.random.default_rng(4)
    first = SingleAgentEpisode(
        observations=[rng.normal(size=3).astype(np.float32) for _ in range(4)],
        actions=[rng.normal(size=1).astype(np.float32) for _ in range(3)],
        rewards=[0.5, 1.5, 2.5], infos=[{"t": t} for t in range(4)], observation_space=OBS, action_space=ACT,
        len_lookback_buffer=0,
    )
    later = first.cut()
    for t in range(4, 7):
        later.add_env_step(rng.normal(size=3).astype(np.float32), rng.normal(size=1).astype(np.float32), float(t),
                           infos={"t": t, "later": True})
    first.to_numpy()
    later.to_numpy()
    reference = fill(EpisodeReplayBuffer(capacity=100), [copy.deepcopy(first)])
    reference.rng = np.random.default_rng(6)
    expected = [slots(e) for e in reference.sample(num_items=10, n_step=1, gamma=0.9, sample_episodes=True)]
    fast = fill(FastEpisodeReplayBuffer(capacity=100, seed=6), [copy.deepcopy(first)])
    sampled = fast.sample(num_items=10, n_step=1, gamma=0.9, sample_episodes=True)
    fast.add([copy.deepcopy(later)])
    assert len(fast.episodes) == 1 and len(fast.episodes[0]) == 6  # joined onto the stored episode
    assert not any(e.is_built for e in sampled)
    assert [slots(e) for e in sampled] == expected


def test_a_transition_whose_build_fails_stays_unbuilt_and_keeps_its_extra_outputs():
    stored = episodes([5])
    fast = fill(FastEpisodeReplayBuffer(capacity=100, seed=1), copy.deepcopy(stored))
    transition = fast.sample(num_items=1, n_step=1, sample_episodes=True)[0]
    outputs = transition.extra_model_outputs
    infos, fast.episodes[0].infos = fast.episodes[0].infos, None  # the stored episode broken under it
    with pytest.raises(AttributeError):
        transition.get_observations(0)
    assert not transition.is_built and transition.extra_model_outputs is outputs and list(outputs) == ["n_step", "weights"]
    fast.episodes[0].infos = infos
    assert transition.get_observations(0).tolist() == stored[0].get_observations(transition.t_started).tolist()
    assert transition.is_built and transition.extra_model_outputs is outputs and list(outputs) == ["n_step", "weights"]


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


DISCRETE = gym.spaces.Discrete(3)


def _learner_pipelines(algorithm: str):
    """RLlib's learner connector pipeline for SAC (Box actions) or DQN (Discrete), the same with rlsweep's
    TransitionColumns first, and a module to run them with."""
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.algorithms.sac import SACConfig

    actions = ACT if algorithm == "SAC" else DISCRETE
    config = (SACConfig if algorithm == "SAC" else DQNConfig)().environment(observation_space=OBS, action_space=actions)
    module = config.get_multi_rl_module_spec(spaces={"default_policy": (OBS, actions)}).build()
    default = config.build_learner_connector(OBS, actions)
    ours = copy.deepcopy(config).learners(learner_connector=TransitionColumns).build_learner_connector(OBS, actions)
    if algorithm == "DQN":  # DQN's learner adds new_obs when it builds (DQNLearner.build), SAC's config does
        from ray.rllib.connectors.common import AddObservationsFromEpisodesToBatch
        from ray.rllib.connectors.learner import AddNextObservationsFromEpisodesToTrainBatch

        for pipeline in (default, ours):
            pipeline.insert_after(AddObservationsFromEpisodesToBatch, AddNextObservationsFromEpisodesToTrainBatch())
    return module, default, ours


def _stored(algorithm: str, *, id_suffix: str = "") -> list[SingleAgentEpisode]:
    made = episodes([7, 3, 12, 1, 30])
    for i, e in enumerate(made):
        e.id_ += id_suffix
        if algorithm == "DQN":  # Discrete actions, as DQN's
            e.action_space = DISCRETE
            e.actions.data = np.random.default_rng(i).integers(3, size=len(e))
    return made


def _batch(pipeline, module, sampled, metrics=None) -> dict[str, torch.Tensor]:
    return pipeline(rl_module=module, batch={}, episodes=sampled, shared_data={}, metrics=metrics)["default_policy"]


@pytest.mark.parametrize("algorithm, n_step", [("SAC", 1), ("DQN", 1), ("SAC", 3)])
def test_learner_trains_on_rllibs_batch_with_the_buffers_columns(algorithm, n_step):
    # Reference: RLlib's own uniform buffer (its generator seeded alike) through RLlib's own learner pieces.
    module, default, ours = _learner_pipelines(algorithm)
    stored = _stored(algorithm)
    reference = fill(EpisodeReplayBuffer(capacity=1000), copy.deepcopy(stored))
    reference.rng = np.random.default_rng(5)
    fast = fill(FastEpisodeReplayBuffer(capacity=1000, seed=5), copy.deepcopy(stored))
    for _ in range(2):
        plain = reference.sample(num_items=64, n_step=n_step, gamma=0.9, sample_episodes=True)
        handed = fast.sample(num_items=64, n_step=n_step, gamma=0.9, sample_episodes=True)
        # n-step sampling is RLlib's own: no columns, and the batch comes from RLlib's pieces either way.
        assert hasattr(handed, "columns") == (n_step == 1)
        metrics = MetricsLogger()
        expected, got = _batch(default, module, plain), _batch(ours, module, handed, metrics)
        assert list(got) == list(expected)
        # The learner's result says how many rows came as columns (rlsweep's trial rows keep it).
        assert metrics.peek(("__all_modules__", "replay_columns_rows"), default=0) == (64 if n_step == 1 else 0)
        for column, tensor in expected.items():
            assert got[column].dtype == tensor.dtype and torch.equal(got[column], tensor), column
        if n_step == 1:  # RLlib's pieces read the columns, not the episodes: at most one was built (its module id)
            assert sum(e.is_built for e in handed) <= 1
        # RLlib's AddObservationsFromEpisodesToBatch renames each episode it reads ("<id>_<i>"): with the
        # columns in hand it read none.
        assert any("_" in e.id_ for e in plain)
        assert all("_" not in e.id_ for e in handed) == (n_step == 1)


def test_episode_ids_with_an_underscore_leave_the_batch_to_rllib():
    # RLlib keys rows by episode id and renames only ids without "_": rows of one episode then group together,
    # an order the columns would not have.
    module, default, ours = _learner_pipelines("SAC")
    stored = _stored("SAC", id_suffix="_x")
    fast = fill(FastEpisodeReplayBuffer(capacity=1000, seed=2), copy.deepcopy(stored))
    handed = fast.sample(num_items=64, n_step=1, sample_episodes=True)
    assert not hasattr(handed, "columns")
    again = fill(FastEpisodeReplayBuffer(capacity=1000, seed=2), copy.deepcopy(stored))
    expected = _batch(default, module, again.sample(num_items=64, n_step=1, sample_episodes=True))
    got = _batch(ours, module, handed)
    assert all(torch.equal(got[c], expected[c]) for c in expected)


def test_an_agents_episodes_and_a_stateful_lookback_get_no_columns():
    # Multi-agent batches are keyed by (episode, agent, module), and a stateful module samples with a lookback
    # of 1 for RLlib's time and state pieces: RLlib's pieces build those.
    stored = episodes([5, 8])
    assert hasattr(fill(FastEpisodeReplayBuffer(capacity=100, seed=1), copy.deepcopy(stored)).sample(
        num_items=8, n_step=1, sample_episodes=True), "columns")
    assert not hasattr(fill(FastEpisodeReplayBuffer(capacity=100, seed=1), copy.deepcopy(stored)).sample(
        num_items=8, n_step=1, sample_episodes=True, lookback=1), "columns")
    for e in stored:
        e.agent_id, e.module_id = "a0", "m0"
    assert not hasattr(fill(FastEpisodeReplayBuffer(capacity=100, seed=1), stored).sample(
        num_items=8, n_step=1, sample_episodes=True), "columns")


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
