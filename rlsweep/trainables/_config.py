"""Building an RLlib ``AlgorithmConfig`` from the spec's ``method.argument`` paths."""

from __future__ import annotations

import difflib
import importlib
import inspect
import logging
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from rlsweep.errors import Problem

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    from rlsweep.spec import SweepSpec

#: Settings rlsweep applies before the user's, each for a measured reason (README: "Defaults").
#: Zero env runners: sampling runs in the trial's own process, so a trial needs 1 CPU and a 2-CPU machine
#: runs 2 trials at once; RLlib's default of 2 runners asks for 3 CPUs and hangs PENDING on 2.
RLSWEEP_DEFAULTS: dict[str, Any] = {"env_runners.num_env_runners": 0}


def algorithm_names() -> list[str]:
    from ray.rllib.algorithms.registry import ALGORITHMS

    return sorted(ALGORITHMS)


@lru_cache(maxsize=None)
def algorithm_class(name: str) -> type[Algorithm]:
    from ray.rllib.algorithms.registry import ALGORITHMS

    return ALGORITHMS[name]()[0]


def resolve_env(env: str) -> Any:
    """A gymnasium id stays a string; ``package.module:EnvClass`` becomes the class."""
    if ":" in env:
        module_name, _, attribute = env.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, attribute)
    return env


def env_problem(env: str) -> str | None:
    """Why ``env`` cannot be made, or None."""
    if ":" in env:
        module_name, _, attribute = env.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            return f"cannot import module {module_name!r} ({exc})"
        if not hasattr(module, attribute):
            return f"module {module_name!r} has no attribute {attribute!r}"
        return None
    import gymnasium

    try:
        gymnasium.spec(env)
    except gymnasium.error.Error as exc:
        return f"not a registered gymnasium id: {exc}; for a custom env write 'package.module:EnvClass'"
    return None


def group_settings(settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{"training.lr": 1e-3, "rl_module.model_config.fcnet_hiddens": [64]}`` ->
    ``{"training": {"lr": 1e-3}, "rl_module": {"model_config": {"fcnet_hiddens": [64]}}}``."""
    grouped: dict[str, dict[str, Any]] = {}
    for path, value in settings.items():
        method, *keys = path.split(".")
        target = grouped.setdefault(method, {})
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        target[keys[-1]] = value
    return grouped


def settings_for(spec: SweepSpec, sampled: Mapping[str, Any]) -> dict[str, Any]:
    """All ``method.argument`` settings of one trial, in the order they apply."""
    return {**RLSWEEP_DEFAULTS, **spec.config, **sampled}


def build_config(spec: SweepSpec, sampled: Mapping[str, Any]) -> AlgorithmConfig:
    """The trial's ``AlgorithmConfig``: env, rlsweep's defaults, ``config``, then the sampled values."""
    # RLlib warns on every config that the new API stack is its default; rlsweep always uses it.
    logging.getLogger("ray.rllib.algorithms.algorithm_config").setLevel(logging.ERROR)
    config = algorithm_class(spec.algorithm).get_default_config()
    config = config.environment(env=resolve_env(spec.env), env_config=dict(spec.env_config))
    for method, arguments in group_settings(settings_for(spec, sampled)).items():
        getattr(config, method)(**arguments)
    return config


def _method_arguments(config_class: type) -> dict[str, list[str]]:
    """Public config methods -> their keyword arguments, including those a subclass passes on to its
    parent through ``**kwargs`` (``PPOConfig.training`` takes ``lr`` from ``AlgorithmConfig.training``)."""
    arguments: dict[str, list[str]] = {}
    for name, _ in inspect.getmembers(config_class, inspect.isfunction):
        if name.startswith("_"):
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
    paths = [("config", p) for p in spec.config] + [("search_space", p) for p in spec.search_space.paths]
    for section, path in paths:
        method, _, rest = path.partition(".")
        argument = rest.split(".")[0]
        where = f"{section}.{path}"
        if method not in methods:
            near = difflib.get_close_matches(method, methods, n=3)
            hint = f"; did you mean {near}?" if near else ""
            problems.append(Problem(where, f"{spec.algorithm}Config has no method {method!r}{hint}"))
            continue
        names = methods[method]
        if argument not in names:
            near = difflib.get_close_matches(argument, names, n=3)
            hint = f"did you mean {near}?" if near else f"its arguments: {names}"
            problems.append(Problem(where, f"{spec.algorithm}Config.{method}() takes no argument {argument!r}; {hint}"))
    return problems
