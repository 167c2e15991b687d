"""The one place that maps RLlib's result keys to rlsweep's normalized metric names."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rlsweep._dotted import flatten

#: normalized name -> candidate RLlib key paths, first present wins (new API stack first).
RLLIB_KEYS: dict[str, tuple[tuple[str, ...], ...]] = {
    "return_mean": (("env_runners", "episode_return_mean"),),
    "return_min": (("env_runners", "episode_return_min"),),
    "return_max": (("env_runners", "episode_return_max"),),
    "episode_len_mean": (("env_runners", "episode_len_mean"),),
    "episodes": (("env_runners", "num_episodes_lifetime"),),
    "env_steps": (("num_env_steps_sampled_lifetime",), ("env_runners", "num_env_steps_sampled_lifetime")),
    "iteration": (("training_iteration",),),
    "eval_return_mean": (("evaluation", "env_runners", "episode_return_mean"),),
}

#: Metrics RLlib leaves out of an iteration in which no episode ended; they carry their last value forward
#: (NaN before the first episode ends, which every Tune scheduler treats as "no decision yet").
CARRIED_FORWARD = ("return_mean", "return_min", "return_max", "episode_len_mean", "eval_return_mean")

# Parts of RLlib's result that are not metrics of this iteration.
_SKIPPED_TOP_LEVEL = frozenset({"config", "hostname", "node_ip", "pid", "date", "trial_id", "done", "timestamp"})


def _lookup(result: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = result
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def _scalar(value: Any) -> float | int | None:
    try:
        import numpy as np

        if isinstance(value, np.generic):
            value = value.item()
    except ImportError:  # pragma: no cover - numpy comes with Ray
        pass
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    return None


def first_present(result: Mapping[str, Any], name: str) -> float | int | None:
    """The value of normalized metric ``name`` in RLlib's ``result``, or None."""
    for path in RLLIB_KEYS[name]:
        value = _scalar(_lookup(result, path))
        if value is not None:
            return value
    return None


def lifetime_env_steps(result: Mapping[str, Any]) -> int:
    return int(first_present(result, "env_steps") or 0)


class MetricNormalizer:
    """Turns each RLlib result into rlsweep's normalized metrics, carrying missing values forward."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {name: math.nan for name in CARRIED_FORWARD}

    def __call__(self, result: Mapping[str, Any], *, evaluation: bool) -> dict[str, Any]:
        metrics: dict[str, Any] = {}
        for name in RLLIB_KEYS:
            if (value := first_present(result, name)) is not None:
                metrics[name] = value
        for name in CARRIED_FORWARD:
            if name in metrics and not (isinstance(metrics[name], float) and math.isnan(metrics[name])):
                self._last[name] = float(metrics[name])
            metrics[name] = self._last[name]
        if not evaluation:
            metrics.pop("eval_return_mean", None)
        metrics["env_steps"] = int(metrics.get("env_steps", 0))
        metrics["episodes"] = int(metrics.get("episodes", 0))
        return metrics

    def state(self) -> dict[str, float]:
        return dict(self._last)

    def restore(self, state: Mapping[str, float]) -> None:
        self._last.update({k: float(v) for k, v in state.items() if k in self._last})


def rllib_section(result: Mapping[str, Any]) -> dict[str, float | int]:
    """RLlib's own numeric keys as flat ``a/b/c`` names, reported beside the normalized ones."""
    return flatten(result, "/", keep=_scalar, skip=_SKIPPED_TOP_LEVEL)


def kept_rllib_keys(section: Mapping[str, Any], patterns: Sequence[str], named: Iterable[str] = ()) -> dict[str, Any]:
    """The part of an RLlib section a row keeps: keys matching one of ``patterns`` (globs), and ``named``
    keys (the spec's metric and stop keys, without their ``rllib/`` prefix) whatever the patterns say."""
    if "*" in patterns:
        return dict(section)
    named = set(named)
    return {k: v for k, v in section.items() if k in named or any(fnmatch.fnmatchcase(k, p) for p in patterns)}
