"""Warm start: ``searcher.warm_start`` puts known-good configs first in a search, or tells the searcher what
an earlier sweep already found.

- ``zoo``: rl-baselines3-zoo's published hyperparameters for the spec's algorithm and env
  (``rlsweep/data/zoo_hyperparams.yaml``), mapped onto RLlib's settings by :mod:`rlsweep._zoo` (the mapping
  ``rlsweep convert --from zoo`` uses) and placed in the searched settings' declared domains, become the
  first point to evaluate (before ``points_to_evaluate``).
- a directory: a previous sweep's trials that fit the search space reach the searcher as evaluated trials
  (config, final metric value, and whether the scheduler stopped it early), so no trial is rerun.

Both are checked when the spec is loaded: what cannot be mapped, or a directory that cannot be read, is a
:class:`~rlsweep.errors.Problem` at ``searcher.warm_start`` that names it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from rlsweep import store
from rlsweep._dotted import list_index
from rlsweep._zoo import ALGORITHMS, Setting, map_entry, start_value
from rlsweep.errors import Problem, SpecError, SweepError
from rlsweep.search_spaces import SearchSpace
from rlsweep.search_spaces._base import _int_for_float, point_problems
from rlsweep.search_spaces._domains import Choice, Domain, Fixed, Normal, QRandInt, QUniform, RandInt
from rlsweep.spec import SweepSpec

ZOO = "zoo"
WHERE = "searcher.warm_start"
#: Searchers that take evaluated trials (Tune's HyperOpt, BayesOpt and BOHB searchers have no way in).
TAKES_EVALUATED = ("optuna",)


@dataclass(frozen=True)
class Evaluated:
    """A trial of an earlier sweep, as its searcher would have seen it when it ended."""

    config: Mapping[str, Any]
    value: float
    pruned: bool
    intermediate: tuple[float, ...] = ()


@dataclass(frozen=True)
class WarmStart:
    """What ``searcher.warm_start`` gives the searcher: points to run first, and trials it need not run."""

    points: tuple[dict[str, Any], ...] = ()
    evaluated: tuple[Evaluated, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)


#: A searched setting that stands for another the mapping sets: with one learner (rlsweep's default),
#: RLlib's train_batch_size is the per-learner batch (``AlgorithmConfig.total_train_batch_size``).
SAME_VALUE = {"training.train_batch_size": "training.train_batch_size_per_learner"}


@functools.cache
def zoo_table() -> dict[str, Any]:
    """The shipped entries: per rl-zoo3 file name (``ppo``), each env's entry as rl-zoo3 publishes it."""
    return yaml.safe_load(files("rlsweep").joinpath("data/zoo_hyperparams.yaml").read_text())


def _zoo_value(settings: Mapping[str, Setting], path: str) -> tuple[Any, str, bool] | None:
    """The value the zoo mapping gives a searched path, the zoo names it came from, and whether the path is
    the setting itself (False for a schedule's ``.from`` / ``.to``; a constant is both). A setting's
    ``SAME_VALUE`` partner stands for it."""
    path = SAME_VALUE.get(path, path) if path not in settings else path
    if path == "training.minibatch_size" and path in settings and settings[path].value is None:
        # No minibatch size: the whole rollout per update, which a searched minibatch size stands for by its size.
        rollout = settings.get("training.train_batch_size_per_learner")
        return None if rollout is None else (rollout.value, rollout.source, True)
    if path in settings:
        return settings[path].value, settings[path].source, True
    base, _, end = path.rpartition(".")
    index = list_index(end) if base.endswith(".points") else None  # a searched piecewise point's value: <path>.points.<i>
    if index is not None:
        base = base[: -len(".points")]
    if (end in ("from", "to") or index is not None) and base in settings:
        value = settings[base].value
        if not isinstance(value, Mapping):  # a constant is every point of its schedule
            return value, settings[base].source, False
        if value.get("schedule") == "linear" and index is None:
            return value[end], settings[base].source, False
        if value.get("schedule") == "piecewise":
            points = value["points"]
            # The zoo schedule's first and last values are its ends; point i is the zoo's point i, where it has one.
            at = {"from": 0, "to": len(points) - 1}.get(end) if index is None else index
            if at is not None and at < len(points):
                return points[at][1], settings[base].source, False
    return None


def _place(domain: Domain, value: Any) -> Any:
    """``value`` inside ``domain``: a numeric choice's nearest value, a range's nearest bound, an integer
    domain's nearest multiple; None where no value of the domain stands for it (a different string)."""
    if domain.contains(value):
        return value
    if isinstance(domain, Choice):
        numeric = [v for v in domain.values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and len(numeric) == len(domain.values):
            return min(numeric, key=lambda v: abs(v - value))
        if isinstance(value, list) and any(v == value for v in domain.values):
            return next(v for v in domain.values if v == value)
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or isinstance(domain, Normal):
        return None
    low, high = domain.low, domain.high  # type: ignore[attr-defined]
    placed: Any = min(max(value, low), high)
    if isinstance(domain, (QUniform, QRandInt)):
        placed = round(placed / domain.q) * domain.q
        placed = min(max(placed, low), high)
    if isinstance(domain, (RandInt, QRandInt)):
        placed = int(round(placed))
    else:
        placed = float(placed)
    return placed if domain.contains(placed) else None


def zoo_point(algorithm: str, env: str, space: SearchSpace, *, normalize_observations: bool = False) -> tuple[dict[str, Any], list[str]]:
    """rl-baselines3-zoo's hyperparameters for ``algorithm`` on ``env`` as a point of ``space``, and a note
    for each value that had to be moved into its declared domain or kept at a schedule's start.

    The entry is mapped by :func:`rlsweep._zoo.map_entry`, the mapping ``rlsweep convert --from zoo`` uses.

    Args:
        normalize_observations: Whether the spec normalizes observations; it must be what the zoo entry does.

    Raises:
        SpecError: no published entry, a zoo hyperparameter the mapping cannot carry onto RLlib, a searched
            parameter the zoo says nothing about, or a zoo value no value of its domain stands for.
    """
    table = zoo_table()
    published = {name: table[stem] for stem, name in ALGORITHMS.items() if stem in table}
    if algorithm not in published:
        raise SpecError(f"rlsweep maps rl-baselines3-zoo's hyperparameters for {sorted(published)} only, not {algorithm!r}", WHERE)
    if env not in published[algorithm]:
        raise SpecError(
            f"rl-baselines3-zoo publishes no {algorithm} hyperparameters for env {env!r} (it has {sorted(published[algorithm])})", WHERE
        )
    entry = published[algorithm][env]
    mapping = map_entry(algorithm, env, entry)
    problems = [Problem(WHERE, f"rl-baselines3-zoo's {algorithm} hyperparameters for {env}: {line}") for line in mapping.problems]
    problems += [
        Problem(WHERE, f"rl-baselines3-zoo's {algorithm} hyperparameters for {env} set {item.key}={item.value!r}, "
                       f"which has no RLlib counterpart ({item.reason}); warm start would not reproduce them")
        for item in mapping.unmapped
        if not item.approximate
    ]
    zoo_normalizes = bool(mapping.normalize.get("observations"))
    if zoo_normalizes != normalize_observations:
        problems.append(Problem(WHERE, f"rl-baselines3-zoo's {algorithm} hyperparameters for {env} are trained "
                                       f"{'with' if zoo_normalizes else 'without'} normalized observations; set normalize: "
                                       f"{{observations: {str(zoo_normalizes).lower()}}} for warm start to reproduce them"))

    settings = dict(mapping.settings)
    ratio, batch = mapping.updates_per_env_step, settings.get("training.train_batch_size_per_learner")
    if ratio is not None and batch is not None:
        # RLlib's own ratio, for a space that searches it in place of updates_per_env_step: at the entry's batch.
        settings["training.training_intensity"] = Setting(ratio.value * batch.value, "gradient_steps * batch_size / (train_freq * n_envs)")
    point: dict[str, Any] = {}
    # Listed by the mapping, but nothing about learning is lost (a memory option, a gSDE option of an entry
    # without gSDE): said, not refused.
    notes = [f"{WHERE}: rl-baselines3-zoo's {item}" for item in mapping.unmapped if item.approximate]
    for parameter in space:
        if isinstance(parameter.domain, Fixed) or not parameter.is_active(point):
            continue
        where = f"search_space.{parameter.path}"
        found = _zoo_value(settings, parameter.path)
        if found is None:
            problems.append(Problem(where, f"rl-baselines3-zoo's {algorithm} hyperparameters have no value for it "
                                           f"(rlsweep maps {sorted(settings)}); leave it out of the search or drop warm_start"))
            continue
        scheduled, source, whole = found
        value = start_value(scheduled)
        placed = _place(parameter.domain, value)
        if placed is None:
            problems.append(Problem(where, f"rl-baselines3-zoo's {source}={value!r} is not a value of its "
                                           f"{parameter.domain.kind} domain, and none stands for it"))
            continue
        if placed != value:
            notes.append(f"{where}: rl-baselines3-zoo's {source} {value!r} -> {placed!r}, the nearest in its domain")
        if whole and (isinstance(scheduled, Mapping) or isinstance(entry.get(source), str)):
            notes.append(f"{where}: rl-baselines3-zoo changes {source} over training from {placed!r} "
                         f"({'linearly' if not isinstance(scheduled, Mapping) or scheduled.get('schedule') == 'linear' else 'piecewise'}); "
                         "the point keeps it constant")
        point[parameter.path] = placed
    if problems:
        raise SpecError(problems)
    return point, notes


def previous_trials(directory: Path, space: SearchSpace, metric: str, mode: str, budget_env_steps: int) -> tuple[list[Evaluated], list[str]]:
    """The finished trials of the sweep at ``directory`` whose configs are points of ``space``.

    A trial's value is its last finite ``metric`` (what Tune's searcher saw when it ended); one that
    stopped before ``budget_env_steps`` counts as pruned. Trials still running or failed are skipped.

    Raises:
        SpecError: the directory holds no sweep, or no finished trial fits.
    """
    if not store.has_tune_state(directory) and not (directory / store.SWEEP_FILE).exists():
        raise SpecError(f"{str(directory)!r} is not an experiment directory (no {store.SWEEP_FILE})", WHERE)
    evaluated: list[Evaluated] = []
    skipped: list[str] = []
    try:
        # What cannot be read (a trial's folder gone, a file that is a folder or a FIFO) is named in a warning
        # and skipped below; the rest still reaches the searcher.
        trials = store.read_trials(directory, budget_env_steps=budget_env_steps)
    except SweepError as exc:
        raise SpecError(f"cannot read {str(directory)!r}: {exc}", WHERE) from None
    for trial in trials:
        # A diverged trial's last row was measured while its loss blew up: it is told as pruned at the value
        # before, as the sweep's own Optuna searcher was told it.
        rows = trial.values(metric)[:-1] if trial.diverged else trial.values(metric)
        values = [v for v in rows if math.isfinite(v)]
        if trial.state in (store.MISSING, store.UNREADABLE):
            skipped.append(f"{trial.trial_id}: {trial.state.lower()} ({trial.damage[0] if trial.damage else 'unreadable'})")
            continue
        if trial.state != store.TERMINATED or not values:
            skipped.append(f"{trial.trial_id}: {trial.state.lower()}, {len(values)} finite {metric!r} value(s)")
            continue
        config = {p.path: trial.config[p.path] for p in space if p.path in trial.config and not isinstance(p.domain, Fixed)}
        config = {k: float(v) if _int_for_float(space, k, v) else v for k, v in config.items()}  # JSON's 1 for 1.0
        if point_problems(space, [config]):
            skipped.append(f"{trial.trial_id}: its config is not a point of this search space")
            continue
        evaluated.append(Evaluated(config=config, value=values[-1], pruned=trial.env_steps < budget_env_steps or bool(trial.diverged),
                                   intermediate=tuple(values)))
    if not evaluated:
        raise SpecError(
            f"no finished trial of {str(directory)!r} fits this search space with a finite {metric!r} "
            f"({len(skipped)} skipped: {'; '.join(skipped[:3]) or 'no trials'})", WHERE
        )
    return evaluated, skipped


def plan(spec: SweepSpec) -> WarmStart:
    """What the spec's ``searcher.warm_start`` gives its searcher (nothing when it is not set).

    Raises:
        SpecError: every problem with it, each at ``searcher.warm_start`` or the parameter's path.
    """
    source = spec.searcher.options.get("warm_start") if isinstance(spec.searcher.options, Mapping) else None
    if source is None:
        return WarmStart()
    if source == ZOO:
        point, notes = zoo_point(str(spec.algorithm), str(spec.env), spec.search_space,
                                 normalize_observations=bool(spec.normalize.observations))
        return WarmStart(points=(point,), notes=tuple(notes))
    if spec.searcher.name not in TAKES_EVALUATED:
        raise SpecError(
            f"a previous sweep's trials can reach searcher {TAKES_EVALUATED} only, not {spec.searcher.name!r} "
            f"(Tune's other searchers take no evaluated trials); use searcher optuna, or warm_start: zoo", WHERE
        )
    evaluated, skipped = previous_trials(Path(source).expanduser(), spec.search_space, spec.metric.name,
                                         spec.metric.mode, spec.budget.env_steps)
    notes = [f"{WHERE}: {len(evaluated)} trial(s) of {source} reach the searcher"]
    notes += [f"{WHERE}: skipped {line}" for line in skipped]
    return WarmStart(evaluated=tuple(evaluated), notes=tuple(notes))


def problems(spec: SweepSpec) -> list[Problem]:
    try:
        plan(spec)
    except SpecError as exc:
        return list(exc.problems)
    return []
