"""Running a sweep: Ray runtime, pre-flight, ``tune.Tuner``, then best trial and MLflow export."""

from __future__ import annotations

import copy
import datetime as _dt
import json
import logging
import math
import os
import sys
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsweep.errors import Problem, SpecError, SweepError
from rlsweep.schedulers import SCHEDULERS, SEARCHERS, checkpoint_keep
from rlsweep.spec import SweepSpec
from rlsweep.trainables import make_trainable, resource_problems

if TYPE_CHECKING:
    from rlsweep.analysis import Best

#: Files rlsweep adds to Tune's experiment directory.
SPEC_FILE = "rlsweep_spec.yaml"
SWEEP_FILE = "rlsweep.json"

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
    """

    path: Path
    best: Best | None
    mlflow_run_id: str | None
    errored_trials: int
    export_error: str | None = None


def _say(line: str) -> None:
    print(line, file=sys.stdout, flush=True)


def _progress_callback(spec: SweepSpec) -> Any:
    """One short line per trial result and per trial end, in rlsweep's metric names (Tune's own tables
    would print every RLlib key of every result)."""
    from ray.tune import Callback

    class Progress(Callback):
        def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
            value = result.get(spec.metric.name)
            shown = f"{value:.4g}" if isinstance(value, (int, float)) else value
            _say(
                f"[{trial.trial_id}] env_steps {result.get('env_steps', 0):>8}/{spec.budget.env_steps}  "
                f"{spec.metric.name} {shown}  iteration {result.get('iteration_time_s', 0):.2f}s "
                f"(sample {result.get('sample_time_s', 0):.2f}, learn {result.get('learn_time_s', 0):.2f}, "
                f"other {result.get('other_time_s', 0):.2f})"
            )

        def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            _say(f"[{trial.trial_id}] finished: {trial.config}")

        def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            _say(f"[{trial.trial_id}] FAILED, see {trial.path}/error.txt")

    return Progress()


def _iteration_line(spec: SweepSpec) -> str:
    from rlsweep.trainables._config import MIN_STEPS, MIN_TIME, settings_for

    settings = settings_for(spec, {})
    work = (
        f"samples at least {settings[MIN_STEPS]} env steps"
        if settings[MIN_STEPS]
        else f"is one training step ({MIN_STEPS} 0)"
    )
    return (
        f"{spec.algorithm}: one iteration {work}, time floor {settings[MIN_TIME]} s ({MIN_TIME}); "
        f"budget {spec.budget.env_steps} env steps per trial"
    )


def ensure_ray(spec: SweepSpec, address: str | None = None) -> float:
    """Join ``address`` (or the spec's), or start a local runtime; returns the cluster's CPUs."""
    import ray

    address = address or spec.ray.address
    # Tune snapshots its state after every `keep` checkpoints of a trial, which rlsweep relies on for
    # resume; its warning that this happens often is noise here.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    if not ray.is_initialized():
        os.environ.setdefault("RAY_DEDUP_LOGS", "1")
        # Workers' logs stay in Ray's session folder; trial errors reach the user through Tune's error files.
        kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": False}
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=spec.ray.num_cpus, **kwargs)
    return float(ray.cluster_resources().get("CPU", 0))


def experiment_dir(spec: SweepSpec, storage: str | None = None) -> Path:
    """A new folder under the storage for this sweep: the spec's name, dated if that one is taken."""
    root = Path(storage or spec.storage).expanduser().resolve()
    path = root / spec.name
    if path.exists():
        path = root / f"{spec.name}-{_dt.datetime.now():%Y%m%d-%H%M%S}"
    return path


def _default_concurrency(spec: SweepSpec, cluster_cpus: float, trial_cpus: float) -> int:
    fits = max(1, math.floor(cluster_cpus / max(trial_cpus, 1e-9)))
    return min(spec.budget.max_concurrent or fits, spec.budget.trials)


def _stop_condition(spec: SweepSpec, stopper: Any) -> Any:
    if stopper is None:
        return dict(spec.stop) or None
    if not spec.stop:
        return stopper
    from ray.tune.stopper import CombinedStopper, FunctionStopper

    # Tune takes either a dict of thresholds or a Stopper: the spec's thresholds become a function stopper.
    def thresholds(trial_id: str, result: dict) -> bool:
        return any(result.get(key, -math.inf) >= value for key, value in spec.stop.items())

    return CombinedStopper(FunctionStopper(thresholds), stopper)


def run(
    spec: SweepSpec,
    *,
    storage: str | None = None,
    address: str | None = None,
    verbose: int = 1,
    stopper: Any = None,
) -> SweepResult:
    """Run a validated sweep to the end, pick the best trial, and export it to MLflow if the spec says so.

    Args:
        spec: From :func:`rlsweep.load_spec`.
        storage: Overrides ``spec.storage``.
        address: Overrides ``spec.ray.address`` (``"auto"``, ``"ray://..."``).
        verbose: 0 prints nothing; 1 prints a line per trial result and per finished trial.
        stopper: An extra ``ray.tune.Stopper`` beside the spec's ``stop`` thresholds, e.g. one that ends
            the whole sweep once a condition holds (``benchmarks/time_to_solve.py``).

    Raises:
        SpecError: A trial cannot fit the cluster.
    """
    from ray import tune

    cluster_cpus = ensure_ray(spec, address)
    problems, trial_cpus = resource_problems(spec, cluster_cpus)
    if problems:
        raise SpecError(problems)
    max_concurrent = _default_concurrency(spec, cluster_cpus, trial_cpus)

    path = experiment_dir(spec, storage)
    path.mkdir(parents=True, exist_ok=False)
    (path / SPEC_FILE).write_text(spec.to_yaml())
    sweep_id = uuid.uuid4().hex
    # The spec as it ran, kept apart from the YAML file, so an edit before a resume is found and listed.
    (path / SWEEP_FILE).write_text(
        json.dumps(
            {"sweep_id": sweep_id, "created": _dt.datetime.now().isoformat(), "name": spec.name,
             "spec": dict(spec.document)},
            default=str,
        )
    )
    callbacks = _callbacks(spec, path, sweep_id, verbose)

    if verbose:
        _say(_iteration_line(spec))
    search_alg, param_space, num_samples = SEARCHERS[spec.searcher.name].build(spec, max_concurrent=max_concurrent)
    scheduler = SCHEDULERS[spec.scheduler.name].build(spec)
    tuner = tune.Tuner(
        make_trainable(spec),
        param_space=param_space,
        tune_config=tune.TuneConfig(
            metric=spec.metric.name,
            mode=spec.metric.mode,
            search_alg=search_alg,
            scheduler=scheduler,
            num_samples=num_samples,
            time_budget_s=spec.budget.time_s,
        ),
        run_config=tune.RunConfig(
            name=path.name,
            storage_path=str(path.parent),
            stop=_stop_condition(spec, stopper),
            checkpoint_config=tune.CheckpointConfig(
                num_to_keep=checkpoint_keep(spec),
                checkpoint_score_attribute=spec.metric.name,
                checkpoint_score_order=spec.metric.mode,
            ),
            failure_config=tune.FailureConfig(max_failures=spec.failure.max_retries),
            verbose=0,
            callbacks=callbacks,
        ),
    )
    return _finish(spec, path, tuner.fit())


def _callbacks(spec: SweepSpec, path: Path, sweep_id: str, verbose: int) -> list[Any]:
    callbacks = [_progress_callback(spec)] if verbose else []
    if spec.mlflow is not None and spec.mlflow.live:
        from rlsweep.analysis._live import live_logger

        callbacks.append(live_logger(spec, path, sweep_id))
    return callbacks


def _finish(spec: SweepSpec, path: Path, grid: Any) -> SweepResult:
    from rlsweep.analysis import load

    errored = sum(1 for r in grid if r.error is not None)
    sweep = load(path)
    best = sweep.best() if sweep.has_results() else None
    run_id, export_error = None, None
    if spec.mlflow is not None and spec.mlflow.export:
        from rlsweep.analysis._mlflow import ExportError

        try:
            run_id = sweep.to_mlflow()
        except ExportError as exc:
            # The sweep's results are on disk; a failed export must not hide them.
            export_error = str(exc)
            log.warning("%s", exc)
    return SweepResult(path=path, best=best, mlflow_run_id=run_id, errored_trials=errored, export_error=export_error)


def _flatten(document: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(document, dict) and document:
        flat: dict[str, Any] = {}
        for key, value in document.items():
            flat.update(_flatten(value, f"{prefix}{key}."))
        return flat
    return {prefix.rstrip("."): document}


def spec_differences(ran: Any, now: Any) -> list[str]:
    """Every spec path whose value differs between two spec documents, as ``path: old -> new``."""
    before, after = _flatten(json.loads(json.dumps(ran, default=str))), _flatten(json.loads(json.dumps(now, default=str)))
    lines = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            lines.append(f"{key}: {before[key]!r} -> (removed)")
        elif key not in before:
            lines.append(f"{key}: (absent) -> {after[key]!r}")
        elif before[key] != after[key]:
            lines.append(f"{key}: {before[key]!r} -> {after[key]!r}")
    return lines


def resume(path: str | Path, *, spec_path: str | Path | None = None, address: str | None = None) -> SweepResult:
    """Continue an interrupted sweep (its driver killed, the machine rebooted): finished and failed trials
    are kept as they are, unfinished ones continue from their latest checkpoint with their env-step
    counts, and the searcher continues from its saved state.

    Args:
        path: The experiment directory.
        spec_path: The spec file the user means to resume with; refused if it differs from the one that ran.
        address: Join this Ray cluster instead of starting a local runtime.

    Raises:
        SpecError: the spec was edited since the sweep started (the differences are listed), or the
            directory is not a resumable rlsweep experiment.
    """
    from ray import tune

    from rlsweep.spec import read_document
    from rlsweep.validate import load_spec

    root = Path(path).expanduser().resolve()
    info = read_sweep_info(root)
    ran = info.get("spec")
    now = read_document(root / SPEC_FILE)
    problems = []
    if ran is not None:
        for where, document in ((root / SPEC_FILE, now), (spec_path, read_document(Path(spec_path)) if spec_path else None)):
            if document is not None and (changes := spec_differences(ran, document)):
                problems += [Problem("spec", f"{where} differs from the spec this sweep ran with: {c}") for c in changes]
    if problems:
        problems.append(Problem("spec", "a resumed sweep must run the spec it started with; start a new sweep to change it"))
        raise SpecError(problems)
    if not list(root.glob("experiment_state-*.json")):
        raise SpecError(f"{root}: no Tune experiment state to resume from (the sweep never started a trial)", "DIR")
    spec = load_spec(ran if ran is not None else now, preflight=False)
    ensure_ray(spec, address)
    # Tune restores the callbacks it saved with the sweep (progress lines, live logging).
    tuner = tune.Tuner.restore(
        str(root),
        trainable=make_trainable(spec),
        resume_unfinished=True,
        resume_errored=False,
        restart_errored=False,
        param_space=None,
    )
    return _finish(spec, root, tuner.fit())


def sample(spec: SweepSpec, n: int, *, searcher: str | None = None) -> list[dict[str, Any]]:
    """The first ``n`` configs the spec's searcher (or ``searcher``) would try, without running a trial.

    Configs are flat, keyed by the spec's parameter paths; inactive conditional parameters are absent.
    """
    if searcher is not None and searcher != spec.searcher.name:
        # The scheduler does not change what a searcher draws; pair the searcher with one it runs with.
        entry = SEARCHERS.get(searcher)
        partners = sorted(entry.partners) if entry is not None and entry.partners else ["fifo"]
        spec = replace(
            spec,
            searcher=replace(spec.searcher, name=searcher, options={}),
            scheduler=replace(spec.scheduler, name=partners[0], options={}),
        )
        from rlsweep.schedulers import check_spec

        problems = check_spec(spec)
        if problems:
            raise SpecError(problems)
    entry = SEARCHERS[spec.searcher.name]
    search_alg, param_space, _ = entry.build(spec, max_concurrent=None)
    configs: list[dict[str, Any]] = []
    if param_space or not hasattr(search_alg, "suggest"):
        # Tune's variant generator: the same generator and seeding as BasicVariantGenerator uses in run().
        from ray.tune.search.sample import _BackwardsCompatibleNumpyRng
        from ray.tune.search.variant_generator import generate_variants

        # BasicVariantGenerator runs the points to evaluate first, each standing for one sample.
        from rlsweep.schedulers._searchers import points_to_evaluate

        configs = [dict(p) for p in points_to_evaluate(spec) or []][:n]
        rng = _BackwardsCompatibleNumpyRng(spec.searcher.seed)
        while len(configs) < n:
            for _, variant in generate_variants({"config": copy.deepcopy(param_space)}, random_state=rng):
                configs.append(dict(variant["config"]))
                if len(configs) == n:
                    break
        return configs
    for i in range(n):
        suggestion = search_alg.suggest(f"sample_{i:05d}")
        if suggestion is None:
            break
        configs.append(dict(suggestion))
    return configs


def read_sweep_info(path: Path) -> dict[str, Any]:
    try:
        return json.loads((path / SWEEP_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise SweepError(f"{path}: not an rlsweep experiment directory ({SWEEP_FILE}: {exc})") from None
