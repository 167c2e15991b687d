"""A uniform episode replay buffer that samples 1-step (or n-step) transitions without RLlib's per-sample waste.

RLlib's ``EpisodeReplayBuffer._sample_episodes`` (ray 2.60) builds each sampled transition by slicing the
stored episode (a whole ``SingleAgentEpisode`` with its lookback buffers), sums its rewards through
``scipy.signal.lfilter``, builds a second ``SingleAgentEpisode`` from the slice and hashes ``"<id>-<t>"`` with
SHA-256 for one metric. :class:`FastEpisodeReplayBuffer` draws the same indices from the same generator and
reads the few values a transition needs straight from the stored episode, so a batch is the same, item for
item, as ``EpisodeReplayBuffer``'s from a generator in the same state (tests/trainables/test_replay_buffer.py).
This is the 1-step sampling SAC and DQN do by default (``n_step=1``, as SB3); anything else (n-step returns,
sequences, ``sample_episodes=False``) goes to RLlib's own code.

RLlib's SAC and DQN refuse any replay buffer ``type`` but their four built-in names when they validate their
config (sac.py ``validate``), so the class is put in by :func:`use_fast_replay_buffer` once the algorithm is
built; see docs/benchmarks.md for what it gains.

RLlib's learner then turns the sampled 1-step episodes back into columns, one episode and one
``InfiniteLookbackBuffer.get`` at a time (about as long again as the sampling). The fast sampler has those values
in hand, so it hands the columns over with the episodes (:class:`SampledTransitions`), and
:class:`TransitionColumns`, the first piece of the learner's connector pipeline, puts them in the batch. RLlib's
own pieces leave a column that is already in the batch alone (their documented pass-through), so the batch
the learner trains on is the same, array for array; a list without columns (another buffer, or a batch split
over remote learners) goes through RLlib's pieces as before. With the columns in the batch, RLlib's learner asks
of each sampled episode only its length and its extra outputs' keys, so each is a :class:`Transition`, which
RLlib's ``SingleAgentEpisode`` constructor builds only once something looks further into it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core import ALL_MODULES, DEFAULT_AGENT_ID, DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer

from rlsweep import _compat


#: The learner's result key (under ``learners/__all_modules__``): rows of its last batch that came as the fast
#: buffer's columns.
COLUMNS_ROWS = "replay_columns_rows"


class SampledTransitions(list):  # type: ignore[type-arg]
    """The sampled 1-step episodes (what RLlib's buffer returns), with their columns as the learner batches them.

    ``columns`` maps RLlib's column names (``obs``, ``new_obs``, ``actions``, ``rewards``, ``terminateds``,
    ``truncateds``, ``n_step``, ``weights``) to arrays with one row per episode, in the list's order.
    """

    columns: dict[str, np.ndarray]


def _one_step(
    episode: SingleAgentEpisode, ts: int, observation: Any, next_observation: Any, action: Any, reward: Any,
    terminated: bool, truncated: bool,
) -> dict[str, Any]:
    """RLlib's ``SingleAgentEpisode`` arguments for the 1-step episode RLlib's buffer samples at ``ts``."""
    return {
        "id_": episode.id_,
        "agent_id": episode.agent_id,
        "module_id": episode.module_id,
        "observation_space": episode.observation_space,
        "action_space": episode.action_space,
        "observations": [observation, next_observation],
        "actions": [action],
        "rewards": [reward],
        "infos": [episode.get_infos(ts), episode.get_infos(ts + 1)],
        "terminated": terminated,
        "truncated": truncated,
        "t_started": ts,
        "len_lookback_buffer": 0,
    }


class Transition(SingleAgentEpisode):
    """A sampled 1-step ``SingleAgentEpisode`` (RLlib's ``EpisodeReplayBuffer`` samples these), built by
    RLlib's constructor the first time anything looks into it beyond ``len()`` and ``extra_model_outputs``:
    that is all RLlib's learner asks of a sampled episode whose columns the batch already has (rlsweep's
    :class:`TransitionColumns` builds the first, for its module id). Building the 256 of a SAC batch took most of
    its sampling. Pickled or copied, it is built first and becomes a plain ``SingleAgentEpisode``.

    Its observations, action, reward and flags are read when it is sampled; the stored episode's ids, spaces and
    infos when it is built. RLlib's SAC and DQN add to the buffer only before they sample, and drop the sampled
    list after the update; a stored episode's ids and spaces never change, and a later chunk of it replaces only
    its last info, with the chunk's copy of it.
    """

    __slots__ = ("_unbuilt",)

    def __init__(
        self, episode: SingleAgentEpisode, ts: int, observation: Any, next_observation: Any, action: Any,
        reward: Any, terminated: bool, truncated: bool, n_step: int, lookback: int,
    ) -> None:
        unbuilt = (episode, ts, observation, next_observation, action, reward, terminated, truncated)
        object.__setattr__(self, "_unbuilt", unbuilt)
        # RLlib's AddColumnsFromEpisodesToTrainBatch reads every episode's extra output keys.
        object.__setattr__(self, "extra_model_outputs", {
            "n_step": _compat.lookback_buffer(np.full((1 + lookback,), n_step), lookback),
            "weights": _compat.lookback_buffer(np.ones((1 + lookback,)), lookback),
        })

    def _pending(self) -> tuple[Any, ...] | None:
        """What it is built from, until it is built."""
        try:
            return object.__getattribute__(self, "_unbuilt")  # type: ignore[no-any-return]
        except AttributeError:
            return None

    def _build(self) -> None:
        unbuilt = self._pending()
        if unbuilt is None:
            return
        object.__delattr__(self, "_unbuilt")
        added = object.__getattribute__(self, "extra_model_outputs")
        try:
            SingleAgentEpisode.__init__(self, **_one_step(*unbuilt))
        except BaseException:  # unbuilt as it was: the next look tries again, and raises again
            object.__setattr__(self, "_unbuilt", unbuilt)
            object.__setattr__(self, "extra_model_outputs", added)
            raise
        # The same dict (the constructor was given no extra outputs): whoever read it before still holds it.
        object.__setattr__(self, "extra_model_outputs", added)

    @property
    def is_built(self) -> bool:
        """Whether RLlib's constructor has built it (something looked into it)."""
        return self._pending() is None

    def __getattr__(self, name: str) -> Any:  # only for what is not set yet
        if name != "_unbuilt" and self._pending() is not None:
            self._build()
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        self._build()
        super().__setattr__(name, value)

    def __len__(self) -> int:
        return 1 if self._pending() is not None else super().__len__()

    def __reduce_ex__(self, protocol: Any) -> Any:
        self._build()
        return _plain_episode, ({name: getattr(self, name) for name in SingleAgentEpisode.__slots__},)


def _plain_episode(slots: dict[str, Any]) -> SingleAgentEpisode:
    """A ``SingleAgentEpisode`` holding ``slots`` (its ``__slots__`` values)."""
    episode = SingleAgentEpisode.__new__(SingleAgentEpisode)
    for name, value in slots.items():
        setattr(episode, name, value)
    return episode


class TransitionColumns(ConnectorV2):
    """Learner connector piece: puts a :class:`SampledTransitions`' columns in the train batch.

    RLlib's default learner pieces skip a column already in the batch, so they pass these through. Anything
    else (a plain list of episodes, a batch that already has one of the columns) is left to them.
    """

    def __call__(  # type: ignore[override]
        self, *, rl_module: Any, batch: dict[str, Any], episodes: list[Any], **kwargs: Any
    ) -> Any:
        columns = getattr(episodes, "columns", None)
        if not columns or any(column in batch for column in columns):
            return batch
        for column, values in columns.items():
            # One item already batched along its first axis; BatchIndividualItems concatenates such items.
            self.add_n_batch_items(
                batch, column, items_to_add=values, num_items=len(values), single_agent_episode=episodes[0]
            )
        metrics = kwargs.get("metrics")
        if metrics is not None:  # the learner's logger: rows per batch that came as columns (RLlib's result)
            metrics.log_value((ALL_MODULES, COLUMNS_ROWS), len(episodes), reduce="mean", window=1)
        return batch


class FastEpisodeReplayBuffer(_compat.ReplaySamplerSeam, EpisodeReplayBuffer):
    """RLlib's uniform ``EpisodeReplayBuffer`` with a faster transition sampler (RLlib's private
    ``_sample_episodes``, through :class:`rlsweep._compat.ReplaySamplerSeam`).

    Args:
        capacity: env steps the buffer holds (RLlib's meaning).
        seed: seeds the generator transitions are drawn from (RLlib's buffer draws from an unseeded one).
        **kwargs: passed to ``EpisodeReplayBuffer``.
    """

    def __init__(self, capacity: int = 10000, *, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(capacity, **kwargs)
        self.rng = np.random.default_rng(seed)

    def sample_transitions(  # type: ignore[override]
        self,
        num_items: int | None = None,
        *,
        batch_size_B: int | None = None,
        batch_length_T: int | None = None,
        n_step: int | tuple[int, int] | None = None,
        gamma: float = 0.99,
        include_infos: bool = False,
        include_extra_model_outputs: bool = False,
        to_numpy: bool = False,
        lookback: int = 1,
        min_batch_length_T: int = 0,
        **kwargs: Any,
    ) -> list[SingleAgentEpisode]:
        if batch_length_T or min_batch_length_T or n_step != 1 or (num_items and batch_size_B):
            # Sequences and n-steps: RLlib's own sampler. With n > 1 RLlib's batch-size count goes down near an
            # episode's end (its B += ... can be negative), so the number of draws depends on each draw.
            return super().sample_transitions(
                num_items, batch_size_B=batch_size_B, batch_length_T=batch_length_T, n_step=n_step, gamma=gamma,
                include_infos=include_infos, include_extra_model_outputs=include_extra_model_outputs,
                to_numpy=to_numpy, lookback=lookback, min_batch_length_T=min_batch_length_T, **kwargs,
            )
        batch_size = num_items or batch_size_B or self.batch_size_B
        _compat.reset_last_sampled_indices(self)
        indices = _compat.replay_timestep_indices(self)
        # One draw of B indices is the same stream as B scalar draws (numpy's Generator.integers).
        drawn = self.rng.integers(len(indices), size=batch_size)
        evicted = _compat.replay_episodes_evicted(self)
        n_step_column = np.full((1 + lookback,), n_step)
        sampled = SampledTransitions()
        observations, next_observations, actions, rewards, terminateds, truncateds = [], [], [], [], [], []
        steps_seen: set[tuple[int, int]] = set()
        episodes_seen: set[int] = set()
        for position in drawn.tolist():
            index = indices[position]
            episode_idx, ts = index[0] - evicted, index[1]
            episode = self.episodes[episode_idx]
            stop = ts + 1
            # A slice keeps the episode's end only when it stops exactly at it (SingleAgentEpisode.slice).
            at_end = stop == len(episode)
            observation, next_observation = episode.get_observations(ts), episode.get_observations(stop)
            action = episode.get_actions(ts)
            reward = np.float64(episode.get_rewards(ts))  # lfilter's float64 of a 1-step return
            terminated, truncated = episode.is_terminated and at_end, episode.is_truncated and at_end
            if include_extra_model_outputs:  # RLlib's constructor, as RLlib's buffer calls it
                transition = SingleAgentEpisode(
                    **_one_step(episode, ts, observation, next_observation, action, reward, terminated, truncated),
                    extra_model_outputs={k: [episode.get_extra_model_outputs(k, 0)] for k in episode.extra_model_outputs},
                )
                transition.extra_model_outputs["n_step"] = InfiniteLookbackBuffer(n_step_column.copy(), lookback=lookback)
                transition.extra_model_outputs["weights"] = InfiniteLookbackBuffer(
                    np.ones((1 + lookback,)), lookback=lookback
                )
            else:
                transition = Transition(
                    episode, ts, observation, next_observation, action, reward, terminated, truncated, n_step, lookback
                )
            sampled.append(transition)
            observations.append(observation)
            next_observations.append(next_observation)
            actions.append(action)
            rewards.append(reward)
            terminateds.append(terminated)
            truncateds.append(truncated)
            steps_seen.add((index[0], ts))
            episodes_seen.add(episode_idx)
        self.sampled_timesteps += batch_size
        _compat.log_replay_sample_metrics(
            self,
            num_env_steps_sampled=batch_size,
            num_episodes_per_sample=len(episodes_seen),
            num_env_steps_per_sample=len(steps_seen),
            sampled_n_step=float(n_step),
            num_resamples=0,
            agent_to_num_steps_sampled={DEFAULT_AGENT_ID: batch_size},
            agent_to_num_episodes_per_sample={DEFAULT_AGENT_ID: len(episodes_seen)},
            agent_to_num_steps_per_sample={DEFAULT_AGENT_ID: len(steps_seen)},
            agent_to_sampled_n_step={DEFAULT_AGENT_ID: float(n_step)},
            agent_to_num_resamples={DEFAULT_AGENT_ID: 0},
            module_to_num_steps_sampled={DEFAULT_MODULE_ID: batch_size},
            module_to_num_episodes_per_sample={DEFAULT_MODULE_ID: len(episodes_seen)},
            module_to_num_steps_per_sample={DEFAULT_MODULE_ID: len(steps_seen)},
            module_to_sampled_n_step={DEFAULT_MODULE_ID: float(n_step)},
            module_to_num_resamples={DEFAULT_MODULE_ID: 0},
        )
        if (
            sampled
            and all(self.episodes[i].agent_id is None for i in episodes_seen)
            and not lookback
            and all(isinstance(o, (np.ndarray, np.generic)) for o in observations)
            and all(isinstance(a, (np.ndarray, np.generic)) for a in actions)
            and not any("_" in self.episodes[i].id_ for i in episodes_seen)
        ):
            # The columns RLlib's learner pieces would read from these episodes (AddObservationsFromEpisodesToBatch,
            # AddNextObservationsFromEpisodesToTrainBatch, AddColumnsFromEpisodesToTrainBatch), batched as
            # BatchIndividualItems batches them. Extra model outputs, if asked for, stay RLlib's to add. Left to
            # RLlib's pieces: an agent's episodes (multi-agent keys), a stateful module's (lookback 1: time and
            # state pieces), Dict or Tuple spaces (a struct per row, not one array), and episode ids with "_"
            # (RLlib keys rows by id and renames only ids without one, so rows of one episode would group).
            sampled.columns = {
                Columns.OBS: np.stack(observations),
                Columns.NEXT_OBS: np.stack(next_observations),
                Columns.ACTIONS: np.stack(actions),
                Columns.REWARDS: np.array(rewards),
                Columns.TERMINATEDS: np.array(terminateds),
                Columns.TRUNCATEDS: np.array(truncateds),
                "n_step": np.full((batch_size,), n_step),
                "weights": np.ones((batch_size,)),
            }
        return sampled


def use_fast_replay_buffer(algorithm: Any, *, seed: int | None = None) -> None:
    """Puts a :class:`FastEpisodeReplayBuffer` in place of a built algorithm's uniform ``EpisodeReplayBuffer``
    (usable as an ``on_algorithm_init`` callback), before anything is stored in it.

    Raises:
        ValueError: the algorithm's buffer is not RLlib's uniform ``EpisodeReplayBuffer`` (a prioritized buffer
            samples another distribution), or it already holds episodes.
    """
    current = algorithm.local_replay_buffer
    if type(current) is not EpisodeReplayBuffer:
        raise ValueError(
            "training.replay_buffer_config.type must be 'EpisodeReplayBuffer' (uniform) for the fast buffer, "
            f"got {type(current).__name__}"
        )
    if len(current.episodes):
        raise ValueError(f"the replay buffer already holds {len(current.episodes)} episodes")
    algorithm.local_replay_buffer = FastEpisodeReplayBuffer(
        current.capacity,
        batch_size_B=current.batch_size_B,
        batch_length_T=current.batch_length_T,
        metrics_num_episodes_for_smoothing=_compat.replay_metrics_window(current, 100),
        seed=seed,
    )


def uses_uniform_buffer(config: Any) -> bool:
    """Whether a single-agent config samples from RLlib's uniform ``EpisodeReplayBuffer`` (the name or the class:
    RLlib's SAC and DQN refuse a dotted path)."""
    buffer = getattr(config, "replay_buffer_config", None)
    if not isinstance(buffer, dict) or config.is_multi_agent:
        return False
    return buffer.get("type") in ("EpisodeReplayBuffer", EpisodeReplayBuffer)


def install_fast_replay_buffer(algorithm: Any, **kwargs: Any) -> None:
    """RLlib's ``on_algorithm_init`` callback: the fast buffer in place of the uniform one, seeded with the trial's
    ``debugging.seed`` (RLlib's own buffer draws from an unseeded generator, so a seeded trial's draws repeat
    only with this one). Leaves any other buffer alone."""
    if type(algorithm.local_replay_buffer) is EpisodeReplayBuffer and not len(algorithm.local_replay_buffer.episodes):
        use_fast_replay_buffer(algorithm, seed=algorithm.config.seed)


def apply_fast_replay(config: Any) -> None:
    """For a single-agent config with RLlib's uniform buffer: the fast buffer once the algorithm is built, and
    :class:`TransitionColumns` first in the learner's connector pipeline (unless the config has its own)."""
    if not uses_uniform_buffer(config):
        return
    if _compat.configured_learner_connector(config) is None:
        config.learners(learner_connector=TransitionColumns)
    before = config.callbacks_on_algorithm_init
    others = [] if before is None else list(before) if isinstance(before, (list, tuple)) else [before]
    config.callbacks(on_algorithm_init=[*others, install_fast_replay_buffer])
