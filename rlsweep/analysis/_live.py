"""Live MLflow logging while a sweep runs, off the hot path.

Ray's ``MLflowLoggerCallback`` makes one blocking MLflow call per metric per result on Tune's driver loop.
Here the driver only puts each result on a queue; a background thread wakes every ``flush_s`` seconds and
writes everything queued with one ``log_batch`` per trial (up to 1,000 values a call). The runs it makes are
the ones :func:`rlsweep.analysis._mlflow.export` finds again, so the export after the sweep adds only what
the live logger had not written yet.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsweep import store
from rlsweep.analysis._mlflow import (
    ROWS_TAG,
    child_runs,
    create_child,
    experiment_id,
    log_rows,
    param_entities,
    parent_run,
    trial_params,
)
from rlsweep.metrics import exported

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

log = logging.getLogger("rlsweep")

_STOP = object()


def live_logger(spec: SweepSpec, path: Path, sweep_id: str, flush_s: float = 2.0) -> Any:
    """A Tune ``Callback`` that logs results to the spec's MLflow store as they arrive."""
    from ray.tune import Callback

    class LiveMlflowLogger(Callback):
        def __init__(self) -> None:
            self._queue: queue.SimpleQueue = queue.SimpleQueue()
            self._thread: threading.Thread | None = None
            self._warned = False

        def __getstate__(self) -> dict:
            # Tune saves its callbacks with the experiment state; a queue and a thread do not pickle.
            return {"_warned": self._warned}

        def __setstate__(self, state: dict) -> None:
            self.__init__()  # type: ignore[misc]
            self._warned = state.get("_warned", False)

        def setup(self, **info: Any) -> None:
            self._thread = threading.Thread(target=self._run, name="rlsweep-mlflow-live", daemon=True)
            self._thread.start()

        def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
            keep = {k: v for k, v in result.items() if exported(k) or k == store.TIMESTAMP_KEY}
            self._queue.put((trial.trial_id, dict(trial.config), trial.path, keep))

        def on_experiment_end(self, trials: list, **info: Any) -> None:
            self._queue.put(_STOP)
            if self._thread is not None:
                self._thread.join(timeout=300)

        def _run(self) -> None:
            from mlflow import MlflowClient

            settings = spec.mlflow
            if settings is None:
                return self._drain_until_stop()
            client = MlflowClient(tracking_uri=settings.tracking_uri)
            # A trial whose live log failed is left to the export after the sweep, which resumes from the
            # last row count the live log recorded.
            broken: set[str] = set()
            try:
                experiment = experiment_id(client, settings.experiment)
                parent = parent_run(
                    client, experiment, spec, sweep_id, path, str(spec.searcher.name), str(spec.scheduler.name)
                )
                runs = {t: (r.info.run_id, int(r.data.tags.get(ROWS_TAG, 0))) for t, r in child_runs(client, experiment, sweep_id).items()}
            except Exception as exc:  # noqa: BLE001 - never fail the sweep over its live log
                log.warning("live MLflow logging is off (%s); the export after the sweep still logs everything", exc)
                return self._drain_until_stop()
            stopping = False
            while not stopping:
                pending: dict[str, list[dict]] = defaultdict(list)
                configs: dict[str, tuple[dict, Any]] = {}
                try:
                    item = self._queue.get(timeout=flush_s)
                    while True:
                        if item is _STOP:
                            stopping = True
                        else:
                            trial_id, config, trial_path, row = item
                            pending[trial_id].append(row)
                            configs[trial_id] = (config, trial_path)
                        item = self._queue.get_nowait()
                except queue.Empty:
                    pass
                for trial_id, rows in pending.items():
                    if trial_id in broken:
                        continue
                    try:
                        params = []
                        if trial_id not in runs:
                            config, trial_path = configs[trial_id]
                            runs[trial_id] = (create_child(client, experiment, sweep_id, parent, trial_id, trial_path), 0)
                            # The trial recorded its settings as it started, before its first result.
                            settings = store.read_trial_settings(Path(trial_path))
                            params = param_entities(trial_params(settings, config))
                        run_id, done = runs[trial_id]
                        log_rows(client, run_id, rows, done + len(rows), params)
                        runs[trial_id] = (run_id, done + len(rows))
                    except Exception as exc:  # noqa: BLE001
                        broken.add(trial_id)
                        if not self._warned:
                            log.warning("live MLflow logging failed (%s); the export after the sweep fills the gap", exc)
                            self._warned = True

        def _drain_until_stop(self) -> None:
            while self._queue.get() is not _STOP:
                pass

    return LiveMlflowLogger()
