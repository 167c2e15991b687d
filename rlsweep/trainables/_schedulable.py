"""Which settings RLlib schedules over env steps, and a trial's schedules in RLlib's format.

A schedule (:mod:`rlsweep._schedules`) goes to RLlib as its own ``[[env_steps, value], ...]`` list, which
RLlib's ``Scheduler`` (``ray/rllib/utils/schedules/scheduler.py``: a ``PiecewiseSchedule``, linear between
points, the last value held after the last point) evaluates at ``NUM_ENV_STEPS_SAMPLED_LIFETIME``, the
trial's lifetime env steps that rlsweep's ``env_steps`` reports. Only the settings in
:data:`SCHEDULABLE` take one; a schedule anywhere else is refused at validate. rlsweep does not drive other
settings per iteration the way it drives the curriculum: a learner builds its loss, connectors (GAE's gamma
and lambda) and optimizers from its config once, so a value changed on the algorithm's config between
iterations would not reach the learner, and one changed inside it is an RLlib internal per setting. The
one exception is PPO's ``clip_param``, which rl-zoo3's entries decay (``clip_range: lin_X``): a learner
class, RLlib's own extension point, reads it on a schedule (:mod:`rlsweep.trainables._ppo_learner`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlsweep import _schedules
from rlsweep.errors import Problem

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

# Where each entry comes from, in Ray 2.60's rllib/ (checked on this version; a newer RLlib may add more).
#: ``lr`` of every learner that keeps TorchLearner's optimizer: registered with ``lr_or_lr_schedule=config.lr``
#: (core/learner/torch/torch_learner.py:135), updated after each update at NUM_ENV_STEPS_SAMPLED_LIFETIME
#: (core/learner/learner.py:1457-1467); validated by AlgorithmConfig.validate (algorithm_config.py:5200).
_LR = "training.lr"
#: PPO: a Scheduler per module from ``entropy_coeff`` (algorithms/ppo/ppo_learner.py:37), updated after each
#: update at NUM_ENV_STEPS_SAMPLED_LIFETIME (ppo_learner.py:99-101). IMPALA and APPO: the same
#: (algorithms/impala/impala_learner.py:132), updated before each update (impala_learner.py:294-296).
_ENTROPY = "training.entropy_coeff"
#: PPO's ``clip_param``: RLlib keeps no scheduler for it; rlsweep's learner class evaluates the schedule
#: before each update (trainables/_ppo_learner.py: a subclass of rlsweep's PPO learner, for a trial that
#: schedules it).
_CLIP = "training.clip_param"

#: Algorithm -> the settings (spec paths) RLlib takes a schedule for.
SCHEDULABLE: dict[str, tuple[str, ...]] = {
    "PPO": (_LR, _ENTROPY, _CLIP),
    "APPO": (_LR, _ENTROPY),
    "IMPALA": (_LR, _ENTROPY),
    # ``epsilon``: DefaultDQNRLModule's Scheduler (algorithms/dqn/default_dqn_rl_module.py:40), updated on
    # every exploring forward pass at the env runner's estimate of the global env steps
    # (env/single_agent_env_runner.py:343-352; exact with rlsweep's default of no remote env runners).
    "DQN": (_LR, "training.epsilon"),
    "MARWIL": (_LR,),
    "BC": (_LR,),
    # SAC's learner registers three optimizers and no ``lr`` (SACConfig sets lr None, sac.py:113-114):
    # sac/torch/sac_torch_learner.py:73, 87 (critic_lr), 101 (actor_lr), 112 (alpha_lr). CQL's learner is
    # a SACTorchLearner (cql/torch/cql_torch_learner.py:29).
    "SAC": ("training.actor_lr", "training.critic_lr", "training.alpha_lr"),
    "CQL": ("training.actor_lr", "training.critic_lr", "training.alpha_lr"),
    # iql/torch/iql_torch_learner.py:66, 79 (critic_lr), 92 (actor_lr), 105 (value_lr).
    "IQL": ("training.actor_lr", "training.critic_lr", "training.value_lr"),
    # dreamerv3/torch/dreamerv3_torch_learner.py:70 (world_model_lr), 80 (actor_lr), 90 (critic_lr).
    "DreamerV3": ("training.world_model_lr", "training.actor_lr", "training.critic_lr"),
}


def scheduled_paths(spec: SweepSpec) -> dict[str, str]:
    """Each scheduled setting's path -> where the spec writes it (``config.training.lr``)."""
    paths = {path: f"config.{path}" for path, value in spec.config.items() if _schedules.is_schedule(value)}
    paths.update((path, f"search_space.{path}") for path, _ in spec.search_space.schedules)
    return paths


def schedule_problems(spec: SweepSpec) -> list[Problem]:
    """A schedule on a setting RLlib does not schedule for the spec's algorithm, with those it does."""
    allowed = SCHEDULABLE.get(spec.algorithm, ())
    problems = []
    for path, where in scheduled_paths(spec).items():
        if path in allowed:
            continue
        can = f"it schedules {list(allowed)}" if allowed else "rlsweep knows no setting it schedules"
        problems.append(Problem(where, f"RLlib's {spec.algorithm} cannot schedule {path} ({can}); write a number, "
                                       "or search it"))
    return problems


def trial_schedules(spec: SweepSpec, sampled: Mapping[str, Any]) -> dict[str, list[list[float | int]]]:
    """One trial's schedules in RLlib's format, by setting path: those written in ``config``, and those of
    ``search_space`` whose searched numbers the draw holds (all of them, in a trial)."""
    budget = spec.budget.env_steps
    found: dict[str, list[list[float | int]]] = {}
    for path, value in spec.config.items():
        if _schedules.is_schedule(value):
            schedule, _, _ = _schedules.parse(value, searchable=False)
            if schedule is not None:
                found[path] = _schedules.points(schedule, budget)
    for path, schedule in spec.search_space.schedules:
        if all(f"{path}.{slot}" in sampled for slot in schedule.searched):
            draws = {slot: sampled[f"{path}.{slot}"] for slot in schedule.searched}
            found[path] = _schedules.points(schedule, budget, draws)
    return found


def with_schedules(spec: SweepSpec, settings: Mapping[str, Any], sampled: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with each schedule in RLlib's format at its setting's path, in place of the mapping
    written in ``config`` or the searched numbers (``training.lr.from``) of the draw."""
    if not spec.search_space.schedules and not any(_schedules.is_schedule(v) for v in spec.config.values()):
        return dict(settings)
    searched = {f"{path}.{slot}" for path, schedule in spec.search_space.schedules for slot in schedule.searched}
    out = {k: v for k, v in settings.items() if k not in searched}
    out.update(trial_schedules(spec, sampled))
    return out


def values_in_force(schedules: Mapping[str, list[list[float | int]]], env_steps: float) -> dict[str, float]:
    """Each scheduled setting's value at ``env_steps`` (for the row's ``hp/<path>``)."""
    return {path: _schedules.value_at(points, env_steps) for path, points in schedules.items()}
