"""Live MLflow logging while a sweep runs, off the hot path, and through an MLflow server's restarts.

Ray's ``MLflowLoggerCallback`` makes one blocking MLflow call per metric per result on Tune's driver loop.
Here the driver only notes which trial has a new result; a background thread wakes every ``flush_s``
seconds and, for each such trial, sends the rows its ``result.json`` holds beyond what its MLflow run
already has, with one ``log_batch`` per trial (up to 1,000 values a call).

The rows wait in the trial's own ``result.json``, not in memory: while the MLflow server is down (or
restarting) the logger holds only the set of trials with news and the byte offset it read each file to,
warns once, and sends everything when the server answers again. It writes under the sweep's MLflow lock
and reads each run's row count (``rlsweep.rows_exported``) before writing, exactly as the export does,
so the two never create a run twice or log a row twice, in whichever order they run.
"""

from __future__ import annotations

import logging
import queue
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsweep import store
from rlsweep.analysis._mlflow import (
    ROWS_TAG,
    SETTING_TAG,
    child_runs,
    client_for,
    create_child,
    experiment_id,
    log_rows,
    missing_entities,
    parent_run,
    server_problem,
    sweep_key,
)

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

log = logging.getLogger("rlsweep")

_STOP = object()
#: Past the first look, new trials up to this many are looked up one search each; more, in one listing.
LOOK_UP_AT_MOST = 20


class _Tail:
    """Where the live logger is in one trial's result file and its MLflow run."""

    def __init__(self, run_id: str, rows_done: int) -> None:
        self.run_id, self.rows_done, self.offset = run_id, rows_done, 0
        self.synced = False  # offset matches rows_done (a file read from its start once)


class MlflowTailer:
    """Sends each trial's new result rows to its MLflow run, from the trial's ``result.json``."""

    def __init__(self, spec: SweepSpec, path: Path, sweep_id: str) -> None:
        self.spec, self.path, self.sweep_id = spec, path, sweep_id
        self.original_id = sweep_id  # the sweep's own id; sweep_id becomes its runs' key (a copy's differs)
        self.client: Any = None
        self.experiment: str | None = None
        self.parent: str | None = None
        self.tails: dict[str, _Tail] = {}
        self.listed = False  # every run of the sweep has been looked up once

    def flush(self, trials: dict[str, tuple[str, str, dict]]) -> None:
        """Send what ``trials`` hold beyond their runs: trial id -> (its folder in the experiment directory,
        the folder Tune's JSON logger writes its result.json in as the sweep runs, its config). Raises what
        MLflow raises; nothing is lost then: the next flush (or the export) sends it."""
        settings = self.spec.mlflow
        if settings is None or not trials:
            return
        if (problem := server_problem(settings.tracking_uri)) is not None:
            raise ConnectionError(problem)
        if self.client is None:
            self.client = client_for(settings.tracking_uri)
        client = self.client
        with store.mlflow_lock(self.path):
            if self.experiment is None or self.parent is None:
                self.experiment = experiment_id(client, settings.experiment)
                # A resumed copy of a sweep folder logs to runs of its own, never to the original's.
                original = self.original_id
                self.sweep_id, note = sweep_key(
                    client, self.experiment, original, self.path, store.read_sweep_info(self.path).get("path")
                )
                if note is not None:
                    log.warning("%s", note)
                self.parent = parent_run(
                    client, self.experiment, self.spec, self.sweep_id, self.path,
                    str(self.spec.searcher.name), str(self.spec.scheduler.name),
                    original if self.sweep_id != original else None,
                )
            if new := [t for t in trials if t not in self.tails]:
                # The first look lists every run of the sweep (a resumed sweep, or an export, made some); after
                # it, only the new trials' own runs are looked for, so a sweep of n trials lists O(n) runs in
                # all, not O(n) at each new trial.
                listed = self.listed and len(new) <= LOOK_UP_AT_MOST
                for trial_id, run in child_runs(client, self.experiment, self.sweep_id, new if listed else None).items():
                    if trial_id not in self.tails:
                        self.tails[trial_id] = _Tail(run.info.run_id, int(run.data.tags.get(ROWS_TAG, 0)))
                self.listed = True
            for trial_id, (trial_path, rows_path, config) in trials.items():
                self._send(trial_id, Path(trial_path), Path(rows_path), config)

    def _send(self, trial_id: str, trial_path: Path, rows_path: Path, config: dict) -> None:
        client = self.client
        params: list[Any] = []
        tags: list[Any] = []
        tail = self.tails.get(trial_id)
        if tail is None:
            run_id = create_child(client, self.experiment, self.sweep_id, self.parent, trial_id, trial_path)
            tail = self.tails[trial_id] = _Tail(run_id, 0)
            # The trial recorded its settings as it started, before its first result.
            params, tags = missing_entities(None, store.read_trial_settings(trial_path), config)
        else:
            run = client.get_run(tail.run_id)
            done = int(run.data.tags.get(ROWS_TAG, 0))
            if done != tail.rows_done or not tail.synced:
                # Someone else (an export) wrote rows, or this is the first look: count from the start.
                tail.rows_done, tail.offset, tail.synced = done, 0, False
            if not run.data.params or not any(k.startswith(SETTING_TAG) for k in run.data.tags):
                params, tags = missing_entities(run, store.read_trial_settings(trial_path), config)
        rows, offset = store.read_new_rows(rows_path / store.RESULT_FILE, tail.offset)
        if not tail.synced:
            rows = rows[tail.rows_done :]
        if rows or params or tags:
            log_rows(client, tail.run_id, rows, tail.rows_done + len(rows), params, tags, metric=self.spec.metric.name)
        tail.rows_done += len(rows)
        tail.offset, tail.synced = offset, True


def live_logger(spec: SweepSpec, path: Path, sweep_id: str, flush_s: float = 2.0) -> Any:
    """A Tune ``Callback`` that logs results to the spec's MLflow store as they arrive."""
    from ray.tune import Callback

    class LiveMlflowLogger(Callback):
        def __init__(self) -> None:
            self._queue: queue.SimpleQueue = queue.SimpleQueue()
            self._thread: threading.Thread | None = None
            self._driving: Any = None
            self._warned = False

        def __getstate__(self) -> dict:
            # Tune saves its callbacks with the experiment state; a queue and a thread do not pickle.
            return {"_warned": self._warned}

        def __setstate__(self, state: dict) -> None:
            self.__init__()  # type: ignore[misc]
            self._warned = state.get("_warned", False)

        def setup(self, **info: Any) -> None:
            # While it is held, an export knows the sweep runs and leaves its unfinished runs RUNNING.
            self._driving = store.hold_driver_lock(path)
            self._thread = threading.Thread(target=self._run, name="rlsweep-mlflow-live", daemon=True)
            self._thread.start()

        def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
            # Only which trial has news: the row itself is in its result.json, which Tune's JSON logger (it
            # runs first) writes in the trial's staging folder on the driver and copies to storage later.
            self._queue.put((trial.trial_id, str(trial.path), str(trial.local_path or trial.path), dict(trial.config)))

        def on_experiment_end(self, trials: list, **info: Any) -> None:
            self._queue.put(_STOP)
            if self._thread is not None:
                self._thread.join(timeout=300)
            if self._driving is not None:
                self._driving.close()
                self._driving = None

        def _run(self) -> None:
            tailer = MlflowTailer(spec, path, sweep_id)
            pending: dict[str, tuple[str, str, dict]] = {}
            stopping = False
            while not stopping:
                try:
                    item = self._queue.get(timeout=flush_s)
                    while True:
                        if item is _STOP:
                            stopping = True
                        else:
                            pending[item[0]] = item[1:]
                        item = self._queue.get_nowait()
                except queue.Empty:
                    pass
                try:
                    tailer.flush(pending)
                    pending.clear()
                except Exception as exc:  # noqa: BLE001 - never fail the sweep over its live log
                    if not self._warned:
                        log.warning("live MLflow logging is waiting (%s); results wait in the trials' result.json "
                                    "and are sent when MLflow answers (or by the export after the sweep)", exc)
                        self._warned = True

    return LiveMlflowLogger()
