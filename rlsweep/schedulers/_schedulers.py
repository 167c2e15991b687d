"""The trial schedulers a spec can name. Their time unit is always the lifetime env-step count."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, StrictBool, StrictFloat, StrictInt, WithJsonSchema

from rlsweep._schema import Section
from rlsweep.errors import IncompatibleError, Problem, shorten
from rlsweep.metrics import EVALUATION_METRICS
from rlsweep.schedulers._base import EVERY_REPORT, TIME_ATTR, CheckpointRule, SchedulerEntry
from rlsweep.search_spaces import Fixed, explore_into_domains, mutation_compiler
from rlsweep.spec import POLICIES_PATH

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

EnvSteps = Annotated[StrictInt, Field(ge=1)]


def _two_positive_numbers(value: Any) -> Any:
    if not (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(f, (int, float)) and not isinstance(f, bool) and 0 < f < math.inf for f in value)
    ):
        raise ValueError(f"must be two positive numbers (finite), got {shorten(value)}")
    return [float(f) for f in value]


def evaluated_metric(spec: SweepSpec) -> int | None:
    """The evaluation interval when the metric is an evaluation's (fresh only every so many env steps)."""
    if spec.metric.name in EVALUATION_METRICS and spec.evaluation is not None:
        return spec.evaluation.every_env_steps or spec.budget.env_steps
    return None


def on_evaluation(spec: SweepSpec, grace: int) -> int:
    """A default grace moved up to the next evaluation when the metric is an evaluation's: the first rung
    then compares every trial on an evaluation it has just run, not on none yet or a stale one."""
    every = evaluated_metric(spec)
    return grace if every is None else -(-grace // every) * every


class _Budgeted(Section):
    max_env_steps: EnvSteps | None = None
    """env steps of the longest trial the scheduler plans for (default: budget.env_steps)"""

    def max_t(self, spec: SweepSpec) -> int:
        return int(self.max_env_steps or spec.budget.env_steps)


class _Halving(_Budgeted):
    grace_env_steps: EnvSteps | None = None
    """env steps every trial gets before it can be stopped (default: max_env_steps / reduction_factor^2)"""
    reduction_factor: Annotated[StrictFloat, Field(gt=1, le=100, allow_inf_nan=False)] = 3
    """keep 1/reduction_factor of the trials at each rung"""

    def grace(self, spec: SweepSpec) -> int:
        return int(self.grace_env_steps or on_evaluation(spec, max(1, int(self.max_t(spec) / self.reduction_factor**2))))


class AshaOptions(_Halving):
    brackets: Annotated[StrictInt, Field(ge=1, le=10)] = 1
    """number of brackets (1 to 10; each is a grace period reduction_factor times the last)"""


class HyperBandOptions(_Halving):
    stop_last_trials: StrictBool = True
    """stop the trials that reach max_env_steps (false: let them run on)"""


class MedianOptions(Section):
    grace_env_steps: EnvSteps | None = None
    """env steps every trial gets before it can be stopped (default: budget / 4)"""
    min_samples_required: EnvSteps = 3
    """trials that must have reported before any is stopped"""
    hard_stop: StrictBool = True
    """stop a trailing trial (false: pause it, so it can resume later)"""

    def max_t(self, spec: SweepSpec) -> int:
        return spec.budget.env_steps

    def grace(self, spec: SweepSpec) -> int:
        return int(self.grace_env_steps or on_evaluation(spec, max(1, int(self.max_t(spec) / 4))))


class Pb2Options(Section):
    perturbation_env_steps: EnvSteps | None = None
    """env steps between a trial's exploit/explore steps (default: budget / 10)"""
    quantile_fraction: Annotated[StrictFloat, Field(gt=0, le=0.5, allow_inf_nan=False)] = 0.25
    """fraction of trials that copy (bottom) and are copied (top)"""
    synch: StrictBool = False
    """perturb all trials at once (slower trials hold up the rest)"""
    lossy: StrictBool = False
    """accept a lossy conversion of a domain the scheduler cannot mutate exactly"""

    def interval(self, spec: SweepSpec) -> int:
        return int(self.perturbation_env_steps or max(1, spec.budget.env_steps // 10))


class PbtOptions(Pb2Options):
    burn_in_env_steps: Annotated[StrictInt, Field(ge=0)] = 0
    """env steps before the first perturbation"""
    resample_probability: Annotated[StrictFloat, Field(ge=0, le=1, allow_inf_nan=False)] = 0.25
    """chance a mutated value is redrawn from its domain instead of perturbed"""
    perturbation_factors: Annotated[
        list[StrictFloat],
        BeforeValidator(_two_positive_numbers),
        WithJsonSchema({"type": "array", "items": {"type": "number", "exclusiveMinimum": 0}, "minItems": 2, "maxItems": 2}),
    ] = [1.2, 0.8]
    """factors a continuous value is multiplied by when perturbed"""


def _budget_problems(spec: SweepSpec, options: Any) -> list[Problem]:
    max_t = options.max_t(spec)
    if max_t > spec.budget.env_steps:
        return [Problem("scheduler.max_env_steps", f"must be at most budget.env_steps={spec.budget.env_steps}, got {max_t}")]
    every = evaluated_metric(spec)
    if every is not None and every >= max_t:
        return [
            Problem(
                "evaluation.every_env_steps",
                f"the metric {spec.metric.name!r} is evaluated every {every} env steps, not before the scheduler's "
                f"max_env_steps={max_t}, so no rung can compare trials on it: evaluate more often "
                f"(every {max(1, max_t // 9)}, say) or use metric return_mean",
            )
        ]
    if (grace := options.grace(spec)) >= max_t:
        return [
            Problem(
                "scheduler.grace_env_steps",
                f"must be below the scheduler's max_env_steps={max_t} or no trial is ever stopped early, got {grace}",
            )
        ]
    if every is not None and grace % every:
        return [
            Problem(
                "scheduler.grace_env_steps",
                f"the metric {spec.metric.name!r} is fresh every {every} env steps (evaluation.every_env_steps); "
                f"a first rung at {grace} compares trials on a stale or missing evaluation: use a multiple of {every}",
            )
        ]
    return []


class FifoScheduler(SchedulerEntry):
    name = "fifo"
    doc = "run every trial to its budget"

    def build(self, spec: SweepSpec) -> Any:
        from ray.tune.schedulers import FIFOScheduler

        return FIFOScheduler()


class AshaScheduler(SchedulerEntry):
    name = "asha"
    doc = "asynchronous successive halving: stop trials that trail their peers at each rung"
    Options = AshaOptions

    def check(self, spec: SweepSpec, options: Any) -> list[Problem]:
        return _budget_problems(spec, options)

    def build(self, spec: SweepSpec) -> Any:
        from ray.tune.schedulers import AsyncHyperBandScheduler

        options = self.options(spec.scheduler.options)
        return AsyncHyperBandScheduler(
            time_attr=TIME_ATTR,
            max_t=options.max_t(spec),
            grace_period=options.grace(spec),
            reduction_factor=options.reduction_factor,
            brackets=options.brackets,
        )


class HyperBandScheduler(SchedulerEntry):
    name = "hyperband"
    doc = "synchronous HyperBand: brackets of successive halving that pause trials at each rung"
    Options = HyperBandOptions
    #: HyperBandForBOHB instead of HyperBandScheduler.
    bohb: ClassVar[bool] = False

    def check(self, spec: SweepSpec, options: Any) -> list[Problem]:
        return _budget_problems(spec, options)

    def checkpoint_rule(self, spec: SweepSpec) -> CheckpointRule | None:
        # A paused function trial resumes from the checkpoint of the report it was paused at, if there is one,
        # else from an older one, silently rerunning env steps. So every report carries a checkpoint.
        return EVERY_REPORT

    def build(self, spec: SweepSpec) -> Any:
        from rlsweep.schedulers._hyperband import env_step_hyperband

        options = self.options(spec.scheduler.options)
        return env_step_hyperband(
            self.bohb,
            grace=options.grace(spec),
            time_attr=TIME_ATTR,
            max_t=options.max_t(spec),
            reduction_factor=options.reduction_factor,
            stop_last_trials=options.stop_last_trials,
        )


class BohbScheduler(HyperBandScheduler):
    name = "bohb"
    doc = "HyperBand for BOHB: HyperBand brackets whose new trials come from BOHB's model"
    provides = frozenset({"bohb_budgets"})
    requires = frozenset({"bohb_model"})
    requires_reason = (
        "BOHB's model learns from the budgets of the 'bohb' scheduler's brackets; "
        "use preset 'bohb', or scheduler 'hyperband' with another searcher"
    )
    bohb = True


class MedianScheduler(SchedulerEntry):
    name = "median"
    doc = "median stopping rule: stop a trial whose best result is below the median of the others' running means"
    Options = MedianOptions

    def check(self, spec: SweepSpec, options: Any) -> list[Problem]:
        return _budget_problems(spec, options)

    def checkpoint_rule(self, spec: SweepSpec) -> CheckpointRule | None:
        return None if self.options(spec.scheduler.options).hard_stop else EVERY_REPORT

    def build(self, spec: SweepSpec) -> Any:
        from ray.tune.schedulers import MedianStoppingRule

        options = self.options(spec.scheduler.options)
        return MedianStoppingRule(
            time_attr=TIME_ATTR,
            grace_period=options.grace(spec),
            min_samples_required=options.min_samples_required,
            hard_stop=options.hard_stop,
        )


class PbtScheduler(SchedulerEntry):
    name = "pbt"
    doc = "population based training: every perturbation_env_steps, the bottom trials copy a top trial's checkpoint and mutate its hyperparameters"
    Options = PbtOptions
    requires = frozenset({"independent_draws"})
    requires_reason = (
        "PBT explores by mutating running trials, and Tune refuses any other searcher beside it; "
        "use searcher 'random' (its draws are the initial population), or preset 'pbt'"
    )
    restores_other_trials = True
    # Tune prunes checkpoints by score; a trial copied at a perturbation goes on checkpointing, and the copied
    # one, now neither latest nor best, was deleted before the exploiting trial restored it (measured).
    default_keep = None

    def mutations(self, spec: SweepSpec, options: Any) -> dict[str, Any]:
        return mutation_compiler(self.name).compile(spec.search_space, lossy=options.lossy).native

    def check(self, spec: SweepSpec, options: Any) -> list[Problem]:
        problems: list[Problem] = []
        interval = options.interval(spec)
        if interval >= spec.budget.env_steps:
            problems.append(
                Problem(
                    "scheduler.perturbation_env_steps",
                    f"must be below budget.env_steps={spec.budget.env_steps} or no trial is ever perturbed, got {interval}",
                )
            )
        every = spec.checkpoint.every_env_steps
        if every is not None and every > interval:
            problems.append(
                Problem(
                    "checkpoint.every_env_steps",
                    f"{self.name} copies a top trial's checkpoint every perturbation_env_steps={interval}; checkpoints "
                    f"every {every} env steps would hand it a stale one. Set it to at most {interval}, or remove it "
                    "(rlsweep then checkpoints at each perturbation)",
                )
            )
        if spec.checkpoint.keep is not None:
            problems.append(
                Problem(
                    "checkpoint.keep",
                    f"{self.name} restores trials from other trials' checkpoints, and Tune, pruning to the best "
                    f"{spec.checkpoint.keep} by score, can delete one before it is restored; remove checkpoint.keep "
                    f"({self.name} keeps every checkpoint)",
                )
            )
        problems += [
            Problem(
                f"search_space.{parameter.path}",
                f"{self.name} loads a top trial's network weights into the mutated config, and a network or "
                "policies setting can change their shape so they no longer load; set it in config (or keep one "
                "policies setup), or use another scheduler",
            )
            for parameter in spec.search_space
            if (parameter.path.startswith("rl_module.") or parameter.path == POLICIES_PATH)
            and not isinstance(parameter.domain, Fixed)
        ]
        try:
            mutations = self.mutations(spec, options)
        except IncompatibleError as exc:
            return problems + list(exc.problems)
        if not mutations:
            problems.append(
                Problem(
                    "search_space",
                    f"{self.name} needs a mutation space, and no parameter is searched; add one, "
                    "e.g. training.lr: {loguniform: [1.0e-5, 1.0e-3]}",
                )
            )
        return problems

    def checkpoint_rule(self, spec: SweepSpec) -> CheckpointRule | None:
        options = self.options(spec.scheduler.options)
        if options.synch:
            return EVERY_REPORT  # synchronous PBT pauses trials at any report while it waits for the others
        # PB2 has no burn-in option: it perturbs from the start.
        return CheckpointRule(options.interval(spec), int(getattr(options, "burn_in_env_steps", 0)))

    def build(self, spec: SweepSpec) -> Any:
        from ray.tune.schedulers import PopulationBasedTraining

        options = self.options(spec.scheduler.options)
        return PopulationBasedTraining(
            time_attr=TIME_ATTR,
            perturbation_interval=options.interval(spec),
            burn_in_period=options.burn_in_env_steps,
            hyperparam_mutations=self.mutations(spec, options),
            quantile_fraction=options.quantile_fraction,
            resample_probability=options.resample_probability,
            perturbation_factors=tuple(options.perturbation_factors),
            synch=options.synch,
            custom_explore_fn=explore_into_domains(spec.search_space),
        )


class Pb2Scheduler(PbtScheduler):
    name = "pb2"
    doc = "PB2: PBT whose explore step picks new values with a time-varying Gaussian-process bandit (linear ranges only)"
    Options = Pb2Options
    requires_reason = PbtScheduler.requires_reason.replace("preset 'pbt'", "preset 'pb2'")

    def build(self, spec: SweepSpec) -> Any:
        from ray.tune.schedulers.pb2 import PB2

        options = self.options(spec.scheduler.options)
        return PB2(
            time_attr=TIME_ATTR,
            perturbation_interval=options.interval(spec),
            hyperparam_bounds=self.mutations(spec, options),
            quantile_fraction=options.quantile_fraction,
            synch=options.synch,
            custom_explore_fn=explore_into_domains(spec.search_space),
        )


#: Every scheduler by the name a spec uses. The CLI's choices and the docs come from here.
SCHEDULERS: dict[str, SchedulerEntry] = {
    s.name: s
    for s in (
        FifoScheduler(), AshaScheduler(), HyperBandScheduler(), MedianScheduler(), PbtScheduler(), Pb2Scheduler(), BohbScheduler(),
    )
}
