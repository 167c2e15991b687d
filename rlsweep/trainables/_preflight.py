"""Checks run before any trial starts: algorithm, env, config paths, RLlib's own validation of the
space's extremes, and whether one trial fits the cluster."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlsweep.errors import Problem
from rlsweep.search_spaces import Choice, Fixed, Normal, Parameter, SearchSpace
from rlsweep.trainables._config import algorithm_names, build_config, env_problem, path_problems, settings_for

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


def extreme_draws(space: SearchSpace) -> list[dict[str, Any]]:
    """Every parameter at its low end, then at its high end (inactive conditional parameters left out)."""
    draws = []
    for high in (False, True):
        draw: dict[str, Any] = {}
        for parameter in space:
            if parameter.is_active(draw):
                draw[parameter.path] = _end(parameter, high)
        draws.append(draw)
    return draws


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


def static_problems(spec: SweepSpec) -> list[Problem]:
    """Problems found without a Ray runtime. Never raises."""
    problems: list[Problem] = []
    names = algorithm_names()
    if spec.algorithm not in names:
        return [Problem("algorithm", f"unknown RLlib algorithm {spec.algorithm!r}; expected one of {names}")]
    if spec.evaluation is not None:
        # Refused rather than ignored: a sweep must not silently run without the evaluation it asked for.
        problems.append(Problem("evaluation", "separate evaluation episodes are not implemented yet; remove this section"))
    if (message := env_problem(spec.env)) is not None:
        problems.append(Problem("env", message))
    problems += path_problems(spec)
    if problems:
        return problems
    seen: set[str] = set()
    for draw in extreme_draws(spec.search_space):
        try:
            build_config(spec, draw).validate()
        except Exception as exc:  # noqa: BLE001 - RLlib raises ValueError, TypeError, KeyError, ...
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if message in seen:
                continue
            seen.add(message)
            where = _paths_named_in(message, settings_for(spec, draw), spec) or ["config"]
            values = ", ".join(f"{p.split('.', 1)[1]}={settings_for(spec, draw).get(p.split('.', 1)[1])!r}" for p in where if "." in p)
            problems.append(
                Problem(", ".join(where), f"RLlib rejects this configuration ({values or 'at the space extremes'}): {message}")
            )
    if not problems and spec.ray.address is None:
        # A local runtime will have this many CPUs; a cluster is checked when the sweep joins it.
        problems += resource_problems(spec, float(spec.ray.num_cpus or os.cpu_count() or 1))[0]
    return problems


def resource_problems(spec: SweepSpec, cluster_cpus: float) -> tuple[list[Problem], float]:
    """Whether the largest trial fits the cluster; returns the problems and the CPUs one trial needs."""
    from rlsweep.trainables._trainable import trial_resources

    needed = 0.0
    for draw in extreme_draws(spec.search_space):
        request = trial_resources(spec, draw)
        needed = max(needed, sum(bundle.get("CPU", 0) for bundle in request.bundles))
    if needed > cluster_cpus:
        return [
            Problem(
                "config.env_runners.num_env_runners",
                f"one trial needs {needed:g} CPUs (RLlib's request for its env runners and learners) but the "
                f"Ray cluster has {cluster_cpus:g}; it would wait PENDING forever. Lower num_env_runners "
                "(0 samples in the trial's own process) or join a larger cluster",
            )
        ], needed
    return [], needed
