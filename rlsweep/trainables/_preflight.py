"""Checks run before any trial starts: algorithm, env, config paths, RLlib's own validation of the
space's extremes, and whether one trial fits the cluster."""

from __future__ import annotations

import inspect
import os
import re
import types
import typing
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from rlsweep import _schedules
from rlsweep._envs import UserCodeFailed, call_user, close_quietly, env_problem, made_env_problem, make_env
from rlsweep.errors import Problem, shorten
from rlsweep.search_spaces import Choice, Fixed, Normal, Parameter, SearchSpace, random_draws
from rlsweep.spec import POLICIES_PATH
from rlsweep.trainables._config import (
    CURRICULUM_PREFIX,
    agent_ids,
    algorithm_class,
    algorithm_names,
    build_config,
    path_problems,
    settings_for,
    trial_bundles,
)
from rlsweep.trainables._footprint import hungriest_draw

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec


def _end(parameter: Parameter, high: bool) -> Any:
    domain = parameter.domain
    if isinstance(domain, Fixed):
        return domain.value
    if isinstance(domain, Choice):
        return domain.values[-1 if high else 0]
    if isinstance(domain, Normal):
        return domain.mean
    return getattr(domain, "high" if high else "low")


def _corner(space: SearchSpace, high: Mapping[str, bool], default: bool) -> dict[str, Any]:
    draw: dict[str, Any] = {}
    for parameter in space:
        if parameter.is_active(draw):
            draw[parameter.path] = _end(parameter, high.get(parameter.path, default))
    return draw


def extreme_draws(space: SearchSpace) -> list[dict[str, Any]]:
    """Every parameter at its low end, then at its high end (inactive conditional parameters left out)."""
    return [_corner(space, {}, False), _corner(space, {}, True)]


def corner_draws(space: SearchSpace) -> list[dict[str, Any]]:
    """The two extremes, then every pair of parameters at opposite or equal ends with the rest low and
    high: RLlib's own checks compare two settings at a time (``minibatch_size`` <= ``train_batch_size``),
    and a violation that needs one parameter high and another low lies at neither extreme."""
    draws = extreme_draws(space)
    paths = [p.path for p in space if not isinstance(p.domain, Fixed)]
    for i, first in enumerate(paths):
        for second in paths[i + 1 :]:
            for a, b in ((True, False), (False, True)):
                for rest in (False, True):
                    draws.append(_corner(space, {first: a, second: b}, rest))
    unique: list[dict[str, Any]] = []
    for draw in draws:
        if draw not in unique:
            unique.append(draw)
    return unique


#: Random draws checked beside the corners.
PREFLIGHT_SAMPLES = 8


#: Names RLlib uses in its messages for arguments a user sets under another name.
_MESSAGE_ALIASES: dict[str, tuple[str, ...]] = {"train_batch_size": ("train_batch_size_per_learner",)}


def _paths_named_in(message: str, settings: Mapping[str, Any], spec: SweepSpec) -> list[str]:
    named = []
    for path in settings:
        argument = path.split(".")[-1]
        names = (argument, *_MESSAGE_ALIASES.get(argument, ()))
        if any(re.search(rf"\b{re.escape(name)}\b", message) for name in names):
            section = "search_space" if path in spec.search_space.paths else "config"
            if path in spec.config or path in spec.search_space.paths:
                named.append(f"{section}.{path}")
    return named


#: How alike an ``rllib/...`` key's last part must be to a key RLlib names to be taken for a typo of it.
NEAR_MISS = 0.9


def rllib_key_problems(spec: SweepSpec) -> list[Problem]:
    """``metric`` and ``stop`` keys under ``rllib/`` whose last part misses a key RLlib names (its metric
    constants, and the keys rows keep by default) by a typo: the sweep would end at its first result saying
    so. Which keys an algorithm reports is only known from a result (they hold module ids and callbacks'
    metrics), so a key of no likeness to RLlib's is left for the first result to check."""
    import difflib

    from ray.rllib.utils import metrics as rllib_metrics

    from rlsweep.metrics import RLLIB_PREFIX
    from rlsweep.spec import DEFAULT_RLLIB_KEYS

    known = {v for k, v in vars(rllib_metrics).items() if k.isupper() and isinstance(v, str)}
    known |= {part for key in DEFAULT_RLLIB_KEYS for part in key.split("/") if "*" not in part}
    problems = []
    for path, key in (("metric.name", spec.metric.name), *((f"stop.{k}", k) for k in spec.stop)):
        if not key.startswith(RLLIB_PREFIX):
            continue
        leaf = key.rsplit("/", 1)[-1]
        if leaf in known:
            continue
        if close := difflib.get_close_matches(leaf, known, n=1, cutoff=NEAR_MISS):
            meant = key[: len(key) - len(leaf)] + close[0]
            problems.append(Problem(path, f"{key!r} is not a key RLlib reports; did you mean {meant!r}?"))
    return problems


def static_problems(spec: SweepSpec) -> list[Problem]:
    """Problems found without a Ray runtime. Never raises."""
    problems: list[Problem] = rllib_key_problems(spec)
    names = algorithm_names()
    if spec.algorithm not in names:
        return [Problem("algorithm", f"unknown RLlib algorithm {spec.algorithm!r}; expected one of {names}")]
    env_made = False
    if (message := env_problem(spec.env)) is not None:
        problems.append(Problem("env", message))
    elif (made := made_env_problem(spec.env, spec.env_config)) is not None:
        problems.append(Problem(*made))
    else:
        env_made = True
        problems += _policy_problems(spec)
        problems += _curriculum_problems(spec)
    problems += _critic_problems(spec, env_made=env_made)
    problems += _replay_ratio_problems(spec)
    problems += path_problems(spec)
    if problems:
        return problems
    problems += value_type_problems(spec)
    if problems:
        return problems
    seen: set[str] = set()
    for draw in corner_draws(spec.search_space) + random_draws(spec.search_space, PREFLIGHT_SAMPLES):
        try:
            config = build_config(spec, draw)
            config.validate()
            if getattr(config, "minibatch_size", 0) is None and (config.num_learners or 0) > 1:
                # RLlib 2.60 passes the check and fails at the first update (TrainingData.shard multiplies by it).
                raise ValueError(f"minibatch_size null (the whole batch per update) cannot be split over "
                                 f"num_learners={config.num_learners} learners; set minibatch_size to a number")
        except Exception as exc:  # noqa: BLE001 - RLlib raises ValueError, TypeError, KeyError, ...
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            settings = settings_for(spec, draw)
            where = _paths_named_in(message, settings, spec) or ["config"]
            # One problem per set of paths: the same rule broken at another corner says nothing new.
            key = ", ".join(where) if where != ["config"] else message
            if key in seen:
                continue
            seen.add(key)
            values = ", ".join(f"{p.split('.', 1)[1]}={settings.get(p.split('.', 1)[1])!r}" for p in where if "." in p)
            problems.append(
                Problem(", ".join(where), f"RLlib rejects this configuration ({values or 'in this space'}): {message}")
            )
    if not problems and spec.ray.address is None:
        # A local runtime will have this many CPUs; a cluster is checked when the sweep joins it.
        cpus, gpus = float(spec.ray.num_cpus or os.cpu_count() or 1), local_gpus()
        problems += resource_problems(spec, cpus, gpus, [(cpus, gpus)])[0]
    return problems


#: The Python types a config value can be checked against before a trial runs: RLlib's setters declare
#: most arguments as unions of these; any other type in an argument's annotation leaves it unchecked.
_SCALAR_TYPES = (bool, int, float, str, type(None))


def _scalar_types(annotation: Any) -> frozenset[type] | None:
    """The scalar types an annotation allows (``Optional[int]``: int and None), or None where it allows
    anything else too (a list, a class, a callable): then nothing is refused."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        allowed: set[type] = set()
        for member in typing.get_args(annotation):
            if (found := _scalar_types(member)) is None:
                return None
            allowed |= found
        return frozenset(allowed)
    return frozenset({annotation}) if annotation in _SCALAR_TYPES else None


def _fits(value: Any, allowed: frozenset[type]) -> bool:
    """Whether ``value`` is of the kind of one of the ``allowed`` scalar types: a number where a number goes
    (RLlib annotates ``num_cpus_per_env_runner`` an int, and Ray takes 0.5), an int where a bool goes; not a
    string where a number goes, nor a list where a scalar goes."""
    if value is None:
        return type(None) in allowed
    if isinstance(value, bool):
        return bool in allowed
    if isinstance(value, int):
        return bool(allowed & {int, float, bool})
    if isinstance(value, float):
        return bool(allowed & {int, float})
    if isinstance(value, str):
        return str in allowed
    return False  # a list or a mapping where only scalars go


def _annotation(config_class: type, method: str, argument: str) -> Any:
    """The annotation of ``argument`` in the first definition of setter ``method`` that names it (a subclass
    passes arguments on to its parent's through ``**kwargs``), or ``inspect.Parameter.empty``."""
    for klass in config_class.__mro__:
        function = klass.__dict__.get(method)
        if inspect.isfunction(function):
            parameter = inspect.signature(function).parameters.get(argument)
            if parameter is not None:
                return parameter.annotation
    return inspect.Parameter.empty


_UNSET = object()


@lru_cache(maxsize=None)
def _allowed_types(config_class: type, method: str, argument: str) -> frozenset[type] | None:
    """The scalar types setter ``method`` takes for ``argument``, by its annotation, widened by the type of
    RLlib's own default where the two disagree (RLlib 2.60 annotates DQN's ``hiddens`` ``Optional[int]`` and
    defaults it to ``[256]``, ``offline_sampling`` ``Optional[str]`` and defaults it to False): an annotation
    its own default breaks is not a rule. None: not checked."""
    allowed = _scalar_types(_annotation(config_class, method, argument))
    if allowed is None:
        return None
    try:
        default = getattr(config_class(), argument, _UNSET)
    except Exception:  # noqa: BLE001 - a property that needs other settings first
        default = _UNSET
    if default is _UNSET or _fits(default, allowed):
        return allowed
    return allowed | {type(default)} if type(default) in _SCALAR_TYPES else None


def value_type_problems(spec: SweepSpec) -> list[Problem]:
    """Values in ``config`` (and the values a search space lists: choices, fixed values) whose type the
    RLlib setter they go to does not take, by the setter's own annotation: ``training.num_epochs: many``
    passes RLlib's validate() and fails every trial in its first update. Paths deeper than
    ``method.argument`` (inside a dict argument) are not checked."""
    config_class = type(algorithm_class(spec.algorithm).get_default_config())
    # A schedule is RLlib's list format by the time it reaches the setter; where it may go is schedule_problems'.
    values: list[tuple[str, str, Any]] = [("config", path, value) for path, value in spec.config.items()
                                          if not _schedules.is_schedule(value)]
    for parameter in spec.search_space:
        domain = parameter.domain
        listed = (domain.value,) if isinstance(domain, Fixed) else tuple(domain.values) if isinstance(domain, Choice) else ()
        values += [("search_space", parameter.path, value) for value in listed]
    problems: dict[str, Problem] = {}
    for section, path, value in values:
        parts = path.split(".")
        if len(parts) != 2 or path.startswith(CURRICULUM_PREFIX) or path == POLICIES_PATH:
            continue
        allowed = _allowed_types(config_class, *parts)
        if allowed is None or _fits(value, allowed):
            continue
        names = " or ".join("null" if t is type(None) else t.__name__ for t in _SCALAR_TYPES if t in allowed)
        where = f"{section}.{path}"
        problems.setdefault(where, Problem(where, (
            f"{spec.algorithm}Config.{parts[0]}() takes {parts[1]} as {names}, got {shorten(value)} "
            f"({type(value).__name__}), a type RLlib's own validation lets through to fail in the trial")))
    return list(problems.values())


def _curriculum_problems(spec: SweepSpec) -> list[Problem]:
    if spec.curriculum is None:
        return []
    from rlsweep.trainables._curriculum import problems as curriculum_problems

    try:
        # Made once above already, so it makes; but user code may do anything a second time.
        env = call_user("the env's constructor", make_env, spec.env, spec.env_config)
    except UserCodeFailed as exc:
        return [Problem("env", f"{exc} (making {spec.env} a second time, to check the curriculum)")]
    try:
        return curriculum_problems(spec, env)
    finally:
        close_quietly(env)


def _policy_problems(spec: SweepSpec) -> list[Problem]:
    try:
        agents = call_user(f"making {spec.env} with this env_config", agent_ids, spec)
    except UserCodeFailed as exc:
        return [Problem("env_config", str(exc))]
    if agents is None:
        if spec.policies:
            return [Problem("policies", f"{spec.env} is a single-agent env; 'policies' is for multi-agent envs")]
        return []
    if not spec.policies:
        return [
            Problem(
                "policies",
                f"{spec.env} is a multi-agent env (agents {agents}); add a 'policies' section, e.g. "
                "policies: {map: {'*': shared}} for one policy all agents share",
            )
        ]
    problems = []
    for name, setup in spec.policies.items():
        where = "policies.map" if name == "default" and len(spec.policies) == 1 else f"policies.{name}.map"
        unmapped = [a for a in agents if setup.policy_for(a) is None]
        if unmapped:
            problems.append(Problem(where, f"agents {unmapped} of {spec.env} match no entry; its agents: {agents}"))
    return problems


INTENSITY_PATH = "training.training_intensity"
BATCH_MODE_PATH = "env_runners.batch_mode"


def _replay_ratio_problems(spec: SweepSpec) -> list[Problem]:
    """``updates_per_env_step`` on an algorithm whose training step does not read RLlib's replay ratio, beside a
    spec that sets that ratio itself or samples whole episodes, or so low that no update fits the budget."""
    ratio = spec.updates_per_env_step
    if ratio is None:
        return []
    from ray.rllib.algorithms.dqn import DQN

    # RLlib 2.60 reads training_intensity in DQN's training step only (SAC's is DQN's); CQL inherits the setting
    # from SAC but trains from offline data.
    if getattr(algorithm_class(spec.algorithm), "training_step", None) is not DQN.training_step:
        return [Problem("updates_per_env_step", f"sets RLlib's replay ratio (training_intensity), which only DQN's "
                        f"training step reads (SAC, DQN), not {spec.algorithm}'s: remove updates_per_env_step, got {ratio:g}")]
    problems = []
    if INTENSITY_PATH in spec.config:
        problems.append(Problem("updates_per_env_step", f"sets {INTENSITY_PATH} per trial from its batch size, and "
                                f"config.{INTENSITY_PATH} sets it to {shorten(spec.config[INTENSITY_PATH])}: keep one, got {ratio:g}"))
    if INTENSITY_PATH in spec.search_space.paths:
        problems.append(Problem("updates_per_env_step", f"sets {INTENSITY_PATH} per trial from its batch size, and "
                                f"search_space.{INTENSITY_PATH} searches it: keep one, got {ratio:g}"))
    if spec.config.get(BATCH_MODE_PATH) == "complete_episodes" or BATCH_MODE_PATH in spec.search_space.paths:
        problems.append(Problem("updates_per_env_step", f"counts a round of sampling as rollout_fragment_length env "
                                f"steps; {BATCH_MODE_PATH} complete_episodes samples whole episodes instead (keep "
                                f"truncate_episodes, or remove updates_per_env_step), got {ratio:g}"))
    if ratio * spec.budget.env_steps < 1:
        problems.append(Problem("updates_per_env_step", f"one update per {1 / ratio:,.0f} env steps: no update "
                                f"within budget.env_steps ({spec.budget.env_steps:,}); raise it, or remove it for "
                                f"RLlib's own ratio, got {ratio:g}"))
    return problems


def _critic_problems(spec: SweepSpec, *, env_made: bool) -> list[Problem]:
    """``critic: concat`` where it cannot build: another algorithm, a multi-agent sweep (each policy's module
    is RLlib's own there), and, once the env is known to make, discrete actions or a non-flat observation."""
    if spec.critic == "rllib":
        return []
    from rlsweep.trainables._critic import concat_critic_problem  # imports SAC's module: only when asked for

    if (why := concat_critic_problem(spec.algorithm)) is not None:
        return [Problem("critic", f"concat {why} (remove critic, or set it to rllib)")]
    if spec.policies:
        return [Problem("critic", "concat is for single-agent sweeps; a multi-agent sweep's policies keep RLlib's "
                                  "Q networks (remove critic, or set it to rllib)")]
    if not env_made:
        return []
    try:
        made = call_user(f"making {spec.env} with this env_config", make_env, spec.env, spec.env_config)
    except UserCodeFailed as exc:
        return [Problem("env_config", str(exc))]
    try:
        why = concat_critic_problem(spec.algorithm, made.observation_space, made.action_space)
    finally:
        close_quietly(made)
    return [] if why is None else [Problem("critic", f"concat {why}")]


def _sized_draws(spec: SweepSpec) -> list[dict[str, Any]]:
    """The draws a resource check sizes: both extremes, and the corner the memory check measures (a choice
    of env runners listed [0, 8, 2] is largest in neither extreme)."""
    return [*extreme_draws(spec.search_space), hungriest_draw(spec.search_space)]


def local_gpus() -> int:
    """The GPUs a local Ray runtime will have (torch's count: 0 on a CPU build)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _cpu_demand(spec: SweepSpec, draw: Mapping[str, Any], resource: str = "CPU") -> dict[str, tuple[int, float]]:
    """What asks for one trial's CPUs (or GPUs), from RLlib's own request: ``{"process": (1, cpus),
    "env_runner": (count, cpus), "learner": (count, cpus)}``, with every seed's remote workers counted."""
    bundles, roles, _ = trial_bundles(spec, draw)
    demand: dict[str, tuple[int, float]] = {}
    for bundle, role in zip(bundles, roles):
        role = "process" if role == "main" else role
        count, cpus = demand.get(role, (0, 0.0))
        demand[role] = (count + 1, cpus + float(bundle.get(resource, 0)))
    return demand


#: The setting that asks for each kind of process, named in a message about CPUs.
_SETTING_FOR = {"env_runner": "env_runners.num_env_runners", "learner": "learners.num_learners"}


#: The setting that sizes each kind of process's bundle, by resource.
_BUNDLE_SETTING = {
    ("learner", "CPU"): "learners.num_cpus_per_learner",
    ("learner", "GPU"): "learners.num_gpus_per_learner",
    ("env_runner", "CPU"): "env_runners.num_cpus_per_env_runner",
    ("env_runner", "GPU"): "env_runners.num_gpus_per_env_runner",
    ("main", "CPU"): "resources.num_cpus_for_main_process",
    ("main", "GPU"): "learners.num_gpus_per_learner",
}
_PROCESS = {"main": "the trial's own process", "env_runner": "each env runner", "learner": "each learner"}


def _setting(spec: SweepSpec, path: str) -> str:
    return f"search_space.{path}" if path in spec.search_space.paths else f"config.{path}"


def _bundle_setting(spec: SweepSpec, draw: Mapping[str, Any], role: str, resource: str) -> str:
    """The setting that sized a bundle: without remote learners the trial's own process learns, and RLlib
    gives it max(num_cpus_per_learner, num_cpus_for_main_process) CPUs."""
    if (role, resource) == ("main", "CPU"):
        config = build_config(spec, draw)
        per_learner = config.num_cpus_per_learner
        if config.num_learners == 0 and per_learner != "auto" and per_learner > config.num_cpus_for_main_process:
            return "learners.num_cpus_per_learner"
    return _BUNDLE_SETTING[role, resource]


def _node_problems(spec: SweepSpec, nodes: list[tuple[float, float]]) -> list[Problem]:
    """A bundle (one process: the trial's, an env runner, a learner) larger than every node, or, under
    ``STRICT_PACK``, a whole trial larger than every node: Ray would never place it."""
    most_cpus, most_gpus = max(c for c, _ in nodes), max(g for _, g in nodes)
    problems: dict[str, Problem] = {}
    for draw in _sized_draws(spec):
        bundles, roles, strategy = trial_bundles(spec, draw)
        for bundle, role in zip(bundles, roles):
            fits = any(bundle.get("CPU", 0) <= c and bundle.get("GPU", 0) <= g for c, g in nodes)
            if fits:
                continue
            resource = "GPU" if bundle.get("GPU", 0) > most_gpus else "CPU"
            where = _setting(spec, _bundle_setting(spec, draw, role, resource))
            asked = f"{bundle.get('CPU', 0):g} CPU(s)" + (f" and {bundle['GPU']:g} GPU(s)" if bundle.get("GPU") else "")
            problems.setdefault(where, Problem(where, (
                f"{_PROCESS[role]}{'' if role == 'main' else ' of a trial'} asks for {asked} on one node (a process does not span nodes) but the "
                f"largest node of the Ray cluster has {most_cpus:g} CPU(s) and {most_gpus:g} GPU(s); it would wait "
                f"PENDING forever. Lower {where.split('.', 1)[1]}, or add a node that large")))
        if strategy == "STRICT_PACK":
            cpus, gpus = sum(b.get("CPU", 0) for b in bundles), sum(b.get("GPU", 0) for b in bundles)
            if not any(cpus <= c and gpus <= g for c, g in nodes):
                where = _setting(spec, "resources.placement_strategy")
                problems.setdefault(where, Problem(where, (
                    f"STRICT_PACK puts a whole trial on one node: it needs {cpus:g} CPU(s) and {gpus:g} GPU(s) there, but the "
                    f"largest node has {most_cpus:g} CPU(s) and {most_gpus:g} GPU(s); use PACK (RLlib's default: a trial's "
                    f"processes may spread over nodes), or lower learners.num_learners or env_runners.num_env_runners")))
    return list(problems.values())


def _gpu_problems(spec: SweepSpec, cluster_gpus: float) -> list[Problem]:
    """GPUs a trial asks for (``learners.num_gpus_per_learner``: its learners', or its own process's
    without remote learners) where the cluster has fewer."""
    for draw in _sized_draws(spec):
        demand = _cpu_demand(spec, draw, "GPU")
        needed = sum(gpus for _, gpus in demand.values())
        if needed <= cluster_gpus:
            continue
        where = _setting(spec, "learners.num_gpus_per_learner")
        asks = []
        for role, (count, gpus) in demand.items():
            if gpus:
                asks.append(f"{gpus:g} for the trial's own process" if role == "process" else f"{gpus:g} for {count} {role}(s)")
        return [Problem(where, f"one trial asks for {needed:g} GPU(s) ({', '.join(asks)}) but the Ray cluster has "
                               f"{cluster_gpus:g}; it would wait PENDING forever. Set it to 0 (learn on CPUs), or join a cluster with GPUs")]
    return []


def _cpu_culprit(
    spec: SweepSpec, draw: Mapping[str, Any], demand: Mapping[str, tuple[int, float]], cluster_cpus: float
) -> tuple[str, str]:
    """The setting to lower for a trial too large for the cluster's CPUs, and the hint: the largest share's.
    The trial's own process is sized by its own setting (or by ``num_cpus_per_learner`` when it learns); remote
    workers by their count, unless one of them alone is more than the cluster has beside the trial's process,
    when fewer of them would not help and their size is the setting."""
    process = demand.get("process", (1, 0.0))[1]
    remote = {role: demand[role] for role in _SETTING_FOR if role in demand and demand[role][0]}
    largest = max(remote, key=lambda role: remote[role][1], default=None)
    if largest is None or process >= remote[largest][1]:
        path = _bundle_setting(spec, draw, "main", "CPU")
        return _setting(spec, path), f"lower {path} (the CPUs of the trial's own process)"
    count, cpus = remote[largest]
    if cpus / count > cluster_cpus - process:
        path = _BUNDLE_SETTING[largest, "CPU"]
        return _setting(spec, path), f"lower {path} (one {largest.replace('_', ' ')} alone does not fit beside the trial's process)"
    what = "learns" if largest == "learner" else "samples"
    return _setting(spec, _SETTING_FOR[largest]), f"lower {_SETTING_FOR[largest]} (0 {what} in the trial's own process)"


def resource_problems(
    spec: SweepSpec, cluster_cpus: float, cluster_gpus: float | None = None, nodes: list[tuple[float, float]] | None = None
) -> tuple[list[Problem], float]:
    """Whether the largest trial fits the cluster; returns the problems and the CPUs one trial needs. The
    problem names what asks for the CPUs (the trial's process, its env runners, its learners, with counts)
    and the setting of the largest remote share; with ``cluster_gpus``, also GPUs asked for where there are
    fewer; with ``nodes`` (each node's CPUs and GPUs), a process too large for every node, or a trial that
    must sit on one node (``STRICT_PACK``) and fits none."""
    gpu_problems = _gpu_problems(spec, cluster_gpus) if cluster_gpus is not None else []
    if nodes and len(nodes) > 1:
        # On one node the cluster-wide checks say it all; what the cluster as a whole lacks is said once.
        reported = {p.path for p in gpu_problems}
        gpu_problems += [p for p in _node_problems(spec, nodes) if p.path not in reported]
    needed, demand, sized = 0.0, {}, {}
    for draw in _sized_draws(spec):
        found = _cpu_demand(spec, draw)
        total = sum(cpus for _, cpus in found.values())
        if total > needed:
            needed, demand, sized = total, found, draw
    if needed <= cluster_cpus:
        return gpu_problems, needed
    names = {"process": "the trial's own process", "env_runner": "env runner", "learner": "learner"}
    parts = []
    for role in ("process", "env_runner", "learner"):
        count, cpus = demand.get(role, (0, 0.0))
        if role == "process":
            parts.append(f"{cpus:g} for {names[role]}")
        elif count:
            parts.append(f"{cpus:g} for {count} {names[role]}{'s' if count > 1 else ''}")
    where, hint = _cpu_culprit(spec, sized, demand, cluster_cpus)
    seeds = f" (x{spec.seeds.per_trial} seeds per trial)" if spec.seeds.per_trial > 1 else ""
    return [
        Problem(
            where,
            f"one trial needs {needed:g} CPUs ({', '.join(parts)}{seeds}, RLlib's request) but the Ray cluster has "
            f"{cluster_cpus:g}; it would wait PENDING forever. {hint[0].upper()}{hint[1:]}, or join a larger cluster",
        ),
        *gpu_problems,
    ], needed
