"""The Python API: run a sweep, then pick its best trial and log it to MLflow; resume; sample.

Each function composes the stages: :mod:`rlsweep.sweep` runs trials into the experiment directory, and
:mod:`rlsweep.analysis` reads that directory back. Neither stage imports the other.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsweep import runtime, sweep
from rlsweep.progress import checked_mode
from rlsweep.analysis import Best, load, live_logger, trace_target
from rlsweep.errors import ExportError, IncompatibleError, SpecError, SweepError, UsageError
from rlsweep.schedulers import SEARCHERS, resolve, search_request, with_searcher
from rlsweep._host import storage_problem
from rlsweep.spec import SweepSpec
from rlsweep.trainables import MemoryFit

if TYPE_CHECKING:
    from rlsweep.holdout import Race, RacePlan

log = logging.getLogger("rlsweep")


@dataclass(frozen=True)
class SweepResult:
    """What :func:`run` hands back.

    Attributes:
        path: The experiment directory (Tune's layout, plus the spec rlsweep ran).
        best: The best trial and checkpoint under the default selection rule, or None if no trial reported.
        mlflow_run_id: The sweep's parent run in MLflow, when it was exported.
        errored_trials: How many trials ended in an error.
        export_error: Why the MLflow export failed, if it did (rerun ``rlsweep export`` to complete it).
        unfinished_trials: Trials an interruption (Ctrl-C) left running or pending: the sweep did not finish,
            ``best`` is the best so far, and ``rlsweep resume`` continues it.
        held_out: The held-out stage's result (``spec.holdout``; :func:`held_out`), or None without one.
        no_best: Why ``best`` is None (no trial reported the metric yet, or each that did diverged or
            ended in an error, saying which).
    """

    path: Path
    best: Best | None
    mlflow_run_id: str | None
    errored_trials: int
    export_error: str | None = None
    unfinished_trials: tuple[str, ...] = ()
    held_out: dict[str, Any] | None = None
    no_best: str | None = None

    @property
    def interrupted(self) -> bool:
        return bool(self.unfinished_trials)


def _live_callbacks(spec: SweepSpec, path: Path, sweep_id: str) -> list[Any]:
    return [live_logger(spec, path, sweep_id)] if spec.mlflow is not None and spec.mlflow.live else []


def held_out(
    spec: SweepSpec, path: Path, *, address: str | None = None, verbose: int = 1, swept: Any = None,
    progress: str | None = None,
) -> dict[str, Any] | None:
    """The held-out stage of a finished search (``spec.holdout``): its best configurations, ranked by the
    default selection rule, race over test seeds no trial trained with (:mod:`rlsweep.holdout`), each run one
    configuration on one seed for the full budget, within the share of the sweep's env steps the spec states;
    the winner is chosen by its held-out score and reported with a 95% interval for its IQM on 10 new seeds,
    beside its tuning value. The result is written to the sweep's folder (``rlsweep_holdout.json``); run
    again, a finished stage is read back and an interrupted one resumes.

    Returns:
        The result (``winner``, ``held_out_iqm``, ``interval``, ``tuning_value``, ``seeds``, ...); ``{"skipped":
        why}`` where no trial finished with a value; ``{"interrupted": True, ...}`` where the stage stopped
        early; None where the spec has no held-out stage.

    Args:
        swept: The sweep at ``path`` as :func:`rlsweep.analysis.load` read it, where the caller has it.
        progress: The progress view's mode (:mod:`rlsweep.progress`), as the search had it.
    """
    if spec.holdout is None:
        return None
    import dataclasses

    from rlsweep import store
    from rlsweep.analysis._confirm import CONFIRM_METRIC, confirmation_document, plan_confirmation
    from rlsweep.holdout import Race, affords_them, race_budget

    if (done_before := store.read_holdout(path)) is not None:
        return done_before
    swept = swept if swept is not None else load(path)
    finished = {t.trial_id for t in swept.trials if t.state == store.TERMINATED}
    ranked = [b for b in swept.ranked() if b.trial_id in finished]
    if not ranked:
        return {"skipped": f"no trial finished with a value of {spec.metric.name!r}: nothing to retrain on held-out seeds"}
    settings = spec.holdout
    if spec.budget.time_s is not None and len(swept.trials) < spec.budget.trials:
        return {"skipped": f"budget.time_s ({spec.budget.time_s:g} s) ended the search after {len(swept.trials)} of its "
                           f"{spec.budget.trials} trials; the held-out stage does not run past the sweep's time cap"}
    if (runs := race_budget(settings.share, spec.budget.trials, spec.seeds.per_trial, settings.max_runs)) < settings.min_seeds:
        # Only a stage left at its default gets here (validate refuses one the spec sets this small).
        fits = affords_them(settings.share, spec.budget.trials, spec.seeds.per_trial, settings.min_seeds)
        return {"skipped": f"holdout.share {settings.share} of {spec.budget.trials} trial(s) x {spec.seeds.per_trial} "
                           f"seed(s) affords {runs} held-out run(s), fewer than the {settings.min_seeds} its winner "
                           f"needs ({fits})"}
    plan = stage_plan(spec, swept, ranked, runs)
    retrain = plan_confirmation(swept, seeds=len(plan.test_seeds), trials=plan.candidates)
    document = confirmation_document(swept.info.get("spec") or spec.document, retrain)
    document["name"] = f"{spec.name}-holdout"
    document["budget"] = {**document["budget"], "trials": plan.planned_runs}
    stage = {**retrain.to_dict(), "planned_runs": plan.planned_runs, "stages": [dataclasses.asdict(s) for s in plan.stages]}
    race = Race(plan)
    folder, _ = sweep.run_heldout(path, document, stage, race, metric=CONFIRM_METRIC, address=address, verbose=verbose,
                                  progress=progress)
    done = _held_out_runs(folder, spec.budget.env_steps)
    if not race.finished(done):
        return {"interrupted": True, "folder": str(folder), "runs_done": len(done)}
    record = stage_record(spec, race, done, retrain.configs, stage["stages"])
    store.write_holdout(path, record)
    return record


def stage_record(
    spec: SweepSpec, race: Race, done: Mapping[tuple[str, int], float | None], configs: Mapping[str, Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The held-out stage's answer from its finished ``race``, as ``rlsweep_holdout.json`` keeps it.

    A ``holdout.score_range`` that a finished run scored outside of does not hold for this task (a v0/v1 mix-up,
    a wrapper that rescales rewards): the answer is then given as if the spec named no range, unclipped and
    with failed runs left out, and ``score_range_ignored`` says why, naming the run and its score.
    """
    import dataclasses

    from rlsweep.analysis import DEFAULT_RULE
    from rlsweep.analysis._confirm import CONFIRM_METRIC
    from rlsweep.holdout import DEFAULT_FUTURE_SEEDS, Race, outside_range

    ignored = None
    if (bounds := race.plan.score_range) is not None:
        if outside := outside_range(bounds, done):
            (candidate, seed), value = outside[0]
            more = f" (and {len(outside) - 1} more run(s))" if len(outside) > 1 else ""
            ignored = (f"holdout.score_range: [{bounds[0]:g}, {bounds[1]:g}] does not hold this task's scores: trial "
                       f"{candidate} scored {value:.6g} on test seed {seed}{more}; the interval is not clipped to it "
                       "and failed runs are left out")
            log.warning("%s", ignored)
            race = Race(dataclasses.replace(race.plan, score_range=None), method=race.method, future_seeds=race.future_seeds)
    result = race.result(done)
    return {
        **dataclasses.asdict(result),
        "config": dict(configs[result.winner]),
        "future_seeds": DEFAULT_FUTURE_SEEDS,
        "share": spec.holdout.share if spec.holdout is not None else None,
        "score_range": None if bounds is None else [bounds[0], bounds[1]],
        **({"score_range_ignored": ignored} if ignored else {}),
        "metric": CONFIRM_METRIC,
        "tuning_metric": spec.metric.name,
        "tuning_rule": DEFAULT_RULE,
        "stages": list(stages),
    }


def stage_plan(spec: SweepSpec, swept: Any, ranked: Sequence[Any], runs: int) -> RacePlan:
    """The held-out race of ``spec.holdout`` among ``ranked`` (the search's finished trials' best values,
    best first) on ``runs`` runs: the spec's test seeds, least seeds, entrants and score range."""
    from rlsweep.holdout import plan_race

    settings = spec.holdout
    return plan_race(
        [b.trial_id for b in ranked], runs,
        test_range=(spec.seeds.test[0], spec.seeds.test[1]), env_steps=spec.budget.env_steps,
        tuning_values={b.trial_id: b.value for b in ranked}, min_seeds=settings.min_seeds,
        max_candidates=settings.candidates, tuning_seeds={s for t in swept.trials for s in t.seeds},
        score_range=(settings.score_range[0], settings.score_range[1]) if settings.score_range is not None else None,
    )


def _held_out_runs(folder: Path, budget: int) -> dict[tuple[str, int], float | None]:
    """Each finished held-out run's score (:func:`rlsweep.analysis._confirm.final_score`), by (candidate,
    test seed); None for a run that errored, diverged or stopped short of the budget."""
    from rlsweep import store
    from rlsweep.analysis._confirm import final_score

    done: dict[tuple[str, int], float | None] = {}
    for trial in store.read_trials(folder, budget_env_steps=budget):
        candidate, seed = trial.config.get(store.CANDIDATE_KEY), trial.config.get(store.TEST_SEED_KEY)
        if candidate is not None and seed is not None and trial.state in (store.TERMINATED, store.ERROR):
            done[(str(candidate), int(seed))] = final_score(trial, budget)
    return done


def _finish(
    spec: SweepSpec, path: Path, errored: int, *, address: str | None = None, verbose: int = 0, progress: str | None = None
) -> SweepResult:
    swept = load(path)
    # Only a finished search has a held-out stage: an interrupted one is continued by `rlsweep resume` first.
    stage = None
    if not swept.unfinished():
        try:
            stage = held_out(spec, path, address=address, verbose=verbose, swept=swept, progress=progress)
        except (SpecError, UsageError, SweepError) as exc:
            # The search's results are on disk and its best is still reported: a stage that cannot run must not hide them.
            stage = {"not_run": str(exc)}
            log.warning("the held-out stage did not run: %s", exc)
    no_best = None
    try:
        best = swept.best()
    except SweepError as exc:
        # No trial reported the metric, or every one that did diverged or ended in an error: it says which.
        best, no_best = None, str(exc).removeprefix(f"{path}: ")
    run_id, export_error = None, None
    if spec.mlflow is not None and spec.mlflow.export:
        try:
            run_id = swept.to_mlflow()
        except ExportError as exc:
            # The sweep's results are on disk; a failed export must not hide them.
            export_error = str(exc)
            log.warning("%s", exc)
    return SweepResult(
        path=path, best=best, mlflow_run_id=run_id, errored_trials=errored, export_error=export_error,
        unfinished_trials=tuple(swept.unfinished()), held_out=stage, no_best=no_best,
    )


def load_beside_ray(
    source: str | Path | Mapping[str, Any], overrides: Sequence[str] = (), *, address: str | None = None
) -> SweepSpec:
    """:func:`rlsweep.load_spec` for a sweep about to run: Ray starts (or is joined) while the pre-flight runs,
    instead of after it, since a sweep needs both. A refused spec leaves no runtime behind that this
    started.

    Raises:
        SpecError: with every problem found (Ray's own error only if the spec has none).
    """
    from rlsweep.validate import load_spec

    was_running = runtime.ray_running()
    try:
        return load_spec(source, overrides, beside=lambda spec: runtime.ensure_ray(spec, address))
    except BaseException:
        if not was_running:
            runtime.stop_ray()
        raise


def check_storage(storage: str | None) -> None:
    """Refuse a ``storage`` override that cannot hold sweeps (a URI, a file, a folder of the kernel's) before
    anything starts: it needs no Ray.

    Raises:
        UsageError: naming the storage and why.
    """
    if storage is not None and (problem := storage_problem(storage)):
        raise UsageError(problem, "storage")


def run(
    spec: SweepSpec | str | Path | Mapping[str, Any],
    *,
    storage: str | None = None,
    address: str | None = None,
    verbose: int = 1,
    stopper: Any = None,
    progress: str | None = None,
) -> SweepResult:
    """Run a sweep to the end, pick the best trial, and export it to MLflow if the spec says so.

    Args:
        spec: From :func:`rlsweep.load_spec`; or a spec file or document, validated here while Ray starts
            (:func:`load_beside_ray`), so the first trial starts sooner.
        storage: Overrides ``spec.storage``.
        address: Overrides ``spec.ray.address`` (``"auto"``, ``"ray://..."``).
        verbose: 0 prints nothing; 1 shows the sweep's progress (a live view on a terminal, plain lines at a
            bounded rate elsewhere).
        progress: ``bar`` | ``lines`` | ``results`` | ``none`` (only failed trials): the progress view, whatever the
            terminal (:mod:`rlsweep.progress`).
        stopper: An extra ``ray.tune.Stopper`` beside the spec's ``stop`` thresholds, e.g. one that ends
            the whole sweep once a condition holds (``benchmarks/time_to_solve.py``).

    Raises:
        IncompatibleError: A trial cannot fit the cluster.
    """
    checked_mode(progress)
    check_storage(storage)
    if not isinstance(spec, SweepSpec):
        spec = load_beside_ray(spec, address=address)
    path, errored = sweep.run(
        spec, storage=storage, address=address, verbose=verbose, stopper=stopper, callbacks=_live_callbacks,
        trace=trace_target, progress_mode=progress,
    )
    return _finish(spec, path, errored, address=address, verbose=verbose, progress=progress)


def resume(path: str | Path, *, spec_path: str | Path | None = None, address: str | None = None) -> SweepResult:
    """Continue an interrupted sweep; finished trials are not rerun. See :func:`rlsweep.sweep.resume`.

    Raises:
        SpecError: the spec was edited since the sweep started (the differences are listed).
        SweepError: the directory is not a resumable rlsweep experiment.
    """
    root, spec, errored = sweep.resume(path, spec_path=spec_path, address=address, trace=trace_target)
    return _finish(spec, root, errored, address=address, verbose=1)


def reproduce(path: str | Path, trial_id: str, *, storage: str | None = None, verbose: int = 1) -> SweepResult:
    """Rerun one trial of a sweep, from the config and training seed it recorded, into a new experiment
    directory beside it (``<name>-reproduce-<trial id>``). On CPU its iterations repeat the original's
    metrics; a trial the scheduler stopped early runs to the full budget.

    Raises:
        UsageError: no such trial, or it recorded nothing (it never started).
    """
    spec = sweep.reproduction_spec(path, trial_id)
    return run(spec, storage=storage, verbose=verbose)


def confirm(
    path: str | Path,
    top: int = 3,
    seeds: int = 5,
    *,
    rule: str = "avg-last-3",
    trials: tuple[str, ...] = (),
    address: str | None = None,
    verbose: int = 1,
) -> dict[str, Any]:
    """Retrain the sweep's top configurations on held-out test seeds and measure them: see
    :meth:`rlsweep.analysis.Sweep.confirm`."""
    return load(path).confirm(top, seeds, rule=rule, trials=trials, address=address, verbose=verbose)


def check_memory(spec: SweepSpec, *, address: str | None = None) -> MemoryFit | None:
    """What :func:`run` checks before launch, without running the sweep: that one trial's CPUs fit and that
    every node sees the spec's storage, then one trial's memory at the search space's most memory-hungry
    corner (kept from an earlier command, estimated, or measured near the limit) and how many such trials the
    nodes' memory holds at once. It joins ``address``, or reads this machine's resources as a local runtime
    would offer them, and starts one only where a trial must be measured. None when the spec turns the
    measurement off (``ray.memory_check: false``).

    Raises:
        IncompatibleError: one trial fits no node (CPUs or memory), or ``budget.max_concurrent`` trials do
            not fit the memory Ray reports.
    """
    return runtime.check_memory(spec, address)


def sample(spec: SweepSpec, n: int, *, searcher: str | None = None) -> list[dict[str, Any]]:
    """The first ``n`` configs the spec's searcher (or ``searcher``) would try, without running a trial.

    Configs are flat, keyed by the spec's parameter paths; inactive conditional parameters are absent.

    Raises:
        IncompatibleError: ``searcher`` cannot express the spec's search space.
        UsageError: ``n`` is below 1 or above what the searcher draws in a dry run (``max_samples``).
    """
    if searcher is not None and searcher != spec.searcher.name and searcher not in SEARCHERS:
        raise SpecError(f"unknown searcher {searcher!r}; expected one of {sorted(SEARCHERS)}", "--searcher")
    if (problem := SEARCHERS[searcher or str(spec.searcher.name)].samples_problem(n)) is not None:
        raise UsageError(problem, "n")
    if searcher is not None and searcher != spec.searcher.name:
        if searcher not in SEARCHERS:
            raise SpecError(f"unknown searcher {searcher!r}; expected one of {sorted(SEARCHERS)}", "--searcher")
        resolved, problems = resolve(with_searcher(spec, searcher))
        if resolved is None:
            raise IncompatibleError(problems)
        spec = resolved
    return SEARCHERS[str(spec.searcher.name)].sample(search_request(spec), n)
