"""The sweep document: loading (YAML, safely) and checking its shape, every problem with its path.

This module knows the schema and its defaults. It does not import Ray: what needs RLlib to check
(algorithm names, config arguments, resources) is checked by :mod:`rlsweep.trainables`, and
:func:`rlsweep.load_spec` runs both and reports all problems together.
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from rlsweep.errors import Problem, SpecError
from rlsweep.metrics import NORMALIZED_METRICS, RLLIB_PREFIX
from rlsweep.search_spaces import Fixed, Grid, SearchSpace, parse_search_space


@dataclass(frozen=True)
class SearcherSpec:
    name: str = "random"
    seed: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SchedulerSpec:
    name: str = "fifo"
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BudgetSpec:
    env_steps: int
    trials: int = 4
    max_concurrent: int | None = None
    time_s: float | None = None


@dataclass(frozen=True)
class MetricSpec:
    name: str = "return_mean"
    mode: Literal["min", "max"] = "max"


@dataclass(frozen=True)
class CheckpointSpec:
    every_env_steps: int | None = None
    #: None: the scheduler's default (2; all for PBT/PB2, whose trials restore from each other's checkpoints).
    keep: int | None = None


@dataclass(frozen=True)
class EvaluationSpec:
    episodes: int = 10
    every_env_steps: int | None = None


@dataclass(frozen=True)
class FailureSpec:
    """What happens when a trial fails (an env raises, a loss turns NaN): it restarts from its latest
    checkpoint up to ``max_retries`` times, then is recorded as failed while the sweep goes on."""

    max_retries: int = 1


#: The search-space path that picks one of the spec's named ``policies`` setups.
POLICIES_PATH = "policies"


@dataclass(frozen=True)
class PolicySetup:
    """One multi-agent setup: which policy each agent acts with, and which policies learn.

    Attributes:
        name: The setup's name in the spec (``default`` for the one-setup short form).
        rules: ``(agent id or glob pattern, policy id)`` in order; the first match wins.
        train: The policies that learn; the others act with their initial weights.
    """

    name: str
    rules: tuple[tuple[str, str], ...]
    train: tuple[str, ...]

    @property
    def policy_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(policy for _, policy in self.rules))

    def policy_for(self, agent_id: Any) -> str | None:
        for pattern, policy in self.rules:
            if fnmatch.fnmatchcase(str(agent_id), pattern):
                return policy
        return None


@dataclass(frozen=True)
class RaySpec:
    address: str | None = None
    num_cpus: int | None = None


@dataclass(frozen=True)
class MlflowSpec:
    tracking_uri: str = "sqlite:///mlflow.db"
    experiment: str = "rlsweep"
    export: bool = True
    live: bool = False


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep. ``document`` is the spec as written (after ``--set`` overrides)."""

    name: str
    algorithm: str
    env: str
    budget: BudgetSpec
    env_config: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    search_space: SearchSpace = field(default_factory=SearchSpace)
    searcher: SearcherSpec = field(default_factory=SearcherSpec)
    scheduler: SchedulerSpec = field(default_factory=SchedulerSpec)
    metric: MetricSpec = field(default_factory=MetricSpec)
    stop: Mapping[str, float] = field(default_factory=dict)
    checkpoint: CheckpointSpec = field(default_factory=CheckpointSpec)
    evaluation: EvaluationSpec | None = None
    policies: Mapping[str, PolicySetup] = field(default_factory=dict)
    failure: FailureSpec = field(default_factory=FailureSpec)
    storage: str = "./rlsweep_results"
    ray: RaySpec = field(default_factory=RaySpec)
    mlflow: MlflowSpec | None = field(default_factory=MlflowSpec)
    document: Mapping[str, Any] = field(default_factory=dict)

    def to_yaml(self) -> str:
        return yaml.safe_dump(dict(self.document), sort_keys=False)

    def policy_setup(self, sampled: Mapping[str, Any]) -> PolicySetup | None:
        """The multi-agent setup a trial runs: the one the draw names, or the spec's only one."""
        if not self.policies:
            return None
        name = sampled.get(POLICIES_PATH)
        if name is None:
            return next(iter(self.policies.values()))
        return self.policies[name]


# --- YAML ----------------------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """The safe loader (no object construction) that also refuses duplicate keys, which YAML would
    otherwise resolve silently to the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1}, column {mark.column + 1})", mark
            )
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_document(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """Read a spec document from a YAML file or a mapping, without validating it.

    Raises:
        SpecError: the file is missing or is not valid YAML (with its line and column).
    """
    if isinstance(source, Mapping):
        return copy.deepcopy(dict(source))
    path = Path(source)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read spec file: {exc.strerror or exc}", str(path)) from None
    try:
        document = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise SpecError(f"invalid YAML: {exc.problem or exc}", where) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"invalid YAML: {exc}", str(path)) from None
    if not isinstance(document, dict):
        raise SpecError(f"a spec must be a YAML mapping, got {type(document).__name__}", str(path))
    document.setdefault("name", path.stem)
    return document


def apply_overrides(document: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``--set key=value`` overrides. ``config.`` and ``search_space.`` keys keep their dotted tail
    as one key (``config.training.lr=0.001``); values are parsed as YAML scalars."""
    problems = []
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            problems.append(Problem(f"--set {item}", "expects key=value"))
            continue
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        head, _, tail = key.partition(".")
        if head in ("config", "search_space", "env_config", "stop") and tail:
            document.setdefault(head, {})
            if not isinstance(document[head], dict):
                document[head] = {}
            document[head][tail] = value
            continue
        target = document
        parts = key.split(".")
        for part in parts[:-1]:
            if not isinstance(target.get(part), dict):
                target[part] = {}
            target = target[part]
        target[parts[-1]] = value
    if problems:
        raise SpecError(problems)
    return document


# --- checking ------------------------------------------------------------------------------------------

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class _Checker:
    """Reads typed values out of a mapping, noting problems instead of raising."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def note(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def section(self, doc: Mapping[str, Any], key: str, allowed: set[str], *, optional: bool = True) -> dict[str, Any]:
        value = doc.get(key)
        if value is None:
            if not optional:
                self.note(key, "is required")
            return {}
        if not isinstance(value, Mapping):
            self.note(key, f"must be a mapping, got {value!r}")
            return {}
        for unknown in sorted(set(value) - allowed, key=str):
            self.note(f"{key}.{unknown}", f"unknown key; expected one of {sorted(allowed)}")
        return dict(value)

    def named_section(self, doc: Mapping[str, Any], key: str) -> dict[str, Any]:
        """A ``{name: ..., options...}`` section, which may also be written as just its name."""
        value = doc.get(key) or {}
        if isinstance(value, str):
            return {"name": value}
        if not isinstance(value, Mapping):
            self.note(key, f"must be a mapping with a name, got {value!r}")
            return {}
        return dict(value)

    def number(
        self,
        doc: Mapping[str, Any],
        key: str,
        path: str,
        *,
        integer: bool = False,
        minimum: float | None = None,
        default: Any = None,
        required: bool = False,
    ) -> Any:
        if key not in doc or doc[key] is None:
            if required:
                self.note(path, "is required")
            return default
        value = doc[key]
        ok = isinstance(value, int) if integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok:
            self.note(path, f"must be {'an integer' if integer else 'a number'}, got {value!r}")
            return default
        if minimum is not None and value < minimum:
            self.note(path, f"must be >= {minimum}, got {value}")
            return default
        return value

    def string(self, doc: Mapping[str, Any], key: str, path: str, *, default: Any = None, required: bool = False) -> Any:
        if key not in doc or doc[key] is None:
            if required:
                self.note(path, "is required")
            return default
        value = doc[key]
        if not isinstance(value, str) or not value:
            self.note(path, f"must be a non-empty string, got {value!r}")
            return default
        return value


def _apply_preset(c: _Checker, doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """``preset: NAME`` fills in the searcher and scheduler of a named pairing; the spec's own sections add
    options (a seed, a grace period) on top, and naming a different searcher or scheduler is an error."""
    preset = doc.get("preset")
    if preset is None:
        return doc
    from rlsweep.schedulers import PRESETS

    if preset not in PRESETS:
        c.note("preset", f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
        return doc
    merged = dict(doc)
    for section, filled in PRESETS[preset].items():
        if not isinstance(doc.get(section) or {}, (str, Mapping)):
            continue  # reported once, where the section is parsed
        given = c.named_section(doc, section)
        if given.get("name", filled["name"]) != filled["name"]:
            c.note(
                f"{section}.name",
                f"preset {preset!r} uses {section} {filled['name']!r}, got {given['name']!r}; "
                f"remove {section}.name or the preset",
            )
        merged[section] = {**filled, **given}
    return merged


def _default_names(searcher: Any, scheduler: Any, space: SearchSpace) -> tuple[str, str]:
    """The searcher and scheduler a spec gets when it leaves one out (README "Defaults").

    Optuna's TPE with ASHA: in the time-to-solve benchmark this pairing solved CartPole several times
    sooner than random search run to the end. A space of only grid values gets the grid searcher, an
    empty space random draws, and a name that needs a partner (bohb, pbt, pb2) gets that partner.
    """

    if searcher is None:
        searched = [p for p in space if not isinstance(p.domain, Fixed)]
        if scheduler in ("pbt", "pb2") or not searched:
            searcher = "random"
        elif scheduler == "bohb":
            searcher = "bohb"
        elif all(isinstance(p.domain, Grid) for p in searched):
            searcher = "grid"
        else:
            searcher = "optuna"
    if scheduler is None:
        scheduler = "bohb" if searcher == "bohb" else "asha"
    return str(searcher), str(scheduler)


_TOP_LEVEL = {
    "name", "algorithm", "env", "env_config", "config", "search_space", "searcher", "scheduler", "budget",
    "metric", "stop", "checkpoint", "evaluation", "policies", "failure", "storage", "ray", "mlflow", "preset",
}


def _policy_setup(c: _Checker, name: str, doc: Any, path: str) -> PolicySetup | None:
    if not isinstance(doc, Mapping):
        c.note(path, f"must be a mapping with 'map' (agent id -> policy id) and optional 'train', got {doc!r}")
        return None
    for unknown in sorted(set(doc) - {"map", "train"}, key=str):
        c.note(f"{path}.{unknown}", "unknown key; expected 'map' and optionally 'train'")
    mapping = doc.get("map")
    if not isinstance(mapping, Mapping) or not mapping:
        c.note(f"{path}.map", f"must map agent ids (or glob patterns like '*') to policy ids, got {mapping!r}")
        return None
    rules = []
    for agent, policy in mapping.items():
        if not isinstance(policy, str) or not policy:
            c.note(f"{path}.map.{agent}", f"must be a policy id (a string), got {policy!r}")
            return None
        rules.append((str(agent), policy))
    ids = tuple(dict.fromkeys(policy for _, policy in rules))
    train = doc.get("train", list(ids))
    if not isinstance(train, list) or not all(isinstance(t, str) for t in train) or not train:
        c.note(f"{path}.train", f"must be a non-empty list of policy ids, got {train!r}")
        return None
    for policy in train:
        if policy not in ids:
            c.note(f"{path}.train", f"{policy!r} is not a policy of this setup's map; its policies: {list(ids)}")
    return PolicySetup(name=name, rules=tuple(rules), train=tuple(train))


def _parse_policies(c: _Checker, doc: Any, space: SearchSpace) -> dict[str, PolicySetup]:
    """``policies: {map: ..., train: ...}`` (one setup) or ``policies: {name: {map: ...}, ...}`` (setups a
    search space picks from with ``search_space.policies: {choice: [name, ...]}``)."""
    if doc is None:
        if POLICIES_PATH in space.paths:
            c.note(f"search_space.{POLICIES_PATH}", "picks one of the spec's 'policies' setups, but there is none")
        return {}
    if not isinstance(doc, Mapping) or not doc:
        c.note("policies", f"must be a mapping: {{map: ..., train: ...}} or named setups, got {doc!r}")
        return {}
    if "map" in doc:
        setup = _policy_setup(c, "default", doc, "policies")
        setups = {"default": setup} if setup else {}
    else:
        setups = {}
        for name, setup_doc in doc.items():
            setup = _policy_setup(c, str(name), setup_doc, f"policies.{name}")
            if setup:
                setups[str(name)] = setup
    if POLICIES_PATH in space.paths:
        domain = next(p.domain for p in space if p.path == POLICIES_PATH)
        values = getattr(domain, "values", None)
        if hasattr(domain, "value"):
            values = (domain.value,)
        if values is None or not all(isinstance(v, str) for v in values):
            c.note(f"search_space.{POLICIES_PATH}", f"must be a choice or grid of setup names {sorted(setups)}")
        else:
            for value in values:
                if value not in setups:
                    c.note(f"search_space.{POLICIES_PATH}", f"{value!r} is not a setup under 'policies'; setups: {sorted(setups)}")
    elif len(setups) > 1:
        c.note(
            "policies",
            f"names {len(setups)} setups {sorted(setups)}; pick one per trial with "
            f"search_space.{POLICIES_PATH}: {{choice: {sorted(setups)}}}, or keep one",
        )
    return setups


def _metric_name_problem(name: str) -> str | None:
    if name in NORMALIZED_METRICS or name.startswith(RLLIB_PREFIX):
        return None
    return (
        f"unknown metric {name!r}; use one of rlsweep's names {sorted(NORMALIZED_METRICS)} "
        f"or an RLlib result key prefixed with {RLLIB_PREFIX!r} (checked when the first result arrives)"
    )


def parse_spec(document: Mapping[str, Any]) -> tuple[SweepSpec | None, list[Problem]]:
    """Check the document's shape and build a :class:`SweepSpec`; returns it (or None) and every problem."""
    c = _Checker()
    doc = dict(document)
    for unknown in sorted(set(doc) - _TOP_LEVEL, key=str):
        c.note(str(unknown), f"unknown key; expected one of {sorted(_TOP_LEVEL)}")

    name = c.string(doc, "name", "name", default="sweep")
    if isinstance(name, str) and (not _NAME_RE.match(name) or ".." in name):
        c.note("name", f"must be a folder name of letters, digits, '.', '_' and '-' (no '..'), got {name!r}")
    algorithm = c.string(doc, "algorithm", "algorithm", required=True)
    env = c.string(doc, "env", "env", required=True)

    env_config = doc.get("env_config") or {}
    if not isinstance(env_config, Mapping):
        c.note("env_config", f"must be a mapping, got {env_config!r}")
        env_config = {}
    config = doc.get("config") or {}
    if not isinstance(config, Mapping):
        c.note("config", f"must be a mapping of 'method.argument' paths to values, got {config!r}")
        config = {}
    for key in config:
        if not isinstance(key, str) or "." not in key:
            c.note(f"config.{key}", "keys are 'method.argument' paths on the algorithm's config, e.g. training.lr")

    space, space_problems = parse_search_space(doc.get("search_space"))
    c.problems.extend(space_problems)
    for path in space.paths:
        if "." not in path and path != POLICIES_PATH:
            c.note(f"search_space.{path}", "keys are 'method.argument' paths on the algorithm's config, e.g. training.lr")
        if path in config:
            c.note(f"search_space.{path}", "is also set in config; set a parameter in one place only")

    doc = _apply_preset(c, doc)
    searcher_doc = c.named_section(doc, "searcher")
    scheduler_doc = c.named_section(doc, "scheduler")
    default_searcher, default_scheduler = _default_names(searcher_doc.get("name"), scheduler_doc.get("name"), space)
    searcher = SearcherSpec(
        name=c.string(searcher_doc, "name", "searcher.name", default=default_searcher),
        seed=c.number(searcher_doc, "seed", "searcher.seed", integer=True, minimum=0),
        options={k: v for k, v in searcher_doc.items() if k not in ("name", "seed")},
    )
    scheduler = SchedulerSpec(
        name=c.string(scheduler_doc, "name", "scheduler.name", default=default_scheduler),
        options={k: v for k, v in scheduler_doc.items() if k != "name"},
    )

    b = c.section(doc, "budget", {"env_steps", "trials", "max_concurrent", "time_s"}, optional=False)
    budget = BudgetSpec(
        env_steps=c.number(b, "env_steps", "budget.env_steps", integer=True, minimum=1, required=bool(b), default=1),
        trials=c.number(b, "trials", "budget.trials", integer=True, minimum=1, default=4),
        max_concurrent=c.number(b, "max_concurrent", "budget.max_concurrent", integer=True, minimum=1),
        time_s=c.number(b, "time_s", "budget.time_s", minimum=1),
    )
    grid_size = space.grid_size()
    if grid_size > 1 and budget.trials % grid_size:
        c.note(
            "budget.trials",
            f"must be a multiple of the grid's {grid_size} points (each point runs trials/{grid_size} times), "
            f"got {budget.trials}",
        )

    m = c.section(doc, "metric", {"name", "mode"})
    metric = MetricSpec(
        name=c.string(m, "name", "metric.name", default="return_mean"),
        mode=c.string(m, "mode", "metric.mode", default="max"),
    )
    if metric.mode not in ("min", "max"):
        c.note("metric.mode", f"must be 'min' or 'max', got {metric.mode!r}")
    if problem := _metric_name_problem(metric.name):
        c.note("metric.name", problem)

    stop_doc = doc.get("stop") or {}
    stop: dict[str, float] = {}
    if not isinstance(stop_doc, Mapping):
        c.note("stop", f"must map metric names to thresholds, got {stop_doc!r}")
    else:
        for key, value in stop_doc.items():
            if problem := _metric_name_problem(str(key)):
                c.note(f"stop.{key}", problem)
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                c.note(f"stop.{key}", f"must be a number, got {value!r}")
            else:
                stop[str(key)] = value
        if "env_steps" in stop:
            c.note("stop.env_steps", "the env-step budget is budget.env_steps; remove it from stop")

    k = c.section(doc, "checkpoint", {"every_env_steps", "keep"})
    checkpoint = CheckpointSpec(
        every_env_steps=c.number(k, "every_env_steps", "checkpoint.every_env_steps", integer=True, minimum=1),
        keep=c.number(k, "keep", "checkpoint.keep", integer=True, minimum=1),
    )

    evaluation = None
    if doc.get("evaluation") is not None:
        e = c.section(doc, "evaluation", {"episodes", "every_env_steps"})
        evaluation = EvaluationSpec(
            episodes=c.number(e, "episodes", "evaluation.episodes", integer=True, minimum=1, default=10),
            every_env_steps=c.number(e, "every_env_steps", "evaluation.every_env_steps", integer=True, minimum=1),
        )
    policies = _parse_policies(c, doc.get("policies"), space)
    fail = c.section(doc, "failure", {"max_retries"})
    failure = FailureSpec(
        max_retries=c.number(fail, "max_retries", "failure.max_retries", integer=True, minimum=0, default=1)
    )
    if metric.name.startswith("eval_") and evaluation is None:
        c.note("metric.name", f"{metric.name!r} needs an 'evaluation' section")

    storage = c.string(doc, "storage", "storage", default="./rlsweep_results")
    r = c.section(doc, "ray", {"address", "num_cpus"})
    ray_spec = RaySpec(
        address=c.string(r, "address", "ray.address"),
        num_cpus=c.number(r, "num_cpus", "ray.num_cpus", integer=True, minimum=1),
    )
    mlflow_spec: MlflowSpec | None = MlflowSpec()
    if "mlflow" in doc and doc["mlflow"] in (None, False):
        mlflow_spec = None
    else:
        f = c.section(doc, "mlflow", {"tracking_uri", "experiment", "export", "live"})
        export, live = f.get("export", True), f.get("live", False)
        if not isinstance(export, bool):
            c.note("mlflow.export", f"must be true or false, got {export!r}")
            export = True
        if not isinstance(live, bool):
            c.note("mlflow.live", f"must be true or false, got {live!r}")
            live = False
        mlflow_spec = MlflowSpec(
            tracking_uri=c.string(f, "tracking_uri", "mlflow.tracking_uri", default=MlflowSpec.tracking_uri),
            experiment=c.string(f, "experiment", "mlflow.experiment", default=MlflowSpec.experiment),
            export=export,
            live=live,
        )

    if c.problems:
        return None, c.problems
    return (
        SweepSpec(
            name=name,
            algorithm=algorithm,
            env=env,
            env_config=dict(env_config),
            config=dict(config),
            search_space=space,
            searcher=searcher,
            scheduler=scheduler,
            budget=budget,
            metric=metric,
            stop=stop,
            checkpoint=checkpoint,
            evaluation=evaluation,
            policies=policies,
            failure=failure,
            storage=storage,
            ray=ray_spec,
            mlflow=mlflow_spec,
            document=dict(document),
        ),
        [],
    )

