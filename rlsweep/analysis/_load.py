"""Reading an experiment directory: trials, histories, checkpoints, and the best of them by a rule.

Everything is read from files (Tune's per-trial ``result.json`` and ``params.json``, the checkpoints'
metadata, Tune's experiment state for trial status), so this works after the driver exited or crashed,
on another machine, and while a sweep is still writing.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsweep.errors import SpecError, SweepError
from rlsweep.metrics import HP_PREFIX, NORMALIZED_METRICS
from rlsweep.spec import SweepSpec, parse_spec, read_document
from rlsweep.sweep import SPEC_FILE, read_sweep_info
from rlsweep.trainables._trainable import CHECKPOINT_META

log = logging.getLogger("rlsweep")

#: Tune's trial states, as rlsweep reports them.
TERMINATED, ERROR, RUNNING, PENDING, PAUSED = "TERMINATED", "ERROR", "RUNNING", "PENDING", "PAUSED"


@dataclass(frozen=True)
class CheckpointRecord:
    path: Path
    metrics: Mapping[str, Any]

    @property
    def env_steps(self) -> int:
        return int(self.metrics.get("env_steps", 0))


@dataclass(frozen=True)
class Trial:
    """One trial as found on disk."""

    trial_id: str
    path: Path
    config: Mapping[str, Any]
    rows: tuple[Mapping[str, Any], ...]
    state: str
    error: str | None = None
    checkpoints: tuple[CheckpointRecord, ...] = ()
    #: Every row in the order Tune appended it, redone iterations included (``rows`` counts them once).
    raw_rows: tuple[Mapping[str, Any], ...] = ()
    #: How many times the trial failed (and, while retries were left, restarted from its checkpoint).
    failures: int = 0

    def values(self, metric: str) -> list[float]:
        return [float(r[metric]) if _finite(r.get(metric)) else math.nan for r in self.rows]

    @property
    def latest_checkpoint(self) -> CheckpointRecord | None:
        """The newest checkpoint on disk by env steps (Tune's ``get_last_checkpoint`` can return an older,
        better-scoring one once pruning has run)."""
        return max(self.checkpoints, key=lambda c: c.env_steps, default=None)


@dataclass(frozen=True)
class Best:
    """The best trial under a rule, and the checkpoint of it that scored best under the same rule."""

    trial_id: str
    config: Mapping[str, Any]
    metric: str
    mode: str
    rule: str
    value: float
    env_steps: int
    checkpoint: Path | None
    checkpoint_value: float | None = None
    checkpoint_env_steps: int | None = None
    trial_path: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial_id": self.trial_id,
            "config": dict(self.config),
            "metric": self.metric,
            "mode": self.mode,
            "rule": self.rule,
            "value": self.value,
            "env_steps": self.env_steps,
            "checkpoint": str(self.checkpoint) if self.checkpoint else None,
            "checkpoint_value": self.checkpoint_value,
            "checkpoint_env_steps": self.checkpoint_env_steps,
        }


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _read_rows(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The result rows of one trial, and how many lines could not be read. A line cut off by a crash or
    garbled on disk is skipped; the rows before and after it still count."""
    rows: list[dict[str, Any]] = []
    bad = 0
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return rows, bad
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(row, dict):
            rows.append(row)
        else:
            bad += 1
    return rows, bad


def one_timeline(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A trial's rows with the work redone after a restore counted once: outside PBT a trial's env steps
    only grow, so a row at or below an earlier one means the trial went back to a checkpoint (a resumed
    sweep, a retried failure), and the rows it redid replace the ones from before."""
    kept: list[dict[str, Any]] = []
    for row in rows:
        steps = row.get("env_steps")
        if isinstance(steps, (int, float)):
            while kept and isinstance(kept[-1].get("env_steps"), (int, float)) and kept[-1]["env_steps"] >= steps:
                kept.pop()
        kept.append(row)
    return kept


def _trial_states(root: Path) -> dict[str, tuple[str, str | None, int]]:
    """trial_id -> (status, error file, failures so far) from the newest Tune experiment state file."""
    states: dict[str, tuple[str, str | None, int]] = {}
    # Named by the start time of each run of the sweep (a resume adds one); Tune may touch an older one
    # later, so the name orders them, not the modification time.
    files = sorted(root.glob("experiment_state-*.json"), key=lambda p: p.name)
    if not files:
        return states
    try:
        data = json.loads(files[-1].read_text())
    except (OSError, ValueError):
        return states
    for entry in data.get("trial_data", []):
        try:
            trial_json = json.loads(entry[0]) if isinstance(entry, list) else entry
            runtime = json.loads(entry[1]) if isinstance(entry, list) and len(entry) > 1 else {}
        except (ValueError, TypeError):
            continue
        trial_id = trial_json.get("trial_id")
        if not trial_id:
            continue
        error = runtime.get("error_filename") or None
        failures = runtime.get("num_failures", 0)
        states[trial_id] = (trial_json.get("status", PENDING), error, int(failures) if isinstance(failures, int) else 0)
    return states


RULE_HELP = (
    "last | max | avg-last-N (mean of the last N reports; default avg-last-3) | eval (the top 3 by avg-last-3, "
    "re-evaluated greedily on fresh seeds)"
)
_RULE = re.compile(r"^(last|max|avg-last-(\d+))$")
#: The ``eval`` rule re-evaluates this many trials, chosen by :data:`EVAL_CANDIDATE_RULE`.
EVAL_CANDIDATES = 3
EVAL_CANDIDATE_RULE = "avg-last-3"
EVAL_EPISODES = 10


#: Evaluation env seeds: fixed, so two evaluations compare, and unlikely to be ones a trial trained on.
DEFAULT_EVAL_SEEDS: tuple[int, ...] = (100_003, 100_019, 100_043)


class Sweep:
    """An experiment directory written by rlsweep. Create with :func:`load`."""

    def __init__(self, path: Path, spec: SweepSpec, trials: list[Trial]) -> None:
        self.path = path
        self.spec = spec
        self.trials = trials

    @property
    def sweep_id(self) -> str:
        return str(read_sweep_info(self.path)["sweep_id"])

    @property
    def experiment_analysis(self) -> Any:
        """Ray Tune's own ``ExperimentAnalysis`` of this directory, with the spec's metric and mode as its
        defaults; rlsweep's normalized names work as ``metric=``.

        Mind Tune's trap: with a checkpoint score attribute set (rlsweep sets the spec's metric),
        ``get_last_checkpoint`` returns the newest of the *kept* checkpoints, which pruning may have made a
        best one rather than the latest. ``get_best_checkpoint`` and :meth:`best` agree (tested).
        """
        from ray.tune import ExperimentAnalysis

        return ExperimentAnalysis(
            str(self.path), default_metric=self.spec.metric.name, default_mode=self.spec.metric.mode
        )

    def has_results(self) -> bool:
        return any(t.rows for t in self.trials)

    def table(self) -> Any:
        """One row per trial: id, state, config columns, final and best metric, env steps, error."""
        import pandas as pd

        metric, mode = self.spec.metric.name, self.spec.metric.mode
        records = []
        for trial in self.trials:
            values = [v for v in trial.values(metric) if not math.isnan(v)]
            record: dict[str, Any] = {"trial_id": trial.trial_id, "state": trial.state}
            record.update({f"config/{k}": v for k, v in trial.config.items()})
            record[metric] = values[-1] if values else math.nan
            record[f"{metric}_best"] = (max(values) if mode == "max" else min(values)) if values else math.nan
            record["env_steps"] = int(trial.rows[-1].get("env_steps", 0)) if trial.rows else 0
            record["iterations"] = len(trial.rows)
            record["failures"] = trial.failures
            record["error"] = trial.error
            records.append(record)
        return pd.DataFrame.from_records(records)

    def history(self) -> Any:
        """One row per reported iteration of every trial: the normalized metrics and ``hp/...`` values."""
        import pandas as pd

        # Plus the hyperparameters read back from the learner (hp/...): under PBT they change per row.
        hyperparams = sorted({k for t in self.trials for row in t.rows for k in row if k.startswith(HP_PREFIX)})
        columns = ["trial_id", *NORMALIZED_METRICS, *hyperparams]
        records = [
            {"trial_id": t.trial_id, **{k: row.get(k) for k in columns[1:]}} for t in self.trials for row in t.rows
        ]
        return pd.DataFrame.from_records(records, columns=columns)

    def _score(self, values: list[float], end: int, rule: str) -> float:
        """The rule's score of a trial's history up to and including index ``end``."""
        match = _RULE.match(rule)
        if match is None:
            raise SpecError(f"unknown rule {rule!r}; expected last, max, avg-last-N (e.g. avg-last-3) or eval", "--rule")
        window = [v for v in values[: end + 1] if not math.isnan(v)]
        if not window:
            return math.nan
        if rule == "last":
            return window[-1]
        if rule == "max":
            return max(window) if self.spec.metric.mode == "max" else min(window)
        n = int(match.group(2))
        if n < 1:
            raise SpecError(f"N in avg-last-N must be >= 1, got {rule!r}", "--rule")
        tail = window[-n:]
        return sum(tail) / len(tail)

    def best(self, rule: str = "avg-last-3") -> Best:
        """The best trial under ``rule`` and, of its kept checkpoints, the one that scored best under it.

        Rules: ``last`` (final value), ``max`` (best value ever reported; min for mode min), ``avg-last-N``
        (mean of the last N reports, robust to a single noisy peak), ``eval`` (the top 3 trials under
        ``avg-last-3`` re-evaluated greedily on fresh seeds, 10 episodes each on 3 seeds; slower).

        Raises:
            SweepError: no trial has reported the metric yet.
        """
        ranked = self.ranked(rule)
        if not ranked:
            raise SweepError(f"{self.path}: no trial has reported {self.spec.metric.name!r} yet")
        return ranked[0]

    def ranked(self, rule: str = "avg-last-3") -> list[Best]:
        """Every trial that reported the metric and did not end in an error, best first under ``rule``, each
        with its best checkpoint.

        Under ``eval``, only the re-evaluated candidates, ranked by their greedy return on fresh seeds."""
        if rule == "eval":
            return self._ranked_by_evaluation()
        metric, mode = self.spec.metric.name, self.spec.metric.mode
        scored = []
        # A trial that ended in an error (out of retries, a NaN loss) is no candidate: its last
        # checkpoint may hold the diverged weights.
        for trial in (t for t in self.trials if t.state != ERROR):
            values = trial.values(metric)
            score = self._score(values, len(values) - 1, rule) if values else math.nan
            if not math.isnan(score):
                scored.append((score, trial))
        scored.sort(key=lambda pair: -pair[0] if mode == "max" else pair[0])
        return [self._with_checkpoint(trial, score, rule) for score, trial in scored]

    def _ranked_by_evaluation(self) -> list[Best]:
        from dataclasses import replace

        from rlsweep.analysis._evaluate import evaluate_checkpoints

        candidates = [b for b in self.ranked(EVAL_CANDIDATE_RULE) if b.checkpoint is not None][:EVAL_CANDIDATES]
        if not candidates:
            return []
        table = evaluate_checkpoints(self, candidates, episodes=EVAL_EPISODES, seeds=DEFAULT_EVAL_SEEDS)
        by_trial = {b.trial_id: b for b in candidates}
        return [
            replace(
                by_trial[row.trial_id],
                metric="eval_return_mean",
                mode="max",
                rule="eval",
                value=float(row.eval_return_mean),
                checkpoint_value=float(row.eval_return_mean),
            )
            for row in table.itertuples()
        ]

    def _with_checkpoint(self, trial: Trial, value: float, rule: str) -> Best:
        metric, mode = self.spec.metric.name, self.spec.metric.mode
        better = (lambda a, b: a > b) if mode == "max" else (lambda a, b: a < b)
        values = trial.values(metric)
        steps = [int(r.get("env_steps", 0)) for r in trial.rows]
        chosen, chosen_value = None, math.nan
        for checkpoint in trial.checkpoints:
            # Score a checkpoint by the reports up to the one it was saved with. Under "max" that is its own
            # value: a running maximum would let a later checkpoint inherit an earlier peak.
            end = max((i for i, s in enumerate(steps) if s <= checkpoint.env_steps), default=-1)
            score = self._score(values, end, "last" if rule == "max" else rule) if end >= 0 else math.nan
            if math.isnan(score):
                score = float(checkpoint.metrics.get(metric, math.nan))
            if chosen is None or (not math.isnan(score) and (math.isnan(chosen_value) or better(score, chosen_value))):
                chosen, chosen_value = checkpoint, score
        return Best(
            trial_id=trial.trial_id,
            config=dict(trial.config),
            metric=metric,
            mode=mode,
            rule=rule,
            value=value,
            env_steps=steps[-1] if steps else 0,
            checkpoint=chosen.path if chosen else None,
            checkpoint_value=None if chosen is None or math.isnan(chosen_value) else chosen_value,
            checkpoint_env_steps=chosen.env_steps if chosen else None,
            trial_path=trial.path,
        )

    def evaluate(
        self,
        top: int = 3,
        *,
        episodes: int = 10,
        seeds: Sequence[int] = DEFAULT_EVAL_SEEDS,
        rule: str = "avg-last-3",
    ) -> Any:
        """Re-run the best checkpoints of the top ``top`` trials (under ``rule``) greedily on fresh seeds.

        Returns a pandas DataFrame, one row per checkpoint, best evaluated first: ``eval_return_mean``,
        ``eval_return_std`` over all ``episodes x len(seeds)`` episodes, and the mean per seed.
        """
        from rlsweep.analysis._evaluate import evaluate_checkpoints

        return evaluate_checkpoints(self, self.ranked(rule)[:top], episodes=episodes, seeds=seeds)

    def to_mlflow(self, tracking_uri: str | None = None, experiment: str | None = None) -> str:
        """Log the sweep to MLflow (parent run + a child run per trial); idempotent. Returns the parent id."""
        from rlsweep.analysis._mlflow import export

        return export(self, tracking_uri=tracking_uri, experiment=experiment)


def _iter_trial_dirs(root: Path) -> Iterator[Path]:
    for child in sorted(root.iterdir()):
        if child.is_dir() and ((child / "params.json").exists() or (child / "result.json").exists()):
            yield child


def _read_checkpoints(trial_dir: Path) -> tuple[CheckpointRecord, ...]:
    records = []
    for directory in sorted(trial_dir.glob("checkpoint_*")):
        meta_file = directory / CHECKPOINT_META
        try:
            meta = json.loads(meta_file.read_text())
        except (OSError, ValueError):
            continue  # incomplete or foreign checkpoint: not one rlsweep can vouch for
        records.append(CheckpointRecord(directory, meta.get("metrics", {})))
    return tuple(records)


def load(path: str | Path) -> Sweep:
    """Load an experiment directory written by :func:`rlsweep.run`.

    Raises:
        SweepError: the directory is missing or was not written by rlsweep.
    """
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        raise SweepError(f"{root}: no such experiment directory")
    read_sweep_info(root)
    try:
        document = read_document(root / SPEC_FILE)
    except SpecError as exc:
        raise SweepError(f"{root}: cannot read the sweep's spec: {exc}") from None
    spec, problems = parse_spec(document)
    if spec is None:
        raise SweepError(f"{root}/{SPEC_FILE}: " + "; ".join(str(p) for p in problems))

    states = _trial_states(root)
    trials = []
    # PBT/PB2 trials legitimately continue from another trial's (lower or higher) env-step count.
    exploits = spec.scheduler.name in ("pbt", "pb2")
    for trial_dir in _iter_trial_dirs(root):
        raw, bad = _read_rows(trial_dir / "result.json")
        if bad:
            log.warning("%s: skipped %d unreadable line(s) of result.json", trial_dir.name, bad)
        rows = raw if exploits else one_timeline(raw)
        # The config in force at the last result: PBT/PB2 change it during the trial (params.json keeps
        # the first one).
        config = rows[-1].get("config") if rows else None
        if not isinstance(config, Mapping):
            try:
                config = json.loads((trial_dir / "params.json").read_text())
            except (OSError, ValueError):
                config = {}
        trial_id = str(rows[0]["trial_id"]) if rows and "trial_id" in rows[0] else _trial_id_from_dirname(trial_dir.name)
        status, _, failures = states.get(trial_id, (None, None, 0))
        error_text = None
        error_path = trial_dir / "error.txt"
        if error_path.exists():
            errors = error_path.read_text(errors="replace")
            # Tune appends every failure; one the trial recovered from (a retry) is not its error.
            if status in (None, ERROR):
                error_text = errors.strip()
                status = status or ERROR
            failures = max(failures, errors.count("Failure # "))
        if status is None:
            done = bool(rows) and (rows[-1].get("done") or rows[-1].get("env_steps", 0) >= spec.budget.env_steps)
            status = TERMINATED if done else RUNNING if rows else PENDING
        trials.append(
            Trial(
                trial_id=trial_id,
                path=trial_dir,
                config=config,
                rows=tuple(rows),
                raw_rows=tuple(raw),
                state=status,
                error=error_text,
                failures=failures,
                checkpoints=_read_checkpoints(trial_dir),
            )
        )
    return Sweep(root, spec, trials)


def _trial_id_from_dirname(name: str) -> str:
    # Tune names trial folders "<trainable>_<trial_id>_<index>_<params>"; the id is "<8 hex>_<5 digits>".
    match = re.search(r"([0-9a-f]{5,8}_\d{5})", name)
    return match.group(1) if match else name
