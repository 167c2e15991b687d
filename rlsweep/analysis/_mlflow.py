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
import os
import re
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from rlsweep import _compat, store
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
#: The parent run's answer where a held-out stage ran: its estimate and interval beside the tuning value.
ANSWER_TAG = "rlsweep.answer"

#: MLflow's limits (3.x): characters in a param key and value, entries in one log_batch call.
MAX_PARAM_KEY = 250
MAX_PARAM_CHARS = 6000
MAX_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100

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
    client: MlflowClient, run_id: str, rows: Sequence[Mapping[str, Any]], rows_done: int, params: Iterable[Any] = (),
    tags: Iterable[Any] = (), metric: str | None = None, on_written: Callable[[int], None] | None = None,
) -> None:
    """Log ``rows`` (and a new run's ``params`` and setting ``tags``) to the run, which holds ``rows_done``
    rows once they are in. The params and tags go first, in batches of MLflow's limits; then the rows'
    metrics in chunks sized for the store (:func:`metric_writer`), each chunk also recording how many rows
    the run holds with it, so an export cut off part-way goes on from its last chunk. MLflow writes a
    chunk's tag after its metrics and drops repeated identical points: a chunk cut off half-way is
    repeated whole. ``metric``: the sweep's, each row's first. ``on_written``: told the rows of each chunk."""
    from mlflow.entities import RunTag

    pending_params, pending_tags = list(params), list(tags)
    writer = metric_writer(client)
    chunks = list(_chunks(rows, rows_done - len(rows), writer.chunk_size, metric))
    while pending_params or pending_tags or not chunks:
        batch_params, pending_params = pending_params[:MAX_PARAMS_PER_BATCH], pending_params[MAX_PARAMS_PER_BATCH:]
        # One tag's room for the row count, on a call that ends the run's writes.
        batch_tags, pending_tags = pending_tags[: MAX_PARAMS_PER_BATCH - 1], pending_tags[MAX_PARAMS_PER_BATCH - 1 :]
        last = not (pending_params or pending_tags or chunks)
        count = [RunTag(ROWS_TAG, str(rows_done))] if last else []
        client.log_batch(run_id, params=batch_params, tags=batch_tags + count, synchronous=True)
        if last:
            return
    held = rows_done - len(rows)
    for metrics, through in chunks:
        writer.write(run_id, metrics, RunTag(ROWS_TAG, str(through)))
        if on_written is not None and through > held:
            on_written(through - held)
        held = through


def _chunks(
    rows: Sequence[Mapping[str, Any]], first: int, size: int, metric: str | None
) -> Iterator[tuple[list[Any], int]]:
    """The rows' metrics in chunks of at most ``size``, each with the count of rows the run holds once it
    is written (``first``: before the first): whole rows to a chunk, but a row of more metrics than a
    chunk holds is split over several (the count rises with the last)."""
    chunk: list[Any] = []
    through = first
    for index, row in enumerate(rows, start=first + 1):
        metrics = row_metrics(row, metric)
        if chunk and len(chunk) + len(metrics) > size:
            yield chunk, through
            chunk = []
        while len(metrics) > size:
            yield metrics[:size], through
            metrics = metrics[size:]
        chunk += metrics
        through = index
    if chunk or through > first:
        yield chunk, through


#: Metric values a SQLite store takes in one transaction. MLflow's ``log_batch`` takes 1,000 a call and
#: builds an ORM object per value (about 90 µs each here: 52 s for a trial of 30,000 rows of 20 metrics);
#: one bulk insert of this many takes a fraction of a second, short enough for a writer beside it to wait.
SQLITE_CHUNK = 25_000

#: A metric point as MLflow's ``metrics`` table holds it; one already there (its primary key: every column)
#: is left as it is, as MLflow's ``log_batch`` does.
_POINT_COLUMNS = ("run_uuid", "key", "value", "timestamp", "step", "is_nan")
_INSERT_POINTS = f"INSERT OR IGNORE INTO metrics ({', '.join(_POINT_COLUMNS)}) VALUES ({', '.join('?' * len(_POINT_COLUMNS))})"


class _BatchWriter:
    """Metrics through MLflow's ``log_batch``, 1,000 values a call (the row count tag among them): any store."""

    chunk_size = MAX_BATCH - 1

    def __init__(self, client: MlflowClient) -> None:
        self.client = client

    def write(self, run_id: str, metrics: list[Any], count: Any) -> None:
        self.client.log_batch(run_id, metrics=metrics, tags=[count], synchronous=True)


class _SqliteWriter(_BatchWriter):
    """Metrics into a SQLite store's tables in one transaction per chunk, as MLflow's ``log_batch`` writes
    them (each metric checked as it checks one; a point once, as its primary key keeps it; each key's latest
    value), then the row count tag through MLflow. MLflow has no bulk write: the store's internals it takes
    are in :mod:`rlsweep._compat`, and :func:`metric_writer` falls back to ``log_batch`` without them."""

    chunk_size = SQLITE_CHUNK
    checked_keys: set[str] = set()  # metric names MLflow's check accepted (a name's check holds for good)

    def __init__(self, client: MlflowClient, sql_store: Any) -> None:
        super().__init__(client)
        self.store = sql_store

    def write(self, run_id: str, metrics: list[Any], count: Any) -> None:
        if any(m.timestamp < 0 or not math.isfinite(m.value) for m in metrics):
            # What MLflow sanitizes or refuses, it does so itself.
            return super().write(run_id, metrics, count)
        for m in metrics:
            if m.key not in self.checked_keys:
                _compat.validate_mlflow_metric(m)
                self.checked_keys.add(m.key)
        self._insert(run_id, metrics)
        self.client.log_batch(run_id, tags=[count], synchronous=True)

    def _insert(self, run_id: str, metrics: list[Any]) -> None:
        from mlflow.store.tracking.dbmodels.models import SqlLatestMetric

        if not metrics:
            return
        order = lambda m: (m.step, m.timestamp, m.value)  # noqa: E731 - MLflow's order of a key's latest value
        latest: dict[str, Any] = {}
        for m in metrics:
            if m.key not in latest or order(m) > order(latest[m.key]):
                latest[m.key] = m
        points = [(run_id, m.key, float(m.value), int(m.timestamp), int(m.step), False) for m in metrics]
        with self.store.ManagedSessionMaker(read_only=False) as session:
            _compat.check_mlflow_run_active(self.store, run_id, session)
            # The driver's own executemany: SQLAlchemy's insert costs half as much again per value.
            session.connection().exec_driver_sql(_INSERT_POINTS, points)
            keys = sorted(latest)
            held = {}
            for start in range(0, len(keys), 500):
                found = session.query(SqlLatestMetric).filter(
                    SqlLatestMetric.run_uuid == run_id, SqlLatestMetric.key.in_(keys[start : start + 500])
                )
                held.update({row.key: row for row in found})
            for key, m in latest.items():
                row = held.get(key)
                if row is None:
                    session.add(SqlLatestMetric(run_uuid=run_id, key=key, value=float(m.value), timestamp=int(m.timestamp),
                                                step=int(m.step), is_nan=False))
                elif order(m) > (row.step, row.timestamp, row.value):
                    row.value, row.timestamp, row.step, row.is_nan = float(m.value), int(m.timestamp), int(m.step), False


def metric_writer(client: MlflowClient) -> _BatchWriter:
    """How rows' metrics reach ``client``'s store: a SQLite store (rlsweep's default) in large transactions
    of its own; every other store (an MLflow server, PostgreSQL, ...) through ``log_batch``."""
    sql_store = _compat.mlflow_sqlite_store(client)
    if sql_store is None:
        return _BatchWriter(client)
    from mlflow.store.tracking.dbmodels.models import SqlMetric

    table = SqlMetric.__table__
    as_here = table.name == "metrics" and {c.name for c in table.primary_key} == set(table.c.keys()) == set(_POINT_COLUMNS)
    return _SqliteWriter(client, sql_store) if as_here else _BatchWriter(client)


def server_problem(tracking_uri: str, timeout_s: float = 5.0) -> str | None:
    """Why an MLflow server at an http(s) ``tracking_uri`` cannot be written to now (nothing answers its
    ``/health``), or None; other stores are local. MLflow's own client would retry a dead address for
    minutes before saying so."""
    if not is_http(tracking_uri):
        return None
    state, problem = server_state(tracking_uri, timeout_s)
    return None if state == UP else f"nothing answers at {tracking_uri} ({problem})"


def client_for(tracking_uri: str) -> MlflowClient:
    """An MLflow client of ``tracking_uri``. MLflow 3.17 logs two INFO lines (``Creating initial MLflow
    database tables...``) the first time a SQLite store is written, in the middle of a sweep's output; only
    its database module's INFO is left out."""
    from mlflow import MlflowClient

    logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
    return MlflowClient(tracking_uri=tracking_uri)


def experiment_id(client: MlflowClient, name: str) -> str:
    """The experiment ``name``, made (or restored from MLflow's trash) if need be. Exports of other sweeps
    into the same new experiment may make it between this one's look and its create."""
    from mlflow.exceptions import MlflowException

    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        if experiment.lifecycle_stage == "deleted":
            client.restore_experiment(experiment.experiment_id)
        return str(experiment.experiment_id)
    try:
        return str(client.create_experiment(name))
    except MlflowException as exc:
        if exc.error_code != "RESOURCE_ALREADY_EXISTS" or (made := client.get_experiment_by_name(name)) is None:
            raise
        return str(made.experiment_id)


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


def child_runs(
    client: MlflowClient, experiment: str, sweep_id: str, trial_ids: Sequence[str] | None = None
) -> dict[str, Any]:
    """trial_id -> its child run: every trial's in one paged search (not one search per trial), or, with
    ``trial_ids``, only those trials', one small search each (MLflow's filter has no IN for tags; an id that
    would need quoting in the filter makes it the listing)."""
    query = f"tags.`{SWEEP_TAG}` = '{sweep_id}' and tags.`{KIND_TAG}` = 'trial'"
    if trial_ids is None or not all(_PLAIN_ID.fullmatch(t) for t in trial_ids):
        return {run.data.tags[TRIAL_TAG]: run for run in _search_all(client, experiment, query)}
    found = {}
    for trial_id in trial_ids:
        for run in _search_all(client, experiment, f"{query} and tags.`{TRIAL_TAG}` = '{trial_id}'"):
            found[run.data.tags[TRIAL_TAG]] = run
    return found


#: A trial id that goes into an MLflow filter's quotes as it is (Tune's are hex and underscores).
_PLAIN_ID = re.compile(r"[A-Za-z0-9_.-]+")



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


def _stamp_ms(sweep: SweepView) -> int:
    """When the sweep's results last changed: the newest trial ``result.json``'s modification time, in ms (0
    where there is none). The same for every export of the same results, and later once any trial reports,
    whichever trials have a run; read without parsing a row (of 10,000 trials' rows, most an export skips)."""
    newest = 0
    for trial in sweep.trials:
        with contextlib.suppress(OSError):
            newest = max(newest, os.stat(trial.path / store.RESULT_FILE).st_mtime_ns)
    return newest // 1_000_000


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
    stamp = _stamp_ms(sweep)
    if best.rule == "held-out" and best.interval is not None:
        # The answer's two numbers, each named for what it is: the held-out estimate (IQM on test seeds the
        # search never used, with its 95% interval for 10 new seeds) and the search's own value of it.
        answer = {
            f"held_out_{best.metric}_iqm": best.value,
            f"held_out_{best.metric}_ci_low": best.interval[0],
            f"held_out_{best.metric}_ci_high": best.interval[1],
            f"tuning_{sweep.spec.metric.name}": best.tuning_value,
        }
    else:
        answer = {f"best_{best.metric}": best.value}
    summary = {
        **{k: v for k, v in answer.items() if v is not None and math.isfinite(v)},
        "trials": len(sweep.trials),
        "errored_trials": sum(t.state == store.ERROR for t in sweep.trials),
        f"{ENV_STEPS}_total": sum(t.env_steps for t in sweep.trials),
    }
    client.log_batch(parent_id, metrics=[Metric(k, float(v), stamp, 0) for k, v in summary.items()])
    if best.rule == "held-out" and best.interval is not None:
        answer_line = held_out_answer(best, sweep.spec.metric.name)
        client.set_tag(parent_id, ANSWER_TAG, answer_line)
        # The run's page shows its description: the answer goes first there too.
        client.set_tag(parent_id, NOTE_TAG, f"**Answer.** {answer_line}\n\n{comparison_tags(sweep.spec)[NOTE_TAG]}")
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


def held_out_answer(best: Any, tuning_metric: str) -> str:
    """The held-out answer in one line, the two numbers named for what they are."""
    low, high = best.interval
    return (f"held-out {best.metric}: {best.value:.6g} (IQM on test seeds the search never used; 95% interval "
            f"{low:.6g} to {high:.6g} for its IQM on 10 new seeds), trial {best.trial_id}; tuning {tuning_metric}: "
            f"{best.tuning_value:.6g} (the search's own value, on its training seeds: optimistic)")


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


def export(
    sweep: SweepView, *, tracking_uri: str | None = None, experiment: str | None = None, trial_runs: int | str | None = None
) -> str:
    """Log ``sweep`` to MLflow; calling it again adds only what is new. Returns the parent run id.

    ``trial_runs`` (default: the spec's ``mlflow.trial_runs``): at most this many trials get a child run, the
    best by the metric where the sweep has more ("all": every trial); every trial goes to the parent run's
    ``trials.csv``.

    A sweep no driver is running (finished, interrupted, killed, or a copy) leaves no run RUNNING: a trial
    that did not finish is KILLED, and so is the parent of a sweep that did not. An MLflow server that stops
    answering part-way is waited for (:class:`PatientClient`); an export that takes more
    than a few seconds says on stderr where it is; a SIGTERM stops it as a failure does.

    Raises:
        ExportError: MLflow failed part-way (a server gone for good, a full disk, SIGTERM); what was written
            stays, the runs it was ending are marked FAILED, and running the export again completes it.
    """
    settings = sweep.spec.mlflow or MlflowSpec()
    uri = tracking_uri or settings.tracking_uri or DEFAULT_TRACKING_URI
    # A server that takes the connection but answers late (paused, overloaded) is waited for as one that
    # stops answering part-way; where nothing takes it, the address is wrong or the server not started.
    state, problem = server_state(uri) if is_http(uri) else (UP, "")
    if state == DOWN:
        raise ExportError(f"MLflow export to {uri} did not start: nothing answers at {uri} ({problem}). Nothing in "
                          f"{sweep.path} is lost; run `rlsweep export {sweep.path}` once the server is up")
    limit = trial_runs_of(sweep, trial_runs)
    if (problem := trial_runs_problem(limit)) is not None:
        raise UsageError(problem, "trial_runs")
    chosen = trials_with_runs(sweep, limit)
    progress = Progress(len(sweep.trials), 0, uri)  # its rows: counted once the trials with a run are known
    terminated: list[ExportTerminated] = []
    try:
        # One writer at a time per sweep (another export, the live logger): each finds what the other wrote.
        with sigterm_raises() as terminated, client_settings(uri), progress, store.mlflow_lock(sweep.path):
            return _export(sweep, uri, experiment or settings.experiment, progress, chosen)
    except Exception as exc:  # noqa: BLE001 - MlflowException, requests' and SQLAlchemy's errors alike
        exc = terminated[0] if terminated else exc
        raise ExportError(
            f"MLflow export to {uri} stopped after {progress.finished} of {len(sweep.trials)} trials: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}. Nothing in {sweep.path} is lost; "
            f"run `rlsweep export {sweep.path}` again to complete it"
        ) from exc


#: A trial's MLflow status once it has ended, or once no driver runs its sweep any more (a trial that was
#: running or waiting to start was stopped with it).
_ENDED = {store.TERMINATED: "FINISHED", store.ERROR: "FAILED", store.PAUSED: "KILLED"}
_STOPPED = {**_ENDED, store.RUNNING: "KILLED", store.PENDING: "KILLED"}
#: Trials not exported: gone, unreadable, or a folder Tune's experiment state does not list.
_UNREAD = (store.MISSING, store.UNREADABLE, store.UNLISTED)


#: The parent run's artifact that holds every trial of the sweep: its config and final values (``table()``).
TRIALS_ARTIFACT = "trials.csv"
#: On the parent run: which trials have a child run ("all", or "the best 200 of 10,000 by ...").
TRIAL_RUNS_TAG = "rlsweep.trial_runs"


def trial_runs_of(sweep: SweepView, trial_runs: int | str | None = None) -> int | str:
    """How many trials get a child run: ``trial_runs`` where given, else the spec's ``mlflow.trial_runs``."""
    return (sweep.spec.mlflow or MlflowSpec()).trial_runs if trial_runs is None else trial_runs


def trial_runs_problem(limit: Any) -> str | None:
    """Why ``limit`` is no ``trial_runs`` (a whole number of trials, 0 or more, or "all"); None where it is one."""
    if limit == "all" or (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0):
        return None
    return f"a whole number of trials (0 or more) or 'all', got {limit!r}"


def trials_with_runs(sweep: SweepView, limit: int | str) -> set[str] | None:
    """The trials that get a child run: None (every one) where the sweep has at most ``limit`` trials or
    ``limit`` is "all"; else the best ``limit`` by the metric under ``avg-last-3`` (trials that never reported
    it, ended in an error or diverged have no place among them), and the trials the sweep's answers name
    beside them: the winner under its default rule (the held-out stage's, where it ran), the stage's other
    entrants and the configurations ``rlsweep confirm`` retrained, so the tags and runs that name them lead
    to a run."""
    from rlsweep.analysis._rules import DEFAULT_RULE

    if limit == "all" or len(sweep.trials) <= int(limit):
        return None
    chosen = {best.trial_id for best in sweep.ranked(DEFAULT_RULE, top=int(limit))} if int(limit) else set()
    stage = sweep.held_out() or {}
    named = {stage.get("winner"), *(entrant.get("candidate") for entrant in stage.get("candidates") or [])}
    confirmation = sweep.confirmation() or {}
    named |= {row.get("trial_id") for row in confirmation.get("configurations") or []}
    return chosen | (named & {t.trial_id for t in sweep.trials})


def _trial_runs_line(sweep: SweepView, best: int, with_run: int) -> str:
    return (f"{with_run:,} of {len(sweep.trials):,} trials have a child run: the best {best:,} by "
            f"{sweep.spec.metric.name} (avg-last-3) with those the sweep's answers name"
            f"{', and those that had one' if with_run > best else ''}; every trial is in {TRIALS_ARTIFACT}, "
            "its child_run column naming the run")


def _log_trials_table(client: Any, parent_id: str, sweep: SweepView, run_ids: Mapping[str, str]) -> None:
    """Every trial's id, state, config and final values as the parent run's ``trials.csv`` (replaced on each
    export), so a sweep of thousands of trials is one file to open, not thousands of runs; ``child_run``
    is the trial's run id where it has one (``run_ids``)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory, TRIALS_ARTIFACT)
        table = sweep.table()
        table.insert(1, "child_run", table["trial_id"].map(run_ids))
        table.to_csv(path, index=False)
        client.log_artifact(parent_id, str(path))


def _export(sweep: SweepView, uri: str, experiment_name: str, progress: Progress, chosen: set[str] | None = None) -> str:
    inner = client_for(uri)
    client: Any = PatientClient(inner, uri, progress, (SWEEP_TAG, KIND_TAG, TRIAL_TAG), wait_s=server_wait_s()) if is_http(uri) else inner
    experiment_ = experiment_id(client, experiment_name)
    spec = sweep.spec
    sweep_id, note = sweep_key(client, experiment_, sweep.sweep_id, sweep.path, sweep.info.get("path"))
    if note is not None:
        log.warning("%s", note)
    copy_of = sweep.sweep_id if sweep_id != sweep.sweep_id else None
    parent_id = parent_run(client, experiment_, spec, sweep_id, sweep.path, sweep.searcher, sweep.scheduler, copy_of)
    children = child_runs(client, experiment_, sweep_id)
    best = 0 if chosen is None else len(chosen)
    # Trials that have a run already (an earlier export's, the live logger's) keep it up to date.
    chosen = None if chosen is None else chosen | set(children)
    progress.total_rows = sum(len(t.raw_rows or t.rows) for t in sweep.trials if chosen is None or t.trial_id in chosen)
    # Whether a driver runs the sweep now: only then may a run of it stay RUNNING.
    statuses = _ENDED if store.driver_running(sweep.path) else _STOPPED
    ended_trials = all(t.state in (store.TERMINATED, store.ERROR, *_UNREAD) for t in sweep.trials)
    parent_status = "FINISHED" if ended_trials else None if statuses is _ENDED else "KILLED"
    # Runs this export is ending: where it fails part-way they are marked FAILED, so no run stays RUNNING
    # for a trial (or a sweep) that has ended; the next export sets what is right.
    ended: list[str] = []
    if parent_status is not None and client.get_run(parent_id).info.status != parent_status:
        ended.append(parent_id)
    run_ids: dict[str, str] = {}  # trial id -> its child run
    try:
        for index, trial in enumerate(sweep.trials, start=1):
            stop_if_terminated()
            progress.trial = index
            run = children.pop(trial.trial_id, None)
            if run is not None:
                run_ids[trial.trial_id] = run.info.run_id
            if chosen is not None and trial.trial_id not in chosen:
                progress.finished += 1
                continue  # in trials.csv, with no run of its own
            if trial.state in _UNREAD:
                # Nothing of it can be read, or it is no trial of the sweep (named in a warning); an export once
                # it is repaired logs it.
                if run is not None and run.info.status == "RUNNING" and statuses is _STOPPED:
                    client.set_terminated(run.info.run_id, status="KILLED")
                progress.finished += 1
                continue
            raw = trial.raw_rows or trial.rows
            if run is None and not raw and trial.state == store.PENDING:
                progress.finished += 1
                continue  # it never started: nothing to show, and no run that would claim it runs
            run_ids[trial.trial_id] = _export_trial(client, experiment_, sweep_id, parent_id, trial, run,
                                                    statuses.get(trial.state), ended, spec.metric.name, progress)
            progress.finished += 1
        for run in children.values():  # runs of trials no longer on disk
            if run.info.status == "RUNNING" and statuses is _STOPPED:
                client.set_terminated(run.info.run_id, status="KILLED")
        with_run = len(run_ids)
        client.set_tag(parent_id, TRIAL_RUNS_TAG, "all" if chosen is None else _trial_runs_line(sweep, best, with_run))
        _log_trials_table(client, parent_id, sweep, run_ids)
        if sweep.has_results():
            _log_best(client, parent_id, sweep)
        confirmation = sweep.confirmation()
        if confirmation is not None:
            _log_confirmation(client, experiment_, parent_id, sweep_id, sweep, confirmation, ended)
        if parent_id in ended:
            client.set_terminated(parent_id, status=parent_status)
            ended.remove(parent_id)
    except Exception:
        _mark_failed(inner, ended)
        raise
    return parent_id


def _export_trial(
    client: Any, experiment: str, sweep_id: str, parent_id: str, trial: Any, run: Any, status: str | None,
    ended: list[str], metric: str, progress: Progress,
) -> str:
    """One trial's child run: made if new, its params, setting tags and the rows it does not hold yet, its
    error, and ``status`` (None: it stays as it is, RUNNING while the sweep's driver runs it). Returns its id."""
    if run is None:
        run_id = create_child(client, experiment, sweep_id, parent_id, trial.trial_id, trial.path, start_time=_trial_start_ms(trial))
        done, current = 0, None
    else:
        run_id, current = run.info.run_id, run.info.status
        done = int(run.data.tags.get(ROWS_TAG, 0))
    if status is not None and current != status:
        ended.append(run_id)
    params, tags = missing_entities(run, trial.settings, trial.config)
    # Counted in Tune's append-only result file: a row is exported once, even after a resume redid it.
    raw = trial.raw_rows or trial.rows
    progress.rows += min(done, len(raw))
    if params or tags or len(raw) > done:
        log_rows(client, run_id, raw[done:], len(raw), params, tags, metric=metric,
                 on_written=lambda rows: (setattr(progress, "rows", progress.rows + rows), stop_if_terminated()))
    if trial.error and (run is None or "rlsweep.error" not in run.data.tags):
        client.set_tag(run_id, "rlsweep.error", trial.error[:5000])
    if status is not None and current != status:
        end = int(float(trial.rows[-1].get(store.TIMESTAMP_KEY, 0)) * 1000) if trial.rows else None
        client.set_terminated(run_id, status=status, end_time=end or None)
        ended.remove(run_id)
    return run_id


def _mark_failed(client: MlflowClient, run_ids: Iterable[str]) -> None:
    """Best effort, while an export fails: the store may be what failed."""
    for run_id in run_ids:
        with contextlib.suppress(Exception):
            client.set_terminated(run_id, status="FAILED")


# --- the export's session with MLflow ---------------------------------------------------------------
#
# What an export's session with MLflow adds around its writes: it rides out a server that stops answering
# for a while, says on stderr what it is doing when it takes more than a few seconds, and turns a SIGTERM
# into a failure the export cleans up after.
#
# A server that is restarting refuses connections; one that is paused, swapping or starved of CPU accepts
# them and answers late. MLflow's own client retries a failed request 7 times over about 4 minutes without a
# word, and retries every request alike: a ``create_run`` whose answer was lost makes a second run, a
# ``create_experiment`` fails with ``RESOURCE_ALREADY_EXISTS``. Here MLflow's retries are off for the
# export (unless the user set ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``), and :class:`PatientClient` retries what
# may pass: it waits for the server's ``/health`` with backoff for up to :data:`SERVER_WAIT_S` seconds, says
# so, and before it sends a create again it looks for what the lost one may have made.


#: How long an export waits for an MLflow server that stops answering part-way (restarting, paused,
#: overloaded) before it stops; what it wrote stays, and running it again completes it. The environment
#: variable ``RLSWEEP_MLFLOW_WAIT_S`` sets another (seconds; 0 stops at the first failure that may pass).
SERVER_WAIT_S = 300.0
WAIT_VARIABLE = "RLSWEEP_MLFLOW_WAIT_S"


def server_wait_s() -> float:
    """:data:`SERVER_WAIT_S`, or the seconds ``RLSWEEP_MLFLOW_WAIT_S`` names (a number >= 0)."""
    text = os.environ.get(WAIT_VARIABLE)
    if text is None:
        return SERVER_WAIT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ExportError(f"{WAIT_VARIABLE} must be a number of seconds >= 0, got {text!r}")
    return value

#: An export says nothing for this long; then a line this often (trial, rows, and what it waits for).
QUIET_S = 5.0
EVERY_S = 5.0

#: HTTP statuses that say "later" (a proxy, a server restarting or overloaded).
_TRANSIENT_STATUSES = frozenset({408, 429, 502, 503, 504})
#: An internal error (500) may be a server's bug rather than its load: retried a few times only.
_INTERNAL_ERROR_ATTEMPTS = 4

UP, SLOW, DOWN = "up", "slow", "down"


def is_http(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def server_state(uri: str, timeout_s: float = 5.0) -> tuple[str, str]:
    """Whether the MLflow server at an http(s) ``uri`` answers its ``/health`` now: :data:`UP`,
    :data:`SLOW` (it takes the connection but does not answer within ``timeout_s``: paused, overloaded)
    or :data:`DOWN` (nothing takes it: not started, restarting, a wrong address), with why."""
    try:
        with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=timeout_s):
            return UP, ""
    except urllib.error.HTTPError:
        return UP, ""  # something answers: a server behind a proxy may not serve /health
    except (TimeoutError, urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return SLOW, f"no answer within {timeout_s:.0f} s"
        return DOWN, _short(reason)


def _short(reason: Any) -> str:
    text = str(getattr(reason, "strerror", None) or reason)
    for known in ("Connection refused", "Connection reset by peer", "Remote end closed connection",
                  "Read timed out", "Name or service not known", "No route to host"):
        if known.lower() in text.lower():
            return known.lower()
    return text.splitlines()[0][:200] if text else type(reason).__name__


def transient(exc: BaseException) -> tuple[str, bool] | None:
    """Why ``exc`` may pass if the call is sent again (the server unreachable, slow, restarting,
    overloaded), and whether it is a server's internal error (retried a few times only); None for a
    failure that will not pass (a refused value, a missing run)."""
    import requests
    from mlflow.exceptions import MlflowException, RestException

    if isinstance(exc, requests.exceptions.HTTPError):  # artifact uploads raise these
        status = exc.response.status_code if exc.response is not None else None
        if status in _TRANSIENT_STATUSES:
            return f"HTTP {status}", False
        return (f"HTTP {status}", True) if status == 500 else None
    if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout)):
        return _short(exc), False
    if isinstance(exc, RestException):
        status = exc.get_http_status_code()
        if status in _TRANSIENT_STATUSES:
            return f"HTTP {status}", False
        return (f"HTTP {status} ({exc.error_code})", True) if status == 500 else None
    # MLflow 3.17 wraps a request that got no usable answer (refused, timed out, too many 5xx) in a plain
    # MlflowException whose message starts so.
    if isinstance(exc, MlflowException) and str(exc.message).startswith("API request to "):
        return _short(exc.message.split(" failed with ", 1)[-1]), "error responses" in exc.message
    return None


class ServerGone(Exception):
    """The MLflow server did not answer for :data:`SERVER_WAIT_S` seconds."""


class ExportTerminated(Exception):
    """The export's process was sent SIGTERM: raised in the export so it marks what it was ending FAILED."""


class Progress:
    """What a long export says on stderr: nothing for :data:`QUIET_S` seconds, then a line every
    :data:`EVERY_S` seconds, from a thread of its own (a call that blocks on a server still gets its line):
    ``exporting to MLflow: trial 3 of 10, 12,000 of 30,002 rows`` and, while it waits, for what."""

    def __init__(self, trials: int, rows: int, target: str = "MLflow", *, stream: Any = None,
                 quiet_s: float | None = None, every_s: float | None = None) -> None:
        self.trials, self.total_rows, self.target = trials, rows, target
        self.trial, self.rows = 0, 0
        self.finished = 0  # trials done
        self.stream = stream
        self.quiet_s = QUIET_S if quiet_s is None else quiet_s
        self.every_s = EVERY_S if every_s is None else every_s
        self.started = time.monotonic()
        self.in_flight: tuple[str, float] | None = None  # (the call, since when) while one is out to a server
        self.waiting_for: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def say(self, line: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        with contextlib.suppress(OSError, ValueError, AttributeError):
            print(line, file=stream, flush=True)

    def line(self) -> str:
        if self.trial == 0:
            text = f"exporting to MLflow: opening {self.target}"
        else:
            text = f"exporting to MLflow: trial {self.trial} of {self.trials}, {self.rows:,} of {self.total_rows:,} rows"
        if self.waiting_for is not None:
            return f"{text}; {self.waiting_for}"
        if self.in_flight is not None and (late := time.monotonic() - self.in_flight[1]) >= self.every_s:
            return f"{text}; waiting {late:.0f} s for the MLflow server to answer ({self.in_flight[0]})"
        return text

    def __enter__(self) -> Progress:
        self._thread = threading.Thread(target=self._tick, name="rlsweep-export-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _tick(self) -> None:
        if self._stop.wait(self.quiet_s):
            return
        while True:
            self.say(self.line())
            if self._stop.wait(self.every_s):
                return


class PatientClient:
    """An ``MlflowClient`` of an MLflow server whose calls ride out the server not answering for up to
    ``wait_s`` seconds at a time. A create whose answer was lost is looked for before it is sent again: a
    run by its tags named in ``identity_tags``, an experiment by its name. Everything else an export sends
    is safe to send twice (MLflow drops a repeated metric point; a param logged again with its value, a tag
    set again, a status set again change nothing)."""

    def __init__(self, client: Any, uri: str, progress: Progress, identity_tags: tuple[str, ...], *,
                 wait_s: float = SERVER_WAIT_S) -> None:
        self.inner, self.uri, self.progress, self.identity_tags, self.wait_s = client, uri, progress, identity_tags, wait_s

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr
        return lambda *args, **kwargs: self.call(name, attr, *args, **kwargs)

    def call(self, name: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        outage: float | None = None
        internal_errors = 0
        again = False
        while True:
            started = time.monotonic()
            self.progress.in_flight = (name, started)
            try:
                if again and (found := self._made_already(name, args, kwargs)) is not None:
                    return found
                return function(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - sorted by transient() below
                why = transient(exc)
                if why is None:
                    raise
                reason, internal = why
                internal_errors += internal
                if internal and internal_errors >= _INTERNAL_ERROR_ATTEMPTS:
                    raise
                outage = outage if outage is not None else started
                self._wait(reason, outage)
                again = True
            finally:
                self.progress.in_flight = None

    def _made_already(self, name: str, args: tuple, kwargs: dict) -> Any:
        """What a create sent before, whose answer was lost, made (None: nothing, send it again)."""
        if name == "create_experiment":
            found = self.inner.get_experiment_by_name(kwargs.get("name", args[0] if args else None))
            return found.experiment_id if found is not None else None
        if name == "create_run":
            tags = kwargs.get("tags") or {}
            identity = {k: v for k, v in tags.items() if k in self.identity_tags}
            experiment = kwargs.get("experiment_id", args[0] if args else None)
            if not identity or experiment is None:
                return None
            query = " and ".join(f"tags.`{k}` = '{v}'" for k, v in sorted(identity.items()))
            runs = self.inner.search_runs([experiment], filter_string=query, max_results=2)
            return runs[0] if runs else None
        return None

    def _wait(self, reason: str, since: float) -> None:
        """Wait until the server answers ``/health`` again (backoff from 0.5 s to 10 s, saying so), or
        raise :class:`ServerGone` once it has not answered for ``wait_s`` seconds since ``since``."""
        delay = 0.5
        self.progress.say(f"the MLflow server at {self.uri} does not answer ({reason}): waiting up to "
                          f"{self.wait_s:.0f} s for it, then going on")
        while True:
            waited = time.monotonic() - since
            left = self.wait_s - waited
            if left <= 0:
                raise ServerGone(f"the MLflow server at {self.uri} did not answer for {waited:.0f} s ({reason})")
            self.progress.waiting_for = f"waiting for the MLflow server at {self.uri} ({reason}), {waited:.0f} s of {self.wait_s:.0f} s"
            try:
                time.sleep(min(delay, left))
                state, detail = server_state(self.uri, timeout_s=max(0.5, min(5.0, left)))
            finally:
                self.progress.waiting_for = None
            if state == UP:
                self.progress.say(f"the MLflow server at {self.uri} answers again after {time.monotonic() - since:.0f} s: going on")
                return
            reason = detail or reason
            delay = min(delay * 2, 10.0)


@contextlib.contextmanager
def client_settings(uri: str) -> Iterator[None]:
    """MLflow's client as an export wants it, for the export's length: no "View run" lines of its own on
    stdout (the CLI prints one line for the whole sweep), and for a server, none of MLflow's silent
    retries (:class:`PatientClient` retries, saying so). A variable the user set is left as they set it."""
    wanted = {"MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}
    if is_http(uri):
        wanted["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
    changed = {k: v for k, v in wanted.items() if k not in os.environ}
    os.environ.update(changed)
    try:
        yield
    finally:
        for key in changed:
            os.environ.pop(key, None)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[list[ExportTerminated]]:
    """A SIGTERM to the process raises :class:`ExportTerminated` in the export (once: a second one while it
    cleans up is ignored), so the runs it was ending are marked FAILED rather than left RUNNING. Yields the
    list it is noted in (MLflow may wrap it in an error of its own on the way out). Only the main thread
    can take signals; elsewhere nothing changes."""
    raised: list[ExportTerminated] = []
    if threading.current_thread() is not threading.main_thread():
        yield raised
        return

    def terminated(signum: int, frame: Any) -> None:
        if not raised:
            raised.append(ExportTerminated("the export was stopped by SIGTERM"))
            raise raised[0]

    global _TERMINATED
    previous = signal.signal(signal.SIGTERM, terminated)
    _TERMINATED = raised
    try:
        yield raised
    finally:
        _TERMINATED = []
        signal.signal(signal.SIGTERM, previous)


#: What :func:`sigterm_raises` noted while it is in force.
_TERMINATED: list[ExportTerminated] = []


def stop_if_terminated() -> None:
    """Raise the export's :class:`ExportTerminated` again where a SIGTERM came and the export goes on: Python
    runs the signal's handler wherever the main thread is, and where that is a weakref's callback or a
    ``__del__`` (SQLAlchemy's, as MLflow's store frees a row), what it raises is printed and dropped."""
    if _TERMINATED:
        raise _TERMINATED[0]
