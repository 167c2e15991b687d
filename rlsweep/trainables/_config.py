"""Building an RLlib ``AlgorithmConfig`` from the spec's ``method.argument`` paths."""

from __future__ import annotations

import contextlib
import difflib
import inspect
import logging
import math
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from rlsweep import _compat
from rlsweep._dotted import unflatten
from rlsweep._envs import resolve_env
from rlsweep.errors import Problem, shorten
from rlsweep.spec import CURRICULUM_PREFIX, POLICIES_PATH, PolicySetup
from rlsweep.trainables._schedulable import schedule_problems, with_schedules

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    from rlsweep.spec import SweepSpec
    from rlsweep.trainables._memory import MemoryReading

#: Settings rlsweep applies before the user's, each for a measured reason (docs/guides/defaults.md).
#: Zero env runners and zero remote learners: sampling and learning run in the trial's own process, so a
#: trial needs 1 CPU and a 2-CPU machine runs 2 trials at once (RLlib's default of 2 runners asks for 3 CPUs
#: and hangs PENDING on 2; IMPALA/APPO's remote learner doubles a trial's CPUs), and the learner's time is
#: measured in the timing split instead of vanishing into another process.
RLSWEEP_DEFAULTS: dict[str, Any] = {"env_runners.num_env_runners": 0, "learners.num_learners": 0}

#: Envs one env runner steps as a vectorized batch, for algorithms that learn from fixed-size batches of
#: fresh samples (PPO, APPO, IMPALA): the batch and the updates per env step stay as configured, and
#: CartPole's time to solve fell from 43.9 s to 25.7 s with 8 (docs/guides/defaults.md). Off-policy algorithms
#: (a replay buffer) keep 1: more envs per sample call would change their updates per env step. Custom env
#: classes keep 1 too (8 copies of an env that holds a port or a licence would not work), and so does a
#: spec that sets how sampling is cut up (``rollout_fragment_length``, ``num_envs_per_env_runner``).
VECTOR_ENVS = 8
#: Settings that shape sampling: a spec that sets one decides the vectorization itself.
_SAMPLING_SHAPE = ("env_runners.num_envs_per_env_runner", "env_runners.rollout_fragment_length")

#: The work floor of one iteration for algorithms whose RLlib default sampling floor is time alone (IMPALA/APPO
#: 10 s; CQL 1 s, beside its 100 trained steps): an iteration then samples at least this many env steps,
#: whatever the machine's speed.
ITERATION_ENV_STEPS = 1000

MIN_TIME = "reporting.min_time_s_per_iteration"
MIN_STEPS = "reporting.min_sample_timesteps_per_iteration"


def algorithm_names() -> list[str]:
    from ray.rllib.algorithms.registry import ALGORITHMS

    return sorted(ALGORITHMS)


@lru_cache(maxsize=None)
def algorithm_class(name: str) -> type[Algorithm]:
    from ray.rllib.algorithms.registry import ALGORITHMS

    return ALGORITHMS[name]()[0]


def agent_ids(spec: SweepSpec) -> list[Any] | None:
    """The agent ids of a multi-agent env (made once with ``env_config``), or None for a single-agent env."""
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    env = resolve_env(spec.env)
    if not (isinstance(env, type) and issubclass(env, MultiAgentEnv)):
        return None
    instance = env(dict(spec.env_config))
    try:
        return list(getattr(instance, "possible_agents", None) or getattr(instance, "agents", []))
    finally:
        with contextlib.suppress(Exception):
            instance.close()


@lru_cache(maxsize=None)
def iteration_settings(algorithm: str) -> dict[str, Any]:
    """What one iteration of ``algorithm`` is, stated explicitly: never a wall-clock floor, which makes the
    work per iteration (and so every scheduler decision) depend on the machine's speed. RLlib's own work
    floor where it has one (SAC's 100 env steps, an update each, beside its 1 s floor; DQN's 1000), else
    :data:`ITERATION_ENV_STEPS` where its floor is time alone."""
    defaults = algorithm_class(algorithm).get_default_config()
    min_steps = int(defaults.min_sample_timesteps_per_iteration or 0)
    if defaults.min_time_s_per_iteration and not min_steps:
        min_steps = ITERATION_ENV_STEPS
    return {MIN_TIME: 0, MIN_STEPS: min_steps}


def throughput_settings(spec: SweepSpec) -> dict[str, Any]:
    """Vectorized envs where they change nothing but the speed: on-policy algorithms on a gymnasium id,
    with nothing in the spec shaping how sampling is cut up."""
    if ":" in spec.env or any(path in spec.config or path in spec.search_space.paths for path in _SAMPLING_SHAPE):
        return {}
    if getattr(algorithm_class(spec.algorithm).get_default_config(), "replay_buffer_config", None) is not None:
        return {}
    return {"env_runners.num_envs_per_env_runner": VECTOR_ENVS}


def settings_for(spec: SweepSpec, sampled: Mapping[str, Any]) -> dict[str, Any]:
    """All ``method.argument`` settings of one trial, in the order they apply: rlsweep's defaults, the
    algorithm's iteration and throughput settings, the spec's ``config``, then the trial's draw. These are
    the trial's params as exported, so what an iteration means is visible beside what was searched."""
    chosen = {k: v for k, v in sampled.items() if k != POLICIES_PATH}
    settings = {
        **RLSWEEP_DEFAULTS,
        **iteration_settings(spec.algorithm),
        **throughput_settings(spec),
        **spec.config,
        **chosen,
    }
    return with_schedules(spec, settings, chosen)  # schedules in RLlib's [[env_steps, value], ...]


def rllib_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings that go to RLlib's config: all but the curriculum's own."""
    return {k: v for k, v in settings.items() if not k.startswith(CURRICULUM_PREFIX)}


class AgentToPolicy:
    """RLlib's ``policy_mapping_fn`` for a spec's setup: the first rule whose pattern matches the agent id.
    A class, not a lambda, so Ray can ship it to env runners."""

    def __init__(self, setup: PolicySetup) -> None:
        self.setup = setup

    def __call__(self, agent_id: Any, *args: Any, **kwargs: Any) -> str:
        policy = self.setup.policy_for(agent_id)
        if policy is None:
            raise ValueError(
                f"policies.{self.setup.name}.map: agent {agent_id!r} matches no entry of {dict(self.setup.rules)}"
            )
        return policy


class ObservationFilter:
    """RLlib's ``env_to_module_connector`` factory for ``normalize.observations``: a MeanStdFilter. A class,
    not a lambda, so it pickles with the config (into every checkpoint, and to remote env runners).

    Args:
        multi_agent: One filter per agent id (RLlib's ``MeanStdFilter(multi_agent=True)``).
        update_stats: Whether the observations it sees update its statistics: training runners do;
            evaluation runners apply the training runners' statistics as they are.
    """

    def __init__(self, *, multi_agent: bool = False, update_stats: bool = True) -> None:
        self.multi_agent = multi_agent
        self.update_stats = update_stats

    def __call__(self, env: Any = None, spaces: Any = None, device: Any = None) -> Any:
        from ray.rllib.connectors.env_to_module import MeanStdFilter

        return MeanStdFilter(multi_agent=self.multi_agent, update_stats=self.update_stats)

    def __repr__(self) -> str:
        return f"ObservationFilter(multi_agent={self.multi_agent}, update_stats={self.update_stats})"


def sync_evaluation_filter(algorithm: Any, **kwargs: Any) -> None:
    """RLlib's ``on_evaluate_start`` callback for ``normalize.observations``: the local evaluation env runner
    (rlsweep's default, no remote evaluation runners) gets the training runners' observation statistics.

    RLlib 2.60 sends connector states to remote evaluation runners only (``sync_env_runner_states`` returns
    early for a group without them), so the local one would otherwise normalize with statistics of its own,
    gathered from its evaluation episodes alone, and score a policy on observations it never trained on.
    """
    from ray.rllib.core import COMPONENT_ENV_TO_MODULE_CONNECTOR

    group, runner = algorithm.eval_env_runner_group, algorithm.eval_env_runner
    if group is None or runner is None or group.num_remote_env_runners() > 0:
        return  # no evaluation runners, or remote ones that RLlib syncs itself
    if algorithm.env_runner is not None:
        state = algorithm.env_runner.get_state(components=COMPONENT_ENV_TO_MODULE_CONNECTOR)[COMPONENT_ENV_TO_MODULE_CONNECTOR]
    else:  # remote training runners only: the algorithm holds their merged state
        state = algorithm.env_to_module_connector.get_state()
    runner.set_state({COMPONENT_ENV_TO_MODULE_CONNECTOR: state})


def apply_normalization(config: AlgorithmConfig, spec: SweepSpec, *, multi_agent: bool) -> None:
    """``normalize.observations``: a MeanStdFilter first in every env runner's env-to-module pipeline, frozen
    on evaluation runners, which take the training runners' statistics before each evaluation. The
    statistics are the env runners' connector state, so every checkpoint holds them."""
    if not spec.normalize.observations:
        return
    config.env_runners(env_to_module_connector=ObservationFilter(multi_agent=multi_agent))
    before = config.callbacks_on_evaluate_start
    others = [] if before is None else list(before) if isinstance(before, (list, tuple)) else [before]
    config.callbacks(on_evaluate_start=[*others, sync_evaluation_filter])
    frozen = _compat.evaluation_env_to_module_connector(ObservationFilter(multi_agent=multi_agent, update_stats=False))
    overrides = config.evaluation_config if isinstance(config.evaluation_config, Mapping) else {}
    config.evaluation(evaluation_config={**overrides, **frozen})


class _NewStackNotice(logging.Filter):
    """Drops RLlib's per-config notice that the new API stack is the default (SAC, DQN print it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "on the new API stack" not in record.getMessage()


_NEW_STACK_NOTICE = _NewStackNotice()


def build_config(spec: SweepSpec, sampled: Mapping[str, Any]) -> AlgorithmConfig:
    """The trial's ``AlgorithmConfig``: env, rlsweep's defaults, ``config``, then the sampled values."""
    # RLlib warns on every config that the new API stack is its default; rlsweep always uses it.
    logging.getLogger("ray.rllib.algorithms.algorithm_config").setLevel(logging.ERROR)
    # The notice comes from the algorithm's module (sac.py, dqn.py), where its config class lives too.
    config_logger = logging.getLogger(algorithm_class(spec.algorithm).__module__)
    if _NEW_STACK_NOTICE not in config_logger.filters:
        config_logger.addFilter(_NEW_STACK_NOTICE)
    config = algorithm_class(spec.algorithm).get_default_config()
    config = config.environment(env=resolve_env(spec.env), env_config=dict(spec.env_config))
    for method, arguments in unflatten(rllib_settings(settings_for(spec, sampled))).items():
        getattr(config, method)(**arguments)
    if spec.algorithm == "PPO":
        from rlsweep.trainables import _ppo_learner  # only where a trial needs it

        if isinstance(config.clip_param, list):  # a schedule, in RLlib's format
            config.learners(learner_class=_ppo_learner.ClipScheduledPPOTorchLearner)
        elif _compat.configured_learner_class(config) is None:  # RLlib's own; a learner_class the spec sets stays
            config.learners(learner_class=_ppo_learner.RlsweepPPOTorchLearner)
    if spec.updates_per_env_step is not None:  # the pre-flight has checked the algorithm has a replay ratio
        config.training(training_intensity=training_intensity(config, spec.updates_per_env_step))
    if spec.critic == "concat":  # the pre-flight has checked it is SAC, single-agent, with continuous actions
        from rlsweep.trainables._critic import concat_critic_spec  # only where a trial needs it

        config.rl_module(rl_module_spec=concat_critic_spec())
    setup = spec.policy_setup(sampled)
    if setup is not None:
        config.multi_agent(
            policies=set(setup.policy_ids),
            policy_mapping_fn=AgentToPolicy(setup),
            policies_to_train=list(setup.train),
        )
    if spec.evaluation is not None:
        # The trainable calls ``algo.evaluate()`` itself every ``every_env_steps``; RLlib's own interval is in
        # iterations, so it is set past any budget. It must be set for RLlib to build the evaluation runner.
        config.evaluation(
            evaluation_interval=2**31 - 1,
            evaluation_duration=spec.evaluation.episodes,
            evaluation_duration_unit="episodes",
            evaluation_num_env_runners=0,
            # One env: RLlib's episode-count evaluation over vectorized envs returns the first episodes to
            # end, which biases the mean towards short episodes.
            evaluation_config={"explore": False, "num_envs_per_env_runner": 1},
        )
    apply_normalization(config, spec, multi_agent=setup is not None)
    if spec.algorithm in ("SAC", "DQN"):
        from rlsweep.trainables._replay import apply_fast_replay  # only where a trial has a replay buffer

        apply_fast_replay(config)
    return config


def build_algo(config: AlgorithmConfig) -> Algorithm:
    """``config.build_algo()`` in a trial's process (or the memory check's), seeding torch and running its
    optimizers without importing ``torch._dynamo`` unless the config compiles
    (``_compat.torch_without_dynamo``): about 1 s less before the trial's first result."""
    _compat.torch_without_dynamo(not compiles(config))
    return config.build_algo()


def compiles(config: AlgorithmConfig) -> bool:
    """Whether RLlib compiles anything with ``torch.compile`` under ``config``: its learner, its env runners,
    or its evaluation's env runners (an ``evaluation_config`` of their own)."""
    return any(c is not None and bool(c.torch_compile_learner or c.torch_compile_worker)
               for c in (config, config.get_evaluation_config_object()))


def training_intensity(config: Any, updates_per_env_step: float) -> float:
    """RLlib's ``training_intensity`` that gives ``updates_per_env_step`` updates per env step sampled.

    RLlib (dqn.py ``calculate_rr_weights``) runs ``round(intensity / native)`` updates after each round of
    sampling, ``native`` being the total train batch over the env steps it counts a round as:
    ``rollout_fragment_length * num_envs_per_env_runner * (num_env_runners + 1)``. A round samples from the
    remote env runners only when there are any, so it holds ``max(num_env_runners, 1)`` fragments, not one
    more; the ``max(R, 1) / (R + 1)`` factor corrects for that.
    """
    runners = int(config.num_env_runners or 0)
    return updates_per_env_step * config.total_train_batch_size * max(runners, 1) / (runners + 1)


def _is_setter(config: Any, function: Any) -> bool:
    """Whether a config method is one of RLlib's setters (``training``, ``env_runners``, ...): it returns the
    config itself and sets config fields of its arguments' names. Not ``build_algo``, ``copy``, ``get_...``
    or ``update_from_dict``, which a spec path must never call."""
    signature = inspect.signature(function)
    # typing.Self (Python 3.11+), typing_extensions.Self, or the class named as a string.
    returns = str(signature.return_annotation).strip("'\"")
    if not returns.endswith(("Self", "Config")):
        return False
    names = [n for n, p in signature.parameters.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    if any(signature.parameters[n].default is inspect.Parameter.empty for n in names):
        return False
    return any(hasattr(config, n) for n in names)


@lru_cache(maxsize=None)
def _method_arguments(config_class: type) -> dict[str, list[str]]:
    """RLlib's setter methods -> their keyword arguments, including those a subclass passes on to its
    parent through ``**kwargs`` (``PPOConfig.training`` takes ``lr`` from ``AlgorithmConfig.training``)."""
    arguments: dict[str, list[str]] = {}
    config = config_class()
    for name, function in inspect.getmembers(config_class, inspect.isfunction):
        if name.startswith("_") or not _is_setter(config, function):
            continue
        names: list[str] = []
        for klass in config_class.__mro__:
            member = klass.__dict__.get(name)
            if not inspect.isfunction(member):
                continue
            parameters = inspect.signature(member).parameters
            names += [
                n
                for n, p in parameters.items()
                if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and n not in names
            ]
            if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
                break
        arguments[name] = names
    return arguments


def path_problems(spec: SweepSpec) -> list[Problem]:
    """Every ``config``/``search_space`` path that does not name a config method and one of its arguments."""
    config_class = type(algorithm_class(spec.algorithm).get_default_config())
    methods = _method_arguments(config_class)
    problems = []
    paths = [("config", p) for p in spec.config] + [
        ("search_space", p) for p in spec.search_space.paths if p != POLICIES_PATH and not p.startswith(CURRICULUM_PREFIX)
    ]
    problems += schedule_problems(spec)
    for section, path in paths:
        method, _, rest = path.partition(".")
        argument = rest.split(".")[0]
        where = f"{section}.{path}"
        if method not in methods:
            near = difflib.get_close_matches(method, methods, n=3)
            hint = f"; did you mean {near}?" if near else ""
            what = "is not a setter method of" if hasattr(config_class, method) else "is not a method of"
            hint = hint or f"; its setters: {sorted(methods)}"
            problems.append(Problem(where, f"{method!r} {what} {spec.algorithm}Config (a path is setter.argument){hint}"))
            continue
        names = methods[method]
        if argument not in names:
            near = difflib.get_close_matches(argument, names, n=3)
            hint = f"did you mean {near}?" if near else f"its arguments: {names}"
            problems.append(Problem(where, f"{spec.algorithm}Config.{method}() takes no argument {argument!r}; {hint}"))
            continue
        if (method, argument) == ("rl_module", "model_config"):
            problems += _model_config_problems(spec, section, path)
    return problems


def _model_config_problems(spec: SweepSpec, section: str, path: str) -> list[Problem]:
    """Keys under ``rl_module.model_config`` that RLlib's default model does not have: it ignores them, and
    the default network would train instead of the one the user wrote."""
    import dataclasses

    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    if "rl_module.rl_module_spec" in spec.config or "rl_module.rl_module_spec" in spec.search_space.paths:
        return []  # a custom RLModule reads its own keys
    fields = sorted(f.name for f in dataclasses.fields(DefaultModelConfig))
    tail = path.split(".")[2:]
    if tail:
        keys = [tail[0]]
    else:
        value = spec.config.get(path) if section == "config" else None
        keys = list(value) if isinstance(value, Mapping) else []
    problems = []
    for key in keys:
        if key not in fields:
            near = difflib.get_close_matches(str(key), fields, n=2)
            hint = f"did you mean {near}?" if near else f"its keys: {fields}"
            problems.append(Problem(f"{section}.{path}", f"RLlib's default model has no setting {shorten(key)}; {hint}"))
    return problems


def trial_bundles(spec: SweepSpec, sampled: Mapping[str, Any]) -> tuple[list[dict[str, float]], list[str], str]:
    """One trial's placement-group bundles as RLlib requests them for its config, what each holds
    (``main``: the trial's own process; ``env_runner``, evaluation runners included; ``learner``) and
    the placement strategy. A trial with several seeds runs their algorithms in its one process (the
    first bundle), one after the other; each seed's remote env runners and learners get bundles of their
    own."""
    config = build_config(spec, sampled)
    request = algorithm_class(spec.algorithm).default_resource_request(config)
    seeds = spec.seeds.per_trial
    bundles = [dict(request.bundles[0]), *[dict(b) for b in request.bundles[1:]] * seeds]
    roles = ["main", *_bundle_roles(config, len(request.bundles) - 1) * seeds]
    return bundles, roles, request.strategy


def trial_resources(spec: SweepSpec, sampled: Mapping[str, Any], memory: MemoryReading | None = None) -> Any:
    """The placement group one trial needs (:func:`trial_bundles`). With ``memory`` (the pre-flight
    reading) each bundle also reserves the memory its process was measured to peak at, so Ray places no
    more trials on a node than its memory holds."""
    from ray.tune import PlacementGroupFactory

    bundles, roles, strategy = trial_bundles(spec, sampled)
    if memory is not None:
        bundles = [{**b, "memory": math.ceil(memory.bundle_mb(role) * 2**20)} if memory.bundle_mb(role) > 0 else b
                   for b, role in zip(bundles, roles)]
    return PlacementGroupFactory(bundles, strategy=strategy)


def _bundle_roles(config: Any, count: int) -> list[str]:
    """What each of RLlib's bundles after the main one holds, in its order: env runners, evaluation env
    runners, then learners. Where the count does not add up (a newer RLlib), every bundle is taken for an
    env runner's."""
    learners = max(0, int(config.num_learners))
    runners = count - learners
    if runners < 0:
        return ["env_runner"] * count
    return ["env_runner"] * runners + ["learner"] * learners
