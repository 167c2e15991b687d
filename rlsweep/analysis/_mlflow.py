"""MLflow export: a parent run per sweep, a nested child run per trial. Idempotent and resumable.

Runs are found again by tags (``rlsweep.sweep_id``, ``rlsweep.trial_id``); each child records how many
result rows it already holds, so a second export adds only what is new and never duplicates a run.
Every write is a ``log_batch`` (MLflow's per-call ``log_metric`` is one request per value).

MLflow has no transactions: two writers that each search for a trial's run, find none and create one
would leave two. So every writer of a sweep (an export, the live logger) holds the sweep's lock
(:func:`rlsweep.store.mlflow_lock`, a ``flock`` on a file in the experiment directory) from its search to
its last write, and reads the runs and their row counts inside it: exports started together run one after
the other, the second finds everything and writes nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from rlsweep import store
from rlsweep.errors import ExportError, SweepError, UsageError
from rlsweep.metrics import ENV_STEPS, env_steps, exported_values
from rlsweep.spec import DEFAULT_TRACKING_URI, MlflowSpec

log = logging.getLogger("rlsweep")

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from rlsweep.analysis._view import SweepView
    from rlsweep.spec import SweepSpec

SWEEP_TAG = "rlsweep.sweep_id"
#: On a parent run: the experiment directory it was logged from. A folder copied from another keeps its sweep
#: id, so the path is what tells the copy's runs from the original's.
PATH_TAG = "rlsweep.path"
#: On the parent run of a copied sweep folder: the sweep id of the sweep it was copied from.
COPY_OF_TAG = "rlsweep.copy_of"
TRIAL_TAG = "rlsweep.trial_id"
KIND_TAG = "rlsweep.kind"
ROWS_TAG = "rlsweep.rows_exported"
PARENT_TAG = "mlflow.parentRunId"
BEST_CHECKPOINT_TAG = "rlsweep.best_checkpoint"
BEST_ARTIFACT_TAG = "rlsweep.best_checkpoint_logged"
#: A trial's settings other than its draw are tags under this prefix (its params are the draw alone).
SETTING_TAG = "rlsweep.setting."
#: On the parent run: the searched params (comma-separated) and the metric the sweep optimised, with its mode.
SEARCHED_TAG = "rlsweep.searched"
METRIC_TAG = "rlsweep.metric"
#: MLflow shows this tag as the run's description.
NOTE_TAG = "mlflow.note.content"

#: MLflow's limits (3.x): characters in a param key and value, entries in one log_batch call.
MAX_PARAM_KEY = 250
MAX_PARAM_CHARS = 6000
MAX_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100

_STATUS = {store.TERMINATED: "FINISHED", store.ERROR: "FAILED", store.PAUSED: "KILLED"}


def _param_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 3] + "..."


def trial_params(settings: Mapping[str, Any] | None, config: Mapping[str, Any]) -> dict[str, Any]:
    """A trial's params: every setting it ran with as the trial recorded it (rlsweep's defaults, what an
    iteration is, ``config``, the draw, and its seeds when it trained several), so nothing that shaped the
    run is hidden in a default; the draw alone for a trial that recorded none."""
    recorded = (settings or {}).get("settings", {})
    seeds = (settings or {}).get("seeds")
    several = {"seeds": seeds} if isinstance(seeds, list) and len(seeds) > 1 else {}
    return {**recorded, **config, **several}


def split_params(settings: Mapping[str, Any] | None, config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A trial's :func:`trial_params` as (its draw, every other setting). The draw becomes the run's params
    under its search-space paths: MLflow's run comparison pre-selects the params whose values differ
    between the runs, the first 3 by name, and its contour plot's axes are the first params by name whose
    values are numbers, so a trial's seed or dozens of fixed settings beside the draw would push the
    searched ones out. The other settings become tags (:func:`setting_tags`)."""
    every = trial_params(settings, config)
    draw = {k: every.get(k, v) for k, v in config.items()}
    return draw, {k: v for k, v in every.items() if k not in draw}


def param_entities(params: Mapping[str, Any]) -> list[Any]:
    from mlflow.entities import Param

    return [Param(str(k)[:MAX_PARAM_KEY], _param_value(v)) for k, v in params.items()]


def setting_tags(settings: Mapping[str, Any]) -> list[Any]:
    """The settings as tags ``rlsweep.setting.<path>``, values written as params are."""
    from mlflow.entities import RunTag

    return [RunTag(f"{SETTING_TAG}{k}"[:MAX_PARAM_KEY], _param_value(v)) for k, v in settings.items()]


def missing_entities(
    run: Any, settings: Mapping[str, Any] | None, config: Mapping[str, Any]
) -> tuple[list[Any], list[Any]]:
    """The trial's params and setting tags that its run (None: a new run) does not hold yet: a run made by
    an export cut off before its params, or before the trial recorded its settings, is missing some (and
    MLflow refuses to change a param's value)."""
    draw, rest = split_params(settings, config)
    params_held = run.data.params if run is not None else {}
    tags_held = run.data.tags if run is not None else {}
    return (
        [p for p in param_entities(draw) if p.key not in params_held],
        [t for t in setting_tags(rest) if t.key not in tags_held],
    )


def row_metrics(row: Mapping[str, Any], metric: str | None = None) -> list[Any]:
    """The MLflow metrics of one result row, each at step = env steps. The sweep's ``metric`` comes first
    (and is exported even when it is an RLlib key): MLflow's run comparison colours its parallel
    coordinates by the first metric the runs share, in the order a run's metrics were first logged."""
    from mlflow.entities import Metric

    step = env_steps(row)
    timestamp = int(float(row.get(store.TIMESTAMP_KEY, 0)) * 1000)
    values = exported_values(row)
    own = row.get(metric) if metric is not None else None
    if metric is not None and isinstance(own, (int, float)) and not isinstance(own, bool) and math.isfinite(own):
        values = {metric: float(own), **{k: v for k, v in values.items() if k != metric}}
    return [Metric(name, value, timestamp, step) for name, value in values.items()]


def log_rows(
    client: MlflowClient, run_id: str, rows: Iterable[Mapping[str, Any]], rows_done: int, params: Iterable[Any] = (),
    tags: Iterable[Any] = (), metric: str | None = None,
) -> None:
    """Log ``rows`` (and a new run's ``params`` and setting ``tags``) in as few ``log_batch`` calls as
    MLflow's limits allow, the last one also recording that the run holds ``rows_done`` rows. MLflow writes
    a batch's tags after its metrics, so an export cut off half-way repeats rows, and MLflow drops repeated
    identical points. ``metric``: the sweep's, each row's first."""
    from mlflow.entities import RunTag

    metrics = [m for row in rows for m in row_metrics(row, metric)]
    pending, pending_tags = list(params), list(tags)
    batches: list[tuple[list, list, list]] = []
    while pending or pending_tags or metrics or not batches:
        batch_params, pending = pending[:MAX_PARAMS_PER_BATCH], pending[MAX_PARAMS_PER_BATCH:]
        # One tag's room for the row count tag.
        batch_tags, pending_tags = pending_tags[: MAX_PARAMS_PER_BATCH - 1], pending_tags[MAX_PARAMS_PER_BATCH - 1 :]
        room = MAX_BATCH - len(batch_params) - len(batch_tags) - 1
        batch_metrics, metrics = metrics[:room], metrics[room:]
        batches.append((batch_params, batch_tags, batch_metrics))
    for i, (batch_params, batch_tags, batch_metrics) in enumerate(batches):
        last = [RunTag(ROWS_TAG, str(rows_done))] if i == len(batches) - 1 else []
        client.log_batch(run_id, metrics=batch_metrics, params=batch_params, tags=batch_tags + last, synchronous=True)


def server_problem(tracking_uri: str, timeout_s: float = 5.0) -> str | None:
    """Why an MLflow server at an http(s) ``tracking_uri`` cannot be written to now (nothing answers its
    ``/health``), or None; other stores are local. MLflow's own client would retry a dead address for
    minutes before saying so."""
    if not tracking_uri.startswith(("http://", "https://")):
        return None
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{tracking_uri.rstrip('/')}/health", timeout=timeout_s):
            return None
    except urllib.error.HTTPError:
        return None  # something answers: a server behind a proxy may not serve /health
    except (OSError, ValueError) as exc:
        return f"nothing answers at {tracking_uri} ({getattr(exc, 'reason', exc)})"


def client_for(tracking_uri: str) -> MlflowClient:
    """An MLflow client of ``tracking_uri``. MLflow 3.17 logs two INFO lines (``Creating initial MLflow
    database tables...``) the first time a SQLite store is written, in the middle of a sweep's output; only
    its database module's INFO is left out."""
    from mlflow import MlflowClient

    logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
    return MlflowClient(tracking_uri=tracking_uri)


def experiment_id(client: MlflowClient, name: str) -> str:
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        if experiment.lifecycle_stage == "deleted":
            client.restore_experiment(experiment.experiment_id)
        return str(experiment.experiment_id)
    return str(client.create_experiment(name))


def _search_all(client: MlflowClient, experiment: str, query: str) -> list[Any]:
    runs, token = [], None
    while True:
        page = client.search_runs([experiment], filter_string=query, max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs


def sweep_key(client: MlflowClient, experiment: str, sweep_id: str, path: Path, recorded_path: str | None) -> tuple[str, str | None]:
    """What the runs of the sweep folder at ``path`` are tagged with (:data:`SWEEP_TAG`), and a line for the
    user where the folder is not where its sweep started.

    A copied folder (``cp -a``) keeps its sweep id: writing it under that id would add its trials to the
    original's parent run and move the original's best checkpoint into the copy. The path the sweep's runs
    were logged from (the parent run's :data:`PATH_TAG`, else the path the sweep recorded when it started)
    tells them apart: where that folder still holds this sweep, ``path`` is a copy and gets a parent run of
    its own (its key derived from its path, so a second export finds it again); where it holds it no more,
    the sweep moved and its runs follow it.
    """
    path = Path(path).resolve()
    parents = _search_all(client, experiment, f"tags.`{SWEEP_TAG}` = '{sweep_id}' and tags.`{KIND_TAG}` = 'sweep'")
    origin = parents[0].data.tags.get(PATH_TAG) if parents else recorded_path
    if not origin or Path(origin) == path:
        return sweep_id, None
    # A copy, unless the origin is gone: where it is there but cannot be read here (not mounted, no
    # permission), it may well be the original, so the runs logged from it are left alone.
    if _holds_sweep(Path(origin), sweep_id) or _present(Path(origin)):
        key = f"{sweep_id}-copy-{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
        return key, (f"{path} is a copy of the sweep at {origin} (both have sweep id {sweep_id}): logged as a parent run "
                     f"of its own (tag {COPY_OF_TAG}={sweep_id}); the original's runs are left as they are")
    for parent in parents:
        client.set_tag(parent.info.run_id, PATH_TAG, str(path))
    return sweep_id, f"the sweep moved from {origin} to {path}: its MLflow runs now point here"


def _present(path: Path) -> bool:
    """Whether something is at ``path`` (or cannot be told: a folder above it that may not be looked in)."""
    try:
        path.lstat()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def _holds_sweep(path: Path, sweep_id: str) -> bool:
    try:
        return str(store.read_sweep_info(path).get("sweep_id")) == sweep_id
    except SweepError:
        return False


def parent_run(
    client: MlflowClient, experiment: str, spec: SweepSpec, sweep_id: str, path: Path, searcher: str, scheduler: str,
    copy_of: str | None = None,
) -> str:
    """The sweep's parent run, created (with the spec as an artifact) the first time. ``sweep_id`` is the key
    :func:`sweep_key` gave; ``copy_of`` the original's sweep id where the folder is a copy."""
    found = _search_all(client, experiment, f"tags.`{SWEEP_TAG}` = '{sweep_id}' and tags.`{KIND_TAG}` = 'sweep'")
    if found:
        return str(found[0].info.run_id)
    run = client.create_run(
        experiment,
        run_name=spec.name if copy_of is None else f"{spec.name} (copy at {path})",
        tags={
            SWEEP_TAG: sweep_id,
            KIND_TAG: "sweep",
            PATH_TAG: str(path),
            **({COPY_OF_TAG: copy_of} if copy_of is not None else {}),
            "rlsweep.searcher": searcher,
            "rlsweep.scheduler": scheduler,
            "rlsweep.algorithm": spec.algorithm,
            "rlsweep.env": spec.env,
            **comparison_tags(spec),
        },
    )
    params = {
        "algorithm": spec.algorithm,
        "env": spec.env,
        "searcher": searcher,
        "scheduler": scheduler,
        "budget.env_steps": spec.budget.env_steps,
        "budget.trials": spec.budget.trials,
        "metric": f"{spec.metric.name} ({spec.metric.mode})",
        # Which Q network SAC learns with (validate refuses any other critic than RLlib's elsewhere).
        **({"critic": spec.critic} if spec.algorithm == "SAC" else {}),
        # Updates per env step (each trial's training_intensity follows from it and the trial's batch).
        **({"updates_per_env_step": spec.updates_per_env_step} if spec.updates_per_env_step is not None else {}),
        **{f"config.{k}": v for k, v in spec.config.items()},
    }
    entities = param_entities(params)
    for start in range(0, len(entities), MAX_PARAMS_PER_BATCH):
        client.log_batch(run.info.run_id, params=entities[start : start + MAX_PARAMS_PER_BATCH])
    with tempfile.TemporaryDirectory() as directory:
        spec_path = Path(directory, "spec.yaml")
        spec_path.write_text(spec.to_yaml())
        client.log_artifact(run.info.run_id, str(spec_path))
    return str(run.info.run_id)


def comparison_tags(spec: SweepSpec) -> dict[str, str]:
    """The parent run's tags saying what to compare its trials by: the searched params, the metric, and a
    description (shown on the run's page) of how to compare them in MLflow."""
    searched = list(spec.search_space.paths)
    metric = f"{spec.metric.name} ({spec.metric.mode})"
    note = (
        f"rlsweep sweep: {spec.algorithm} on {spec.env}, {metric}.\n\n"
        f"Searched params: {', '.join(f'`{p}`' for p in searched) or 'none'}. Each trial is a child run whose params "
        f"are its draw of these (its other settings are `{SETTING_TAG}*` tags).\n\n"
        f"To compare the trials: expand this run in the experiment's runs table, select its child runs and press "
        f"Compare. The parallel coordinates plot shows the searched params against `{spec.metric.name}`, its last "
        f"reported value per trial."
    )
    return {SEARCHED_TAG: ",".join(searched), METRIC_TAG: metric, NOTE_TAG: note}


def child_runs(client: MlflowClient, experiment: str, sweep_id: str) -> dict[str, Any]:
    """trial_id -> its child run, in one paged search (not one search per trial)."""
    query = f"tags.`{SWEEP_TAG}` = '{sweep_id}' and tags.`{KIND_TAG}` = 'trial'"
    return {run.data.tags[TRIAL_TAG]: run for run in _search_all(client, experiment, query)}


def create_child(
    client: MlflowClient, experiment: str, sweep_id: str, parent_id: str, trial_id: str, trial_path: Path | str,
    start_time: int | None = None,
) -> str:
    """A child run for one trial; its params go in with its first rows (:func:`log_rows`)."""
    run = client.create_run(
        experiment,
        run_name=trial_id,
        start_time=start_time,
        tags={
            SWEEP_TAG: sweep_id, TRIAL_TAG: trial_id, PARENT_TAG: parent_id, KIND_TAG: "trial", ROWS_TAG: "0",
            "rlsweep.trial_path": str(trial_path),
        },
    )
    return str(run.info.run_id)


def _log_best(client: MlflowClient, parent_id: str, sweep: SweepView) -> None:
    """Best trial tags and summary metrics, best config as YAML, plots, and the best checkpoint's files."""
    from mlflow.entities import Metric, RunTag

    from rlsweep.analysis._plots import save_plots

    best = sweep.best()
    parent = client.get_run(parent_id)
    client.log_batch(
        parent_id,
        tags=[RunTag("rlsweep.best_trial_id", best.trial_id), RunTag(BEST_CHECKPOINT_TAG, str(best.checkpoint or ""))],
    )
    # A fixed timestamp and step make a repeated export write the same points, not new ones.
    stamp = max((int(float(r.get(store.TIMESTAMP_KEY, 0)) * 1000) for t in sweep.trials for r in t.rows), default=0)
    summary = {
        f"best_{best.metric}": best.value,
        "trials": len(sweep.trials),
        "errored_trials": sum(t.state == store.ERROR for t in sweep.trials),
        f"{ENV_STEPS}_total": sum(t.env_steps for t in sweep.trials),
    }
    client.log_batch(parent_id, metrics=[Metric(k, float(v), stamp, 0) for k, v in summary.items()])
    with tempfile.TemporaryDirectory() as directory:
        best_path = Path(directory, "best_config.yaml")
        best_path.write_text(yaml.safe_dump({"best": best.to_dict()}, sort_keys=False))
        client.log_artifact(parent_id, str(best_path))
        plots = Path(directory, "plots")
        save_plots(sweep, plots)
        client.log_artifacts(parent_id, str(plots), artifact_path="plots")
    if best.checkpoint is not None and parent.data.tags.get(BEST_ARTIFACT_TAG) != str(best.checkpoint):
        client.log_artifacts(parent_id, str(best.checkpoint), artifact_path="best_checkpoint")
        client.set_tag(parent_id, BEST_ARTIFACT_TAG, str(best.checkpoint))


def _log_confirmation(
    client: MlflowClient, experiment: str, parent_id: str, sweep_id: str, sweep: SweepView, result: Mapping[str, Any],
    ended: list[str],
) -> None:
    """A child run per confirmed configuration (its values per test seed, IQM and interval), and on the
    parent the incumbent, the confirmation plot and the reproducibility record."""
    from mlflow.entities import Metric, RunTag

    from rlsweep.analysis._plots import confirmation_plot

    query = f"tags.`{SWEEP_TAG}` = '{sweep_id}' and tags.`{KIND_TAG}` = 'confirmation'"
    logged = {run.data.tags.get(TRIAL_TAG) for run in _search_all(client, experiment, query)}
    stamp = int(float(result.get("created", 0)) * 1000)
    for row in result["configurations"]:
        if row["trial_id"] in logged:
            continue  # the export is idempotent: a confirmation is logged once
        run = client.create_run(
            experiment,
            run_name=f"confirm-{row['trial_id']}",
            tags={SWEEP_TAG: sweep_id, TRIAL_TAG: row["trial_id"], PARENT_TAG: parent_id, KIND_TAG: "confirmation"},
        )
        ended.append(run.info.run_id)
        values = {k: row[k] for k in ("iqm", "ci_low", "ci_high", "tuning_value", "rank")}
        values.update({f"p_beats/{other}": p for other, p in row["p_beats"].items()})
        points = [Metric(k, float(v), stamp, 0) for k, v in values.items() if isinstance(v, (int, float)) and math.isfinite(v)]
        # Each test seed's final evaluation, with the seed as the step: one point per seed.
        points += [Metric(str(result["metric"]), float(v), stamp, int(seed)) for seed, v in row["per_seed"].items()]
        params = param_entities({**row["config"], "test_seeds": result["test_seeds"], "rlsweep.tie_with_winner": row["tie_with_winner"]})
        client.log_batch(run.info.run_id, metrics=points, params=params, synchronous=True)
        client.set_terminated(run.info.run_id, status="FAILED" if row["missing"] else "FINISHED")
        ended.remove(run.info.run_id)
    incumbent = result["configurations"][0] if result["configurations"] else None
    if incumbent is not None:
        client.log_batch(
            parent_id,
            metrics=[Metric(f"confirmed_{result['metric']}_iqm", float(incumbent["iqm"]), stamp, 0)],
            tags=[RunTag("rlsweep.confirmed_trial_id", incumbent["trial_id"]), RunTag("rlsweep.confirmed_ties", ",".join(result["ties"]))],
        )
    with tempfile.TemporaryDirectory() as directory:
        plots = Path(directory, "plots")
        plots.mkdir()
        confirmation_plot(result, plots / "confirmation.png")
        client.log_artifacts(parent_id, str(plots), artifact_path="plots")
    for path in store.reproducibility_files(sweep.path):
        client.log_artifact(parent_id, str(path))


def _trial_start_ms(trial: Any) -> int | None:
    """When the trial started: its first report's time less the wall time it had run by then."""
    if not trial.rows:
        return None
    first = trial.rows[0]
    start = float(first.get(store.TIMESTAMP_KEY, 0)) - float(first.get("time_total_s", 0))
    return int(start * 1000) if start > 0 else None


def trace_target(spec: Any) -> Any:
    """Where the spec's spans go (:class:`rlsweep.tracing.TraceTarget`, None: tracing off). With
    ``tracing.to: mlflow``: the sweep's MLflow server's OTLP endpoint, into the sweep's experiment (made
    here if new).

    Raises:
        UsageError: the MLflow server does not answer (before anything starts).
    """
    from rlsweep import tracing

    settings = spec.tracing
    if settings is None or settings.to != "mlflow":
        return tracing.target_for(settings)
    uri = spec.mlflow.tracking_uri
    if (problem := server_problem(uri)) is not None:
        raise UsageError(f"tracing.to: mlflow: the MLflow server at {uri} does not answer ({problem}); start it, or "
                         "remove the tracing section", "tracing.to")
    return tracing.target_for(settings, experiment_id(client_for(uri), spec.mlflow.experiment), uri)


def export(sweep: SweepView, *, tracking_uri: str | None = None, experiment: str | None = None) -> str:
    """Log ``sweep`` to MLflow; calling it again adds only what is new. Returns the parent run id.

    Raises:
        ExportError: MLflow failed part-way (a server down, a full disk); what was written stays, and
            running the export again completes it.
    """
    settings = sweep.spec.mlflow or MlflowSpec()
    uri = tracking_uri or settings.tracking_uri or DEFAULT_TRACKING_URI
    if (problem := server_problem(uri)) is not None:
        raise ExportError(f"MLflow export to {uri} did not start: {problem}. Nothing in {sweep.path} is lost; run "
                          f"`rlsweep export {sweep.path}` once the server is up")
    progress = {"trials": 0}
    try:
        # One writer at a time per sweep (another export, the live logger): each finds what the other wrote.
        with store.mlflow_lock(sweep.path):
            return _export(sweep, uri, experiment or settings.experiment, progress)
    except Exception as exc:  # noqa: BLE001 - MlflowException, requests' and SQLAlchemy's errors alike
        raise ExportError(
            f"MLflow export to {uri} stopped after {progress['trials']} of {len(sweep.trials)} trials: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}. Nothing in {sweep.path} is lost; "
            f"run `rlsweep export {sweep.path}` again to complete it"
        ) from exc


def _export(sweep: SweepView, uri: str, experiment_name: str, progress: dict[str, int]) -> str:
    client = client_for(uri)
    experiment_ = experiment_id(client, experiment_name)
    spec = sweep.spec
    sweep_id, note = sweep_key(client, experiment_, sweep.sweep_id, sweep.path, sweep.info.get("path"))
    if note is not None:
        log.warning("%s", note)
    copy_of = sweep.sweep_id if sweep_id != sweep.sweep_id else None
    parent_id = parent_run(client, experiment_, spec, sweep_id, sweep.path, sweep.searcher, sweep.scheduler, copy_of)
    children = child_runs(client, experiment_, sweep_id)
    # Runs this export left RUNNING that should not be: where it fails part-way they are marked FAILED, so
    # no run stays RUNNING for a trial (or a sweep) that has ended; the next export sets what is right.
    ended: list[str] = []
    try:
        all_finished = True
        for trial in sweep.trials:
            if trial.state in (store.MISSING, store.UNREADABLE):
                continue  # nothing of it can be read (named in a warning); an export once it is repaired logs it
            run = children.get(trial.trial_id)
            status = _STATUS.get(trial.state)
            if run is None:
                run_id = create_child(
                    client, experiment_, sweep_id, parent_id, trial.trial_id, trial.path, start_time=_trial_start_ms(trial)
                )
                done, current = 0, None
            else:
                run_id, current = run.info.run_id, run.info.status
                done = int(run.data.tags.get(ROWS_TAG, 0))
            if status is not None and current != status:
                ended.append(run_id)
            params, tags = missing_entities(run, trial.settings, trial.config)
            # Counted in Tune's append-only result file: a row is exported once, even after a resume redid it.
            raw = trial.raw_rows or trial.rows
            if params or tags or len(raw) > done:
                log_rows(client, run_id, raw[done:], len(raw), params, tags, metric=spec.metric.name)
            if trial.error and (run is None or "rlsweep.error" not in run.data.tags):
                client.set_tag(run_id, "rlsweep.error", trial.error[:5000])
            if status is not None and current != status:
                end = int(float(trial.rows[-1].get(store.TIMESTAMP_KEY, 0)) * 1000) if trial.rows else None
                client.set_terminated(run_id, status=status, end_time=end or None)
                ended.remove(run_id)
            if status is None:
                all_finished = False
            progress["trials"] += 1
        if all_finished:
            ended.append(parent_id)
        if sweep.has_results():
            _log_best(client, parent_id, sweep)
        confirmation = sweep.confirmation()
        if confirmation is not None:
            _log_confirmation(client, experiment_, parent_id, sweep_id, sweep, confirmation, ended)
        if all_finished:
            client.set_terminated(parent_id, status="FINISHED")
            ended.remove(parent_id)
    except Exception:
        _mark_failed(client, ended)
        raise
    return parent_id


def _mark_failed(client: MlflowClient, run_ids: Iterable[str]) -> None:
    """Best effort, while an export fails: the store may be what failed."""
    for run_id in run_ids:
        with contextlib.suppress(Exception):
            client.set_terminated(run_id, status="FAILED")
