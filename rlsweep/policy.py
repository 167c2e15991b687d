"""Policies back out of a sweep: ``load_policy(checkpoint).act(obs)``, without building the algorithm.

Only the trained RLModule is loaded (``learner_group/learner/rl_module/<policy>`` in RLlib's checkpoint),
so loading takes well under a second and needs no Ray runtime. Actions go through what RLlib's default
module-to-env pipeline does: greedy or sampled from the module's action distribution, then unsquashed into
the action space's bounds (``normalize_actions``, RLlib's default) or clipped (``clip_actions``). A trial
that normalized observations (``normalize.observations``) saved its MeanStdFilter statistics in the
checkpoint; ``act`` normalizes each observation with them first, as the env runners did in training.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsweep import _compat
from rlsweep.errors import SweepError

#: Where RLlib's Algorithm checkpoint keeps the trained modules.
MODULES_DIR = Path("learner_group", "learner", "rl_module")
#: Where a checkpoint keeps the training env runners' observation statistics (``normalize.observations``):
#: the local env runner's env-to-module pipeline, or the algorithm's own where it had no local env runner
#: (RLlib 2.60's ``Algorithm.get_checkpointable_components``). Not ``eval_env_runner``: the evaluation
#: runners apply the training statistics and gather none.
OBSERVATION_FILTER_DIRS = (
    Path("env_runner", "env_to_module_connector", "MeanStdFilter"),
    Path("env_to_module_connector", "MeanStdFilter"),
)
#: A sampled action for epsilon-greedy modules (DQN) uses the end of the epsilon schedule.
_LATE_TIMESTEP = 10**12


def _checkpoint_dir(checkpoint: Any) -> Path:
    path = getattr(checkpoint, "checkpoint", checkpoint)
    if path is None:
        raise SweepError("no checkpoint to load: the trial kept none (set checkpoint.every_env_steps)")
    path = Path(getattr(path, "path", path)).expanduser()
    if not (path / MODULES_DIR).is_dir():
        raise SweepError(f"{path}: not an RLlib algorithm checkpoint (no {MODULES_DIR})")
    return path


def policy_ids(checkpoint: Any) -> list[str]:
    """The policies (RLModule ids) a checkpoint holds."""
    root = _checkpoint_dir(checkpoint) / MODULES_DIR
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "module_state.pkl").exists())


def _algorithm_config(path: Path) -> Any:
    """The AlgorithmConfig the checkpoint was written with, or None where it cannot be read."""
    try:
        with (path / "class_and_ctor_args.pkl").open("rb") as f:
            saved = pickle.load(f)  # noqa: S301 - an RLlib checkpoint is pickles throughout
        args, _ = saved["ctor_args_and_kwargs"]
        return args[0] if args else None
    except Exception:  # noqa: BLE001 - fall back to RLlib's defaults for the action handling
        return None


def _frozen_filter(state: dict[str, Any]) -> Any:
    """An RLlib observation filter with one agent's saved MeanStdFilter statistics (the connector's
    ``get_state`` format, RLlib 2.60), as the connector's ``set_state`` builds it."""
    import tree
    from ray.rllib.utils.filter import MeanStdFilter, RunningStat

    kept = MeanStdFilter(state["shape"], demean=state["de_mean_to_zero"], destd=state["de_std_to_one"], clip=state["clip_by_value"])
    kept.running_stats = tree.unflatten_as(kept.shape, [RunningStat.from_state(s) for s in state["running_stats"]])
    return kept


def observation_filters(checkpoint: Any) -> dict[Any, Any]:
    """The observation statistics a checkpoint holds (``normalize.observations``), as filters that apply
    them without updating them: agent id -> filter (``None`` for a single-agent env); ``{}`` when the trial
    normalized no observations.

    Raises:
        SweepError: the statistics are there but cannot be read.
    """
    path = _checkpoint_dir(checkpoint)
    folder = next((path / d for d in OBSERVATION_FILTER_DIRS if (path / d).is_dir()), None)
    if folder is None:
        return {}
    try:
        with (folder / "state.pkl").open("rb") as f:
            state = pickle.load(f)  # noqa: S301 - an RLlib checkpoint is pickles throughout
        return {agent: _frozen_filter(agent_state) for agent, agent_state in state.items()}
    except Exception as exc:  # noqa: BLE001 - a missing, cut or foreign file: say which, never act unnormalized
        raise SweepError(f"{folder}: cannot read the observation statistics the policy trained with "
                         f"({type(exc).__name__}: {exc})") from None


@dataclass
class Policy:
    """One trained policy. ``act(obs)`` takes one observation as the env returns it.

    ``observation_filters`` hold the checkpoint's observation statistics (``normalize.observations``):
    agent id -> filter, ``None`` for a single-agent env; empty when the trial normalized nothing.
    """

    module: Any
    policy_id: str
    checkpoint: Path
    normalize_actions: bool = True
    clip_actions: bool = False
    observation_filters: dict[Any, Any] = field(default_factory=dict)

    def normalize(self, obs: Any, agent_id: Any = None) -> Any:
        """``obs`` as the module saw observations in training: normalized with the checkpoint's statistics
        (those of ``agent_id`` in a multi-agent env), or as it is where the trial normalized none."""
        filters = self.observation_filters
        if not filters:
            return obs
        if agent_id in filters:
            return filters[agent_id](obs, update=False)
        if len(filters) == 1:
            return next(iter(filters.values()))(obs, update=False)
        raise SweepError(
            f"{self.checkpoint}: observations were normalized per agent; pass agent_id= (one of "
            f"{sorted(map(str, filters))}), got {agent_id!r}"
        )

    @property
    def observation_space(self) -> Any:
        return self.module.observation_space

    @property
    def action_space(self) -> Any:
        return self.module.action_space

    def act(self, obs: Any, explore: bool = False, agent_id: Any = None) -> Any:
        """The action for ``obs``: greedy (``explore=False``, the distribution's mode) or sampled.
        ``agent_id`` picks the agent's observation statistics where a multi-agent trial normalized them."""
        import numpy as np
        import torch
        from ray.rllib.core import Columns
        from ray.rllib.utils.spaces.space_utils import clip_action, unsquash_action
        from ray.rllib.utils.torch_utils import convert_to_torch_tensor

        obs = self.normalize(obs, agent_id)
        batch = {Columns.OBS: convert_to_torch_tensor(np.expand_dims(np.asarray(obs), 0))}
        if batch[Columns.OBS].dtype == torch.float64:
            batch[Columns.OBS] = batch[Columns.OBS].float()
        with torch.no_grad():
            if explore:
                out = self.module.forward_exploration(batch, t=_LATE_TIMESTEP)
                dist_cls = self.module.get_exploration_action_dist_cls()
            else:
                out = self.module.forward_inference(batch)
                dist_cls = self.module.get_inference_action_dist_cls()
            if Columns.ACTIONS in out:
                actions = out[Columns.ACTIONS]
            else:
                dist = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS])
                actions = dist.sample() if explore else dist.to_deterministic().sample()
        action = actions[0].cpu().numpy()
        if self.normalize_actions:
            action = unsquash_action(action, self.action_space)
        elif self.clip_actions:
            action = clip_action(action, self.action_space)
        return action.item() if np.ndim(action) == 0 else action


def load_policy(checkpoint: Any, policy_id: str | None = None) -> Policy:
    """Load one trained policy from an rlsweep checkpoint (a path, or a :class:`rlsweep.analysis.Best`).

    Args:
        checkpoint: The checkpoint directory, or anything with a ``checkpoint`` attribute holding it.
        policy_id: Which policy of a multi-agent checkpoint; single-agent checkpoints hold one.

    Raises:
        SweepError: not a checkpoint, an unknown or ambiguous policy id, a recurrent policy, or observation
            statistics (normalize.observations) that cannot be read.
    """
    from ray.rllib.core.rl_module.rl_module import RLModule

    path = _checkpoint_dir(checkpoint)
    ids = policy_ids(path)
    if policy_id is None:
        if len(ids) != 1:
            raise SweepError(f"{path}: holds policies {ids}; name one with policy_id=")
        policy_id = ids[0]
    elif policy_id not in ids:
        raise SweepError(f"{path}: no policy {policy_id!r}; it holds {ids}")
    _compat.drop_message(*_compat.MODULE_CONFIG_NOTICE)  # RLlib's notice about its own constructor
    module = RLModule.from_checkpoint(path / MODULES_DIR / policy_id)
    module.eval()
    if module.is_stateful():
        raise SweepError(
            f"{path}: policy {policy_id!r} is recurrent, and act() keeps no state between calls; "
            "restore it with ray.rllib.algorithms.Algorithm.from_checkpoint instead (with rlsweep importable: "
            "the checkpoint's config names rlsweep's own classes)"
        )
    config = _algorithm_config(path)
    return Policy(
        module=module,
        policy_id=policy_id,
        checkpoint=path,
        normalize_actions=bool(getattr(config, "normalize_actions", True)),
        clip_actions=bool(getattr(config, "clip_actions", False)),
        observation_filters=observation_filters(path),
    )
