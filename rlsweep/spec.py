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
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import ConfigDict, Field, StrictBool, field_validator, StrictFloat, StrictInt, StrictStr, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from rlsweep._dotted import INDEX_RULE, list_index, set_in, set_in_lists
from rlsweep._host import http_url_problem, storage_problem, tracking_uri_problem, url_text_problem
from rlsweep._schedules import Schedule, is_schedule
from rlsweep._schedules import budget_problems as schedule_budget_problems
from rlsweep._schedules import parse as parse_schedule
from rlsweep._schema import Section, check_field
from rlsweep.errors import Problem, SpecError, shorten
from rlsweep.metrics import SEEDS_METRIC, metric_name_problem
from rlsweep.seeds import DEFAULT_CONTENDER_SHARE, SEED_PATH
from rlsweep.search_spaces._domains import (
    Choice,
    SearchSpace,
    domain_json_schema,
    drawn_values,
    parse_search_space,
    whole_number_range,
)

#: Where a sweep's MLflow runs go unless the spec says otherwise: a SQLite file in the working directory.
DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
DEFAULT_STORAGE = "./rlsweep_results"

#: The search-space path that picks one of the spec's named ``policies`` setups.
POLICIES_PATH = "policies"

Text = Annotated[StrictStr, Field(min_length=1)]
Seconds = Annotated[StrictFloat, Field(ge=1, allow_inf_nan=False)]
#: A count of environment steps: a trial's budget, an interval in it.
EnvSteps = Annotated[StrictInt, Field(ge=1, le=10**12)]
FiniteFloat = Annotated[StrictFloat, Field(allow_inf_nan=False)]
#: numpy's and every searcher's seed range.
Seed = Annotated[StrictInt, Field(ge=0, le=2**32 - 1)]
#: The largest training seed (``seeds.tuning``, ``seeds.test``, ``debugging.seed``): RLlib seeds numpy with
#: the seed plus the env runner's index (plus 1,000,000 on evaluation runners), and numpy takes seeds below
#: 2**32; half that range leaves room for any number of runners.
MAX_TRAINING_SEED = 2**31 - 1
#: The most ``updates_per_env_step`` a spec may ask for.
MAX_UPDATES_PER_ENV_STEP = 1000
TrainingSeed = Annotated[StrictInt, Field(ge=0, le=MAX_TRAINING_SEED)]


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
    env_steps: EnvSteps
    """environment steps per trial: the scheduler's time unit"""
    trials: Annotated[StrictInt, Field(ge=1, le=1_000_000)] = 4
    """how many trials (configs) the sweep runs"""
    max_concurrent: Annotated[StrictInt, Field(ge=1, le=100_000)] | None = None
    """at most this many trials at once; default: as many as the cluster's CPUs hold, following nodes that
    join or leave while the sweep runs"""
    time_s: Seconds | None = None
    """wall-clock cap for the whole sweep, in seconds"""


class SeedsSpec(Section):
    per_trial: Annotated[StrictInt, Field(ge=1, le=100)] = 1
    """training seeds per trial (at most 100): each trial trains its configuration on this many seeds in
    lockstep, in its own process and CPUs, one after the other (so a trial takes about per_trial times as long);
    a row is one iteration of every seed, its env_steps the least of the seeds' counts (with vectorized envs
    they differ by a few steps)"""
    aggregate: Literal["mean", "median", "iqm", "min", "lcb"] = "iqm"
    """what the searcher and the scheduler see of a trial's seeds: mean | median | iqm (interquartile mean)
    | min (the worst seed under metric.mode) | lcb (the mean less one standard error of it, towards the worse
    side under metric.mode: a lucky seed among several counts least; needs per_trial >= 2)"""
    adaptive: StrictBool = False
    """false: every trial trains all per_trial seeds from its start | true: a trial starts on one seed and
    adds the next at each check (at k/per_trial of budget.env_steps, k = 1 .. per_trial - 1) only while it is
    a contender: its aggregate then ranks in the best contender_share of every trial's at that check. The
    added seed trains from zero to the trial's env steps before the trial reports again, so a row's values
    are always over seeds at the same env steps (its ``seeds`` metric says how many); needs per_trial >= 2"""
    contender_share: Annotated[float, Field(gt=0, lt=1)] | None = None
    """with adaptive: the share of trials, at each check, that add a seed (default 0.5; strictly between 0
    and 1; the first trials to reach a check, with too few others to rank against, add one)"""
    tuning: Annotated[list[TrainingSeed], Field(min_length=2, max_length=2)] = [0, 99]
    """the range (inclusive, within 0 to 2**31 - 1) each trial's training seeds (RLlib's debugging.seed) are drawn from"""
    test: Annotated[list[TrainingSeed], Field(min_length=2, max_length=2)] = [1000, 1999]
    """the range (inclusive, within 0 to 2**31 - 1) of held-out seeds rlsweep confirm trains on: disjoint from tuning"""

    @property
    def contenders(self) -> float:
        """The share of trials that add a seed at a check (``contender_share`` or its default)."""
        return DEFAULT_CONTENDER_SHARE if self.contender_share is None else self.contender_share

    @field_validator("tuning", "test")
    @classmethod
    def _ordered(cls, seeds: list[int]) -> list[int]:
        if seeds[0] > seeds[1]:
            raise ValueError(f"is [low, high] with low <= high, got {seeds}")
        return seeds


class HoldoutSpec(Section):
    """The held-out stage: after the search, its best configurations are retrained on test seeds no trial
    trained with (seeds.test), raced over those seeds, and the winner is chosen and reported by its held-out
    score with a 95% interval, beside its tuning value."""

    share: Annotated[float, Field(gt=0, lt=1)] = 0.3
    """the stage's share of the sweep's budgeted env steps (budget.trials x seeds.per_trial x
    budget.env_steps), strictly between 0 and 1: each held-out run trains one configuration on one test seed
    for budget.env_steps, so the share affords floor(share x trials x per_trial) runs"""
    candidates: Annotated[StrictInt, Field(ge=1, le=64)] = 4
    """at most this many of the search's best configurations enter the race (successive halving over seeds:
    the better half goes on each round); with fewer than 10 held-out runs only the best by tuning value is
    retrained, on all of them"""
    min_seeds: Annotated[StrictInt, Field(ge=2, le=1000)] = 6
    """the least test seeds the winner is scored on (an interval needs two; from fewer than 6, its interval
    covers the score on new seeds too rarely)"""
    max_runs: Annotated[StrictInt, Field(ge=2, le=100_000)] = 40
    """the most held-out runs, whatever the share affords (a sweep of thousands of trials spends the rest on
    searching; 40 leave the winner 20 test seeds or more)"""
    score_range: Annotated[list[FiniteFloat], Field(min_length=2, max_length=2)] | None = None
    """[lowest, highest] a run's greedy evaluation can score, where the task has known bounds (CartPole-v1:
    [0, 500]; Acrobot-v1: [-500, 0]): the winner's interval is clipped to it, and a held-out run of the winner
    that fails (errors, diverges or stops short of the budget) counts as the lowest score in its estimate
    instead of being left out; a finished run scoring outside it shows the range wrong for the task, and the
    answer is then given unclipped, saying so; default: unknown, nothing clipped"""

    @field_validator("score_range")
    @classmethod
    def _low_below_high(cls, bounds: list[float] | None) -> list[float] | None:
        if bounds is not None and not bounds[0] < bounds[1]:
            raise ValueError(f"is [lowest, highest] with lowest < highest, got {bounds}")
        return bounds


class MetricSpec(Section):
    name: Text = "return_mean"
    """the metric the searcher and scheduler optimize: an rlsweep name or rllib/<RLlib key>"""
    mode: Literal["min", "max"] = "max"
    """whether higher or lower is better"""


class CheckpointSpec(Section):
    every_env_steps: EnvSteps | None = None
    """checkpoint every this many env steps; default: a tenth of the budget"""
    keep: Annotated[StrictInt, Field(ge=1, le=10_000)] | None = None
    """checkpoints kept per trial (at most 10,000), best first; default: the scheduler's (2; all for PBT/PB2)"""


class EvaluationSpec(Section):
    episodes: Annotated[StrictInt, Field(ge=1, le=10_000)] = 10
    """greedy evaluation episodes each time (at most 10,000: each evaluation runs them all before the trial
    goes on)"""
    every_env_steps: EnvSteps | None = None
    """evaluate every this many env steps; default: once, at the budget"""


class FailureSpec(Section):
    """What happens when a trial fails (an env raises, a loss turns NaN): it restarts from its latest
    checkpoint up to ``max_retries`` times, then is recorded as failed while the sweep goes on."""

    max_retries: Annotated[StrictInt, Field(ge=0, le=100)] = 1
    """restarts from the latest checkpoint before a trial counts as failed (at most 100: a trial that fails
    each time would otherwise restart for ever)"""


class RaySpec(Section):
    address: Text | None = None
    """null: start a local runtime of the sweep's own (or join RAY_ADDRESS if it is set), never a cluster
    another `ray start` on the machine left running; "auto", "host:port" or "ray://host:port" joins a cluster"""
    num_cpus: Annotated[StrictInt, Field(ge=1, le=4096)] | None = None
    """CPUs of the local runtime; default: the machine's"""
    reuse_actors: StrictBool = True
    """run a new trial in a finished trial's worker process (Tune's reuse_actors), saving the process start
    and the imports of torch and RLlib for each trial"""
    memory_check: StrictBool | Literal["measure"] = True
    """before launch, find what one trial at the search space's most memory-hungry corner needs; each trial
    then reserves that much of Ray's memory, so no more trials run at once than fit, and validate prints it.
    true: a reading an earlier command kept for the same spec, versions and machine; else, where even twice
    an upper bound from the trial's settings fits the nodes for every trial the CPUs run at once, that
    bound (no wait); else train the trial for two iterations and measure every process's peak (a trial's start-up
    and two iterations of wait).
    measure: always a measurement (kept or new). false: trials reserve no memory"""


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
    trial_runs: Annotated[StrictInt, Field(ge=0, le=1_000_000)] | Literal["all"] = 200
    """at most this many trials get a child run with their curves: where the sweep has more, the best this many
    by the metric (avg-last-3) get one, and trials that already have one keep it up to date; every trial's
    config and final values go to the parent run as trials.csv either way (past a few thousand runs MLflow's
    pages and run searches slow to a crawl); all: a child run for every trial"""

    @field_validator("trial_runs", mode="before")
    @classmethod
    def _trial_runs(cls, value: Any) -> Any:
        # One clear error, not one per member of the union (a count's bounds, then "must be 'all'").
        if value == "all" or (type(value) is int and 0 <= value <= 1_000_000):
            return value
        raise ValueError(f"is a whole number of trials from 0 to 1,000,000, or all; got {value!r}")


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


#: Why ``normalize.rewards`` is refused: RLlib 2.60's new API stack has no reward-normalizing connector
#: (its connectors: ray/rllib/connectors/{env_to_module,module_to_env,learner}).
NO_REWARD_NORMALIZATION = (
    "RLlib's new API stack has no reward-normalizing connector (only MeanStdFilter, for observations), so "
    "rlsweep cannot normalize rewards the way RLlib trains; set it to false (scale rewards in the env, or with "
    "a gymnasium wrapper such as NormalizeReward in an env class of your own)"
)


class NormalizeSpec(Section):
    """``normalize:``: running mean/std normalization, through RLlib's own connectors. Its statistics live in
    each checkpoint, so load_policy, evaluate, confirm and the eval rule act on what training saw."""

    observations: StrictBool = False
    """normalize observations with RLlib's MeanStdFilter env-to-module connector (running mean and std per
    element, clipped to +-10; statistics saved in every checkpoint and used by every evaluation)"""
    rewards: StrictBool = False
    """normalize rewards: refused, as RLlib's new API stack has no reward-normalizing connector"""

    @field_validator("rewards")
    @classmethod
    def _rewards_supported(cls, rewards: bool) -> bool:
        if rewards:
            raise ValueError(f"{NO_REWARD_NORMALIZATION}; got true")
        return rewards


#: The old API stack's observation filter setting, which RLlib's new API stack (rlsweep's) never reads.
OLD_OBSERVATION_FILTER = "env_runners.observation_filter"


def _old_filter_problems(config: Mapping[str, Any], space: SearchSpace) -> list[Problem]:
    """``env_runners.observation_filter: MeanStdFilter`` would train on raw observations without a word;
    ``normalize.observations`` is what does it on the new stack. (``NoFilter``, its default, is harmless.)"""
    rule = ("is the old API stack's observation filter, which RLlib's new API stack ignores; "
            "set normalize.observations: true for its MeanStdFilter connector")
    problems = []
    if OLD_OBSERVATION_FILTER in config and config[OLD_OBSERVATION_FILTER] != "NoFilter":
        problems.append(Problem(f"config.{OLD_OBSERVATION_FILTER}", f"{rule}; got {shorten(config[OLD_OBSERVATION_FILTER])}"))
    if OLD_OBSERVATION_FILTER in space.paths:
        problems.append(Problem(f"search_space.{OLD_OBSERVATION_FILTER}", rule))
    return problems


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
    """fixed RLlib settings, addressed as AlgorithmConfig method.argument (training.lr); a value may be a
    schedule over env steps (see Schedules)"""
    # The schema's default is what a user writes ({}); a SearchSpace() instance as the default showed its
    # internal fields there ({"parameters": [], "schedules": []}), which an editor would insert.
    search_space: Annotated[SearchSpace, WithJsonSchema({**_SEARCH_SPACE_SCHEMA, "default": {}})] = Field(default_factory=SearchSpace)
    """parameter path -> domain ({loguniform: [low, high]}, {choice: [...]}, ...), a fixed value, or a schedule
    whose numbers may be domains (see Schedules)"""
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
    holdout: HoldoutSpec | None = Field(default_factory=HoldoutSpec)
    """the held-out stage after the search, on by default (left out, it runs where its share affords the
    winner's least seeds, floor(0.3 x trials x per_trial) >= 6, and is skipped, saying so, where it does
    not); null or false: none, the sweep reports the best trial's own value on its tuning seeds"""
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
    normalize: NormalizeSpec = NormalizeSpec()
    """observation (and reward) normalization through RLlib's connectors; statistics saved in checkpoints"""
    critic: Literal["rllib", "concat"] = "rllib"
    """SAC's Q networks: rllib (RLlib's default: observation and action in two streams, then a fusion network)
    or concat (Stable-Baselines3's critic: one MLP of fcnet_hiddens on the observation and the action
    concatenated: its shape, about a tenth of the parameters, about half the CPU per env step); SAC only,
    single-agent, continuous actions and flat observations"""
    updates_per_env_step: Annotated[StrictFloat, Field(gt=0, le=MAX_UPDATES_PER_ENV_STEP, allow_inf_nan=False)] | None = None
    """SAC and DQN: gradient updates per env step sampled, whatever each trial's batch size and
    rollout_fragment_length (RLlib's training_intensity, set per trial from the trial's total train batch
    size and env runners); with rollout_fragment_length k, one env and no remote env runners, k env steps are
    sampled and then k times this many updates run (rounded as RLlib rounds its ratio), as Stable-Baselines3's
    train_freq with gradient_steps does. Unset: RLlib's own ratio"""
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
        with path.open("rb") as file:  # bounded: a device or a pipe has no size to check first (/dev/zero)
            data = file.read(MAX_SPEC_BYTES + 1)
        if len(data) > MAX_SPEC_BYTES:
            raise SpecError(f"the spec file holds more than {MAX_SPEC_BYTES:,} bytes; a spec is at most that", str(path))
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
        except ValueError as exc:  # an integer of thousands of digits (Python's limit on int(str))
            problems.append(Problem(f"--set {key}", f"a value YAML cannot hold as a number ({str(exc).split(';')[0]})"))
            continue
        head, _, tail = key.partition(".")
        if head in ("config", "search_space", "env_config", "stop") and tail:
            set_in(document, [head, tail], value)
            continue
        try:  # a list on the way (curriculum.schedule.1.0) is indexed, not replaced by a mapping
            set_in_lists(document, key.split("."), value)
        except ValueError as exc:
            problems.append(Problem(f"--set {key}", str(exc)))
    if problems:
        raise SpecError(problems)
    if overrides:  # what --set put in holds to the document's limits too (an integer's 64 bits)
        _check_size(document, "")
    return document


# --- checking ------------------------------------------------------------------------------------------

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: Sections that ``null`` or ``false`` switch off, rather than leaving at their default.
_SWITCHABLE = {"mlflow", "holdout"}
#: Sections whose mappings hold user values, where null is a value (an env's or RLlib's argument).
_VALUES_MAY_BE_NULL = {"env_config", "config", "stop"}
#: Fields parsed by their own code (their errors are more specific than a type's).
_CUSTOM = {"search_space", "policies"}


def parse_spec(document: Mapping[str, Any], *, ran: bool = False) -> tuple[SweepSpec | None, list[Problem]]:
    """Check the document's shape and build a :class:`SweepSpec`; returns it (or None) and every problem.

    Each top-level section is checked on its own, so a problem in one hides none in another.

    Args:
        ran: The document of a sweep that already ran, read back (``status``, ``best``, ``export``): only
            what reading it needs is checked. Whether it could run here (its storage folder on this machine,
            its numbers, seeds and URIs under rules added since) is launching's concern: a sweep copied
            from a cluster, or made by an older rlsweep, still reads.
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
    problems += _cross_section_problems(doc, values, space, ran=ran)
    setups, policy_problems = _parse_policies(doc.get("policies"), space)
    problems += policy_problems
    if problems:
        return None, problems
    return SweepSpec.model_construct(**values, search_space=space, policies=setups, document=dict(document)), []


#: What YAML 1.1 reads as a string although a user meant a number: an exponent without a dot (1e-3) or
#: without a sign (1.0e3).
_NUMBER_AS_TEXT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$", re.ASCII)


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
                if not (isinstance(candidate, str) and _NUMBER_AS_TEXT.match(candidate.strip())):
                    continue
                if not math.isfinite(float(candidate)):  # 1e309: past a float's range, even written as one
                    found.append(Problem(f"{section}.{path}", f"{shorten(candidate)} is text to YAML, and as a "
                                         f"number it is past a float's range (about 1.8e308); write a finite number"))
                else:
                    found.append(Problem(f"{section}.{path}", f"{candidate!r} is text to YAML, not a number; write "
                                         f"{_as_yaml_float(candidate)} (YAML needs a dot and a signed exponent)"))
    return found


#: RLlib settings where +inf is a value RLlib documents: no clamping (its DefaultModelConfig). Nowhere else is a
#: NaN or an infinity a setting RLlib can train with.
INFINITY_ALLOWED = frozenset({"rl_module.model_config.log_std_clip_param"})
#: How many problems of one kind a section reports before counting the rest.
_SHOWN_PER_KIND = 10


def _non_finite(value: Any, path: str) -> list[tuple[str, float]]:
    """Every NaN or infinite float in ``value`` (nested mappings and lists, walked with a stack), with its
    path: ``path.key`` below a mapping, ``path[i]`` in a list."""
    found = []
    stack = [(path, value)]
    while stack:
        here, item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                found.append((here, item))
        elif isinstance(item, Mapping):
            stack.extend((f"{here}.{k}", v) for k, v in reversed(item.items()))
        elif isinstance(item, (list, tuple)):
            stack.extend((f"{here}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return found


def _non_finite_problems(config: Mapping[str, Any], env_config: Mapping[str, Any], space: SearchSpace) -> list[Problem]:
    """NaN and infinities in RLlib settings, fixed or searched (a searched choice's are refused as it is
    parsed, at any depth here), and NaN in env_config: each trial would fail, or train on NaN, minutes in.
    An env may take an infinity (a Box's bound, no horizon), so env_config keeps those."""
    found: list[tuple[str, str, float]] = []  # (where, setting, number)
    for key, value in config.items():
        found += [(f"config.{setting}", setting, number) for setting, number in _non_finite(value, str(key))]
    for parameter in space:
        values = drawn_values(parameter.domain)
        for i, value in enumerate(values or ()):
            at = f".{parameter.domain.kind}[{i}]" if isinstance(parameter.domain, Choice) else ""
            found += [(f"search_space.{parameter.path}{at}{setting[len(parameter.path):]}", setting, number)
                      for setting, number in _non_finite(value, parameter.path)]
    found = [(where, setting, number) for where, setting, number in found
             if not (number == math.inf and setting in INFINITY_ALLOWED)]
    problems = [Problem(where, f"is {number}: an RLlib setting is a finite number (+inf only where RLlib documents "
                               f"it: {', '.join(sorted(INFINITY_ALLOWED))})") for where, _, number in found]
    for key, value in env_config.items():
        problems += [Problem(f"env_config.{where}", "is nan, which equals no number (not even itself); give the env a number")
                     for where, number in _non_finite(value, str(key)) if math.isnan(number)]
    if len(problems) > _SHOWN_PER_KIND:
        problems = problems[:_SHOWN_PER_KIND] + [Problem("config", f"... and {len(problems) - _SHOWN_PER_KIND:,} more "
                                                                   "numbers that are not finite")]
    return problems


_SEED_RULE = ("a training seed is a whole number from 0 to 2**31 - 1 (RLlib seeds numpy with it plus the env runner's "
              "index, and numpy takes seeds below 2**32)")


def _seed_problems(config: Mapping[str, Any], space: SearchSpace) -> list[Problem]:
    """``debugging.seed`` set in config, or searched, keeps a training seed's range in every draw."""
    problems = []
    seed = config.get(SEED_PATH)
    if seed is not None and not (isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed <= MAX_TRAINING_SEED):
        problems.append(Problem(f"config.{SEED_PATH}", f"{_SEED_RULE}; got {shorten(seed)}"))
    for parameter in space:
        if parameter.path != SEED_PATH:
            continue
        bounds = whole_number_range(parameter.domain)
        if bounds is None:
            problems.append(Problem(f"search_space.{SEED_PATH}", f"{_SEED_RULE}; search it with randint, choice or grid "
                                    f"of whole numbers, got a {parameter.domain.kind} domain"))
        elif bounds[0] < 0 or bounds[1] > MAX_TRAINING_SEED:
            problems.append(Problem(f"search_space.{SEED_PATH}", f"{_SEED_RULE}; its {parameter.domain.kind} domain draws "
                                    f"from {bounds[0]} to {bounds[1]}"))
    return problems


def _holdout_problems(holdout: HoldoutSpec | None, budget: BudgetSpec | None, seeds: SeedsSpec | None) -> list[Problem]:
    """What keeps the held-out stage from running as the spec sets it: the runs its share affords against
    the winner's least seeds, and the test seeds the race takes against seeds.test. Only a section the spec
    gives is checked: a stage left at its default that the budget cannot afford is skipped, saying so."""
    if holdout is None or budget is None or seeds is None:
        return []
    from rlsweep.holdout import plan_race, race_budget

    if holdout.max_runs < holdout.min_seeds:
        return [Problem("holdout.max_runs", f"must be at least holdout.min_seeds ({holdout.min_seeds}), the least test "
                                            f"seeds the winner is scored on; got {holdout.max_runs}")]
    try:
        runs = race_budget(holdout.share, budget.trials, seeds.per_trial, holdout.max_runs)
        # The worst case: one trial finishes, and it takes every run, each on a test seed of its own.
        plan_race(["0"], runs, test_range=(seeds.test[0], seeds.test[1]),
                  env_steps=budget.env_steps, min_seeds=holdout.min_seeds, max_candidates=holdout.candidates)
    except SpecError as exc:
        return list(exc.problems)
    return []


def _cross_section_problems(
    doc: Mapping[str, Any], values: Mapping[str, Any], space: SearchSpace, *, ran: bool = False
) -> list[Problem]:
    """Rules between sections, checked on whatever sections parsed (``ran``: see :func:`parse_spec`)."""
    problems = _numbers_read_as_text(doc)
    storage = values.get("storage")
    if not ran and isinstance(storage, str) and (problem := storage_problem(storage)):
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
    problems += _old_filter_problems(config, space)

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
    problems += _holdout_problems(values.get("holdout"), budget, values.get("seeds", SeedsSpec()))
    metric = values.get("metric")
    if metric is not None:
        if problem := metric_name_problem(metric.name):
            problems.append(Problem("metric.name", problem))
        elif metric.name.startswith("eval_") and values.get("evaluation") is None:
            problems.append(Problem("metric.name", f"{metric.name!r} needs an 'evaluation' section"))
        elif metric.name == SEEDS_METRIC:
            problems.append(Problem("metric.name", f"{SEEDS_METRIC!r} counts the training seeds a row is over, not how well "
                                                   "a configuration does: name a return, such as 'return_mean'"))
    for key in values.get("stop", {}):
        if problem := metric_name_problem(key):
            problems.append(Problem(f"stop.{key}", problem))
        elif key == "env_steps":
            problems.append(Problem("stop.env_steps", "the env-step budget is budget.env_steps; remove it from stop"))
        elif key == SEEDS_METRIC and not getattr(values.get("seeds"), "adaptive", False):
            problems.append(Problem(f"stop.{key}", "rows report how many seeds they are over only with seeds.adaptive: "
                                                   "true; set it, or remove this stop"))
    seeds = values.get("seeds")
    if seeds is not None:
        low, high = seeds.tuning
        if seeds.per_trial > high - low + 1:
            problems.append(Problem(
                "seeds.per_trial",
                f"{seeds.per_trial} distinct seeds per trial do not fit in seeds.tuning {seeds.tuning}; widen the "
                "range or lower per_trial",
            ))
        if seeds.aggregate == "lcb" and seeds.per_trial < 2:
            problems.append(Problem(
                "seeds.aggregate",
                f"lcb (the mean less its standard error over a trial's seeds) needs seeds.per_trial >= 2, got "
                f"{seeds.per_trial}: set per_trial, or another aggregate",
            ))
        if seeds.adaptive and seeds.aggregate in ("lcb", "min"):
            problems.append(Problem(
                "seeds.aggregate",
                f"{seeds.aggregate} ranks a trial on several seeds below one on a single seed of the same mean (its "
                "spread, or its worst seed, counts against it), and with seeds.adaptive trials hold different "
                "numbers of seeds: use iqm, mean or median",
            ))
        if seeds.adaptive and seeds.per_trial < 2:
            problems.append(Problem(
                "seeds.adaptive",
                f"adds seeds up to seeds.per_trial while a trial is a contender, so it needs per_trial >= 2, got "
                f"{seeds.per_trial}: set per_trial (the most seeds a trial trains), or remove adaptive",
            ))
        if seeds.contender_share is not None and not seeds.adaptive:
            problems.append(Problem(
                "seeds.contender_share",
                f"{seeds.contender_share} is read only with seeds.adaptive: true (a trial adds seeds while it is a "
                "contender); set adaptive, or remove contender_share",
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
    problems += _curriculum_problems(values.get("curriculum"), space)
    problems += _schedule_problems(config, space, values.get("budget"), budget_given="budget" in doc)
    if ran:
        return problems
    live, budget = values.get("mlflow"), values.get("budget")
    if (live is not None and budget is not None and live.live and live.trial_runs != "all"
            and budget.trials > live.trial_runs):
        problems.append(Problem(
            "mlflow.live",
            f"live logging gives every trial a child run as it reports, but budget.trials is {budget.trials:,}, over "
            f"mlflow.trial_runs ({live.trial_runs:,}), past which only the best trials get one (the best are known "
            "at the end): set live: false (the export at the end logs the best trials' runs and every trial in "
            "trials.csv), or trial_runs: all",
        ))
    if "curriculum" in values or "curriculum" not in doc:  # a curriculum that did not parse has its problems
        problems += _curriculum_parameter_problems(values.get("curriculum"), space)
    problems += _non_finite_problems(config, values.get("env_config", {}), space)
    problems += _seed_problems(config, space)
    mlflow = values.get("mlflow", MlflowSpec())
    if mlflow is not None and (problem := tracking_uri_problem(mlflow.tracking_uri)):
        problems.append(Problem("mlflow.tracking_uri", problem))
    ray = values.get("ray")
    if ray is not None and ray.address is not None and (problem := url_text_problem(ray.address)):
        problems.append(Problem("ray.address", problem))
    problems += _tracing_problems(values.get("tracing"), mlflow)
    return problems


def _schedule_problems(config: Mapping[str, Any], space: SearchSpace, budget: BudgetSpec | None, *, budget_given: bool) -> list[Problem]:
    """Schedules in ``config`` parse as in ``search_space`` (numbers only), fit in the trial's budget, and
    set a setting in one place. (Which settings RLlib can schedule is pre-flight's to check.)"""
    problems = []
    scheduled: list[tuple[str, Schedule]] = []
    for path, value in config.items():
        if is_schedule(value):
            schedule, _, found = parse_schedule(value, searchable=False)
            problems += [Problem(f"config.{path}.{sub}", message) for sub, message in found]
            if schedule is not None:
                scheduled.append((f"config.{path}", schedule))
    for path, schedule in space.schedules:
        scheduled.append((f"search_space.{path}", schedule))
        if path in config:
            problems.append(Problem(f"search_space.{path}", "is also set in config; set a parameter in one place only"))
    for where, schedule in scheduled:
        if budget is not None:
            problems += [Problem(f"{where}.{sub}", message) for sub, message in schedule_budget_problems(schedule, budget.env_steps)]
        elif not budget_given:  # an invalid budget has its own problem already
            problems.append(Problem(where, "a schedule runs over the trial's env steps: it needs budget.env_steps"))
    return problems


def _curriculum_problems(curriculum: CurriculumSpec | None, space: SearchSpace) -> list[Problem]:
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
        return _searched_schedule_problems(schedule, space)
    return []


#: Where a search space sets a value of the curriculum (``curriculum.schedule.<entry>.<0 or 1>``).
CURRICULUM_PREFIX = "curriculum."


def curriculum_slot(path: str) -> tuple[int, int] | None:
    """The schedule entry and the slot in it (0 its env steps, 1 its task) that the search-space path
    ``curriculum.schedule.<entry>.<slot>`` sets, or None for any other path. The one reader of these paths:
    each index is read by :func:`rlsweep._dotted.list_index`."""
    parts = path.split(".")
    if len(parts) != 4 or parts[:2] != ["curriculum", "schedule"]:
        return None
    entry, slot = list_index(parts[2]), list_index(parts[3])
    if entry is None or slot not in (0, 1):
        return None
    return entry, slot


def _curriculum_parameter_problems(curriculum: CurriculumSpec | None, space: SearchSpace) -> list[Problem]:
    """Every search-space path under ``curriculum.`` sets an entry's env steps or task of the written
    schedule, named with indices as a list is indexed everywhere."""
    schedule = curriculum.schedule if curriculum is not None else None
    problems = []
    for path in space.paths:
        if not path.startswith(CURRICULUM_PREFIX):
            continue
        slot = curriculum_slot(path)
        if slot is not None and schedule is not None and slot[0] < len(schedule):
            continue
        size = f"{len(schedule)} entries" if schedule is not None else "no curriculum.schedule"
        parts = path.split(".")
        bad = [part for part in parts[2:4] if list_index(part) is None] if len(parts) == 4 else []
        why = f"; {INDEX_RULE}, got {bad[0]!r}" if bad else ""
        problems.append(Problem(f"search_space.{path}", f"a curriculum parameter is curriculum.schedule.<entry>.<0 for "
                                f"its env steps, 1 for its task>, of an entry the spec's schedule has ({size}){why}"))
    return problems


def _searched_schedule_problems(schedule: list[list[Any]], space: SearchSpace) -> list[Problem]:
    """Every draw of the searched schedule values keeps the rules of a written schedule: whole env steps,
    0 first, rising in the entries' order (each searched start's range between its neighbours'), and
    tasks that are numbers or strings. (A path that names no entry is :func:`_curriculum_parameter_problems`'s.)"""
    searched = {}
    for parameter in space:
        slot = curriculum_slot(parameter.path)
        if slot is not None and slot[0] < len(schedule):
            searched[slot] = parameter
    if not searched:
        return []
    problems = []
    ranges: list[tuple[int, int] | None] = []
    for i, (start, _) in enumerate(schedule):
        parameter = searched.get((i, 0))
        if parameter is None:
            ranges.append((start, start))
            continue
        where, kind = f"search_space.{parameter.path}", parameter.domain.kind
        bounds = whole_number_range(parameter.domain)
        if bounds is None:
            problems.append(Problem(where, f"entry {i}'s start is a whole number of env steps; search it with randint, "
                                    f"choice or grid of whole numbers, got a {kind} domain"))
            ranges.append(None)
            continue
        if parameter.when:  # inactive, the written start holds
            bounds = (min(bounds[0], start), max(bounds[1], start))
        if i == 0 and bounds != (0, 0):
            problems.append(Problem(where, f"the schedule starts at 0 env steps (the task a trial starts on) in every "
                                    f"draw, but this {kind} domain draws from {bounds[0]} to {bounds[1]}; search a later "
                                    "entry's start instead"))
        ranges.append(bounds)
    for i in range(1, len(ranges)):
        before, here = ranges[i - 1], ranges[i]
        if before is None or here is None or here[0] > before[1]:
            continue
        parameter = searched.get((i, 0)) or searched[i - 1, 0]
        span = lambda r: str(r[0]) if r[0] == r[1] else f"{r[0]} to {r[1]}"  # noqa: E731
        problems.append(Problem(
            f"search_space.{parameter.path}",
            f"every draw must keep the schedule's env steps rising in its order, but entry {i - 1} starts at "
            f"{span(before)} and entry {i} at {span(here)}; make the ranges follow one another",
        ))
    for (_entry, j), parameter in sorted(searched.items()):
        odd = [v for v in drawn_values(parameter.domain) or () if isinstance(v, bool) or not isinstance(v, (int, float, str))]
        if j == 1 and odd:
            problems.append(Problem(f"search_space.{parameter.path}", f"a task is a number or a string, as in a written "
                                    f"schedule; got {shorten(odd[0])}"))
    return problems


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
    if tracing.otlp_endpoint is not None and (problem := http_url_problem(tracing.otlp_endpoint)):
        problems.append(Problem("tracing.otlp_endpoint", f"{problem} (an OTLP/HTTP receiver's URL)"))
    elif tracing.otlp_endpoint is None and tracing.to is None and (url := otel.endpoint_from_environment()):
        if problem := http_url_problem(url):
            problems.append(Problem("tracing", f"the receiver from OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT {problem}"))
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
    if doc is None or (isinstance(doc, Mapping) and not doc):  # left out or empty, like every other section
        if POLICIES_PATH in space.paths:
            problems.append(Problem(where, "picks one of the spec's 'policies' setups, but there is none"))
        return {}, problems
    if not isinstance(doc, Mapping):
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
