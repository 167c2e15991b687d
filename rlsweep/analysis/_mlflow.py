"""MLflow export: a parent run per sweep, a nested child run per trial. Idempotent and resumable.

Runs are found again by tags (``rlsweep.sweep_id``, ``rlsweep.trial_id``); each child records how many
result rows it already holds, so a second export adds only what is new and never duplicates a run.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from rlsweep.metrics import NORMALIZED_METRICS

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from rlsweep.analysis._load import Sweep, Trial

SWEEP_TAG = "rlsweep.sweep_id"
TRIAL_TAG = "rlsweep.trial_id"
ROWS_TAG = "rlsweep.rows_exported"
PARENT_TAG = "mlflow.parentRunId"

#: MLflow's limits (3.x): characters in a param value, entries in one log_batch call.
MAX_PARAM_CHARS = 6000
MAX_BATCH = 1000

_STATUS = {"TERMINATED": "FINISHED", "ERROR": "FAILED", "PAUSED": "KILLED"}


def _param_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 3] + "..."


def trial_params(spec: Any, config: Mapping[str, Any]) -> dict[str, Any]:
    """A trial's params: every setting it ran with (rlsweep's defaults, what an iteration is, ``config``,
    the draw), so nothing that shaped the run is hidden in a default."""
    from rlsweep.trainables._config import settings_for

    return {**settings_for(spec, config), **config}


def _find_run(client: MlflowClient, experiment_id: str, tags: Mapping[str, str]) -> Any:
    query = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
    runs = client.search_runs([experiment_id], filter_string=query, max_results=2)
    return runs[0] if runs else None


def _experiment_id(client: MlflowClient, name: str) -> str:
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        if experiment.lifecycle_stage == "deleted":
            client.restore_experiment(experiment.experiment_id)
        return str(experiment.experiment_id)
    return str(client.create_experiment(name))


def _log_new_rows(client: MlflowClient, run: Any, trial: Trial) -> None:
    from mlflow.entities import Metric

    done = int(run.data.tags.get(ROWS_TAG, 0))
    metrics = []
    for row in trial.rows[done:]:
        step = int(row.get("env_steps", 0))
        timestamp = int(float(row.get("timestamp", 0)) * 1000)
        for name in NORMALIZED_METRICS:
            value = row.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                metrics.append(Metric(name, float(value), timestamp, step))
    for start in range(0, len(metrics), MAX_BATCH):
        client.log_batch(run.info.run_id, metrics=metrics[start : start + MAX_BATCH], synchronous=True)
    client.set_tag(run.info.run_id, ROWS_TAG, str(len(trial.rows)))


def export(sweep: Sweep, *, tracking_uri: str | None = None, experiment: str | None = None) -> str:
    """Log ``sweep`` to MLflow; calling it again adds only what is new. Returns the parent run id."""
    from mlflow import MlflowClient
    from mlflow.entities import Param, RunTag

    settings = sweep.spec.mlflow
    uri = tracking_uri or (settings.tracking_uri if settings else "sqlite:///mlflow.db")
    client = MlflowClient(tracking_uri=uri)
    experiment_id = _experiment_id(client, experiment or (settings.experiment if settings else "rlsweep"))
    sweep_id = sweep.sweep_id
    spec = sweep.spec

    parent = _find_run(client, experiment_id, {SWEEP_TAG: sweep_id, "rlsweep.kind": "sweep"})
    if parent is None:
        parent = client.create_run(
            experiment_id,
            run_name=spec.name,
            tags={
                SWEEP_TAG: sweep_id,
                "rlsweep.kind": "sweep",
                "rlsweep.path": str(sweep.path),
                "rlsweep.searcher": spec.searcher.name,
                "rlsweep.scheduler": spec.scheduler.name,
                "rlsweep.algorithm": spec.algorithm,
                "rlsweep.env": spec.env,
            },
        )
        params = {
            "algorithm": spec.algorithm,
            "env": spec.env,
            "searcher": spec.searcher.name,
            "scheduler": spec.scheduler.name,
            "budget.env_steps": spec.budget.env_steps,
            "budget.trials": spec.budget.trials,
            "metric": f"{spec.metric.name} ({spec.metric.mode})",
            **{f"config.{k}": v for k, v in spec.config.items()},
        }
        client.log_batch(parent.info.run_id, params=[Param(k, _param_value(v)) for k, v in params.items()])
        with tempfile.TemporaryDirectory() as directory:
            spec_path = Path(directory, "spec.yaml")
            spec_path.write_text(spec.to_yaml())
            client.log_artifact(parent.info.run_id, str(spec_path))
    parent_id = parent.info.run_id

    all_finished = True
    for trial in sweep.trials:
        run = _find_run(client, experiment_id, {SWEEP_TAG: sweep_id, TRIAL_TAG: trial.trial_id})
        if run is None:
            created = client.create_run(
                experiment_id,
                run_name=trial.trial_id,
                tags={SWEEP_TAG: sweep_id, TRIAL_TAG: trial.trial_id, PARENT_TAG: parent_id, "rlsweep.kind": "trial"},
            )
            client.log_batch(
                created.info.run_id,
                params=[Param(k, _param_value(v)) for k, v in trial_params(spec, trial.config).items()],
                tags=[RunTag("rlsweep.trial_path", str(trial.path))],
            )
            run = client.get_run(created.info.run_id)
        _log_new_rows(client, run, trial)
        status = _STATUS.get(trial.state)
        if trial.error:
            client.set_tag(run.info.run_id, "rlsweep.error", trial.error[:5000])
        if status is not None and run.info.status != status:
            client.set_terminated(run.info.run_id, status=status)
        if status is None:
            all_finished = False

    if sweep.has_results():
        best = sweep.best()
        client.log_batch(
            parent_id,
            tags=[
                RunTag("rlsweep.best_trial_id", best.trial_id),
                RunTag("rlsweep.best_checkpoint", str(best.checkpoint or "")),
            ],
        )
        # A fixed timestamp and step make a repeated export write the same points, not new ones.
        from mlflow.entities import Metric

        stamp = max((int(float(r.get("timestamp", 0)) * 1000) for t in sweep.trials for r in t.rows), default=0)
        summary = {f"best_{best.metric}": best.value, "trials": len(sweep.trials),
                   "errored_trials": sum(t.state == "ERROR" for t in sweep.trials)}
        client.log_batch(parent_id, metrics=[Metric(k, float(v), stamp, 0) for k, v in summary.items()])
        with tempfile.TemporaryDirectory() as directory:
            best_path = Path(directory, "best_config.yaml")
            best_path.write_text(yaml.safe_dump({"best": best.to_dict()}, sort_keys=False))
            client.log_artifact(parent_id, str(best_path))
    if all_finished:
        client.set_terminated(parent_id, status="FINISHED")
    return parent_id
