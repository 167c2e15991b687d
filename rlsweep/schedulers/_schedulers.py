"""The trial schedulers a spec can name. Their time unit is always the lifetime env-step count."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rlsweep.errors import IncompatibleError, Problem
from rlsweep.schedulers._base import Entry, Option
from rlsweep.search_spaces import Fixed, IntoDomains
from rlsweep.spec import POLICIES_PATH

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

#: The result key schedulers measure time in.
TIME_ATTR = "env_steps"


@dataclass(frozen=True)
class CheckpointRule:
    """When a scheduler needs the trial to have just checkpointed: at the first report at or past
    ``start`` env steps, then at each report at least ``interval`` env steps after the last one it needed.

    This is PBT's own perturbation rule, so the trainable checkpoints at exactly the reports where PBT
    copies a checkpoint. ``interval=1`` means every report (schedulers that pause trials at any result).
    """

    interval: int
    start: int = 0

    def fires(self, env_steps: int, last: int) -> bool:
        return env_steps >= self.start and env_steps - last >= self.interval


EVERY_REPORT = CheckpointRule(1)


class Scheduler(Entry):
    section = "scheduler"
    #: Default for ``checkpoint.keep`` when the spec does not set it (None: keep every checkpoint).
    default_keep: ClassVar[int | None] = 2

    def checkpoint_rule(self, spec: SweepSpec) -> CheckpointRule | None:
        """The reports at which this scheduler needs a checkpoint (besides ``checkpoint.every_env_steps``)."""
        return None

    def _grace(self, spec: SweepSpec, options: Mapping[str, Any], divisor: float) -> int:
        if options.get("grace_env_steps") is not None:
            return int(options["grace_env_steps"])
        return max(1, int(self._max_t(spec, options) / divisor))

    @staticmethod
    def _max_t(spec: SweepSpec, options: Mapping[str, Any]) -> int:
        return int(options.get("max_env_steps") or spec.budget.env_steps)

    def _budget_problems(self, spec: SweepSpec, options: Mapping[str, Any], grace_divisor: float) -> list[Problem]:
        problems = []
        max_t = self._max_t(spec, options)
        if max_t > spec.budget.env_steps:
            problems.append(
                Problem("scheduler.max_env_steps", f"must be at most budget.env_steps={spec.budget.env_steps}, got {max_t}")
            )
        elif "grace_env_steps" in self.options and (grace := self._grace(spec, options, grace_divisor)) >= max_t:
            problems.append(
                Problem(
                    "scheduler.grace_env_steps",
                    f"must be below the scheduler's max_env_steps={max_t} or no trial is ever stopped early, got {grace}",
                )
            )
        return problems


class _GracedScheduler(Scheduler):
    """A scheduler that gives every trial ``grace_env_steps`` before acting, by default max / divisor."""

    def grace_divisor(self, options: Mapping[str, Any]) -> float:
        return options["reduction_factor"] ** 2

    def grace_env_steps(self, spec: SweepSpec) -> int:
        options = self.resolved(spec.scheduler.options)
        return self._grace(spec, options, self.grace_divisor(options))

    def check(self, spec: SweepSpec) -> list[Problem]:
        if self.check_options(spec.scheduler.options):
            return []
        options = self.resolved(spec.scheduler.options)
        return self._budget_problems(spec, options, self.grace_divisor(options))


MAX_ENV_STEPS = Option((int,), None, minimum=1, doc="env steps of the longest trial the scheduler plans for (default: budget.env_steps)")
REDUCTION_FACTOR = Option((int, float), 3, exclusive_minimum=1, doc="keep 1/reduction_factor of the trials at each rung")


class FifoScheduler(Scheduler):
    name = "fifo"
    doc = "run every trial to its budget"

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        from ray.tune.schedulers import FIFOScheduler

        return FIFOScheduler()


class AshaScheduler(_GracedScheduler):
    name = "asha"
    doc = "asynchronous successive halving: stop trials that trail their peers at each rung"
    options = {
        "grace_env_steps": Option(
            (int,), None, minimum=1,
            doc="env steps every trial gets before it can be stopped (default: max_env_steps / reduction_factor^2)",
        ),
        "max_env_steps": MAX_ENV_STEPS,
        "reduction_factor": REDUCTION_FACTOR,
        "brackets": Option((int,), 1, minimum=1, doc="number of brackets"),
    }

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        from ray.tune.schedulers import AsyncHyperBandScheduler

        options = self.resolved(spec.scheduler.options)
        return AsyncHyperBandScheduler(
            time_attr=TIME_ATTR,
            max_t=self._max_t(spec, options),
            grace_period=self.grace_env_steps(spec),
            reduction_factor=options["reduction_factor"],
            brackets=options["brackets"],
        )


class HyperBandScheduler(_GracedScheduler):
    name = "hyperband"
    doc = "synchronous HyperBand: brackets of successive halving that pause trials at each rung"
    options = {
        "grace_env_steps": Option(
            (int,), None, minimum=1,
            doc="env steps of the most aggressive bracket's first rung (default: max_env_steps / reduction_factor^2)",
        ),
        "max_env_steps": MAX_ENV_STEPS,
        "reduction_factor": REDUCTION_FACTOR,
        "stop_last_trials": Option((bool,), True, doc="stop the trials that reach max_env_steps (false: let them run on)"),
    }

    def checkpoint_rule(self, spec: SweepSpec) -> CheckpointRule | None:
        # A paused function trial resumes from the checkpoint of the report it was paused at, if there is one,
        # else from an older one, silently rerunning env steps. So every report carries a checkpoint.
        return EVERY_REPORT

    #: HyperBandForBOHB instead of HyperBandScheduler.
    bohb: ClassVar[bool] = False

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        from rlsweep.schedulers._adapters import env_step_hyperband

        options = self.resolved(spec.scheduler.options)
        return env_step_hyperband(
            self.bohb,
            grace=self.grace_env_steps(spec),
            time_attr=TIME_ATTR,
            max_t=self._max_t(spec, options),
            reduction_factor=options["reduction_factor"],
            stop_last_trials=options["stop_last_trials"],
        )


class BohbScheduler(HyperBandScheduler):
    name = "bohb"
    doc = "HyperBand for BOHB: HyperBand brackets whose new trials come from BOHB's model"
    partners = frozenset({"bohb"})
    partners_reason = (
        "BOHB's model learns from the budgets of the 'bohb' scheduler's brackets; "
        "use preset 'bohb', or scheduler 'hyperband' with another searcher"
    )

    bohb = True


class MedianScheduler(_GracedScheduler):
    name = "median"
    doc = "median stopping rule: stop a trial whose best result is below the median of the others' running means"
    options = {
        "grace_env_steps": Option(
            (int,), None, minimum=1, doc="env steps every trial gets before it can be stopped (default: budget / 4)"
        ),
        "min_samples_required": Option((int,), 3, minimum=1, doc="trials that must have reported before any is stopped"),
        "hard_stop": Option((bool,), True, doc="stop a trailing trial (false: pause it, so it can resume later)"),
    }

    def grace_divisor(self, options: Mapping[str, Any]) -> float:
        return 4

    def checkpoint_rule(self, spec: SweepSpec) -> CheckpointRule | None:
        return None if self.resolved(spec.scheduler.options)["hard_stop"] else EVERY_REPORT

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        from ray.tune.schedulers import MedianStoppingRule

        options = self.resolved(spec.scheduler.options)
        return MedianStoppingRule(
            time_attr=TIME_ATTR,
            grace_period=self.grace_env_steps(spec),
            min_samples_required=options["min_samples_required"],
            hard_stop=options["hard_stop"],
        )


class PbtScheduler(Scheduler):
    name = "pbt"
    doc = "population based training: every perturbation_env_steps, the bottom trials copy a top trial's checkpoint and mutate its hyperparameters"
    partners = frozenset({"random"})
    partners_reason = (
        "PBT explores by mutating running trials, and Tune refuses any other searcher beside it; "
        "use searcher 'random' (its draws are the initial population), or preset 'pbt'"
    )
    # Tune prunes checkpoints by score; a trial copied at a perturbation goes on checkpointing, and the copied
    # one, now neither latest nor best, was deleted before the exploiting trial restored it (measured).
    default_keep = None
    options = {
        "perturbation_env_steps": Option(
            (int,), None, minimum=1, doc="env steps between a trial's exploit/explore steps (default: budget / 10)"
        ),
        "burn_in_env_steps": Option((int,), 0, minimum=0, doc="env steps before the first perturbation"),
        "quantile_fraction": Option((int, float), 0.25, exclusive_minimum=0, maximum=0.5, doc="fraction of trials that copy (bottom) and are copied (top)"),
        "resample_probability": Option((int, float), 0.25, minimum=0, maximum=1, doc="chance a mutated value is redrawn from its domain instead of perturbed"),
        "perturbation_factors": Option((list,), [1.2, 0.8], doc="factors a continuous value is multiplied by when perturbed"),
        "synch": Option((bool,), False, doc="perturb all trials at once (slower trials hold up the rest)"),
        "lossy": Option((bool,), False, doc="accept a lossy conversion of a domain the scheduler cannot mutate exactly"),
    }

    def interval(self, spec: SweepSpec) -> int:
        given = spec.scheduler.options.get("perturbation_env_steps")
        return int(given) if given is not None else max(1, spec.budget.env_steps // 10)

    def compiler(self) -> Any:
        from rlsweep.search_spaces import PbtCompiler

        return PbtCompiler()

    def mutations(self, spec: SweepSpec) -> dict[str, Any]:
        return self.compiler().compile(spec.search_space, lossy=bool(spec.scheduler.options.get("lossy", False)))

    def check(self, spec: SweepSpec) -> list[Problem]:
        if self.check_options(spec.scheduler.options):
            return []
        problems: list[Problem] = []
        options = self.resolved(spec.scheduler.options)
        factors = options.get("perturbation_factors")  # PB2 has no such option
        if factors is not None and (
            len(factors) != 2 or not all(isinstance(f, (int, float)) and not isinstance(f, bool) and f > 0 for f in factors)
        ):
            problems.append(Problem("scheduler.perturbation_factors", f"must be two positive numbers, got {factors!r}"))
        interval = self.interval(spec)
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
            mutations = self.mutations(spec)
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
        options = self.resolved(spec.scheduler.options)
        if options["synch"]:
            return EVERY_REPORT  # synchronous PBT pauses trials at any report while it waits for the others
        # PB2 has no burn-in option: it perturbs from the start.
        return CheckpointRule(self.interval(spec), int(options.get("burn_in_env_steps") or 0))

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        from ray.tune.schedulers import PopulationBasedTraining

        options = self.resolved(spec.scheduler.options)
        return PopulationBasedTraining(
            time_attr=TIME_ATTR,
            perturbation_interval=self.interval(spec),
            burn_in_period=options["burn_in_env_steps"],
            hyperparam_mutations=self.mutations(spec),
            quantile_fraction=options["quantile_fraction"],
            resample_probability=options["resample_probability"],
            perturbation_factors=tuple(options["perturbation_factors"]),
            synch=options["synch"],
            custom_explore_fn=IntoDomains(spec.search_space),
        )


class Pb2Scheduler(PbtScheduler):
    name = "pb2"
    doc = "PB2: PBT whose explore step picks new values with a time-varying Gaussian-process bandit (linear ranges only)"
    partners_reason = PbtScheduler.partners_reason.replace("preset 'pbt'", "preset 'pb2'")
    options = {
        key: option
        for key, option in PbtScheduler.options.items()
        if key in ("perturbation_env_steps", "quantile_fraction", "synch", "lossy")
    }

    def compiler(self) -> Any:
        from rlsweep.search_spaces import Pb2Compiler

        return Pb2Compiler()

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        from ray.tune.schedulers.pb2 import PB2

        options = self.resolved(spec.scheduler.options)
        return PB2(
            time_attr=TIME_ATTR,
            perturbation_interval=self.interval(spec),
            hyperparam_bounds=self.mutations(spec),
            quantile_fraction=options["quantile_fraction"],
            synch=options["synch"],
            custom_explore_fn=IntoDomains(spec.search_space),
        )


#: Every scheduler by the name a spec uses. The CLI's choices and the docs come from here.
SCHEDULERS: dict[str, Scheduler] = {
    s.name: s
    for s in (
        FifoScheduler(), AshaScheduler(), HyperBandScheduler(), MedianScheduler(), PbtScheduler(), Pb2Scheduler(), BohbScheduler(),
    )
}
