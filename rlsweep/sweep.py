"""Running a sweep: ``tune.Tuner`` for ``run``, ``resume``, ``reproduce`` and the confirmation's retraining,
with retries and the sweep's own callbacks.

This module runs trials and leaves the experiment directory behind; the Ray runtime and the checks against
it before a trial are :mod:`rlsweep.runtime`'s, choosing the best trial and logging to MLflow the
analysis's (:func:`rlsweep.run` does both in turn).
"""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import logging
import math
import os
import pickle
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import yaml

from rlsweep import _compat, metrics, progress, runtime, store, tracing
from rlsweep._dotted import flatten
from rlsweep.metrics import DIVERGED
from rlsweep.errors import Problem, SpecError, SweepError, UsageError
from rlsweep.seeds import race_record, seed_base
from rlsweep.schedulers import SCHEDULERS, checkpoint_keep, restores_other_trials, search_request
from rlsweep.search_spaces import SEARCHERS
from rlsweep.spec import SweepSpec, read_document
from rlsweep.trainables import (
    MemoryFit,
    MemoryReading,
    iteration_line,
    make_confirmation_trainable,
    make_trainable,
    plan_for,
    replay_buffer_line,
)
from rlsweep.validate import load_spec

log = logging.getLogger("rlsweep")

#: Makes the Tune callbacks for a new sweep, given its directory and sweep id (e.g. live MLflow logging).
CallbackFactory = Callable[[SweepSpec, Path, str], list[Any]]


def _say(line: str) -> None:
    print(line, file=sys.stdout, flush=True)


def _progress_callbacks(
    spec: SweepSpec, verbose: int, mode: str | None, trials: int | None = None, tuning_values: Mapping[str, float] | None = None
) -> list[Any]:
    """The sweep's progress view (:mod:`rlsweep.progress`): ``mode``, or with ``verbose`` the terminal's
    default (a live view on a terminal, plain lines elsewhere); none with ``verbose`` 0 and no mode.
    ``tuning_values`` (the held-out stage's entrants'): the stage's view."""
    if mode is None and not verbose:
        return []
    return [progress.tune_callback(spec, mode, trials=trials, tuning_values=tuning_values)]


def _logger_callbacks(spec: SweepSpec) -> list[Any]:
    """Tune's per-trial loggers: result.json (which rlsweep reads) and those ``report.tune_loggers`` asks for
    (Tune adds its CSV and TensorBoard loggers to every trial unless told not to: :func:`_tune_environment`); and
    the callbacks that keep Tune's driver from holding every finished trial's statistics and the heap memory
    its experiment-state saves freed."""
    from ray.tune.logger import CSVLoggerCallback, TBXLoggerCallback

    extra = {"csv": CSVLoggerCallback, "tensorboard": TBXLoggerCallback}
    loggers = [_compat.lean_json_logger_class()(), *(extra[name]() for name in spec.report.tune_loggers)]
    # A finished trial's rows stay in its result.json; Tune's driver keeps of them only what is not RLlib's
    # diagnostics, and those the spec optimizes or stops on.
    forget = _compat.forget_finished_trials_class()(spec.metric.name, keep=set(spec.stop), drop_prefix=metrics.RLLIB_PREFIX)
    return [*loggers, forget, runtime.freed_memory_callback_class()()]


@contextlib.contextmanager
def _leave_home_as_it_was() -> Iterator[None]:
    """A safety net: trials put RLlib's log folders in their working directories, not ``~/ray_results``
    (:func:`rlsweep._compat.algorithm_log_folders_in`); should anything in Ray still make ``~/ray_results``
    during the fit, this removes it afterwards when it was not there before and is empty."""
    from ray.train.constants import DEFAULT_STORAGE_PATH

    home_results = Path(DEFAULT_STORAGE_PATH)
    existed = home_results.exists()
    try:
        yield
    finally:
        if not existed:
            with contextlib.suppress(OSError):
                home_results.rmdir()


@contextlib.contextmanager
def _tune_environment(own_loggers: bool = True) -> Iterator[None]:
    """While Tune fits (it reads these variables as a fit starts):

    - only the loggers rlsweep passed (a sweep from before rlsweep passed its own keeps Tune's defaults);
    - no strict metric check on the driver: a trial checks the spec's metric and stop keys on its first
      result and, if RLlib does not report one, ends without a result so the sweep stops with the spec's
      error; Tune's own check would crash the driver on that trial's empty final result.
    """
    # Tune's console output (its experiment box, TensorBoard hint and "View detailed results here")
    # comes from its new output engine even at verbose=0; the classic reporter at verbose=0 prints nothing.
    # rlsweep shows its own progress (rlsweep.progress).
    settings = {"TUNE_DISABLE_STRICT_METRIC_CHECKING": "1", "RAY_AIR_NEW_OUTPUT": "0"}
    if own_loggers:
        settings["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"
    before = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _stop_condition(spec: SweepSpec, stopper: Any, guard: Any) -> Any:
    """One Tune stopper: the spec's thresholds, the caller's ``stopper``, and ``guard``, which ends the sweep
    once a trial found the spec itself wrong."""
    from ray.tune.stopper import CombinedStopper, FunctionStopper

    # Tune takes either a dict of thresholds or a Stopper: the spec's thresholds become a function stopper.
    def thresholds(trial_id: str, result: dict) -> bool:
        return any(result.get(key, -math.inf) >= value for key, value in spec.stop.items())

    stoppers = [s for s in (FunctionStopper(thresholds) if spec.stop else None, stopper) if s is not None]
    return CombinedStopper(guard, *stoppers)


def spec_problem_guard_class() -> type:
    """A Tune callback and stopper in one: when a trial ends having recorded that the spec itself is wrong
    (``store.SPEC_PROBLEMS_FILE``: a metric key its algorithm does not report), it stops the whole sweep;
    every other trial would fail the same way. Kept as this module's ``SpecProblemGuard`` so Tune can pickle
    it with the sweep by reference."""
    cls = globals().get("SpecProblemGuard")
    if cls is None:
        from ray.tune import Callback
        from ray.tune.stopper import Stopper

        class SpecProblemGuard(Callback, Stopper):
            def __init__(self) -> None:
                self.found = False

            def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
                self.found = self.found or (Path(trial.path) / store.SPEC_PROBLEMS_FILE).exists()

            def __call__(self, trial_id: str, result: dict) -> bool:
                return False

            def stop_all(self) -> bool:
                return self.found

        SpecProblemGuard.__qualname__ = "SpecProblemGuard"
        cls = globals()["SpecProblemGuard"] = SpecProblemGuard
    return cls


class Driver(Protocol):
    """What decides which held-out runs start (:class:`rlsweep.holdout.Race`): it replays its decisions from
    the finished runs' values, so it keeps no state of its own."""

    def next_runs(self, done: Mapping[tuple[str, int], float | None], pending: Any = ()) -> list[tuple[str, int]]: ...

    def finished(self, done: Mapping[tuple[str, int], float | None]) -> bool: ...


def race_searcher_class() -> type:
    """A Tune searcher that starts the runs a :class:`Driver` names, one (candidate, test seed) a trial, as
    their results come in: None while a round waits for its last runs, FINISHED once the driver is done.
    Its state is the finished runs' values and the started ones, saved with Tune's experiment state, so a
    resumed stage replays the driver's decisions. Kept as this module's ``RaceSearcher`` so Tune can pickle
    it by reference."""
    cls = globals().get("RaceSearcher")
    if cls is None:
        from ray.tune.search import Searcher

        class RaceSearcher(Searcher):
            def __init__(self, driver: Driver, metric: str, env_steps: int) -> None:
                super().__init__()
                self.driver, self.score_metric, self.env_steps = driver, metric, env_steps
                self.done: dict[tuple[str, int], float | None] = {}
                self.pending: dict[str, tuple[str, int]] = {}

            def suggest(self, trial_id: str) -> dict[str, Any] | str | None:
                if self.driver.finished(self.done):
                    return Searcher.FINISHED
                runs = self.driver.next_runs(self.done, set(self.pending.values()))
                if not runs:
                    return None  # the round waits for its last runs
                candidate, seed = self.pending[trial_id] = runs[0]
                return {store.CANDIDATE_KEY: candidate, store.TEST_SEED_KEY: seed}

            def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
                run = self.pending.pop(trial_id, None)
                if run is not None:
                    self.done[run] = None if error or not result else final_value(result, self.score_metric, self.env_steps)

            def save(self, checkpoint_path: str) -> None:
                with open(checkpoint_path, "wb") as file:
                    pickle.dump({"done": self.done, "pending": self.pending}, file)

            def restore(self, checkpoint_path: str) -> None:
                with open(checkpoint_path, "rb") as file:
                    state = pickle.load(file)
                self.done, self.pending = state["done"], state["pending"]

        RaceSearcher.__qualname__ = "RaceSearcher"
        cls = globals()["RaceSearcher"] = RaceSearcher
    return cls


def final_value(result: Mapping[str, Any], metric: str, env_steps: int) -> float | None:
    """A held-out run's score: ``metric`` (its final greedy evaluation) in its last row, where the run reached
    the budget and the value is finite; None (a failed run) otherwise."""
    value = result.get(metric)
    if (int(result.get("env_steps", 0) or 0) < env_steps or result.get(DIVERGED) or not isinstance(value, (int, float))
            or not math.isfinite(value)):
        return None  # as the store reads it back (rlsweep.api's replay of the race): a diverged run failed
    return float(value)


def __getattr__(name: str) -> Any:
    # Unpickling a saved sweep looks the class up here before anything made it.
    if name == "SpecProblemGuard":
        return spec_problem_guard_class()
    if name == "RaceSearcher":
        return race_searcher_class()
    raise AttributeError(name)


def _raise_spec_problems(root: Path) -> None:
    """The spec problems the sweep's trials recorded, as the spec error they are (exit 2 in the CLI)."""
    if problems := store.spec_problems(root):
        raise SpecError([*problems, Problem("", f"the sweep at {root} stopped: every trial would fail the same way")])


def _trainable(spec: SweepSpec, sweep_id: str, trace: tracing.TraceTarget | None = None, memory: MemoryReading | None = None,
               race: tuple[str, str] | None = None) -> Any:
    rule = SCHEDULERS[str(spec.scheduler.name)].checkpoint_rule(spec)
    return make_trainable(spec, plan_for(spec, rule, seed_base(spec.searcher.seed, sweep_id), trace, race), memory)


def _recorded_memory(info: Mapping[str, Any]) -> MemoryReading | None:
    """The pre-flight reading a sweep ran with: its trials reserve as much when resumed or confirmed."""
    recorded = info.get("memory")
    return MemoryReading.from_dict(recorded) if isinstance(recorded, Mapping) else None


#: Where a spec's spans go: ``spec -> TraceTarget`` (None: tracing off).
TraceResolver = Callable[[SweepSpec], "tracing.TraceTarget | None"]


def _otlp_target(spec: SweepSpec) -> tracing.TraceTarget | None:
    if spec.tracing is not None and spec.tracing.to is not None:
        raise UsageError(f"tracing.to: {spec.tracing.to} is resolved by rlsweep.run (rlsweep.api), not rlsweep.sweep.run", "tracing")
    return tracing.target_for(spec.tracing)


def _sweep_tracer(spec: SweepSpec, trace: tracing.TraceTarget | None) -> tracing.SweepTracer | tracing.Off:
    return tracing.sweep_tracer(
        trace, name=spec.name, algorithm=spec.algorithm, env=spec.env, searcher=spec.searcher.name,
        scheduler=spec.scheduler.name, trials=spec.budget.trials, env_steps_per_trial=spec.budget.env_steps,
    )


def _trial_trace(tracer: tracing.SweepTracer | tracing.Off, trace: tracing.TraceTarget | None, sweep_id: str, path: Path) -> tracing.TraceTarget | None:
    """What the trials need to trace themselves, under their root spans (the driver's)."""
    if trace is None or not isinstance(tracer, tracing.SweepTracer):
        return None
    tracer.root.set_attributes(tracing.attributes({"sweep_id": sweep_id, "experiment_dir": str(path)}))
    target = trace.with_sweep(sweep_id)
    tracer.target = target  # the trials' root spans take their ids from the sweep id
    return target


def run(
    spec: SweepSpec,
    *,
    storage: str | None = None,
    address: str | None = None,
    verbose: int = 1,
    stopper: Any = None,
    callbacks: CallbackFactory | None = None,
    trace: TraceResolver | None = None,
    progress_mode: str | None = None,
) -> tuple[Path, int]:
    """Run a validated sweep to the end; returns its experiment directory and how many trials errored.
    The arguments are :func:`rlsweep.api.run`'s, plus ``callbacks``, which makes extra Tune callbacks once
    the experiment directory exists, and ``trace``, which says where the sweep's and its trials' spans go
    (default: the spec's ``tracing.otlp_endpoint``; ``tracing.to: mlflow`` needs the MLflow experiment's id,
    which :func:`rlsweep.api.run` resolves).

    Raises:
        IncompatibleError: a trial cannot fit the cluster.
    """
    target = (trace or _otlp_target)(spec)
    with tracing.driving(_sweep_tracer(spec, target)) as tracer:
        return _run(spec, storage, address, verbose, stopper, callbacks, target, tracer, progress_mode)


def _run(
    spec: SweepSpec, storage: str | None, address: str | None, verbose: int, stopper: Any,
    callbacks: CallbackFactory | None, trace: tracing.TraceTarget | None, tracer: tracing.SweepTracer | tracing.Off,
    progress_mode: str | None = None,
) -> tuple[Path, int]:
    with tracer.span("preflight", address=address or spec.ray.address or "local"):
        trial_cpus = runtime.fit_cluster(spec, address, Path(storage or spec.storage))
        memory = None
        if spec.ray.memory_check:
            with tracer.span("memory_check"):
                memory = runtime.fit_memory(spec, trial_cpus)
                tracer.event("memory_fit", trial_memory_mb=memory.reading.trial_mb if memory else 0.0,
                             concurrency=memory.allowed if memory else 0)
    path = store.new_experiment_dir(storage or spec.storage, spec.name)
    with _one_line_when_full(path):
        return _run_in(spec, path, memory, trial_cpus, verbose, stopper, callbacks, trace, tracer, progress_mode)


def _run_in(
    spec: SweepSpec, path: Path, memory: MemoryFit | None, trial_cpus: float, verbose: int, stopper: Any,
    callbacks: CallbackFactory | None, trace: tracing.TraceTarget | None, tracer: tracing.SweepTracer | tracing.Off,
    progress_mode: str | None,
) -> tuple[Path, int]:
    from rlsweep.schedulers._traced import TrialSpans

    reading = memory.reading if memory is not None else None
    # With its name, which a dict spec may leave out: reading the YAML back would name it after the file.
    document = {**spec.document, "name": spec.name}
    sweep_id = store.create_experiment(
        path,
        spec_yaml=yaml.safe_dump(document, sort_keys=False),
        document=document,
        searcher=spec.searcher.name,
        scheduler=spec.scheduler.name,
        restores_other_trials=restores_other_trials(spec),
        own_loggers=True,
        memory=reading.as_dict() if reading is not None else None,
    )
    guard = spec_problem_guard_class()()
    tune_callbacks = [*_logger_callbacks(spec), guard, TrialSpans(spec.algorithm, spec.env)]
    tune_callbacks += _progress_callbacks(spec, verbose, progress_mode)
    if callbacks is not None:
        tune_callbacks += callbacks(spec, path, sweep_id)
    if verbose:
        _say(iteration_line(spec))
        if (line := replay_buffer_line(spec)) is not None:
            _say(line)
        for line in memory.lines() if memory is not None else []:
            _say(line)
    search_alg, param_space, num_samples = SEARCHERS[str(spec.searcher.name)].build(
        search_request(spec, capacity=runtime.ClusterCapacity(trial_cpus, reading.trial_mb if reading is not None else 0.0))
    )
    with runtime.seed_race(spec, sweep_id) as race:
        tuner = _new_tuner(spec, path, sweep_id, reading, search_alg, param_space, num_samples, stopper, guard, tune_callbacks,
                           _trial_trace(tracer, trace, sweep_id, path), race)
        with _tune_environment(), _leave_home_as_it_was():
            grid = tuner.fit()
    _raise_spec_problems(path)
    errored = sum(1 for r in grid if r.error is not None)
    if errored and runtime.storage_is_full(path):  # trials that failed writing their rows or checkpoints
        raise SweepError(_full_disk_message(path, None))
    return path, errored


def _new_tuner(
    spec: SweepSpec, path: Path, sweep_id: str, reading: MemoryReading | None, search_alg: Any, param_space: Any,
    num_samples: int, stopper: Any, guard: Any, tune_callbacks: list[Any], trace: tracing.TraceTarget | None,
    race: tuple[str, str] | None,
) -> Any:
    from ray import tune

    from rlsweep.schedulers._traced import traced_scheduler

    return tune.Tuner(
        _trainable(spec, sweep_id, trace, reading, race),
        param_space=param_space,
        tune_config=tune.TuneConfig(
            metric=spec.metric.name,
            mode=spec.metric.mode,
            search_alg=search_alg,
            scheduler=traced_scheduler(SCHEDULERS[str(spec.scheduler.name)].build(spec)),
            num_samples=num_samples,
            time_budget_s=spec.budget.time_s,
            reuse_actors=spec.ray.reuse_actors,
        ),
        run_config=tune.RunConfig(
            name=path.name,
            storage_path=str(path.parent),
            stop=_stop_condition(spec, stopper, guard),
            checkpoint_config=tune.CheckpointConfig(
                num_to_keep=checkpoint_keep(spec),
                checkpoint_score_attribute=spec.metric.name,
                checkpoint_score_order=spec.metric.mode,
            ),
            failure_config=tune.FailureConfig(max_failures=spec.failure.max_retries),
            verbose=0,
            callbacks=tune_callbacks,
        ),
    )


def _no_space(exc: BaseException | None) -> OSError | None:
    """The ``ENOSPC`` / ``EDQUOT`` error in ``exc``'s chain, if any."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _kept(root: Path) -> str:
    """What a sweep stopped by a full disk left in ``root``, in words."""
    if not root.is_dir():
        return "nothing (the experiment directory could not be made)"
    trials = rows = 0
    with contextlib.suppress(OSError):
        for folder in root.iterdir():
            results = folder / store.RESULT_FILE
            if folder.is_dir() and results.is_file():
                trials += 1
                with contextlib.suppress(OSError), results.open("rb") as lines:
                    rows += sum(1 for line in lines if line.strip())
    state = "Tune's experiment state" if store.has_tune_state(root) else "no Tune experiment state (it was not saved)"
    return f"{root} holds {trials} trial folder(s) with {rows} result row(s) and {state}"


def _full_disk_message(root: Path, full: OSError | None, resuming: bool = False) -> str:
    where = f" writing {full.filename}" if full is not None and full.filename else ""
    then = (f"free space, then `rlsweep resume {root}` continues the trials that had not finished (those that "
            "failed writing stay failed), or run the sweep again" if store.has_tune_state(root)
            else "free space and run the sweep again (nothing of it can be resumed)")
    return (f"the disk of {root.parent} is full (No space left on device{where}): the sweep "
            f"{'resumed ' if resuming else ''}stopped. Kept: {_kept(root)}; {then}")


class _QuietWhenFull(logging.Filter):
    """Drops Tune's records about a full disk while a sweep runs: the traceback of each failed save of its
    experiment state, and its closing "Trials did not complete" when the disk is full; the sweep's own
    error says both in a line."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and _no_space(record.exc_info[1]) is not None:
            return False
        return not (str(record.msg).startswith("Trials did not complete") and runtime.storage_is_full(self.root))


#: Tune's loggers that speak of a failed write: its experiment state's saver and syncer, and its closing
#: summary.
_TUNE_WRITERS = ("ray.tune.execution.experiment_state", _compat.TUNE_SYNCER_LOGGER, "ray.tune.tune")


@contextlib.contextmanager
def _one_line_when_full(root: Path, resuming: bool = False) -> Iterator[None]:
    """A sweep whose storage filled up (the spec copy, ``rlsweep.json``, Tune's state, a checkpoint, a row)
    ends in one :class:`SweepError` that names the folder and what was kept, not a traceback from wherever
    the write failed or from Tune reading back what it could not write."""
    quiet = _QuietWhenFull(root)
    for name in _TUNE_WRITERS:
        logging.getLogger(name).addFilter(quiet)
    try:
        yield
    except Exception as exc:
        full = _no_space(exc)
        if full is None and not runtime.storage_is_full(root):
            raise
        raise SweepError(_full_disk_message(root, full, resuming)) from None
    finally:
        for name in _TUNE_WRITERS:
            logging.getLogger(name).removeFilter(quiet)


def spec_differences(ran: Any, now: Any) -> list[str]:
    """Every spec path whose value differs between two spec documents, as ``path: old -> new``."""
    before = flatten(json.loads(json.dumps(ran, default=str)))
    after = flatten(json.loads(json.dumps(now, default=str)))
    lines = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            lines.append(f"{key}: {before[key]!r} -> (removed)")
        elif key not in before:
            lines.append(f"{key}: (absent) -> {after[key]!r}")
        elif before[key] != after[key]:
            lines.append(f"{key}: {before[key]!r} -> {after[key]!r}")
    return lines


def resume(
    path: str | Path, *, spec_path: str | Path | None = None, address: str | None = None, trace: TraceResolver | None = None
) -> tuple[Path, SweepSpec, int]:
    """Continue an interrupted sweep (its driver killed, the machine rebooted): finished and failed trials
    are kept as they are, unfinished ones continue from their latest checkpoint with their env-step
    counts, and the searcher continues from its saved state.

    Args:
        path: The experiment directory.
        spec_path: The spec file the user means to resume with; refused if it differs from the one that ran.
        address: Join this Ray cluster instead of starting a local runtime.

    Returns:
        The directory, the spec it ran, and how many trials errored.

    Raises:
        SpecError: the spec was edited since the sweep started (the differences are listed).
        SweepError: the directory is not a resumable rlsweep experiment.
    """
    from ray import tune

    root = Path(path).expanduser().resolve()
    info = store.read_sweep_info(root)
    ran = store.spec_as_run(info)
    now = read_document(store.spec_file(root))
    problems = []
    if ran is not None:
        for where, document in ((store.spec_file(root), now), (spec_path, read_document(Path(spec_path)) if spec_path else None)):
            if document is not None and (changes := spec_differences(ran, document)):
                problems += [Problem("spec", f"{where} differs from the spec this sweep ran with: {c}") for c in changes]
    if problems:
        problems.append(Problem("spec", "a resumed sweep must run the spec it started with; start a new sweep to change it"))
        raise SpecError(problems)
    if not store.has_tune_state(root):
        raise SweepError(f"{root}: no Tune experiment state to resume from (the sweep never started a trial)")
    if damage := store.resume_problems(root):
        raise SweepError(f"{root}: cannot resume safely: " + "; ".join(damage))
    spec = load_spec(ran if ran is not None else now, preflight=False)
    trial_cpus = runtime.fit_cluster(spec, address, root.parent)
    if (recorded := _recorded_memory(info)) is not None:
        runtime.check_reading(spec, recorded, trial_cpus)  # the cluster it resumes on may be smaller
    sweep_id = str(info.get("sweep_id", ""))
    target = (trace or _otlp_target)(spec)
    with tracing.driving(_sweep_tracer(spec, target)) as tracer, runtime.seed_race(spec, sweep_id, _race_so_far(root, spec)) as race:
        # Tune restores the callbacks it saved with the sweep (progress lines, live logging).
        tuner = tune.Tuner.restore(
            str(root),
            trainable=_trainable(spec, sweep_id, _trial_trace(tracer, target, sweep_id, root), recorded, race),
            resume_unfinished=True,
            resume_errored=False,
            restart_errored=False,
            param_space=None,
        )
        # A sweep started before rlsweep passed its own loggers relies on Tune's defaults for result.json.
        with _one_line_when_full(root, resuming=True), _tune_environment(own_loggers=bool(info.get("own_loggers"))), \
                _leave_home_as_it_was():
            grid = tuner.fit()
    _raise_spec_problems(root)
    errored = sum(1 for r in grid if r.error is not None)
    if errored and runtime.storage_is_full(root):
        raise SweepError(_full_disk_message(root, None, resuming=True))
    return root, spec, errored


def _race_so_far(root: Path, spec: SweepSpec) -> dict[int, dict[str, dict[str, Any]]] | None:
    """With ``seeds.adaptive``: what the sweep's trials handed in at each check before it stopped and what the
    race said, as each recorded it, so the resumed sweep ranks its trials against the ones that ran before
    and a trial that checks again gets its first answer."""
    if not spec.seeds.adaptive:
        return None
    trials = store.read_trials(root, budget_env_steps=spec.budget.env_steps)
    return race_record((t.trial_id, t.settings) for t in trials)


def reproduction_spec(path: str | Path, trial_id: str) -> SweepSpec:
    """A one-trial spec that reruns trial ``trial_id`` of the sweep at ``path`` from the config and training
    seed it recorded as it started (a trial with several seeds: its first): the sweep's spec with every
    searched value (and the seed) fixed, one seed, FIFO, the full budget, named ``<name>-reproduce-<trial id>``.

    Raises:
        UsageError: no such trial (or an ambiguous prefix), or it never started (nothing recorded).
    """
    root = Path(path).expanduser().resolve()
    document = store.spec_as_run(store.read_sweep_info(root)) or read_document(store.spec_file(root))
    budget = int(document.get("budget", {}).get("env_steps", 0))
    trials = store.read_trials(root, budget_env_steps=budget)
    found = store.matching_trials(trials, trial_id)
    if len(found) != 1:
        known = ", ".join(sorted(t.trial_id for t in trials)) or "none"
        why = "matches several trials" if found else "is not a trial of this sweep"
        raise UsageError(f"{trial_id!r} {why}; its trials: {known}", "TRIAL")
    (trial,) = found
    recorded = (trial.settings or {}).get("config")
    if unreadable := [d for d in trial.damage if d.startswith(str(trial.path / store.TRIAL_FILE))]:
        raise UsageError(f"cannot rerun trial {trial.trial_id}: {unreadable[0]}", "TRIAL")
    if not isinstance(recorded, dict):
        raise UsageError(f"trial {trial.trial_id} recorded no settings (it never started, or ran before rlsweep "
                         "recorded them), so there is nothing to rerun", "TRIAL")
    spec = copy.deepcopy(document)
    spec.update(
        name=f"{spec.get('name') or root.name}-reproduce-{trial.trial_id}",
        search_space={path: {"fixed": value} for path, value in recorded.items()},
        searcher="random",  # every value is fixed, the seed among them: nothing is drawn
        scheduler="fifo",
        preset=None,
    )
    spec["budget"] = {**spec["budget"], "trials": 1, "max_concurrent": 1}
    # The recorded config fixes the trial's first seed, so the rerun trains that one seed (and adds none).
    spec["seeds"] = {**{k: v for k, v in (spec.get("seeds") or {}).items() if k not in ("aggregate", "adaptive", "contender_share")},
                     "per_trial": 1}
    return load_spec(spec)


def run_confirmation(
    root: str | Path,
    document: dict[str, Any],
    plan: dict[str, Any],
    *,
    address: str | None = None,
    verbose: int = 1,
) -> tuple[Path, int]:
    """Retrain configurations on test seeds (``rlsweep confirm``): one trial per configuration in
    ``plan["candidates"]`` and seed in ``plan["test_seeds"]``, the draw ``plan["configs"][candidate]``
    trained on that seed (its Tune config is ``{candidate, seed}``), under
    ``document`` (the confirmation's spec), into the ``confirmation`` folder of the sweep at ``root``.

    Run again with the same plan, it resumes: finished runs are kept, unfinished and errored ones continue
    from their latest checkpoint. With another plan it refuses, so no finished run is lost.

    Returns:
        The confirmation's experiment directory and how many of its trials errored.

    Raises:
        UsageError: a confirmation with another plan is already in the directory.
        IncompatibleError: a trial cannot fit the cluster.
    """
    from ray import tune

    root = Path(root).expanduser().resolve()
    path = store.confirmation_dir(root)
    spec = load_spec(document, preflight=False)
    recorded = store.read_confirmation_plan(root)
    if recorded is not None and _canonical(recorded) != _canonical(plan):
        raise UsageError(
            f"{path} holds a confirmation of other configurations or seeds ({recorded.get('candidates')} on "
            f"{recorded.get('test_seeds')}); rerun with those settings to resume it, or move the folder away to start anew",
            "DIR",
        )
    memory = _retraining_memory(root, spec, address)
    trainable = make_confirmation_trainable(spec, plan_for(spec, None, 0), plan["configs"], memory)
    if store.has_tune_state(path):
        tuner = tune.Tuner.restore(str(path), trainable=trainable, resume_unfinished=True, resume_errored=True)
    else:
        tuner = _new_confirmation(path, spec, document, plan, trainable, verbose)
    with _tune_environment(), _leave_home_as_it_was():
        grid = tuner.fit()
    return path, sum(1 for r in grid if r.error is not None)


def _canonical(value: Any) -> str:
    """A plan as JSON with sorted keys: two plans are the same plan where these are equal."""
    return json.dumps(json.loads(json.dumps(value, default=str)), sort_keys=True)


def _retraining_memory(root: Path, spec: SweepSpec, address: str | None) -> MemoryReading | None:
    """Join the cluster a retraining (confirmation, held-out stage) runs on and check that one run fits; the
    sweep's pre-flight reading, which each run reserves, where the sweep trained one seed per trial (a run
    trains one; a reading of a trial holding several is not its size, so it reserves none)."""
    trial_cpus = runtime.fit_cluster(spec, address, root)
    memory = _recorded_memory(store.read_sweep_info(root)) if (root / store.SWEEP_FILE).exists() else None
    if memory is None or memory.seeds != spec.seeds.per_trial:
        return None
    runtime.check_reading(spec, memory, trial_cpus)
    return memory


def run_heldout(
    root: str | Path,
    document: dict[str, Any],
    plan: dict[str, Any],
    driver: Driver,
    *,
    metric: str,
    address: str | None = None,
    verbose: int = 1,
    progress: str | None = None,
) -> tuple[Path, int]:
    """The held-out stage's runs: each (candidate, test seed) ``driver`` names trains ``plan["configs"]
    [candidate]`` on that seed for the full budget under ``document`` (the stage's spec), into the
    ``holdout`` folder of the sweep at ``root``, as results come in, until the driver is finished; scored
    by ``metric`` at the budget. Run again with the same plan it resumes (Tune's state holds the driver's
    finished runs); with another it refuses.

    Returns:
        The stage's experiment directory and how many of its runs errored.

    Raises:
        UsageError: a held-out stage of another plan is already in the directory.
        IncompatibleError: a run cannot fit the cluster.
    """
    from ray import tune
    from ray.tune.search import ConcurrencyLimiter

    root = Path(root).expanduser().resolve()
    path = store.holdout_dir(root)
    spec = load_spec(document, preflight=False)
    recorded = store.read_holdout_plan(root)
    if recorded is not None and _canonical(recorded) != _canonical(plan):
        raise UsageError(f"{path} holds a held-out stage of other configurations or seeds; move the folder away to "
                         "start anew", "DIR")
    memory = _retraining_memory(root, spec, address)
    trainable = make_confirmation_trainable(spec, plan_for(spec, None, 0), plan["configs"], memory)
    with _one_line_when_full(root):
        if store.has_tune_state(path):
            tuner = tune.Tuner.restore(str(path), trainable=trainable, resume_unfinished=True, resume_errored=False)  # a failed run counted as failed stays so
        else:
            if not (path / store.SWEEP_FILE).exists():
                store.create_experiment(
                    path, spec_yaml=yaml.safe_dump(document, sort_keys=False), document=document, exist_ok=True,
                    searcher="race", scheduler="fifo", restores_other_trials=False, own_loggers=True,
                )
            store.write_holdout_plan(root, plan)
            searcher = race_searcher_class()(driver, metric, spec.budget.env_steps)
            if spec.budget.max_concurrent:
                searcher = ConcurrencyLimiter(searcher, max_concurrent=spec.budget.max_concurrent)
            runs = int(plan["planned_runs"])
            if verbose:
                _say(f"held-out stage: {len(plan['candidates'])} configuration(s) raced over test seeds, up to {runs} runs "
                     f"of {spec.budget.env_steps} env steps, into {path}")
            tuner = tune.Tuner(
                trainable,
                tune_config=tune.TuneConfig(search_alg=searcher, num_samples=runs, reuse_actors=spec.ray.reuse_actors),
                run_config=tune.RunConfig(
                    name=path.name,
                    storage_path=str(path.parent),
                    checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
                    failure_config=tune.FailureConfig(max_failures=spec.failure.max_retries),
                    verbose=0,
                    callbacks=_logger_callbacks(spec) + _progress_callbacks(spec, verbose, progress, runs, plan.get("tuning_values") or {}),
                ),
            )
        with _tune_environment(), _leave_home_as_it_was():
            grid = tuner.fit()
    return path, sum(1 for r in grid if r.error is not None)


def _new_confirmation(
    path: Path, spec: SweepSpec, document: dict[str, Any], plan: dict[str, Any], trainable: Any, verbose: int
) -> Any:
    """The Tuner of a confirmation that has not started: a grid of configuration x test seed."""
    from ray import tune
    from ray.tune.search import BasicVariantGenerator

    root = path.parent
    if not (path / store.SWEEP_FILE).exists():
        store.create_experiment(
            path, spec_yaml=yaml.safe_dump(document, sort_keys=False), document=document, exist_ok=True,
            searcher="given", scheduler="fifo", restores_other_trials=False, own_loggers=True,
        )
    store.write_confirmation_plan(root, plan)
    if verbose:
        _say(f"confirming {len(plan['configs'])} configuration(s) on test seeds {plan['test_seeds']}: {len(plan['candidates']) * len(plan['test_seeds'])} runs "
             f"of {spec.budget.env_steps} env steps, into {path}")
    return tune.Tuner(
        trainable,
        param_space={
            store.CANDIDATE_KEY: tune.grid_search(list(plan["candidates"])),
            store.TEST_SEED_KEY: tune.grid_search(list(plan["test_seeds"])),
        },
        tune_config=tune.TuneConfig(
            # Without a cap, as many runs at once as the cluster holds, following it as nodes join or leave.
            search_alg=BasicVariantGenerator(max_concurrent=spec.budget.max_concurrent or 0, random_state=0),
            num_samples=1,
            reuse_actors=spec.ray.reuse_actors,
        ),
        run_config=tune.RunConfig(
            name=path.name,
            storage_path=str(path.parent),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
            failure_config=tune.FailureConfig(max_failures=spec.failure.max_retries),
            verbose=0,
            callbacks=_logger_callbacks(spec) + _progress_callbacks(spec, verbose, None, len(plan["candidates"]) * len(plan["test_seeds"])),
        ),
    )
