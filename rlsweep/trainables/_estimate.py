"""An upper bound on one trial's memory, from its settings alone: no algorithm built, nothing trained.

Measuring a trial (:func:`rlsweep.trainables._footprint.measure_memory`) holds the sweep's start for 5-36 s.
Where the memory is plentiful it changes nothing: the trials the CPUs run at once fit many times over. So
for the settings this module can bound (the five algorithms rlsweep tests, a registered gymnasium env with
flat observations, fully connected networks, one seed per trial), the sweep reserves this bound instead of
a measurement, and only where even twice the bound fits the nodes for every trial the CPUs run at once
(:func:`rlsweep.trainables._footprint.far_below`). Anything else (an env of your own, images, recurrent or attention models, several
policies or seeds, little memory) is measured as before.

The bound is each process's baseline plus what its networks and batches can hold. Baselines, measured on
this stack (``benchmarks/results/memory_prediction-*``): a trial's own process peaked at 485-839 MB
(Python, torch, Ray's worker and RLlib imported, its local env runner and learner, SAC's buffer at the
start), a remote env runner at 481-485 MB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlsweep.trainables._memory import MemoryReading

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

#: A trial's own process before its networks and batches (measured at most 839 MB).
PROCESS_MB = 1024.0
#: A remote env runner or learner process before its networks and batches (measured at most 485 MB).
REMOTE_MB = 768.0
#: Copies of one network's parameters a process may hold: weights, gradients, Adam's two moments, a target
#: network and its optimizer state, the env runner's inference copy, and copies made while syncing them.
COPIES = 16
#: Copies of one batch a learner may hold at once: the episodes, the connector's tensors, advantages and
#: value targets, each minibatch, and its gradients' activations.
BATCH_COPIES = 16
#: What a stored env step takes in RLlib's episode replay buffers, per float of observation and action, in
#: bytes (8-byte floats, observation and next observation, the episode objects' overhead).
REPLAY_BYTES_PER_FLOAT = 64
#: Algorithms whose processes and buffers this bound covers (tested with each).
ALGORITHMS = frozenset({"PPO", "APPO", "IMPALA", "DQN", "SAC"})
#: Larger flat observations (images) are measured.
MAX_OBSERVATION_FLOATS = 4096
_MB = 2**20


def estimate_reading(spec: SweepSpec, draw: Mapping[str, Any]) -> MemoryReading | None:
    """An upper bound on the memory of one trial at ``draw``, as a reading, or None where this module cannot
    bound it (the trial is then measured)."""
    if spec.algorithm not in ALGORITHMS or ":" in spec.env or spec.seeds.per_trial != 1 or spec.curriculum is not None:
        return None
    config = _config(spec, draw)
    if config is None or config.is_multi_agent or _uncovered(config):
        return None
    model = _model(config)
    if model is None:
        return None
    spaces = _spaces(spec)
    if spaces is None:
        return None
    observation, action = spaces
    if observation > MAX_OBSERVATION_FLOATS:
        return None
    network = _parameters(observation, action, model, off_policy=spec.algorithm in ("DQN", "SAC")) * 4 * COPIES / _MB
    batch = int(getattr(config, "train_batch_size_per_learner", None) or getattr(config, "train_batch_size", 0) or 0)
    batch_mb = batch * (2 * observation + action + 16) * 8 * BATCH_COPIES / _MB
    envs = int(getattr(config, "num_envs_per_env_runner", 1) or 1)
    runners = int(getattr(config, "num_env_runners", 0) or 0) + int(getattr(config, "evaluation_num_env_runners", 0) or 0)
    learners = int(getattr(config, "num_learners", 0) or 0)
    replay = 0.0
    if (buffer := getattr(config, "replay_buffer_config", None)) and isinstance(buffer, Mapping):
        capacity = int(buffer.get("capacity", spec.budget.env_steps) or spec.budget.env_steps)
        replay = min(capacity, spec.budget.env_steps) * (2 * observation + action + 8) * REPLAY_BYTES_PER_FLOAT / _MB
    main = PROCESS_MB + network + batch_mb + envs * 8.0
    return MemoryReading(
        draw=dict(draw),
        main_mb=main,
        env_runner_mb=(REMOTE_MB + network / COPIES * 2 + envs * 8.0,) * runners,
        learner_mb=(REMOTE_MB + network + batch_mb,) * learners,
        replay_mb=replay,
        estimated=True,
    )


def _uncovered(config: Any) -> bool:
    """Settings whose memory the bound does not count: GPUs (CUDA's libraries and context take 1-2 GB of the
    host's memory per process), envs in subprocesses of their own, aggregator actors, and evaluation runners
    that vectorize envs of their own."""
    gpus = [getattr(config, name, 0) or 0 for name in ("num_gpus", "num_gpus_per_learner", "num_gpus_per_env_runner")]
    return (
        any(float(g) > 0 for g in gpus)
        or str(getattr(config, "gym_env_vectorize_mode", "SYNC")).upper().endswith("ASYNC")
        or int(getattr(config, "num_aggregator_actors_per_learner", 0) or 0) > 0
        or bool(getattr(config, "remote_worker_envs", False))
    )


def _config(spec: SweepSpec, draw: Mapping[str, Any]) -> Any:
    from rlsweep.trainables._config import build_config

    try:
        return build_config(spec, draw)
    except Exception:  # noqa: BLE001 - a config RLlib refuses is measured, where the error is reported
        return None


def _model(config: Any) -> dict[str, Any] | None:
    """The fully connected networks' settings, or None for a model this bound does not cover."""
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    given = dict(getattr(config, "model_config", None) or {})
    try:
        if config.rl_module_spec.module_class is not config.get_default_rl_module_spec().module_class:
            return None  # a module class of the user's own
    except Exception:  # noqa: BLE001 - no default module to compare with: measured
        return None
    if any(given.get(k) for k in ("use_lstm", "use_attention", "conv_filters")):
        return None
    defaults = DefaultModelConfig()
    return {
        "fcnet_hiddens": list(given.get("fcnet_hiddens", defaults.fcnet_hiddens) or []),
        "head_fcnet_hiddens": list(given.get("head_fcnet_hiddens", defaults.head_fcnet_hiddens) or []),
    }


def _spaces(spec: SweepSpec) -> tuple[int, int] | None:
    """The observation's and the action's flat sizes, from the env made once (a registered gymnasium id)."""
    import gymnasium as gym

    try:
        env = gym.make(spec.env, **dict(spec.env_config))
    except Exception:  # noqa: BLE001 - pre-flight reports a broken env; here it only means "measure"
        return None
    try:
        return gym.spaces.flatdim(env.observation_space), gym.spaces.flatdim(env.action_space)
    except Exception:  # noqa: BLE001 - a space without a flat size
        return None
    finally:
        env.close()


def _parameters(observation: int, action: int, model: Mapping[str, Any], *, off_policy: bool) -> int:
    """Parameters of the trial's networks: a policy and a value network (on-policy), or twin Q networks
    beside the policy (off-policy; their targets are among :data:`COPIES`), each as wide as the largest
    of its layers allows (actions counted as inputs and outputs both, for any head)."""
    layers = [*model["fcnet_hiddens"], *model["head_fcnet_hiddens"]]

    def mlp(inputs: int, outputs: int) -> int:
        sizes = [inputs, *layers, outputs]
        return sum((a + 1) * b for a, b in zip(sizes, sizes[1:]))

    width = observation + action
    networks = 3 if off_policy else 2
    return networks * mlp(width, 2 * action + 1)

