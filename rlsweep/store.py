"""The experiment store: the one owner of an experiment directory's layout.

An experiment directory is Ray Tune's (``experiment_state-*.json``, one folder per trial with
``params.json``, ``result.json``, ``error.txt`` and ``checkpoint_*`` folders) plus rlsweep's files:

- ``rlsweep_spec.yaml``: the spec as it ran, for a user to read and edit (a resume refuses edits);
- ``rlsweep.json``: the sweep's info (its id, when it started, the spec document as it ran, and what
  readers must know about its trials, e.g. whether they restore other trials' checkpoints);
- in each trial folder, ``rlsweep_trial.json``: every setting the trial ran with and its seed, written
  by the trial when it starts, so an export logs what ran (not today's defaults) and needs no Ray;
- in each checkpoint, ``rlsweep_checkpoint.json``: the metrics when it was taken and the state the
  trial needs to continue from it; with several seeds per trial, ``rlsweep_seeds/<k>`` holds seed k's
  algorithm (the first seed's is the checkpoint itself);

Every file name and every Tune key rlsweep reads is named here and nowhere else. The writers are used by
the sweep and the trials, the readers by the analysis; this module depends on none of them, so a
directory can be read after the driver exited or crashed, on another machine, while a sweep still writes.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import math
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsweep.errors import Problem, SweepError
from rlsweep.metrics import ENV_STEPS, env_steps
from rlsweep.seeds import SEED_PATH

log = logging.getLogger("rlsweep")

# --- rlsweep's files -----------------------------------------------------------------------------------
SPEC_FILE = "rlsweep_spec.yaml"
SWEEP_FILE = "rlsweep.json"
TRIAL_FILE = "rlsweep_trial.json"
#: Written by a trial that found the spec itself wrong (a metric key its algorithm does not report), so
#: the sweep ends with the spec's error instead of retrying every trial.
SPEC_PROBLEMS_FILE = "rlsweep_spec_problems.json"
CHECKPOINT_META = "rlsweep_checkpoint.json"
#: A checkpoint of a trial with several seeds holds the first seed's algorithm at its top (what
#: ``load_policy`` and the ``eval`` rule read) and seed k's under ``rlsweep_seeds/<k>``.
SEED_CHECKPOINTS = "rlsweep_seeds"
#: ``rlsweep confirm``: the retraining on test seeds is an experiment of its own in this folder of the
#: sweep's directory (one trial per configuration and test seed, its Tune config ``{candidate, seed}``),
#: its plan beside it, and the result (intervals, per-seed values) in the sweep's directory.
CONFIRMATION_DIR = "confirmation"
CONFIRMATION_PLAN = "rlsweep_confirmation_plan.json"
CONFIRMATION_FILE = "rlsweep_confirmation.json"
CANDIDATE_KEY, TEST_SEED_KEY = "candidate", "seed"
#: What a reader needs to trust and rerun a confirmed sweep, as data and as a page.
REPRODUCIBILITY_JSON, REPRODUCIBILITY_MD = "reproducibility.json", "reproducibility.md"
#: Held (flock) by whatever writes this sweep to MLflow, the export or the live logger: MLflow has no
#: transactions, so two writers that each find no run for a trial would each create one.
MLFLOW_LOCK = ".rlsweep_mlflow.lock"

# --- Tune's files and keys (Ray 2.60) -------------------------------------------------------------------
RESULT_FILE = "result.json"
PARAMS_FILE = "params.json"
ERROR_FILE = "error.txt"
STATE_GLOB = "experiment_state-*.json"
#: What Tune needs to restore a sweep, beside the experiment state.
TUNER_FILE = "tuner.pkl"
CHECKPOINT_GLOB = "checkpoint_*"
#: What an RLlib algorithm checkpoint holds its trained modules in (Ray 2.x's new API stack); a checkpoint
#: without it cannot be evaluated or restored.
ALGORITHM_STATE = "learner_group"
#: Keys Tune adds to every result row.
TRIAL_ID_KEY, CONFIG_KEY, DONE_KEY, TIMESTAMP_KEY = "trial_id", "config", "done", "timestamp"
#: Tune appends each failure to error.txt under this heading.
FAILURE_HEADING = "Failure # "

#: Tune's trial states, as rlsweep reports them.
TERMINATED, ERROR, RUNNING, PENDING, PAUSED = "TERMINATED", "ERROR", "RUNNING", "PENDING", "PAUSED"


# --- the sweep -----------------------------------------------------------------------------------------


def new_experiment_dir(storage: str | Path, name: str) -> Path:
    """A new folder under ``storage`` for a sweep: its name, dated if that one is taken."""
    root = Path(storage).expanduser().resolve()
    path = root / name
    if path.exists():
        path = root / f"{name}-{_dt.datetime.now():%Y%m%d-%H%M%S}"
    return path


def create_experiment(path: Path, *, spec_yaml: str, document: Mapping[str, Any], exist_ok: bool = False, **facts: Any) -> str:
    """Make the experiment directory with the spec and the sweep's info; returns the new sweep id.

    Args:
        facts: What readers must know about the sweep's trials (``restores_other_trials``), kept in the
            sweep info.
    """
    path.mkdir(parents=True, exist_ok=exist_ok)
    (path / SPEC_FILE).write_text(spec_yaml)
    sweep_id = uuid.uuid4().hex
    # The spec as it ran, kept apart from the YAML file, so an edit before a resume is found and listed.
    # The path it started at tells a copy of the folder (which keeps the sweep id) from the original.
    info = {
        "sweep_id": sweep_id, "created": _dt.datetime.now().isoformat(), "path": str(path.resolve()),
        "spec": dict(document), **facts,
    }
    (path / SWEEP_FILE).write_text(json.dumps(info, default=str))
    return sweep_id


def read_sweep_info(path: Path) -> dict[str, Any]:
    """The sweep's info. Raises :class:`SweepError` where ``path`` is no rlsweep experiment directory."""
    try:
        info = json.loads((path / SWEEP_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise SweepError(f"{path}: not an rlsweep experiment directory ({SWEEP_FILE}: {exc})") from None
    if not isinstance(info, dict) or "sweep_id" not in info:
        raise SweepError(f"{path}: not an rlsweep experiment directory ({SWEEP_FILE} has no sweep_id)")
    # rlsweep writes a uuid's hex; MLflow finds a sweep's runs by it, inside a quoted filter.
    if not (isinstance(info["sweep_id"], str) and re.fullmatch(r"[0-9A-Za-z_-]{1,64}", info["sweep_id"])):
        raise SweepError(f"{path}: {SWEEP_FILE}: sweep_id must be letters, digits, '_' or '-', got {info['sweep_id']!r:.80}")
    if not isinstance(info.get("path", ""), str):
        raise SweepError(f"{path}: {SWEEP_FILE}: path must be a string, got {info['path']!r:.80}")
    return info


@contextlib.contextmanager
def mlflow_lock(root: Path) -> Iterator[None]:
    """Hold the sweep's MLflow lock (an advisory ``flock`` on a file in its directory), waiting for whoever
    holds it: two exports, or an export and the live logger, then write one after the other and each sees
    what the other wrote. Works between processes on the machine (or file system) holding the directory."""
    import fcntl

    try:
        handle = open(root / MLFLOW_LOCK, "a")  # noqa: SIM115 - held across the yield
    except OSError as exc:
        # A directory the user may read but not write (another's results, a read-only mount): export it
        # all the same, without protection from a second writer.
        log.warning("%s: no MLflow lock (%s); run one export of this sweep at a time", root, exc.strerror or exc)
        yield
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def read_new_rows(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The complete result rows in a ``result.json`` from byte ``offset`` on, and the offset after the last
    complete line (a line Tune is still writing waits for the next call)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return [], offset
    end = data.rfind(b"\n") + 1
    rows = []
    for line in data[:end].splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if isinstance(row, dict):  # as read_rows counts them: a garbled line is no row
            rows.append(row)
    return rows, offset + end


def spec_file(path: Path) -> Path:
    return path / SPEC_FILE


def spec_as_run(info: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec document the sweep ran with, as kept in its info (None for a sweep from before rlsweep kept
    it there). Readers use it rather than ``rlsweep_spec.yaml``, which a user may have edited since."""
    ran = info.get("spec")
    return dict(ran) if isinstance(ran, Mapping) else None


def has_tune_state(path: Path) -> bool:
    """Whether Tune saved an experiment state here (it does once the first trial starts)."""
    return any(path.glob(STATE_GLOB))


# --- the confirmation on test seeds ---------------------------------------------------------------------


def confirmation_dir(root: Path) -> Path:
    return root / CONFIRMATION_DIR


def write_confirmation_plan(root: Path, plan: Mapping[str, Any]) -> None:
    confirmation_dir(root).mkdir(parents=True, exist_ok=True)
    (confirmation_dir(root) / CONFIRMATION_PLAN).write_text(json.dumps(dict(plan), default=str, indent=1))


def _json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None where it is missing, unreadable or not an object."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read_confirmation_plan(root: Path) -> dict[str, Any] | None:
    return _json_object(confirmation_dir(root) / CONFIRMATION_PLAN)


def write_confirmation(root: Path, result: Mapping[str, Any]) -> Path:
    path = root / CONFIRMATION_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dict(result), default=str, indent=1))
    tmp.replace(path)  # a reader never sees half a file
    return path


def write_reproducibility(root: Path, record: Mapping[str, Any], page: str) -> tuple[Path, Path]:
    (root / REPRODUCIBILITY_JSON).write_text(json.dumps(dict(record), default=str, indent=1))
    (root / REPRODUCIBILITY_MD).write_text(page)
    return root / REPRODUCIBILITY_JSON, root / REPRODUCIBILITY_MD


def reproducibility_files(root: Path) -> list[Path]:
    """The record's files, where ``rlsweep confirm`` wrote them."""
    return [p for p in (root / REPRODUCIBILITY_JSON, root / REPRODUCIBILITY_MD) if p.exists()]


def read_confirmation(root: Path) -> dict[str, Any] | None:
    """The confirmation's result, or None where ``rlsweep confirm`` has not finished one."""
    return _json_object(root / CONFIRMATION_FILE)


# --- a trial: written by the trial itself ----------------------------------------------------------------


def write_trial_settings(write: Callable[[str, str], None], settings: Mapping[str, Any]) -> None:
    """Record every setting a trial runs with, as the trial starts; ``write(file name, text)`` puts a file
    in the trial's folder in the experiment's storage."""
    write(TRIAL_FILE, json.dumps(dict(settings), default=str))


def write_spec_problems(write: Callable[[str, str], None], problems: Iterable[Any]) -> None:
    write(SPEC_PROBLEMS_FILE, json.dumps([{"path": p.path, "message": p.message} for p in problems]))


def spec_problems(root: Path) -> list[Problem]:
    """The spec problems trials of the sweep at ``root`` recorded, each once."""
    found: dict[tuple[str, str], Problem] = {}
    for path in sorted(root.glob(f"*/{SPEC_PROBLEMS_FILE}")):
        try:
            entries = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict):
                problem = Problem(str(entry.get("path", "")), str(entry.get("message", "")))
                found.setdefault((problem.path, problem.message), problem)
    return list(found.values())


def read_trial_settings(trial_dir: Path) -> dict[str, Any] | None:
    return _json_object(trial_dir / TRIAL_FILE)


def write_checkpoint_meta(directory: str | Path, meta: Mapping[str, Any]) -> None:
    """What a checkpoint holds besides RLlib's files: ``metrics`` when it was taken, and whatever the trial
    needs to continue from it."""
    Path(directory, CHECKPOINT_META).write_text(json.dumps(dict(meta), default=str))


def seed_checkpoint_dir(directory: str | Path, index: int) -> Path:
    """Where seed ``index`` of a trial's seeds is saved inside one of its checkpoints."""
    return Path(directory) if index == 0 else Path(directory, SEED_CHECKPOINTS, str(index))


def read_checkpoint_meta(directory: str | Path) -> dict[str, Any]:
    """Raises :class:`SweepError` for a checkpoint rlsweep did not write (or cut off by a crash)."""
    try:
        meta = json.loads(Path(directory, CHECKPOINT_META).read_text())
    except (OSError, ValueError) as exc:
        raise SweepError(f"{directory}: not a complete rlsweep checkpoint ({exc})") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("metrics", {}), dict):
        raise SweepError(f"{directory}: not a complete rlsweep checkpoint ({CHECKPOINT_META} is not rlsweep's)")
    return meta


# --- reading trials --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckpointRecord:
    path: Path
    metrics: Mapping[str, Any]

    @property
    def env_steps(self) -> int:
        return env_steps(self.metrics)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Trial:
    """One trial as found on disk.

    Attributes:
        config: The trial's draw (PBT/PB2: as mutated at its last result), keyed by spec paths.
        rows: Its result rows, work redone after a restore counted once.
        raw_rows: Every row in the order Tune appended it, redone iterations included.
        settings: Every setting it ran with, as the trial recorded them (None for trials that never started).
        failures: How many times the trial failed (and, while retries were left, restarted).
    """

    trial_id: str
    path: Path
    config: Mapping[str, Any]
    rows: tuple[Mapping[str, Any], ...]
    state: str
    error: str | None = None
    checkpoints: tuple[CheckpointRecord, ...] = ()
    raw_rows: tuple[Mapping[str, Any], ...] = ()
    failures: int = 0
    settings: Mapping[str, Any] | None = None

    def values(self, metric: str) -> list[float]:
        return [float(r[metric]) if _finite(r.get(metric)) else math.nan for r in self.rows]

    @property
    def env_steps(self) -> int:
        return env_steps(self.rows[-1]) if self.rows else 0

    @property
    def seed(self) -> int | None:
        """The training seed it ran with (RLlib's ``debugging.seed``, as it recorded it), or None."""
        ran = (self.settings or {}).get("settings", {})  # every setting, the spec's config included
        seed = ran.get(SEED_PATH) if isinstance(ran, Mapping) else None
        return seed if isinstance(seed, int) and not isinstance(seed, bool) else None

    @property
    def seeds(self) -> list[int]:
        """Every training seed it ran with (several with ``seeds.per_trial`` > 1), first seed first."""
        recorded = (self.settings or {}).get("seeds")
        if isinstance(recorded, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in recorded):
            return list(recorded)
        return [self.seed] if self.seed is not None else []

    @property
    def latest_checkpoint(self) -> CheckpointRecord | None:
        """The newest checkpoint on disk by env steps (Tune's ``get_last_checkpoint`` can return an older,
        better-scoring one once pruning has run)."""
        return max(self.checkpoints, key=lambda c: c.env_steps, default=None)


def read_rows(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The result rows in a ``result.json``, and how many lines could not be read. A line cut off by a
    crash or garbled on disk is skipped; the rows before and after it still count."""
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
    """A trial's rows with the work redone after a restore counted once: a trial's env steps only grow
    (outside PBT), so a row at or below an earlier one means the trial went back to a checkpoint (a resumed
    sweep, a retried failure), and the rows it redid replace the ones from before."""
    kept: list[dict[str, Any]] = []
    for row in rows:
        steps = row.get(ENV_STEPS)
        if isinstance(steps, (int, float)):
            while kept and isinstance(kept[-1].get(ENV_STEPS), (int, float)) and kept[-1][ENV_STEPS] >= steps:
                kept.pop()
        kept.append(row)
    return kept


def trial_states(root: Path) -> dict[str, tuple[str, int]]:
    """trial_id -> (status, failures so far) from the newest Tune experiment state file."""
    states: dict[str, tuple[str, int]] = {}
    # Named by the start time of each run of the sweep (a resume adds one); Tune may touch an older one
    # later, so the name orders them, not the modification time.
    files = sorted(root.glob(STATE_GLOB), key=lambda p: p.name)
    if not files:
        return states
    try:
        data = json.loads(files[-1].read_text())
    except (OSError, ValueError):
        return states
    entries = data.get("trial_data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return states  # not a state Tune wrote: the trials' own files tell their states
    for entry in entries:
        try:
            trial_json = json.loads(entry[0]) if isinstance(entry, list) else entry
            runtime = json.loads(entry[1]) if isinstance(entry, list) and len(entry) > 1 else {}
        except (ValueError, TypeError):
            continue
        if not isinstance(trial_json, dict) or not isinstance(runtime, dict):
            continue  # not an entry Tune writes; the trial's own files still tell its state
        trial_id = trial_json.get(TRIAL_ID_KEY)
        if not trial_id:
            continue
        failures = runtime.get("num_failures", 0)
        states[trial_id] = (trial_json.get("status", PENDING), int(failures) if isinstance(failures, int) else 0)
    return states


def resume_problems(root: Path) -> list[str]:
    """What stops Tune from restoring the sweep at ``root`` as it was: a missing tuner, or a newest experiment
    state that is cut off or not Tune's (Tune would start over from it, or invent trials with empty
    configs). Empty when the state looks whole."""
    problems = []
    if not (root / TUNER_FILE).is_file():
        problems.append(f"{TUNER_FILE} is missing")
    files = sorted(root.glob(STATE_GLOB), key=lambda p: p.name)
    if files:
        newest = files[-1]
        try:
            data = json.loads(newest.read_text())
        except (OSError, ValueError) as exc:
            problems.append(f"{newest.name} is cut off or garbled ({type(exc).__name__})")
        else:
            if not (isinstance(data, dict) and _whole_trial_data(data.get("trial_data"))):
                problems.append(f"{newest.name} is not a Tune experiment state (no readable trial entries)")
    return problems


def _whole_trial_data(entries: Any) -> bool:
    if not isinstance(entries, list) or not entries:
        return False
    for entry in entries:
        try:
            trial_json = json.loads(entry[0]) if isinstance(entry, list) and entry else None
        except (TypeError, ValueError):
            return False
        if not isinstance(trial_json, dict) or not trial_json.get(TRIAL_ID_KEY):
            return False
    return True


def _trial_dirs(root: Path) -> Iterator[Path]:
    for child in sorted(root.iterdir()):
        if child.is_dir() and ((child / PARAMS_FILE).exists() or (child / RESULT_FILE).exists()):
            yield child


def _checkpoints(trial_dir: Path) -> tuple[CheckpointRecord, ...]:
    records = []
    for directory in sorted(trial_dir.glob(CHECKPOINT_GLOB)):
        try:
            meta = read_checkpoint_meta(directory)
        except SweepError:
            continue  # incomplete or foreign checkpoint: not one rlsweep can vouch for
        if not (directory / ALGORITHM_STATE).is_dir():
            log.warning("%s: skipped, it has no %s/ (damaged or cut off)", directory, ALGORITHM_STATE)
            continue
        records.append(CheckpointRecord(directory, meta.get("metrics", {})))
    return tuple(records)


def _trial_id_from_dirname(name: str) -> str:
    # Tune names trial folders "<trainable>_<trial_id>_<index>_<params>"; the id is "<8 hex>_<5 digits>".
    match = re.search(r"([0-9a-f]{5,8}_\d{5})", name)
    return match.group(1) if match else name


def read_trials(root: Path, *, budget_env_steps: int) -> list[Trial]:
    """Every trial of the experiment at ``root``, as found on disk."""
    info = read_sweep_info(root)
    # Trials that restore other trials' checkpoints (PBT/PB2) legitimately jump to another env-step count.
    restores_others = bool(info.get("restores_other_trials", False))
    states = trial_states(root)
    trials = []
    for trial_dir in _trial_dirs(root):
        raw, bad = read_rows(trial_dir / RESULT_FILE)
        if bad:
            log.warning("%s: skipped %d unreadable line(s) of %s", trial_dir.name, bad, RESULT_FILE)
        rows = raw if restores_others else one_timeline(raw)
        # The config in force at the last result: PBT/PB2 change it during the trial (params.json keeps
        # the first one).
        config = rows[-1].get(CONFIG_KEY) if rows else None
        if not isinstance(config, Mapping):
            config = _json_object(trial_dir / PARAMS_FILE) or {}
        trial_id = str(rows[0][TRIAL_ID_KEY]) if rows and TRIAL_ID_KEY in rows[0] else _trial_id_from_dirname(trial_dir.name)
        status, failures = states.get(trial_id, (None, 0))
        error_text = None
        error_path = trial_dir / ERROR_FILE
        if error_path.exists():
            errors = error_path.read_text(errors="replace")
            # Tune appends every failure; one the trial recovered from (a retry) is not its error.
            if status in (None, ERROR):
                error_text = errors.strip()
                status = status or ERROR
            failures = max(failures, errors.count(FAILURE_HEADING))
        if status is None:
            done = bool(rows) and (rows[-1].get(DONE_KEY) or env_steps(rows[-1]) >= budget_env_steps)
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
                checkpoints=_checkpoints(trial_dir),
                settings=read_trial_settings(trial_dir),
            )
        )
    return trials


def matching_trials(trials: list[Trial], name: str) -> list[Trial]:
    """The trials a user means by ``name``: the one with that id, else every one whose id starts with it
    (one match is the trial; several, an ambiguous prefix)."""
    return [t for t in trials if t.trial_id == name] or [t for t in trials if t.trial_id.startswith(name)]


def read_spec_yaml(path: Path) -> str:
    """The text of the spec the sweep ran (as the user may have edited it since)."""
    try:
        return spec_file(path).read_text()
    except OSError as exc:
        raise SweepError(f"{path}: cannot read the sweep's spec ({exc.strerror or exc})") from None
