"""The sweep document: its schema (each field's type, default and doc, declared once), loading YAML
safely, and checking a document's shape with every problem at its spec path.

Names are kept as written: which searcher and scheduler a spec gets when it names none, what a preset
fills in, and whether the pair runs together is the strategy registry's call
(:mod:`rlsweep.schedulers`); what needs RLlib (algorithm names, config arguments, resources) is
pre-flight's (:mod:`rlsweep.trainables`). This module imports neither, nor Ray; :func:`rlsweep.load_spec`
runs all three and reports every problem together.
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import ConfigDict, Field, StrictBool, field_validator, StrictFloat, StrictInt, StrictStr, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from rlsweep._dotted import set_in
from rlsweep._schema import Section, check_field
from rlsweep.errors import Problem, SpecError, shorten
from rlsweep.metrics import metric_name_problem
from rlsweep.seeds import SEED_PATH
from rlsweep.search_spaces._domains import SearchSpace, domain_json_schema, parse_search_space

#: Where a sweep's MLflow runs go unless the spec says otherwise: a SQLite file in the working directory.
DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
DEFAULT_STORAGE = "./rlsweep_results"

#: The search-space path that picks one of the spec's named ``policies`` setups.
POLICIES_PATH = "policies"

Text = Annotated[StrictStr, Field(min_length=1)]
PositiveInt = Annotated[StrictInt, Field(ge=1)]
NonNegativeInt = Annotated[StrictInt, Field(ge=0)]
Seconds = Annotated[StrictFloat, Field(ge=1, allow_inf_nan=False)]
FiniteFloat = Annotated[StrictFloat, Field(allow_inf_nan=False)]
#: numpy's and every searcher's seed range.
Seed = Annotated[StrictInt, Field(ge=0, le=2**32 - 1)]


class SearcherSpec(Section):
    """``searcher:`` (or just its name). Options beyond ``name`` and ``seed`` belong to the searcher and
    are checked by its registry entry."""

    model_config = ConfigDict(extra="allow")

    name: Text | None = None
    """random | grid | optuna | hyperopt | bayesopt | bohb | nevergrad | ax; default: chosen from the scheduler and the space"""
    seed: Seed | None = None
    """seed of the searcher's draws (0 to 2**32 - 1): the same spec then tries the same configs"""

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class SchedulerSpec(Section):
    """``scheduler:`` (or just its name). Options beyond ``name`` belong to the scheduler and are checked
    by its registry entry; every time option is in env steps."""

    model_config = ConfigDict(extra="allow")

    name: Text | None = None
    """fifo | asha | hyperband | median | pbt | pb2 | bohb; default: chosen from the searcher"""

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class BudgetSpec(Section):
    env_steps: Annotated[StrictInt, Field(ge=1, le=10**12)]
    """environment steps per trial: the scheduler's time unit"""
    trials: Annotated[StrictInt, Field(ge=1, le=1_000_000)] = 4
    """how many trials (configs) the sweep runs"""
    max_concurrent: Annotated[StrictInt, Field(ge=1, le=100_000)] | None = None
    """at most this many trials at once; default: as many as the cluster's CPUs hold, following nodes that
    join or leave while the sweep runs"""
    time_s: Seconds | None = None
    """wall-clock cap for the whole sweep, in seconds"""


class SeedsSpec(Section):
    per_trial: PositiveInt = 1
    """training seeds per trial: each trial trains its configuration on this many seeds in lockstep, in
    its own process and CPUs, one after the other (so a trial takes about per_trial times as long)"""
    aggregate: Literal["mean", "median", "iqm", "min"] = "iqm"
    """what the searcher and the scheduler see of a trial's seeds: mean | median | iqm (interquartile mean)
    | min (the worst seed under metric.mode)"""
    tuning: Annotated[list[NonNegativeInt], Field(min_length=2, max_length=2)] = [0, 99]
    """the range (inclusive) each trial's training seeds (RLlib's debugging.seed) are drawn from"""
    test: Annotated[list[NonNegativeInt], Field(min_length=2, max_length=2)] = [1000, 1999]
    """the range (inclusive) of held-out seeds rlsweep confirm trains on: disjoint from tuning"""

    @field_validator("tuning", "test")
    @classmethod
    def _ordered(cls, seeds: list[int]) -> list[int]:
        if seeds[0] > seeds[1]:
            raise ValueError(f"is [low, high] with low <= high, got {seeds}")
        return seeds


class MetricSpec(Section):
    name: Text = "return_mean"
    """the metric the searcher and scheduler optimize: an rlsweep name or rllib/<RLlib key>"""
    mode: Literal["min", "max"] = "max"
    """whether higher or lower is better"""


class CheckpointSpec(Section):
    every_env_steps: PositiveInt | None = None
    """checkpoint every this many env steps; default: a tenth of the budget"""
    keep: PositiveInt | None = None
    """checkpoints kept per trial, best first; default: the scheduler's (2; all for PBT/PB2)"""


class EvaluationSpec(Section):
    episodes: PositiveInt = 10
    """greedy evaluation episodes each time"""
    every_env_steps: PositiveInt | None = None
    """evaluate every this many env steps; default: once, at the budget"""


class FailureSpec(Section):
    """What happens when a trial fails (an env raises, a loss turns NaN): it restarts from its latest
    checkpoint up to ``max_retries`` times, then is recorded as failed while the sweep goes on."""

    max_retries: NonNegativeInt = 1
    """restarts from the latest checkpoint before a trial counts as failed"""


class RaySpec(Section):
    address: Text | None = None
    """null: start a local runtime; "auto" or "ray://host:port" joins a cluster"""
    num_cpus: Annotated[StrictInt, Field(ge=1, le=4096)] | None = None
    """CPUs of the local runtime; default: the machine's"""
    reuse_actors: StrictBool = True
    """run a new trial in a finished trial's worker process (Tune's reuse_actors), saving the process start
    and the imports of torch and RLlib for each trial"""
    memory_check: StrictBool = True
    """before launch, train one trial at the search space's most memory-hungry corner for two iterations
    and measure every process's peak memory (5-30 s); each trial then reserves that much of Ray's memory,
    so no more trials run at once than fit, and validate prints it. false: trials reserve no memory"""


#: RLlib keys every row keeps as ``rllib/<key>`` unless ``report.rllib_keys`` says otherwise: what explains
#: a learning curve (losses, entropy, KL, explained variance, learning rate, gradient norm, SAC's alpha and
#: Q values, steps trained), RLlib's own timers and the node's CPU and memory use. RLlib reports about 90
#: keys for PPO; these are about 20 of them.
DEFAULT_RLLIB_KEYS = (
    "learners/*/*loss*", "learners/*/entropy", "learners/*/curr_*", "learners/*/vf_explained_var",
    "learners/*/*learning_rate", "learners/*/gradients_*", "learners/*/alpha*", "learners/*/qf_*",
    "learners/*/num_module_steps_trained", "timers/*", "perf/*", "time_this_iter_s",
    "num_training_step_calls_per_iteration",
)


class ReportSpec(Section):
    """What each trial writes per iteration beside rlsweep's normalized metrics."""

    rllib_keys: list[Text] = list(DEFAULT_RLLIB_KEYS)
    """RLlib result keys each row keeps as rllib/<key>: glob patterns over RLlib's flattened keys
    (learners/*/policy_loss); ["*"] keeps all of them, [] none. Keys named in metric or stop are always kept"""
    tune_loggers: list[Literal["csv", "tensorboard"]] = []
    """Tune's own per-trial logs beside result.json: csv (progress.csv), tensorboard (event files); off by
    default, as they repeat result.json and are most of a trial folder's size"""


class MlflowSpec(Section):
    tracking_uri: Text = DEFAULT_TRACKING_URI
    """the MLflow store: a SQLite file, a directory or an http(s) server"""
    experiment: Text = "rlsweep"
    """the MLflow experiment the sweep's runs go to"""
    export: StrictBool = True
    """export the sweep when it ends"""
    live: StrictBool = False
    """also log results while the sweep runs"""


class TracingSpec(Section):
    otlp_endpoint: Text | None = None
    """an OTLP/HTTP receiver (an OpenTelemetry Collector, Jaeger, Tempo): its base URL
    (http://127.0.0.1:4318) or its traces URL (.../v1/traces); default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
    OTEL_EXPORTER_OTLP_ENDPOINT. OTEL_EXPORTER_OTLP_HEADERS are sent too"""
    to: Literal["mlflow"] | None = None
    """mlflow: the sweep's MLflow tracking server's own OTLP endpoint, into the sweep's experiment (needs an
    http(s) mlflow.tracking_uri)"""
    service_name: Annotated[StrictStr, Field(min_length=1, max_length=100)] = "rlsweep"
    """the spans' service.name"""


class CurriculumSpec(Section):
    """``curriculum:``: the task every env runner's envs train on, set after each iteration (RLlib's
    ``TaskSettableEnv`` contract: the env has ``set_task(task)`` and ``get_task()``)."""

    fn: Text | None = None
    """module:function called after each iteration, once per env, as RLlib's old env_task_fn:
    (train_result, env, env_context) -> the env's next task"""
    schedule: list[Annotated[list[StrictInt | StrictFloat | StrictStr], Field(min_length=2, max_length=2)]] | None = None
    """[[env_steps, task], ...] from 0 up: from each entry's env steps on, the envs train on its task"""

    def task_at(self, env_steps: int) -> Any:
        """The schedule's task at ``env_steps`` (its last entry at or before them)."""
        task = None
        for start, value in self.schedule or ():
            if start <= env_steps:
                task = value
        return task


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


_SETUP_SCHEMA = {
    "type": "object",
    "properties": {
        "map": {"type": "object", "additionalProperties": {"type": "string"},
                "description": "agent id or glob pattern -> policy id; the first match wins"},
        "train": {"type": "array", "items": {"type": "string"}, "description": "the policies that learn (default: all)"},
    },
    "required": ["map"],
    "additionalProperties": False,
}
_POLICIES_SCHEMA = {"anyOf": [_SETUP_SCHEMA, {"type": "object", "additionalProperties": _SETUP_SCHEMA}, {"type": "null"}]}
_SEARCH_SPACE_SCHEMA = {"type": "object", "additionalProperties": domain_json_schema()}
_DOTTED_KEYS = {"type": "object", "propertyNames": {"pattern": r"^[^.]+\..+$"}}


class SweepSpec(Section):
    """A validated sweep. ``document`` is the spec as written (after ``--set`` overrides)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, title="rlsweep spec")

    name: Annotated[StrictStr, Field(min_length=1, max_length=100)] = "sweep"
    """experiment name (at most 100 characters): the folder under storage and the MLflow parent run; default: the file's name"""
    algorithm: Text
    """any RLlib algorithm name: PPO, APPO, IMPALA, DQN, SAC, ..."""
    env: Text
    """a gymnasium id, or "package.module:EnvClass\""""
    env_config: dict[str, Any] = {}
    """passed to the env constructor"""
    config: Annotated[dict[str, Any], WithJsonSchema(_DOTTED_KEYS)] = {}
    """fixed RLlib settings, addressed as AlgorithmConfig method.argument (training.lr)"""
    search_space: Annotated[SearchSpace, WithJsonSchema(_SEARCH_SPACE_SCHEMA)] = SearchSpace()
    """parameter path -> domain ({loguniform: [low, high]}, {choice: [...]}, ...) or a fixed value"""
    preset: Text | None = None
    """a named searcher + scheduler pairing (optuna-asha, bohb, pbt, ...)"""
    searcher: SearcherSpec = SearcherSpec()
    """which searcher proposes configs"""
    scheduler: SchedulerSpec = SchedulerSpec()
    """which scheduler stops, pauses or perturbs trials"""
    budget: BudgetSpec
    """per-trial env steps, trials, concurrency"""
    seeds: SeedsSpec = SeedsSpec()
    """training seeds: the range each trial's seed is drawn from (debugging.seed in config or search_space
    overrides it)"""
    metric: MetricSpec = MetricSpec()
    """what "best" means"""
    stop: dict[str, FiniteFloat] = {}
    """per-trial thresholds that end a trial early: metric -> value"""
    checkpoint: CheckpointSpec = CheckpointSpec()
    """how often a trial checkpoints and how many it keeps"""
    evaluation: EvaluationSpec | None = None
    """separate greedy evaluation episodes (reported as eval_return_mean)"""
    policies: Annotated[dict[str, PolicySetup], WithJsonSchema(_POLICIES_SCHEMA)] = {}
    """multi-agent: {map: {agent: policy}, train: [...]}, or named setups search_space.policies picks from"""
    failure: FailureSpec = FailureSpec()
    """retries of a failed trial"""
    report: ReportSpec = ReportSpec()
    """which RLlib keys each result row keeps, and Tune's own loggers"""
    storage: Text = DEFAULT_STORAGE
    """where experiment directories go: a folder path, not a URI (on a multi-node cluster, a shared filesystem such as NFS mounted at the same path on every node)"""
    ray: RaySpec = RaySpec()
    """the Ray runtime or cluster"""
    mlflow: MlflowSpec | None = MlflowSpec()
    """where the sweep is logged; null or false: not at all"""
    tracing: TracingSpec | None = None
    """OpenTelemetry spans of the sweep and every trial, to an OTLP/HTTP receiver or MLflow; off by default"""
    curriculum: CurriculumSpec | None = None
    """curriculum learning: the task the envs train on, from a function or a schedule in env steps"""
    document: SkipJsonSchema[dict[str, Any]] = Field(default={}, exclude=True)

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


#: The document's top-level keys, in the schema's order.
TOP_LEVEL = tuple(name for name in SweepSpec.model_fields if name != "document")


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec document as rlsweep's schema declares it (searcher and scheduler
    options are added by the registry: :func:`rlsweep.schedulers.spec_json_schema`)."""
    schema = SweepSpec.model_json_schema()
    properties = schema["properties"]
    for name in ("searcher", "scheduler"):
        properties[name] = {"anyOf": [{"type": "string"}, properties[name]], "description": properties[name].get("description", "")}
    properties["mlflow"]["anyOf"].append({"const": False})
    for name in set(properties) - set(schema.get("required", [])):
        # ``section:`` with every line under it commented out is YAML's null: the section's defaults.
        _allow_null(properties[name], schema["$defs"])
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def _allow_null(prop: dict[str, Any], defs: dict[str, Any]) -> None:
    """Let a property's schema accept null too, keeping its own errors specific (no wrapping anyOf)."""
    if "$ref" in prop:
        target = defs[prop["$ref"].rsplit("/", 1)[-1]]
        target["type"] = [target["type"], "null"] if isinstance(target.get("type"), str) else target.get("type")
    elif "anyOf" in prop:
        if {"type": "null"} not in prop["anyOf"]:
            prop["anyOf"].append({"type": "null"})
    elif isinstance(prop.get("type"), str):
        prop["type"] = [prop["type"], "null"]


# --- YAML ----------------------------------------------------------------------------------------------


#: What a spec may be, whatever it holds: a file's size, how deep it nests, and how many values it holds
#: with every YAML alias expanded (an alias bomb of 10^8 values in 1 KB is refused, not expanded).
MAX_SPEC_BYTES, MAX_DEPTH, MAX_VALUES, MAX_STRING = 2_000_000, 40, 200_000, 100_000


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser where installed: 10x faster
    """The safe loader (no object construction) that also refuses duplicate keys, which YAML would
    otherwise resolve silently to the last one, and keys that are not plain scalars."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"keys must be plain values, got a {type(key).__name__} (line {mark.line + 1})", mark
            )
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
        _check_size(source, "")
        return copy.deepcopy(dict(source))
    path = Path(source)
    try:
        if path.stat().st_size > MAX_SPEC_BYTES:
            raise SpecError(f"the spec file is {path.stat().st_size:,} bytes; a spec is at most {MAX_SPEC_BYTES:,}", str(path))
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read spec file: {exc.strerror or exc}", str(path)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SpecError(f"not UTF-8 text: byte {data[exc.start]:#x} at line {line}", str(path)) from None
    document = parse_yaml(text, str(path))
    document.setdefault("name", path.stem)
    return document


def _check_size(document: Any, where: str) -> None:
    """Refuse a document that nests deeper than :data:`MAX_DEPTH`, refers to itself, holds a string over
    :data:`MAX_STRING` characters or an integer over 64 bits, or expands to more than :data:`MAX_VALUES`
    values. Shared parts (YAML aliases, a list reused in a dict) count each time they are used, yet each
    is walked once. Problems name the spec path (the first way to reach the value)."""
    sizes: dict[int, int] = {}
    open_ids: set[int] = set()
    stack: list[tuple[Any, int, bool, str]] = [(document, 0, False, "")]
    while stack:
        value, depth, closing, path = stack.pop()
        here = path or where
        if isinstance(value, Mapping):
            children = [(f"{path}.{k}" if path else str(k), c) for k, v in value.items() for c in (k, v)]
        else:
            children = [(f"{path}[{i}]", c) for i, c in enumerate(value)]
        if closing:
            open_ids.discard(id(value))
            total = 1 + sum(sizes.get(id(c), 1) if isinstance(c, (Mapping, list, tuple)) else 1 for _, c in children)
            sizes[id(value)] = total
            if total > MAX_VALUES:
                raise SpecError(f"expands to over {MAX_VALUES:,} values (YAML aliases count each time they are "
                                "used); write the values a sweep needs", here)
            continue
        if id(value) in sizes:
            continue
        if depth > MAX_DEPTH:
            raise SpecError(f"nests deeper than {MAX_DEPTH} levels", here)
        open_ids.add(id(value))
        stack.append((value, depth, True, path))
        for child_path, child in children:
            if isinstance(child, (Mapping, list, tuple)):
                if id(child) in open_ids:
                    raise SpecError("refers to itself (a recursive YAML alias)", child_path)
                stack.append((child, depth + 1, False, child_path))
            elif isinstance(child, str) and len(child) > MAX_STRING:
                raise SpecError(f"holds a string of {len(child):,} characters; at most {MAX_STRING:,}", child_path)
            elif isinstance(child, int) and child.bit_length() > 64:
                raise SpecError(f"is an integer of {child.bit_length():,} bits; a spec's integers fit in 64 bits", child_path)


def parse_yaml(text: str, where: str) -> dict[str, Any]:
    """A spec document from YAML text; problems name ``where`` with line and column."""
    try:
        document = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else where
        if "nesting depth" in str(exc.problem):  # libyaml's own limit (PyYAML 6.0.3+ built with it)
            raise SpecError(f"invalid YAML: nests deeper than {MAX_DEPTH} levels ({exc.problem})", at) from None
        raise SpecError(f"invalid YAML: {exc.problem or exc}", at) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"invalid YAML: {exc}", where) from None
    except RecursionError:
        raise SpecError(f"invalid YAML: nests deeper than {MAX_DEPTH} levels", where) from None
    except ValueError as exc:  # an integer of thousands of digits (Python's limit on int(str))
        raise SpecError(f"invalid YAML: a value YAML cannot hold as a number ({str(exc).split(';')[0]})", where) from None
    if not isinstance(document, dict):
        raise SpecError(f"a spec must be a YAML mapping, got {type(document).__name__}", where)
    _check_size(document, where)
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
            set_in(document, [head, tail], value)
        else:
            set_in(document, key.split("."), value)
    if problems:
        raise SpecError(problems)
    return document


# --- checking ------------------------------------------------------------------------------------------

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: Sections that ``null`` or ``false`` switch off, rather than leaving at their default.
_SWITCHABLE = {"mlflow"}
#: Sections whose mappings hold user values, where null is a value (an env's or RLlib's argument).
_VALUES_MAY_BE_NULL = {"env_config", "config", "stop"}
#: Fields parsed by their own code (their errors are more specific than a type's).
_CUSTOM = {"search_space", "policies"}


def parse_spec(document: Mapping[str, Any]) -> tuple[SweepSpec | None, list[Problem]]:
    """Check the document's shape and build a :class:`SweepSpec`; returns it (or None) and every problem.

    Each top-level section is checked on its own, so a problem in one hides none in another.
    """
    problems: list[Problem] = []
    doc = dict(document)
    unknown = sorted(set(doc) - set(TOP_LEVEL), key=str)
    shown = 10  # a handful says what is wrong; the rest are counted, so other problems still show
    for key in unknown[:shown]:
        problems.append(Problem(str(key), f"unknown key; expected one of {sorted(TOP_LEVEL)}"))
    if len(unknown) > shown:
        problems.append(Problem("", f"... and {len(unknown) - shown:,} more unknown top-level keys"))

    values: dict[str, Any] = {}
    for name in TOP_LEVEL:
        if name in _CUSTOM:
            continue
        raw = doc.get(name)
        if name in _SWITCHABLE and name in doc and raw in (None, False):
            values[name] = None
            continue
        if raw is None:
            if SweepSpec.model_fields[name].is_required():
                problems.append(Problem(name, "is required"))
            continue
        if name in ("searcher", "scheduler") and isinstance(raw, str):
            raw = {"name": raw}
        if isinstance(raw, Mapping) and name not in _VALUES_MAY_BE_NULL:
            # ``key: ~`` inside a section means its default, as when the key is left out.
            raw = {k: v for k, v in raw.items() if v is not None}
        value, found = check_field(SweepSpec, name, raw, name)
        problems += found
        if found and isinstance(raw, Mapping):
            # The section's valid keys still take part in the rules between sections.
            bad = {p.path.split(".")[1] for p in found if p.path.count(".") >= 1}
            value, still = check_field(SweepSpec, name, {k: v for k, v in raw.items() if k not in bad}, name)
            found = still
        if not found:
            values[name] = value

    space, space_problems = parse_search_space(doc.get("search_space"))
    problems += space_problems
    problems += _cross_section_problems(doc, values, space)
    setups, policy_problems = _parse_policies(doc.get("policies"), space)
    problems += policy_problems
    if problems:
        return None, problems
    return SweepSpec.model_construct(**values, search_space=space, policies=setups, document=dict(document)), []


#: What YAML 1.1 reads as a string although a user meant a number: an exponent without a dot (1e-3) or
#: without a sign (1.0e3).
_NUMBER_AS_TEXT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$")


def _as_yaml_float(text: str) -> str:
    """``text`` as a float YAML 1.1 reads as one: a dot in the mantissa and a signed exponent."""
    mantissa, exponent = f"{float(text):.15e}".split("e")
    mantissa = mantissa.rstrip("0")
    return f"{mantissa}0e{exponent}" if mantissa.endswith(".") else f"{mantissa}e{exponent}"


def _numbers_read_as_text(doc: Mapping[str, Any]) -> list[Problem]:
    """``training.lr: 1e-3`` is the string '1e-3' to YAML (it needs 1.0e-3): RLlib then fails on a string
    with a message about something else. Say so at the path, for fixed settings and searched values."""
    found = []
    config, space = doc.get("config"), doc.get("search_space")
    for section, mapping in (("config", config), ("search_space", space)):
        if not isinstance(mapping, Mapping):
            continue
        for path, value in mapping.items():
            candidates = [value]
            if isinstance(value, Mapping):
                candidates = [v for k, v in value.items() if k != "when"]
                candidates = [x for v in candidates for x in (v if isinstance(v, list) else [v])]
            for candidate in candidates:
                if isinstance(candidate, str) and _NUMBER_AS_TEXT.match(candidate.strip()):
                    found.append(Problem(f"{section}.{path}", f"{candidate!r} is text to YAML, not a number; write "
                                         f"{_as_yaml_float(candidate)} (YAML needs a dot and a signed exponent)"))
    return found


def storage_problem(storage: str) -> str | None:
    """Why ``storage`` cannot hold sweeps, or None. rlsweep writes and reads its experiment directories with
    local file operations, so a URI (``s3://bucket``) would become a local folder named ``s3:``; on a
    cluster, storage is a shared filesystem mounted at the same path on every node."""
    if "://" in storage:
        return (f"must be a folder path, not a URI (on a multi-node cluster, a shared filesystem such as NFS "
                f"mounted at the same path on every node), got {shorten(storage)}")
    if Path(storage).expanduser().is_file():
        return f"is a file, not a folder: {shorten(storage)}"
    return None


def _cross_section_problems(doc: Mapping[str, Any], values: Mapping[str, Any], space: SearchSpace) -> list[Problem]:
    """Rules between sections, checked on whatever sections parsed."""
    problems = _numbers_read_as_text(doc)
    storage = values.get("storage")
    if isinstance(storage, str) and (problem := storage_problem(storage)):
        problems.append(Problem("storage", problem))
    name = values.get("name")
    if isinstance(name, str) and (not _NAME_RE.match(name) or ".." in name):
        problems.append(Problem("name", f"must be a folder name of letters, digits, '.', '_' and '-' (no '..'), got {name!r}"))
    config = values.get("config", {})
    for key in config:
        if "." not in key:
            problems.append(Problem(f"config.{key}", "keys are 'method.argument' paths on the algorithm's config, e.g. training.lr"))
    for path in space.paths:
        if "." not in path and path != POLICIES_PATH:
            problems.append(Problem(f"search_space.{path}", "keys are 'method.argument' paths on the algorithm's config, e.g. training.lr"))
        if path in config:
            problems.append(Problem(f"search_space.{path}", "is also set in config; set a parameter in one place only"))

    budget = values.get("budget")
    grid_size = space.grid_size()
    if budget is not None and grid_size > 1 and budget.trials % grid_size:
        problems.append(
            Problem(
                "budget.trials",
                f"must be a multiple of the grid's {grid_size} points (each point runs trials/{grid_size} times), "
                f"got {budget.trials}",
            )
        )
    metric = values.get("metric")
    if metric is not None:
        if problem := metric_name_problem(metric.name):
            problems.append(Problem("metric.name", problem))
        elif metric.name.startswith("eval_") and values.get("evaluation") is None:
            problems.append(Problem("metric.name", f"{metric.name!r} needs an 'evaluation' section"))
    for key in values.get("stop", {}):
        if problem := metric_name_problem(key):
            problems.append(Problem(f"stop.{key}", problem))
        elif key == "env_steps":
            problems.append(Problem("stop.env_steps", "the env-step budget is budget.env_steps; remove it from stop"))
    seeds = values.get("seeds")
    if seeds is not None:
        low, high = seeds.tuning
        if seeds.per_trial > high - low + 1:
            problems.append(Problem(
                "seeds.per_trial",
                f"{seeds.per_trial} distinct seeds per trial do not fit in seeds.tuning {seeds.tuning}; widen the "
                "range or lower per_trial",
            ))
        if seeds.test[0] <= high and low <= seeds.test[1]:
            problems.append(Problem(
                "seeds.test",
                f"{seeds.test} overlaps seeds.tuning {seeds.tuning}: a configuration is confirmed on seeds no trial "
                "trained with; make the two ranges disjoint",
            ))
    if seeds is not None and seeds.per_trial > 1:
        for where in (f"config.{SEED_PATH}", f"search_space.{SEED_PATH}"):
            if SEED_PATH in (config if where.startswith("config") else space.paths):
                problems.append(Problem(
                    where,
                    f"sets one training seed, but seeds.per_trial is {seeds.per_trial}: each trial draws its "
                    "seeds from seeds.tuning; remove it, or set seeds.per_trial to 1",
                ))
    problems += _tracing_problems(values.get("tracing"), values.get("mlflow", MlflowSpec()))
    problems += _curriculum_problems(values.get("curriculum"))
    return problems


def _curriculum_problems(curriculum: CurriculumSpec | None) -> list[Problem]:
    if curriculum is None:
        return []
    if (curriculum.fn is None) == (curriculum.schedule is None):
        return [Problem("curriculum", "set either fn (module:function) or schedule ([[env_steps, task], ...]), one of them")]
    if curriculum.fn is not None and ":" not in curriculum.fn:
        return [Problem("curriculum.fn", f"expects module:function, got {shorten(curriculum.fn)}")]
    schedule = curriculum.schedule or []
    if curriculum.schedule is not None:
        for i, (start, _) in enumerate(schedule):
            if not isinstance(start, int) or start < 0:
                return [Problem(f"curriculum.schedule.{i}", f"starts with env steps, a whole number >= 0; got {shorten(start)}")]
        if not schedule or schedule[0][0] != 0:
            return [Problem("curriculum.schedule", f"must start at 0 env steps (the task the trial starts on), got {shorten(schedule)}")]
        steps = [start for start, _ in schedule]
        if any(b <= a for a, b in zip(steps, steps[1:])):
            return [Problem("curriculum.schedule", f"env steps must rise from entry to entry, got {steps}")]
    return []


def _tracing_problems(tracing: TracingSpec | None, mlflow: MlflowSpec | None) -> list[Problem]:
    """Where the spans go must be known, and reachable by the means the section names."""
    from rlsweep import tracing as otel

    if tracing is None:
        return []
    problems = []
    if missing := otel.missing_modules():
        problems.append(Problem(
            "tracing", f"needs opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http ({', '.join(missing)} not "
            "found); install them with: pip install 'rlsweep[tracing]'",
        ))
    if tracing.to is not None and tracing.otlp_endpoint is not None:
        problems.append(Problem("tracing", "set either otlp_endpoint or to: mlflow, not both"))
    elif tracing.to == "mlflow":
        uri = mlflow.tracking_uri if mlflow is not None else None
        if uri is None or not uri.startswith(("http://", "https://")):
            problems.append(Problem(
                "tracing.to",
                f"'mlflow' sends spans to an MLflow tracking server's OTLP endpoint, but mlflow.tracking_uri is "
                f"{shorten(uri) if uri else 'unset (mlflow: null)'}; start `mlflow server` and set mlflow.tracking_uri "
                "to its http:// address, or send spans to a collector with tracing.otlp_endpoint",
            ))
    elif tracing.otlp_endpoint is None and otel.endpoint_from_environment() is None:
        problems.append(Problem(
            "tracing", "names no receiver: set otlp_endpoint (e.g. http://127.0.0.1:4318), to: mlflow, or the "
            "OTEL_EXPORTER_OTLP_ENDPOINT environment variable",
        ))
    if tracing.otlp_endpoint is not None and not tracing.otlp_endpoint.startswith(("http://", "https://")):
        problems.append(Problem("tracing.otlp_endpoint", f"must be an http(s) URL (OTLP/HTTP), got {shorten(tracing.otlp_endpoint)}"))
    return problems


def _policy_setup(name: str, doc: Any, path: str, problems: list[Problem]) -> PolicySetup | None:
    if not isinstance(doc, Mapping):
        problems.append(Problem(path, f"must be a mapping with 'map' (agent id -> policy id) and optional 'train', got {doc!r}"))
        return None
    for unknown in sorted(set(doc) - {"map", "train"}, key=str):
        problems.append(Problem(f"{path}.{unknown}", "unknown key; expected 'map' and optionally 'train'"))
    mapping = doc.get("map")
    if not isinstance(mapping, Mapping) or not mapping:
        problems.append(Problem(f"{path}.map", f"must map agent ids (or glob patterns like '*') to policy ids, got {mapping!r}"))
        return None
    rules = []
    for agent, policy in mapping.items():
        if not isinstance(policy, str) or not policy:
            problems.append(Problem(f"{path}.map.{agent}", f"must be a policy id (a string), got {policy!r}"))
            return None
        rules.append((str(agent), policy))
    ids = tuple(dict.fromkeys(policy for _, policy in rules))
    train = doc.get("train", list(ids))
    if not isinstance(train, list) or not all(isinstance(t, str) for t in train) or not train:
        problems.append(Problem(f"{path}.train", f"must be a non-empty list of policy ids, got {train!r}"))
        return None
    for policy in train:
        if policy not in ids:
            problems.append(Problem(f"{path}.train", f"{policy!r} is not a policy of this setup's map; its policies: {list(ids)}"))
    return PolicySetup(name=name, rules=tuple(rules), train=tuple(train))


def _parse_policies(doc: Any, space: SearchSpace) -> tuple[dict[str, PolicySetup], list[Problem]]:
    """``policies: {map: ..., train: ...}`` (one setup) or ``policies: {name: {map: ...}, ...}`` (setups a
    search space picks from with ``search_space.policies: {choice: [name, ...]}``)."""
    problems: list[Problem] = []
    where = f"search_space.{POLICIES_PATH}"
    if doc is None:
        if POLICIES_PATH in space.paths:
            problems.append(Problem(where, "picks one of the spec's 'policies' setups, but there is none"))
        return {}, problems
    if not isinstance(doc, Mapping) or not doc:
        return {}, [Problem("policies", f"must be a mapping: {{map: ..., train: ...}} or named setups, got {doc!r}")]
    named = {"default": doc} if "map" in doc else dict(doc)
    setups = {}
    for name, setup_doc in named.items():
        setup = _policy_setup(str(name), setup_doc, "policies" if "map" in doc else f"policies.{name}", problems)
        if setup:
            setups[str(name)] = setup
    if POLICIES_PATH in space.paths:
        domain = next(p.domain for p in space if p.path == POLICIES_PATH)
        values = (domain.value,) if hasattr(domain, "value") else getattr(domain, "values", None)
        if values is None or not all(isinstance(v, str) for v in values):
            problems.append(Problem(where, f"must be a choice or grid of setup names {sorted(setups)}"))
        else:
            problems += [
                Problem(where, f"{value!r} is not a setup under 'policies'; setups: {sorted(setups)}")
                for value in values
                if value not in setups
            ]
    elif len(setups) > 1:
        problems.append(
            Problem(
                "policies",
                f"names {len(setups)} setups {sorted(setups)}; pick one per trial with "
                f"{where}: {{choice: {sorted(setups)}}}, or keep one",
            )
        )
    return setups, problems
