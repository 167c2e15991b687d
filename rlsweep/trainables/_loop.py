"""The Tune function trainable: one RLlib algorithm trained to an env-step budget, in named phases.

A trial starts (build the algorithm, record its settings), restores (from its own or, under PBT, another
trial's checkpoint), then repeats: a train step, an evaluation when due, a checkpoint when due, a report of
one result row (:func:`rlsweep.metrics.row`), until the budget.

With ``seeds.per_trial`` > 1 a trial builds one algorithm per seed and steps them in lockstep, one after
the other in its own process: each phase runs for every seed before the row is reported, so a row is one
iteration of every seed, its aggregate (``seeds.aggregate``) is over the seeds after the same iterations,
and the scheduler's decision (stop, pause, perturb) takes all of them at once. The seeds' env-step counts
need not be equal: with vectorized envs each RLlib sample call stops at the first vector step that
reaches its share and does not count an env's reset step, so a seed can run up to
``num_envs_per_env_runner - 1`` env steps past the others per sample call (PPO: one call per env runner
per iteration), and the gap adds up over iterations. The row's ``env_steps``, the clock of the budget and
the schedulers, is the least of the seeds' counts; each seed's own is ``seed/<k>/env_steps``.

With ``seeds.adaptive`` a trial starts on its first seed. At each check (:func:`rlsweep.seeds.check_points`)
it hands its aggregate to the sweep's race (:class:`rlsweep.seeds.SeedRace`, a Ray actor the driver
holds); while it is a contender it adds its next seed, which trains from zero to the trial's env steps
before the trial reports again, so every row is over seeds at the same env steps. A trial that is not a
contender at a check adds no more seeds.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import math
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsweep import _compat, metrics, store, tracing
from rlsweep.errors import Problem, SpecError
from rlsweep.seeds import SEED_PATH, aggregate, check_points, trial_seeds
from rlsweep.trainables._curriculum import apply as apply_curriculum, curriculum_for
from rlsweep.trainables._config import build_algo, build_config, settings_for, trial_resources
from rlsweep.trainables._hyperparams import in_effect, reapply_learning_rates
from rlsweep.trainables._memory import policy_memory_mb, remote_node_ids, reset_peak_rss, trial_peak_memory_mb
from rlsweep.trainables._metrics import MetricNormalizer, kept_rllib_keys, lifetime_env_steps, rllib_section
from rlsweep.trainables._remote_spans import trace_remote_workers
from rlsweep.trainables._schedulable import trial_schedules, values_in_force
from rlsweep.trainables._timing import PhaseTimer

if TYPE_CHECKING:
    from rlsweep.schedulers import CheckpointRule
    from rlsweep.spec import SweepSpec
    from rlsweep.trainables._memory import MemoryReading

#: Without ``checkpoint.every_env_steps``, a trial checkpoints this many times over its budget, so a
#: retried failure or a resumed sweep loses at most a tenth of a trial's work.
DEFAULT_CHECKPOINTS_PER_TRIAL = 10


@dataclass(frozen=True)
class TrialPlan:
    """What every trial of a sweep does when, in env steps.

    Attributes:
        checkpoint_every: Checkpoint at least this often.
        scheduler_rule: The reports at which the scheduler acts on the latest checkpoint (PBT copies it,
            HyperBand pauses and later resumes from it): those must carry a fresh checkpoint.
        eval_every: Evaluate this often (and at the budget); None without an evaluation section.
        seed_base: The sweep's seed base (:func:`rlsweep.seeds.seed_base`): with the trial's index, its seed.
        trace: Where the trial's spans go (the spec's ``tracing``); None: no tracing.
        seed_race: With ``seeds.adaptive``: the name and namespace of the sweep's race actor.
    """

    checkpoint_every: int
    scheduler_rule: CheckpointRule | None = None
    eval_every: int | None = None
    seed_base: int = 0
    trace: tracing.TraceTarget | None = None
    seed_race: tuple[str, str] | None = None


def plan_for(
    spec: SweepSpec, scheduler_rule: CheckpointRule | None, seed_base: int = 0, trace: tracing.TraceTarget | None = None,
    seed_race: tuple[str, str] | None = None,
) -> TrialPlan:
    every = spec.checkpoint.every_env_steps or max(1, spec.budget.env_steps // DEFAULT_CHECKPOINTS_PER_TRIAL)
    # Without an interval, evaluation runs once, when the trial reaches its budget.
    evaluate = (spec.evaluation.every_env_steps or spec.budget.env_steps) if spec.evaluation is not None else None
    return TrialPlan(checkpoint_every=every, scheduler_rule=scheduler_rule, eval_every=evaluate, seed_base=seed_base, trace=trace,
                     seed_race=seed_race)


def with_seeds(spec: SweepSpec, sampled: dict[str, Any], plan: TrialPlan, index: int) -> tuple[dict[str, Any], list[int]]:
    """The trial's draw with its (first) training seed, and all its seeds. A ``debugging.seed`` the spec
    sets itself (in config or search_space; then ``per_trial`` is 1) is the trial's one seed."""
    if SEED_PATH in spec.config:
        return sampled, [spec.config[SEED_PATH]]
    if SEED_PATH in sampled:
        return sampled, [sampled[SEED_PATH]]
    seeds = trial_seeds(plan.seed_base, index, *spec.seeds.tuning, spec.seeds.per_trial)
    return {**sampled, SEED_PATH: seeds[0]}, seeds


def _next_multiple(env_steps: int, every: int) -> int:
    return (env_steps // every + 1) * every


def non_finite_losses(result: Mapping[str, Any]) -> list[str]:
    """``module/key=value`` for every loss a learner reported as NaN or infinite."""
    learners = result.get("learners")
    if not isinstance(learners, Mapping):
        return []
    bad = []
    for module, values in learners.items():
        if not isinstance(values, Mapping):
            continue
        for key, value in values.items():
            if key.endswith("loss") and isinstance(value, (int, float)) and not math.isfinite(value):
                bad.append(f"{module}/{key}={value}")
    return bad


class SeedRun:
    """One seed of a trial: its algorithm, its metric normalizer and phase timer, its env steps at the last
    report."""

    def __init__(
        self, spec: SweepSpec, sampled: dict[str, Any], seed: Any, trace: tracing.TraceTarget | None = None, trial_id: str = ""
    ) -> None:
        self.seed = seed
        config = trace_remote_workers(build_config(spec, sampled), trace, trial_id)
        # Its log folder (RLlib's, left empty) in the trial's working directory, not in ~/ray_results.
        with _compat.algorithm_log_folders_in(os.getcwd()):
            self.algo = build_algo(config)
        self.normalizer = MetricNormalizer()
        self.timer = PhaseTimer(self.algo)
        self.env_steps = 0
        #: The curriculum task the envs train on now, and the one they trained on in the last iteration.
        self.task: Any = None
        self.trained_on: Any = None
        #: The spec's curriculum with what the trial's draw sets in it.
        self.curriculum = curriculum_for(spec, sampled)
        if self.curriculum is not None:
            self.task = apply_curriculum(self.algo, self.curriculum, 0)

    def stop(self) -> None:
        """Stop the algorithm, and remove the empty log folder it made in the trial's working directory."""
        self.algo.stop()
        with contextlib.suppress(OSError):  # not empty (something wrote there): left as it is
            Path(self.algo.logdir).rmdir()


class TrialLoop:
    """One trial's phases. :meth:`run` calls them in order."""

    def __init__(self, spec: SweepSpec, sampled: dict[str, Any], plan: TrialPlan) -> None:
        import ray
        from ray import tune

        started = time.perf_counter()
        reset_peak_rss()  # the worker process may have run an earlier trial (reuse_actors)
        sampled, self.planned = with_seeds(spec, sampled, plan, _compat.trial_index())
        #: With seeds.adaptive: the trial trains its first seed, and adds the next while it is a contender.
        self.adaptive = spec.seeds.adaptive and len(self.planned) > 1
        self.adding = self.adaptive
        self.checks = check_points(spec.budget.env_steps, len(self.planned)) if self.adaptive else []
        self._race: Any = None
        #: With seeds.adaptive: what the trial handed in at each check and what the race said, by check.
        self.seed_checks: dict[str, dict[str, Any]] = {}
        #: The seeds it trains now (all it planned, unless adaptive).
        self.seeds = self.planned[:1] if self.adaptive else self.planned
        self.spec, self.sampled, self.plan = spec, sampled, plan
        self._limit_torch_threads()
        self.node_id = ray.get_runtime_context().get_node_id()
        self.trial_id = str(tune.get_context().get_trial_id())
        self.tracer = tracing.trial_tracer(plan.trace, self.trial_id)
        if self.adaptive:  # a trial started again (a retry, a pause, a PBT copy, a resume) keeps its checks
            self.seed_checks = store.recorded_seed_checks(_compat.read_trial_file(store.TRIAL_FILE))
        # Before the build, so a trial whose env or config fails to build still says what it ran with.
        self.record_settings()
        self.runs: list[SeedRun] = []
        try:
            with self.tracer.span("build", node_id=self.node_id, seeds=list(self.seeds), pid=os.getpid()):
                for seed in self.seeds:
                    self.runs.append(self._seed_run(seed))
        except BaseException:
            self.stop()
            raise
        self.algo = self.runs[0].algo  # the first seed's: hyperparameters are read back from it
        self.setup_time_s = time.perf_counter() - started
        self.searched = spec.search_space.paths
        #: The trial's schedules in RLlib's format: each row reports the value in force as hp/<path>.
        self.schedules = trial_schedules(spec, sampled)
        self.next_checkpoint = plan.checkpoint_every
        self.next_eval = plan.eval_every or 0
        self.last_rule = 0
        self.checked_keys = False
        self.policy_memory: dict[str, float] | None = None
        self.remote_nodes: dict[str, str] | None = None

    def _seed_run(self, seed: Any) -> SeedRun:
        draw = {**self.sampled, SEED_PATH: seed} if len(self.planned) > 1 else self.sampled
        return SeedRun(self.spec, draw, seed, self.plan.trace, self.trial_id)

    @staticmethod
    def _limit_torch_threads() -> None:
        # A 1-CPU trial that lets torch spawn a thread per core slows its neighbours down.
        import ray
        import torch

        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1)
        torch.set_num_threads(max(1, int(cpus)))

    def record_settings(self) -> None:
        """Write every setting the trial runs with, and its seeds, into its folder in the experiment store."""
        import ray

        settings = {
            "settings": settings_for(self.spec, self.sampled),
            "config": self.sampled,
            "seeds": self.seeds,
            "ray": ray.__version__,
        }
        if self.adaptive:
            settings["seed_checks"] = self.seed_checks
        store.write_trial_settings(_compat.write_trial_file, settings)

    def restore(self) -> bool:
        """Continue from the checkpoint Tune hands the trial, if any; True when that checkpoint is already at
        the budget (PBT can hand a trial a finished one's), after reporting it."""
        from ray import tune

        checkpoint = tune.get_checkpoint()
        if checkpoint is None:
            return False
        with self.tracer.span("restore", checkpoint=checkpoint.path), checkpoint.as_directory() as directory:
            meta = store.read_checkpoint_meta(directory)
            carried = meta.get("carried_by_seed") or [meta.get("carried", {})]
            if self.adaptive:
                self._take_seeds(len(carried), bool(meta.get("adding", True)))
            for index, run in enumerate(self.runs):
                run.algo.restore_from_path(store.seed_checkpoint_dir(directory, index))
        restored = metrics.env_steps(meta["metrics"])
        for run, state in zip(self.runs, carried):
            # The checkpoint may be another trial's (PBT): its optimizer state carries that trial's learning rate.
            reapply_learning_rates(run.algo, restored)
            run.normalizer.restore(state)
            run.env_steps = restored
            if run.curriculum is not None and run.curriculum.schedule is not None:
                run.task = apply_curriculum(run.algo, run.curriculum, restored)
        if restored >= self.spec.budget.env_steps:
            # Nothing is left to train: the trial ends at the budget with the metrics it copied.
            self.tracer.flush()
            tune.report({**meta["metrics"], **in_effect_row(self.algo, self.searched)})
            return True
        self.next_checkpoint = _next_multiple(restored, self.plan.checkpoint_every)
        self.next_eval = _next_multiple(restored, self.plan.eval_every) if self.plan.eval_every else 0
        self.last_rule = meta.get("rule_env_steps", restored)
        return False

    def _take_seeds(self, count: int, adding: bool) -> None:
        """Train ``count`` seeds, as the checkpoint being restored did (the trial's own from before a retry or
        a resume, or under PBT another trial's), and go on adding seeds only if it still did."""
        count = max(1, min(count, len(self.planned)))
        while len(self.runs) > count:
            self.runs.pop().stop()
        while len(self.runs) < count:
            self.runs.append(self._seed_run(self.planned[len(self.runs)]))
        self.adding = adding and count < len(self.planned)
        self.seeds = self.planned[:count]
        self.policy_memory = self.remote_nodes = None  # read again over the seeds it holds now
        self.record_settings()

    def _at_check(self, env_steps: int) -> bool:
        """With ``seeds.adaptive``: whether a row at ``env_steps`` reaches the trial's next check (it is still
        adding seeds, and has a check left)."""
        k = len(self.runs)
        return self.adding and k <= len(self.checks) and env_steps >= self.checks[k - 1]

    def _check_needs_evaluation(self, env_steps: int) -> bool:
        """With ``seeds.adaptive`` and an evaluation metric: whether this row reaches the trial's next check,
        where the race needs the metric's value, so the seeds are evaluated there whatever the interval."""
        return self.spec.metric.name in metrics.EVALUATION_METRICS and self._at_check(env_steps)

    def _race_says_contender(self, k: int, value: float) -> bool | None:
        """The race's decision, or None where the race cannot be reached (the trial then adds no seed)."""
        import ray

        try:
            if self._race is None:
                if self.plan.seed_race is None:
                    raise RuntimeError("this trial was started without the sweep's seed race")
                name, namespace = self.plan.seed_race
                self._race = ray.get_actor(name, namespace=namespace)
            return bool(ray.get(self._race.check.remote(k, self.trial_id, value)))
        except Exception as exc:  # the actor lost with its node, or never made: the trial goes on with its seeds
            logging.getLogger("rlsweep").warning(
                "trial %s adds no more seeds: the sweep's seed race did not answer (%s)", self.trial_id, exc)
            return None

    def add_seed_if_contender(self, row: Mapping[str, Any]) -> bool:
        """With ``seeds.adaptive``, after a report: at the trial's next check, hand its value to the race;
        a contender adds its next seed and trains it from zero to the trial's env steps (evaluated, where the
        spec evaluates), and checkpoints at its next row. Returns True where the added seed diverged while
        catching up: the trial has then reported its last row."""
        if not self._at_check(metrics.env_steps(row)):
            return False
        k = len(self.runs)
        value = row.get(self.spec.metric.name)
        if not isinstance(value, (int, float)) or math.isnan(value):
            return False  # no value to rank yet: the check waits for the next row
        contender = self._race_says_contender(k, float(value))
        if contender is not None:
            self.seed_checks[str(k)] = {"value": float(value), "contender": contender, "env_steps": metrics.env_steps(row)}
        self.tracer.event("seed_check", check=k, value=float(value), contender=bool(contender))
        if not contender:
            self.adding = False
            self.record_settings()
            return False
        seed = self.planned[k]
        target = min(run.env_steps for run in self.runs)
        with self.tracer.span("add_seed", seed=seed, env_steps=target):
            run = self._seed_run(seed)
            self.runs.append(run)
            self.seeds = self.planned[: k + 1]
            self.policy_memory = self.remote_nodes = None  # read again over the seeds it holds now
            self.record_settings()
            while run.env_steps < target:
                with run.timer.iteration():
                    result = run.algo.train()
                if run.curriculum is not None:
                    run.trained_on = run.task
                    run.task = apply_curriculum(run.algo, run.curriculum, lifetime_env_steps(result), result)
                run.normalizer(result, evaluation=False)  # carries its values forward, as each row does
                run.env_steps = lifetime_env_steps(result)
                if losses := non_finite_losses(result):
                    # Its weights are not finite: the trial ends here, once, as a config that diverges does.
                    last = {**row, metrics.DIVERGED: f"{', '.join(losses)} (seed {seed}, added at {target} env steps, "
                                                     f"at {run.env_steps} of them)"}
                    self.report(last, checkpoint=False)
                    return True
            if self.plan.eval_every is not None:
                # Its evaluation metric, carried forward until the trial evaluates again, then has a value.
                run.normalizer({"evaluation": run.algo.evaluate()}, evaluation=True)
        self.adding = len(self.runs) < len(self.planned)
        self.next_checkpoint = 0  # the next row checkpoints every seed: a retry keeps the catch-up
        return False

    def train_step(self) -> tuple[list[dict[str, Any]], dict[str, float], str | None]:
        """One ``algo.train()`` per seed, each timed; returns RLlib's results, the hyperparameters the
        first seed started with, and the non-finite losses where a seed's config diverged (its results
        then end there)."""
        hyperparams = in_effect(self.algo, self.searched)  # read before: the values its first update uses
        results = []
        diverged = None
        for run in self.runs:
            with run.timer.iteration():
                result = run.algo.train()
            if run.curriculum is not None:
                # The task this iteration trained on goes in its row; the next one is set for the next.
                run.trained_on = run.task
                with self.tracer.span("curriculum", seed=run.seed):
                    run.task = apply_curriculum(run.algo, run.curriculum, lifetime_env_steps(result), result)
            self.tracer.record_iteration(
                *run.timer.last_window, run.timer.last_intervals, env_steps=lifetime_env_steps(result),
                iteration=result.get("training_iteration"), seed=run.seed, node_id=self.node_id,
            )
            results.append(result)
            if losses := non_finite_losses(result):
                which = f" (seed {run.seed})" if len(self.runs) > 1 else ""
                diverged = ", ".join(losses) + which
                break
        return results, hyperparams, diverged

    def evaluate(self, results: list[dict[str, Any]], env_steps: int, done: bool) -> float | None:
        """Greedy episodes on RLlib's evaluation runner of each seed when due; returns the seconds it took
        (reported as ``eval_time_s``, outside the iteration's timing split), or None without an evaluation
        section."""
        if self.plan.eval_every is None:
            return None
        if not (env_steps >= self.next_eval or done or self._check_needs_evaluation(env_steps)):
            return 0.0
        start = time.perf_counter()
        with self.tracer.span("evaluate", env_steps=env_steps):
            for run, result in zip(self.runs, results):
                result["evaluation"] = run.algo.evaluate()
        self.next_eval = _next_multiple(env_steps, self.plan.eval_every)
        return time.perf_counter() - start

    def row(self, results: list[Mapping[str, Any]], hyperparams: Mapping[str, float], eval_time: float | None) -> dict[str, Any]:
        """The reported row: normalized metrics (over several seeds, their aggregate and each seed's),
        timing split, memory, hyperparameters, RLlib's keys."""
        per_seed = []
        sampled = 0
        for run, result in zip(self.runs, results):
            normalized = run.normalizer(result, evaluation=eval_time is not None)
            normalized.update(run.timer.last)
            normalized["time_total_s"] = result.get("time_total_s", 0.0)
            sampled += normalized[metrics.ENV_STEPS] - run.env_steps
            run.env_steps = normalized[metrics.ENV_STEPS]
            per_seed.append(normalized)
        sections = [rllib_section(result) for result in results]
        named = [n.removeprefix(metrics.RLLIB_PREFIX) for n in (self.spec.metric.name, *self.spec.stop)]
        rllib = kept_rllib_keys(sections[0], self.spec.report.rllib_keys, named)
        if len(per_seed) == 1:
            normalized = per_seed[0]
        else:
            normalized = self._combined(per_seed)
            rllib.update(self._combined_rllib(sections))
        if eval_time is not None:
            normalized["eval_time_s"] = eval_time
        normalized["env_steps_per_s"] = sampled / normalized[metrics.TIMING_TOTAL] if normalized[metrics.TIMING_TOTAL] > 0 else 0.0
        if self.adaptive:
            normalized[metrics.SEEDS_METRIC] = len(per_seed)
        if isinstance(trained_on := self.runs[0].trained_on, (int, float)) and not isinstance(trained_on, bool):
            normalized["task"] = trained_on
        normalized["peak_memory_mb"] = trial_peak_memory_mb(*(run.algo for run in self.runs))
        normalized.update(self._policy_memory())
        normalized["setup_time_s"] = self.setup_time_s
        # At the row's env steps, where RLlib last set the scheduled values (after the iteration's update).
        hyperparams = {**hyperparams, **values_in_force(self.schedules, self.runs[0].env_steps)}
        row = metrics.row(normalized, hyperparams=hyperparams, rllib=rllib, node_id=self.node_id)
        if self.remote_nodes is None:  # placed once: a retry or a resume is another process
            self.remote_nodes = {metrics.REMOTE_NODE_IDS.format(role=role): ",".join(nodes)
                                 for role, nodes in remote_node_ids(*(run.algo for run in self.runs)).items() if nodes}
        row.update(self.remote_nodes)
        if not self.checked_keys:
            self._check_reported_keys(row, available=sections[0])
            self.checked_keys = True
        return row

    def _policy_memory(self) -> dict[str, float]:
        """``policy_memory_mb`` and its share per policy, over every seed's algorithm. Read once the
        optimizers hold their state (after the first update), then kept: weights and optimizer state do
        not change size."""
        if self.policy_memory is None:
            per_policy: dict[str, float] = {}
            for run in self.runs:
                for policy, mb in policy_memory_mb(run.algo).items():
                    per_policy[policy] = per_policy.get(policy, 0.0) + mb
            self.policy_memory = {
                "policy_memory_mb": sum(per_policy.values()),
                **{metrics.POLICY_MEMORY_PREFIX + policy: mb for policy, mb in per_policy.items()},
            }
        return self.policy_memory

    def _combined(self, per_seed: list[dict[str, Any]]) -> dict[str, Any]:
        """One row from the seeds' rows: what they learned aggregated, times added up, the common clock."""
        how, mode = self.spec.seeds.aggregate, self.spec.metric.mode
        combined = dict(per_seed[0])
        for name in metrics.AGGREGATED_OVER_SEEDS:
            if name in combined:
                combined[name] = aggregate([float(p[name]) for p in per_seed], how, mode)
        for name in metrics.SUMMED_OVER_SEEDS:
            if name in combined:
                combined[name] = sum(p[name] for p in per_seed)
        combined["episodes"] = sum(p["episodes"] for p in per_seed)
        combined[metrics.ENV_STEPS] = min(p[metrics.ENV_STEPS] for p in per_seed)
        for index, values in enumerate(per_seed):
            combined.update({metrics.per_seed_key(index, n): values[n] for n in metrics.PER_SEED_METRICS if n in values})
        return combined

    def _combined_rllib(self, sections: list[Mapping[str, Any]]) -> dict[str, Any]:
        """The RLlib keys the spec optimizes or stops on, aggregated over the seeds like rlsweep's own."""
        how, mode = self.spec.seeds.aggregate, self.spec.metric.mode
        combined = {}
        for name in (self.spec.metric.name, *self.spec.stop):
            key = name.removeprefix(metrics.RLLIB_PREFIX)
            if name.startswith(metrics.RLLIB_PREFIX) and all(key in section for section in sections):
                combined[key] = aggregate([float(section[key]) for section in sections], how, mode)
        return combined

    def checkpoint_due(self, env_steps: int, done: bool) -> bool:
        rule = self.plan.scheduler_rule
        needed = rule is not None and rule.fires(env_steps, self.last_rule)
        if needed:
            self.last_rule = env_steps
        if env_steps >= self.next_checkpoint or done or needed:
            self.next_checkpoint = _next_multiple(env_steps, self.plan.checkpoint_every)
            return True
        return False

    def report(self, row: dict[str, Any], *, checkpoint: bool) -> None:
        """Hand Tune the row, with a checkpoint of every seed's algorithm when one is due."""
        from ray import tune

        if not checkpoint:
            self.tracer.flush()  # Tune may end this process after any report
            tune.report(row)
            return
        with tempfile.TemporaryDirectory(prefix="rlsweep-ckpt-") as directory:
            with self.tracer.span("checkpoint", env_steps=metrics.env_steps(row)):
                for index, run in enumerate(self.runs):
                    run.algo.save_to_path(store.seed_checkpoint_dir(directory, index))
            normalized = {k: v for k, v in row.items() if k in metrics.NORMALIZED_METRICS}
            store.write_checkpoint_meta(
                directory,
                {
                    "metrics": normalized,
                    "carried": self.runs[0].normalizer.state(),
                    "carried_by_seed": [run.normalizer.state() for run in self.runs],
                    "seeds": self.seeds,
                    "adding": self.adding,
                    "config": self.sampled,
                    "rule_env_steps": self.last_rule,
                },
            )
            self.tracer.flush()
            tune.report(row, checkpoint=tune.Checkpoint.from_directory(directory))

    def run(self) -> None:
        try:
            if self.restore():
                return
            while True:
                results, hyperparams, diverged = self.train_step()
                if diverged is not None:
                    # The config's doing, not the machine's: the trial ends here, once (a retry from its
                    # checkpoint would diverge again), its last row saying so. Its weights are not finite,
                    # so no checkpoint of them.
                    self.report_diverged(results, hyperparams, diverged)
                    return
                env_steps = min(lifetime_env_steps(result) for result in results)
                done = env_steps >= self.spec.budget.env_steps
                eval_time = self.evaluate(results, env_steps, done)
                try:
                    row = self.row(results, hyperparams, eval_time)
                except SpecError as exc:
                    # The spec is wrong for every trial (a metric key RLlib does not report): a retry cannot
                    # help. Recorded for the driver, which ends the sweep and reports it as a spec error.
                    store.write_spec_problems(_compat.write_trial_file, exc.problems)
                    return
                self.report(row, checkpoint=self.checkpoint_due(env_steps, done))
                if done:
                    return
                if self.adding and self.add_seed_if_contender(row):
                    return
        finally:
            self.stop()

    def report_diverged(self, results: list[dict[str, Any]], hyperparams: Mapping[str, float], losses: str) -> None:
        """The last row of a trial whose config diverged: the seeds that trained this iteration (a seed
        that diverged ends the others' too), with :data:`metrics.DIVERGED` naming the losses."""
        runs, self.runs = self.runs, self.runs[: len(results)]
        try:
            row = self.row(results, hyperparams, None)
        except SpecError:
            row = {metrics.ENV_STEPS: min(lifetime_env_steps(result) for result in results)}
        finally:
            self.runs = runs
        row[metrics.DIVERGED] = losses
        self.report(row, checkpoint=False)

    def stop(self) -> None:
        for run in getattr(self, "runs", []):
            run.stop()
        getattr(self, "tracer", tracing.OFF).close()
        self.tracer = tracing.OFF

    def _check_reported_keys(self, reported: Mapping[str, Any], available: Mapping[str, Any]) -> None:
        keys = [self.spec.metric.name, *self.spec.stop]
        missing = [k for k in keys if k not in reported]
        if missing:
            # Every key RLlib reported, also those report.rllib_keys leaves out of the rows.
            candidates = [metrics.RLLIB_PREFIX + k for k in available] + list(metrics.NORMALIZED_METRICS)
            raise SpecError(
                [
                    Problem(
                        "metric.name" if k == self.spec.metric.name else f"stop.{k}",
                        f"{k!r} is not in {self.spec.algorithm}'s results; close matches: "
                        f"{difflib.get_close_matches(k, candidates, n=3) or 'none'}",
                    )
                    for k in missing
                ]
            )


def in_effect_row(algo: Any, searched: tuple[str, ...]) -> dict[str, float]:
    return {metrics.HP_PREFIX + path: value for path, value in in_effect(algo, searched).items()}


def train(sampled: dict[str, Any], spec: SweepSpec, plan: TrialPlan) -> None:
    """Tune function trainable. ``sampled`` is the trial's draw, keyed by spec parameter paths."""
    TrialLoop(spec, sampled, plan).run()


def train_candidate(chosen: dict[str, Any], spec: SweepSpec, plan: TrialPlan, configs: Mapping[str, dict[str, Any]]) -> None:
    """Tune function trainable of a confirmation: ``chosen`` names a configuration (a tuning trial's id)
    and a test seed; the trial trains that configuration from scratch on that seed."""
    sampled = {**configs[chosen[store.CANDIDATE_KEY]], SEED_PATH: chosen[store.TEST_SEED_KEY]}
    TrialLoop(spec, sampled, plan).run()


def make_confirmation_trainable(
    spec: SweepSpec, plan: TrialPlan, configs: Mapping[str, dict[str, Any]], memory: MemoryReading | None = None
) -> Any:
    """The trainable of ``rlsweep confirm``: ``configs`` maps each tuning trial's id to its draw."""
    from ray import tune

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    trainable = tune.with_parameters(train_candidate, spec=spec, plan=plan, configs=dict(configs))
    return tune.with_resources(trainable, lambda chosen: trial_resources(spec, configs[chosen[store.CANDIDATE_KEY]], memory))


def make_trainable(spec: SweepSpec, plan: TrialPlan, memory: MemoryReading | None = None) -> Any:
    """The trainable handed to ``tune.Tuner``, carrying the spec and asking for each trial's resources
    (with ``memory``, the pre-flight reading, the memory each of its processes reserves)."""
    from ray import tune

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    trainable = tune.with_parameters(train, spec=spec, plan=plan)
    return tune.with_resources(trainable, lambda sampled: trial_resources(spec, sampled, memory))


__all__ = [
    "DEFAULT_CHECKPOINTS_PER_TRIAL",
    "SeedRun",
    "TrialLoop",
    "TrialPlan",
    "make_confirmation_trainable",
    "make_trainable",
    "plan_for",
    "train",
    "train_candidate",
]
