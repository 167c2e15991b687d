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
import fnmatch
import gc
import hashlib
import json
import logging
import math
import os
import pickletools
import re
import stat
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rlsweep.errors import Problem, SweepError, shorten
from rlsweep.metrics import DIVERGED, ENV_STEPS, env_steps
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
#: The held-out stage's runs (a Tune experiment of candidate x test seed, as the confirmation's), its plan,
#: and its result in the sweep's folder.
HOLDOUT_DIR = "holdout"
HOLDOUT_PLAN = "rlsweep_holdout_plan.json"
HOLDOUT_FILE = "rlsweep_holdout.json"
#: What a reader needs to trust and rerun a confirmed sweep, as data and as a page.
REPRODUCIBILITY_JSON, REPRODUCIBILITY_MD = "reproducibility.json", "reproducibility.md"
#: Held (flock) by whatever writes this sweep to MLflow, the export or the live logger: MLflow has no
#: transactions, so two writers that each find no run for a trial would each create one.
MLFLOW_LOCK = ".rlsweep_mlflow.lock"
#: Held (flock) by the driver of a running sweep (its live MLflow logger, from the sweep's start to its end):
#: where no process holds it, nothing of the sweep is running, whatever its files say.
DRIVER_LOCK = ".rlsweep_driver.lock"
#: A cache of what readers need from each trial's ``result.json`` (its row count, and every row's value of
#: the keys status, best, table and plot read), keyed by the file's size, mtime and inode: a reader of a
#: sweep of 10,000 trials parses only the files that changed since the last read. Deleting it loses nothing.
ROWS_INDEX = ".rlsweep_rows_index.json"
#: What a reader took from Tune's experiment state (:func:`tune_state`), a cache beside it.
STATE_INDEX = ".rlsweep_state_index.json"
#: The files readers keep in an experiment directory to read it faster next time: none of the sweep's data.
CACHE_FILES = (ROWS_INDEX, STATE_INDEX)

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
TUNE_STATUSES = (TERMINATED, ERROR, RUNNING, PENDING, PAUSED)
#: Tune's keys of a trial entry in the experiment state: the trial's folder (relative to the experiment's)
#: and its config.
TRIAL_DIR_KEY, STATUS_KEY, FAILURES_KEY = "relative_logdir", "status", "num_failures"
#: Tune's keys in a result row that readers compute with: a value that is not a finite number is dropped.
NUMERIC_ROW_KEYS = (TIMESTAMP_KEY, "time_total_s")
#: States of a trial rlsweep cannot read: listed in Tune's state with its folder gone, or its results file
#: there but unreadable (a folder, a FIFO, no permission, NUL bytes, mostly garbage). Neither is one of Tune's.
MISSING, UNREADABLE = "MISSING", "UNREADABLE"
#: The state of a trial folder that Tune's experiment state does not list, where that state lists trials (a
#: folder copied in, or made by a trial that started after Tune last saved its state, which it does at most
#: every 10 s): not a trial of this sweep as Tune knows it. Its files are read and shown, and it is named in a
#: warning; it is no candidate for the best trial and Tune would never continue it (resume refuses it). It
#: does not make an answer incomplete: nothing of the sweep Tune ran is left unread, and a running sweep has
#: such folders for seconds after each trial starts. Not one of Tune's states.
UNLISTED = "UNLISTED"
#: How many problems of one kind a reader names one by one before it counts the rest.
MAX_WARNINGS = 10
#: How long a reader waits before it reads a Tune state that looked cut off once more (Tune may be copying it).
STATE_REREAD_S = 0.2


# --- reading a file safely --------------------------------------------------------------------------------


class UnreadableFile(SweepError):
    """A file of the experiment that is there but cannot be read as a file: a folder, a FIFO, a socket or a
    device where a file belongs, or one the user may not read."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file ("...: is a FIFO, not a file"); None where it is a regular file
    or is not there."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"{path}: cannot be read ({exc.strerror or exc})"
    return None if stat.S_ISREG(mode) else f"{path}: is {_kind(mode)}, not a file"


def read_bytes(path: Path) -> bytes | None:
    """The bytes of the file at ``path``; None where there is none. Only a regular file is opened: a FIFO
    blocks its reader until something writes to it, and a device may never end.

    Raises:
        UnreadableFile: it is there but is no regular file, or cannot be read.
    """
    if (problem := file_problem(path)) is not None:
        raise UnreadableFile(problem)
    try:
        # O_NONBLOCK: were it swapped for a FIFO since the check, the open still returns at once.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise UnreadableFile(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnreadableFile(f"{path}: is {_kind(mode)}, not a file")
        try:
            return handle.read()
        except OSError as exc:
            raise UnreadableFile(f"{path}: cannot be read ({exc.strerror or exc})") from None


class GarbledFile(SweepError):
    """A file of the experiment that reads, but not as what belongs there (cut off, garbled).

    Attributes:
        cut_off: It looks like a JSON object whose write was interrupted (it begins as one and holds no NUL
            byte), rather than garbage: what a process killed mid-write leaves.
    """

    def __init__(self, message: str, *, cut_off: bool = False) -> None:
        super().__init__(message)
        self.cut_off = cut_off


_ABSENT = object()


def _looks_cut_off(data: bytes) -> bool:
    """Whether ``data`` (which does not parse) reads as the start of a JSON object whose write stopped: a
    process killed mid-write leaves that (or nothing at all, killed right after it opened the file). NUL
    bytes never do (JSON escapes them): a file of zeros is a disk's
    or a copy's damage, not a write cut short."""
    text = data.strip()
    return (not text or text.startswith(b"{")) and b"\x00" not in text


def _json_noting(path: Path, damage: list[str], what: str) -> Any:
    """The JSON object in ``path``, or None where there is none. What is there but cannot be read as an
    object (a folder, a FIFO, cut off, NUL bytes, another JSON value) is named in ``damage`` with ``what``
    of the trial is lost with it."""
    try:
        value = _read_json(path)
    except GarbledFile as exc:
        damage.append(f"{exc}: {'cut off' if exc.cut_off else 'garbled'}, {what} cannot be read")
        return None
    except UnreadableFile as exc:
        damage.append(f"{exc}: {what} cannot be read")
        return None
    if value is _ABSENT:
        return None
    if not isinstance(value, dict):
        damage.append(f"{path}: holds {shorten(value)}, not a JSON object: {what} cannot be read")
        return None
    return value


def _read_json(path: Path) -> Any:
    """The JSON value in ``path``; ``_ABSENT`` where there is no file.

    Raises:
        UnreadableFile: no regular file, or one that cannot be read.
        GarbledFile: not JSON (cut off, garbled, nested past Python's limit).
    """
    data = read_bytes(path)
    if data is None:
        return _ABSENT
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        # Zeros where JSON was are a disk's or a copy's damage; say so rather than the decoder's complaint.
        why = "NUL bytes" if b"\x00" in data else type(exc).__name__
        raise GarbledFile(f"{path}: is not JSON ({why})", cut_off=_looks_cut_off(data)) from None


def _warn_each(problems: list[str]) -> None:
    for problem in problems[:MAX_WARNINGS]:
        log.warning("%s", problem)
    if len(problems) > MAX_WARNINGS:
        log.warning("... and %d more problem(s) like these", len(problems) - MAX_WARNINGS)


def _is_dir(path: str | Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


# --- the sweep -----------------------------------------------------------------------------------------


#: What :func:`new_experiment_dir` adds to a sweep's name where a folder of that name is taken: when it started.
DATED_FORMAT = "%Y%m%d-%H%M%S"
_DATED_SUFFIX = r"-\d{8}-\d{6}"


def new_experiment_dir(storage: str | Path, name: str) -> Path:
    """A new folder under ``storage`` for a sweep: its name, dated if that one is taken."""
    root = Path(storage).expanduser().resolve()
    path = root / name
    if path.exists():
        path = root / f"{name}-{_dt.datetime.now():{DATED_FORMAT}}"
    return path


def experiments_named(storage: str | Path, name: str) -> list[tuple[Path, _dt.datetime]]:
    """The experiment folders under ``storage`` that :func:`new_experiment_dir` made for sweeps named
    ``name`` (``name``, or ``name`` and a date), each with when its sweep started, the newest first. When a
    sweep started is what its sweep info says, else (the info unreadable, or from a sweep that kept no
    date) when that file was written. A folder without sweep info is no experiment and is left out."""
    root = Path(storage).expanduser()
    pattern = re.compile(re.escape(name) + f"(?:{_DATED_SUFFIX})?")
    found = []
    for entry in _entries(root):
        if pattern.fullmatch(entry.name) and (entry / SWEEP_FILE).is_file():
            found.append((entry, _started(entry)))
    return sorted(found, key=lambda pair: pair[1], reverse=True)


class NoSuchExperiment(SweepError):
    """A name that is no experiment folder and names no sweep in the default storage (or several at once)."""


#: At most this many of the storage's experiment names are listed when a name matches none.
MAX_NAMES_LISTED = 10


def _is_name(text: str) -> bool:
    """Whether ``text`` can be an experiment's name rather than a path: one path component, no ``~``."""
    separators = {os.sep, os.altsep} - {None}
    return bool(text) and text not in (".", "..") and not text.startswith("~") and not any(sep in text for sep in separators)


def experiment_by_name(text: str, storage: str | Path) -> tuple[Path, str] | None:
    """Where ``text`` is no file or folder but can be a sweep's name: the folder of its newest sweep in
    ``storage`` (the callers give the default storage, ./rlsweep_results), and a line that says which; None
    where ``text`` is a path (that exists, or has a folder in it), for the caller to read as one.

    Raises:
        NoSuchExperiment: no experiment of that name there, or its newest ones started at the same time
            (copies of one sweep); the message says what was looked for and where.
    """
    if os.path.lexists(Path(text).expanduser()) or not _is_name(text):
        return None
    root = Path(storage)
    found = experiments_named(root, text)
    if not found:
        if not root.is_dir():
            raise NoSuchExperiment(f"no folder {text} here, and no {root}/ (the default storage) in {Path.cwd()} to find an "
                                   "experiment of that name in: give the experiment's folder, or run from the folder its "
                                   "sweep ran in")
        names = experiment_names(root)
        listed = ", ".join(names[:MAX_NAMES_LISTED]) + (f" and {len(names) - MAX_NAMES_LISTED} more" if len(names) > MAX_NAMES_LISTED else "")
        raise NoSuchExperiment(f"no folder {text} here, and no experiment of that name in {root}/ (the default storage); "
                               f"it holds {f'experiments named {listed}' if names else 'no experiment'}")
    (chosen, started), *older = found
    if tied := [path for path, when in older if when == started]:
        raise NoSuchExperiment(f"{text} names {len(tied) + 1} experiments in {root}/ that started at the same time, "
                               f"{started:%Y-%m-%d %H:%M:%S} (copies of one sweep?): give one's folder: "
                               + ", ".join(str(path) for path in [chosen, *tied]))
    newest = f"the newest of {len(found)} experiments of that name, " if older else ""
    return chosen, f"{text}: {newest}{chosen} (started {started:%Y-%m-%d %H:%M:%S})"


def experiment_names(storage: str | Path) -> list[str]:
    """The names of the sweeps whose experiment folders are under ``storage`` (a dated folder's name less
    its date), sorted."""
    names = {re.sub(f"{_DATED_SUFFIX}$", "", entry.name) for entry in _entries(Path(storage).expanduser())
             if (entry / SWEEP_FILE).is_file()}
    return sorted(names)


def _entries(root: Path) -> list[Path]:
    try:
        return _subfolders(root)
    except OSError:  # no such folder, or one that cannot be listed: it holds no experiment to name
        return []


def _started(path: Path) -> _dt.datetime:
    with contextlib.suppress(SweepError, KeyError, ValueError, TypeError):
        return _dt.datetime.fromisoformat(read_sweep_info(path)["created"]).replace(tzinfo=None)
    try:
        return _dt.datetime.fromtimestamp((path / SWEEP_FILE).stat().st_mtime)
    except OSError:
        return _dt.datetime.min


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
    info = json.loads(json.dumps({
        "sweep_id": sweep_id, "created": _dt.datetime.now().isoformat(), "path": str(path.resolve()),
        "spec": dict(document), **facts,
    }, default=str))
    # Its checksum tells a damaged file from a spec file edited since: either makes the two specs differ.
    info[CHECKSUM_KEY] = _checksum(info)
    (path / SWEEP_FILE).write_text(json.dumps(info))
    return sweep_id


#: The key of the sweep info's checksum: sha256 of the rest of it, as canonical JSON.
CHECKSUM_KEY = "sha256"


def _checksum(info: Mapping[str, Any]) -> str:
    rest = {k: v for k, v in info.items() if k != CHECKSUM_KEY}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def sweep_info_problem(path: Path, info: Mapping[str, Any]) -> str | None:
    """What is wrong with the sweep info read from ``path``'s ``rlsweep.json``, naming the file: it does not
    match its checksum (damaged on disk; a sweep from before rlsweep wrote one has none), or the spec it keeps
    is no spec document. None where it is intact (as far as it can tell)."""
    where = path / SWEEP_FILE
    if CHECKSUM_KEY in info and info[CHECKSUM_KEY] != _checksum(info):
        return f"{where}: is damaged (its content does not match its {CHECKSUM_KEY} checksum)"
    if "spec" in info and not isinstance(info["spec"], Mapping):
        return f"{where}: is damaged (the spec kept in it is {shorten(info['spec'])}, not a spec document)"
    return None


def read_sweep_info(path: Path) -> dict[str, Any]:
    """The sweep's info. Raises :class:`SweepError` where ``path`` is no rlsweep experiment directory."""
    try:
        info = _read_json(path / SWEEP_FILE)
    except SweepError as exc:
        raise SweepError(f"{path}: not an rlsweep experiment directory ({SWEEP_FILE}: {str(exc).removeprefix(f'{path / SWEEP_FILE}: ')})") from None
    if info is _ABSENT:
        raise SweepError(f"{path}: not an rlsweep experiment directory (no {SWEEP_FILE})")
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
        if (problem := file_problem(root / MLFLOW_LOCK)) is not None:  # a FIFO would block the open
            raise OSError(problem)
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


def hold_driver_lock(root: Path) -> Any:
    """Take the sweep's :data:`DRIVER_LOCK` for as long as the returned file stays open (the process ending
    closes it); None where it cannot be taken (a directory that cannot be written, another driver)."""
    import fcntl

    try:
        if file_problem(root / DRIVER_LOCK) is not None:
            return None
        handle = open(root / DRIVER_LOCK, "a")  # noqa: SIM115 - the caller closes it
    except OSError:
        return None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def driver_running(root: Path) -> bool:
    """Whether a driver holds the sweep's :data:`DRIVER_LOCK` now: a sweep interrupted, killed or copied
    has none (a lock dies with its process and is not copied)."""
    import fcntl

    path = root / DRIVER_LOCK
    if file_problem(path) is not None or not path.is_file():
        return False
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(descriptor)
    return False


def read_new_rows(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The complete result rows in a ``result.json`` from byte ``offset`` on, and the offset after the last
    complete line (a line Tune is still writing waits for the next call)."""
    try:
        if file_problem(path) is not None:  # never open a FIFO or a device: the live logger would hang on it
            return [], offset
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
        except (ValueError, RecursionError):
            row = None
        if isinstance(row, dict):  # as read_rows counts them: a garbled line is no row
            rows.append(_numeric_keys_checked(row))
    return rows, offset + end


def spec_file(path: Path) -> Path:
    return path / SPEC_FILE


def spec_as_run(info: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec document the sweep ran with, as kept in its info (None for a sweep from before rlsweep kept
    it there, or where the info is damaged: see :func:`sweep_info_problem`). Readers use it rather than
    ``rlsweep_spec.yaml``, which a user may have edited since."""
    ran = info.get("spec")
    if CHECKSUM_KEY in info and info[CHECKSUM_KEY] != _checksum(info):
        return None
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
        value = _read_json(path)
    except SweepError:
        return None
    return value if isinstance(value, dict) else None


def read_confirmation_plan(root: Path) -> dict[str, Any] | None:
    return _json_object(confirmation_dir(root) / CONFIRMATION_PLAN)


def _write_whole(path: Path, value: Mapping[str, Any]) -> Path:
    """``value`` as JSON in ``path``, written whole or not at all: a reader never sees half a file."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dict(value), default=str, indent=1))
    tmp.replace(path)
    return path


def write_confirmation(root: Path, result: Mapping[str, Any]) -> Path:
    return _write_whole(root / CONFIRMATION_FILE, result)


def holdout_dir(root: Path) -> Path:
    return root / HOLDOUT_DIR


def write_holdout_plan(root: Path, plan: Mapping[str, Any]) -> None:
    holdout_dir(root).mkdir(parents=True, exist_ok=True)
    (holdout_dir(root) / HOLDOUT_PLAN).write_text(json.dumps(dict(plan), default=str, indent=1))


def read_holdout_plan(root: Path) -> dict[str, Any] | None:
    return _json_object(holdout_dir(root) / HOLDOUT_PLAN)


def write_holdout(root: Path, result: Mapping[str, Any]) -> Path:
    """The held-out stage's result, written whole or not at all."""
    return _write_whole(root / HOLDOUT_FILE, result)


def read_holdout(root: Path) -> dict[str, Any] | None:
    """The held-out stage's result; None where the stage has not finished (or the sweep had none).

    Raises:
        SweepError: the file is there but is no regular file, or not a JSON object.
    """
    value = _read_json(root / HOLDOUT_FILE)
    if value is _ABSENT:
        return None
    if not isinstance(value, dict):
        raise GarbledFile(f"{root / HOLDOUT_FILE}: is not a JSON object")
    return value


def write_reproducibility(root: Path, record: Mapping[str, Any], page: str) -> tuple[Path, Path]:
    (root / REPRODUCIBILITY_JSON).write_text(json.dumps(dict(record), default=str, indent=1))
    (root / REPRODUCIBILITY_MD).write_text(page)
    return root / REPRODUCIBILITY_JSON, root / REPRODUCIBILITY_MD


def reproducibility_files(root: Path) -> list[Path]:
    """The record's files, where ``rlsweep confirm`` wrote them (a folder or a FIFO in their place is named
    in a warning and left out: logging it as an artifact would fail, or block on the FIFO)."""
    files = []
    for path in (root / REPRODUCIBILITY_JSON, root / REPRODUCIBILITY_MD):
        if (problem := file_problem(path)) is not None:
            log.warning("%s; left out", problem)
        elif path.exists():
            files.append(path)
    return files


def confirmation_problems(root: Path) -> list[str]:
    """What stops ``rlsweep confirm`` from writing its files at ``root`` once it has retrained: a folder, a
    FIFO or a device where one of them goes, or a file where its experiment's folder goes; and a plan of an
    earlier confirmation that cannot be read (a rerun resumes that confirmation only with the same plan)."""
    problems = [p for name in (CONFIRMATION_FILE, REPRODUCIBILITY_JSON, REPRODUCIBILITY_MD)
                if (p := file_problem(root / name)) is not None]
    plan = confirmation_dir(root) / CONFIRMATION_PLAN
    if os.path.lexists(confirmation_dir(root)) and not _is_dir(confirmation_dir(root)):
        problems.append(f"{confirmation_dir(root)}: is not a folder")
    else:
        try:
            found = _read_json(plan)
        except UnreadableFile as exc:
            problems.append(str(exc))
        except GarbledFile as exc:  # cut off, NUL bytes
            problems.append(f"{exc}: the earlier confirmation's plan cannot be read")
        else:
            if found is not _ABSENT and not isinstance(found, dict):
                problems.append(f"{plan}: holds {shorten(found)}, not a confirmation plan")
    return problems


def has_confirmation(root: Path) -> bool:
    """Whether something is where ``rlsweep confirm`` writes its result (readable or not)."""
    return os.path.lexists(root / CONFIRMATION_FILE)


def read_confirmation(root: Path) -> Any:
    """The JSON in the confirmation's result file, as found (its shape is the analysis' to check); None where
    ``rlsweep confirm`` has not finished one.

    Raises:
        SweepError: the file is there but is no regular file (:class:`UnreadableFile`), or not JSON.
    """
    value = _read_json(root / CONFIRMATION_FILE)
    return None if value is _ABSENT else value


# --- a trial: written by the trial itself ----------------------------------------------------------------


def write_trial_settings(write: Callable[[str, str], None], settings: Mapping[str, Any]) -> None:
    """Record every setting a trial runs with, as the trial starts; ``write(file name, text)`` puts a file
    in the trial's folder in the experiment's storage."""
    write(TRIAL_FILE, json.dumps(dict(settings), default=str))


def recorded_seed_checks(text: str | None) -> dict[str, dict[str, Any]]:
    """The ``seed_checks`` a trial's settings file (its text) records, or none where it has no readable one."""
    try:
        checks = json.loads(text).get("seed_checks") if text else None
    except (ValueError, AttributeError):
        return {}
    return {str(k): dict(v) for k, v in checks.items() if isinstance(v, Mapping)} if isinstance(checks, Mapping) else {}


def write_spec_problems(write: Callable[[str, str], None], problems: Iterable[Any]) -> None:
    write(SPEC_PROBLEMS_FILE, json.dumps([{"path": p.path, "message": p.message} for p in problems]))


def spec_problems(root: Path) -> list[Problem]:
    """The spec problems trials of the sweep at ``root`` recorded, each once."""
    found: dict[tuple[str, str], Problem] = {}
    for path in sorted(root.glob(f"*/{SPEC_PROBLEMS_FILE}")):
        try:
            entries = _read_json(path)
        except SweepError:
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


class _DamagedMeta(SweepError):
    """Checkpoint metadata that is there but neither rlsweep's nor a write cut short."""


def read_checkpoint_meta(directory: str | Path) -> dict[str, Any]:
    """Raises :class:`SweepError` for a checkpoint rlsweep did not write (or cut off by a crash), and
    :class:`UnreadableFile` where its metadata is a folder, a FIFO or a device."""
    path = Path(directory, CHECKPOINT_META)
    try:
        meta = _read_json(path)
    except GarbledFile as exc:
        kind = SweepError if exc.cut_off else _DamagedMeta
        raise kind(f"{directory}: not a complete rlsweep checkpoint ({exc})") from None
    if meta is _ABSENT:
        raise SweepError(f"{directory}: not a complete rlsweep checkpoint (no {CHECKPOINT_META})")
    if not isinstance(meta, dict) or not isinstance(meta.get("metrics", {}), dict):
        raise _DamagedMeta(f"{directory}: not a complete rlsweep checkpoint ({CHECKPOINT_META} is not rlsweep's)")
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


class _ParsedOnRead:
    """A field of rows that reads as a tuple: rows the rows index left unparsed (:class:`LazyRows`) are parsed
    into it on first read, so every caller (json.dumps, +, pickling) gets the tuple it always had."""

    _REQUIRED = object()

    def __init__(self, default: Any = _REQUIRED) -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = "_" + name

    def __get__(self, trial: Any, owner: type | None = None) -> Any:
        if trial is None:  # the dataclass asks for the field's default
            if self.default is self._REQUIRED:
                raise AttributeError(self.key)  # none: the field stays required
            return self.default
        value = trial.__dict__.get(self.key, ())
        if isinstance(value, LazyRows):
            value = trial.__dict__[self.key] = tuple(value)
        return value

    def __set__(self, trial: Any, value: Any) -> None:
        trial.__dict__[self.key] = value


@dataclass(frozen=True)
class Trial:
    """One trial as found on disk.

    Attributes:
        config: The trial's draw (PBT/PB2: as mutated at its last result), keyed by spec paths.
        rows: Its result rows, work redone after a restore counted once: a tuple (where the rows index knew the
            trial's file, parsed on first read; :class:`RowsGone` where the file changed since).
        raw_rows: Every row in the order Tune appended it, redone iterations included.
        settings: Every setting it ran with, as the trial recorded them (None for trials that never started).
        failures: How many times the trial failed (and, while retries were left, restarted).
        damage: What of it could not be read, each naming the file and what is wrong (a folder or a FIFO
            where a file belongs, its folder gone): a reader's answer without it is incomplete.
    """

    trial_id: str
    path: Path
    config: Mapping[str, Any]
    rows: Sequence[Mapping[str, Any]] = _ParsedOnRead()  # type: ignore[assignment]
    state: str
    error: str | None = None
    checkpoints: tuple[CheckpointRecord, ...] = ()
    raw_rows: Sequence[Mapping[str, Any]] = _ParsedOnRead(())  # type: ignore[assignment]
    failures: int = 0
    settings: Mapping[str, Any] | None = None
    damage: tuple[str, ...] = ()

    def _stored_rows(self) -> Sequence[Mapping[str, Any]]:
        """The rows as stored: parsed, or unparsed with the index's columns."""
        return self.__dict__["_rows"]  # type: ignore[no-any-return]

    @property
    def row_count(self) -> int:
        """How many rows the trial has (without parsing them where the rows index knows)."""
        return len(self._stored_rows())

    def column(self, key: str) -> list[Any]:
        """Each row's value of ``key`` (None where a row has none); for the keys the rows index keeps, without
        parsing the trial's rows."""
        rows = self._stored_rows()
        if isinstance(rows, LazyRows) and (values := rows.column(key)) is not None:
            return values
        return [r.get(key) for r in self.rows]

    def last(self, key: str) -> Any:
        """The last row's value of ``key``; None where it has none or there is no row."""
        return self.column(key)[-1] if self.row_count else None

    def values(self, metric: str) -> list[float]:
        """Each row's value of ``metric`` as a float (NaN where it has none or it is not a finite number)."""
        # A float taken as it is: the plots read every row of every trial this way.
        isfinite = math.isfinite
        return [v if type(v) is float and isfinite(v) else float(v) if _finite(v) else math.nan for v in self.column(metric)]

    def steps(self) -> list[int]:
        """Each row's env steps (0 where a row's cannot be read)."""
        return [v if type(v) is int else env_steps({ENV_STEPS: v}) for v in self.column(ENV_STEPS)]

    @property
    def env_steps(self) -> int:
        return env_steps({ENV_STEPS: self.last(ENV_STEPS)}) if self.row_count else 0

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
    def diverged(self) -> str | None:
        """The losses that went non-finite where the trial's config diverged (its last row says so; the
        trial ended there), else None."""
        cause = self.last(DIVERGED)
        return str(cause) if cause else None

    @property
    def latest_checkpoint(self) -> CheckpointRecord | None:
        """The newest checkpoint on disk by env steps (Tune's ``get_last_checkpoint`` can return an older,
        better-scoring one once pruning has run)."""
        return max(self.checkpoints, key=lambda c: c.env_steps, default=None)


def _numeric_keys_checked(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` without Tune's number keys whose value is not a finite number (readers compute with them)."""
    for key in NUMERIC_ROW_KEYS:  # a loop, not any(...): this runs for every row of every trial
        if key in row and not _finite(row[key]):
            return {k: v for k, v in row.items() if k not in NUMERIC_ROW_KEYS or _finite(v)}
    return row


def _scan_rows(data: bytes) -> tuple[list[dict[str, Any]], int, bool]:
    """The rows in a ``result.json``'s bytes, how many lines are garbled, and whether its last line is a row
    whose write was cut short (what a sweep killed mid-write leaves; not counted as garbled)."""
    whole = [line for line in (raw.strip() for raw in data.split(b"\n")) if line]
    if whole:
        # The usual file, every line a row, parses in one call: a sweep of 10,000 trials is read in a fraction
        # of the time a call per line takes. Anything else (a garbled or cut-off line) is read line by line.
        try:
            parsed = json.loads((b"[" + b",".join(whole) + b"]").decode(errors="replace"))
        except (ValueError, RecursionError):
            parsed = None
        if parsed is not None and len(parsed) == len(whole) and all(type(row) is dict for row in parsed):
            return [_numeric_keys_checked(row) for row in parsed], 0, False
    rows: list[dict[str, Any]] = []
    bad, cut_off = 0, False
    lines = data.split(b"\n")
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        try:
            row = json.loads(line.decode(errors="replace"))
        except (ValueError, RecursionError):
            # Only the last line, unterminated, can be a write in progress or cut short.
            if index == len(lines) - 1 and _looks_cut_off(line):
                cut_off = True
                continue
            row = None
        if isinstance(row, dict):
            rows.append(_numeric_keys_checked(row))
        else:
            bad += 1
    return rows, bad, cut_off


def read_rows(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The result rows in a ``result.json``, and how many lines could not be read. A line cut off by a
    crash or garbled on disk is skipped; the rows before and after it still count. No file: no rows.

    Raises:
        UnreadableFile: it is a folder, a FIFO or a device, or cannot be read.
    """
    rows, bad, cut_off = _scan_rows(read_bytes(path) or b"")
    return rows, bad + cut_off


def read_results(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The result rows in a trial's ``result.json`` and how many of its lines are skipped, where the file reads
    as one: Tune appends a row a line, so a last line cut short (a sweep killed mid-write) and a few garbled
    lines among rows are skipped (the caller warns). No file, or an empty one: no rows.

    Raises:
        UnreadableFile: no regular file, or one that cannot be read; or one whose lines are mostly not rows
            (more garbled lines than rows: a file of NUL bytes, garbage, another file's content), which read
            as rows would pass for a trial with no results or only a few.
    """
    data = read_bytes(path) or b""
    rows, bad, cut_off = _scan_rows(data)
    if bad > len(rows):
        what = "NUL bytes" if b"\x00" in data else "garbled"
        raise UnreadableFile(f"{path}: is damaged ({what}: {bad} of its {bad + len(rows)} line(s) are not result rows)")
    return rows, bad + cut_off


def one_timeline(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A trial's rows with the work redone after a restore counted once: a trial's env steps only grow
    (outside PBT), so a row at or below an earlier one means the trial went back to a checkpoint (a resumed
    sweep, a retried failure), and the rows it redid replace the ones from before."""
    return [rows[i] for i in _timeline([row.get(ENV_STEPS) for row in rows])]


def _timeline(steps: list[Any]) -> list[int]:
    """The indices of the rows :func:`one_timeline` keeps, from each row's env steps."""
    kept: list[int] = []
    for index, count in enumerate(steps):
        if isinstance(count, (int, float)):
            while kept and isinstance(steps[kept[-1]], (int, float)) and steps[kept[-1]] >= count:
                kept.pop()
        kept.append(index)
    return kept


# --- the rows index ---------------------------------------------------------------------------------------

#: The keys the index keeps each row's value of, whatever the reader asks for besides (its metric, stop keys).
INDEXED_KEYS = (ENV_STEPS, DONE_KEY, DIVERGED, TRIAL_ID_KEY)
_INDEX_VERSION = 1


class RowsGone(SweepError):
    """A trial's rows, read from the rows index when the sweep was loaded, are no longer in its ``result.json``."""


class _RowSource:
    """A ``result.json`` as the index saw it (its first ``size`` bytes, ``count`` rows: Tune only appends),
    parsed on first use."""

    __slots__ = ("folder", "size", "count", "_rows")

    def __init__(self, folder: Path, size: int, count: int) -> None:
        self.folder, self.size, self.count, self._rows = folder, size, count, None

    @property
    def path(self) -> Path:
        return self.folder / RESULT_FILE  # (joined when read, not for each of 10,000 trials that may never be)

    def rows(self) -> list[dict[str, Any]]:
        if self._rows is None:
            try:
                data = read_bytes(self.path)
            except UnreadableFile as exc:
                raise RowsGone(f"{exc}: the trial's rows changed since the sweep was loaded; load it again") from None
            rows = _scan_rows((data or b"")[: self.size])[0] if data is not None and len(data) >= self.size else None
            if rows is None or len(rows) != self.count:
                what = "is gone" if data is None else "was rewritten"
                raise RowsGone(f"{self.path}: {what} since the sweep was loaded; load it again")
            self._rows = rows
        return self._rows


class LazyRows(Sequence):  # type: ignore[type-arg]
    """A trial's rows as a tuple reads them, parsed from its ``result.json`` the first time a row is read. Its
    length, and every row's value of the keys the rows index keeps (:meth:`column`), are known without."""

    __slots__ = ("_source", "_picks", "_columns", "_rows")

    def __init__(self, source: _RowSource, picks: list[int], columns: Mapping[str, list[Any]]) -> None:
        self._source, self._picks, self._columns, self._rows = source, picks, columns, None

    def _loaded(self) -> tuple[Mapping[str, Any], ...]:
        if self._rows is None:
            raw = self._source.rows()
            self._rows = tuple(raw[i] for i in self._picks)
        return self._rows

    def column(self, key: str) -> list[Any] | None:
        """Each row's value of ``key`` where the index keeps it, else None."""
        values = self._columns.get(key)
        return None if values is None else [values[i] for i in self._picks]

    def __len__(self) -> int:
        return len(self._picks)

    def __getitem__(self, index: Any) -> Any:
        return self._loaded()[index]

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return iter(self._loaded())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyRows, tuple, list)):
            return self._loaded() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._loaded())


def _signature(path: str | Path) -> list[int] | None:
    """What tells a file changed: its size, mtime, inode and ctime (which no tool sets back: a rewrite that keeps
    size and mtime, a chmod, changes it); None where it is no regular file."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns, found.st_ino, found.st_ctime_ns] if stat.S_ISREG(found.st_mode) else None


class _RowsIndex:
    """The experiment's :data:`ROWS_INDEX`: per trial folder, its ``result.json``'s signature, row count,
    skipped lines, last config and the indexed keys' values. A cache: one that does not read is rebuilt, one
    that cannot be written is not kept (the answer is the same, read the slow way next time)."""

    def __init__(self, root: Path, keys: Iterable[str]) -> None:
        self.path = root / ROWS_INDEX
        self.keys = list(dict.fromkeys([*INDEXED_KEYS, *keys]))
        self.changed = False
        self.entries: dict[str, Any] = {}
        try:
            data = read_bytes(self.path)
            found = json.loads(data) if data else None
        except (SweepError, ValueError, RecursionError):
            found = None
        keys = found.get("keys") if isinstance(found, dict) else None
        if (isinstance(found, dict) and found.get("version") == _INDEX_VERSION and isinstance(keys, list)
                and all(isinstance(k, str) for k in keys) and set(self.keys) <= set(keys)
                and isinstance(found.get("trials"), dict)):
            self.keys, self.entries = found["keys"], found["trials"]

    def lookup(self, name: str, signature: list[int] | None) -> dict[str, Any] | None:
        entry = self.entries.get(name)
        if signature is None or not isinstance(entry, dict) or entry.get("sig") != signature:
            return None
        columns, count = entry.get("cols"), entry.get("n")
        if (not isinstance(count, int) or not isinstance(columns, dict) or not isinstance(entry.get("bad"), int)
                or any(not isinstance(columns.get(k), list) or len(columns[k]) != count for k in self.keys)):
            return None
        return entry

    def put(self, name: str, signature: list[int], raw: list[dict[str, Any]], bad: int) -> dict[str, Any]:
        columns = {k: [row.get(k) for row in raw] for k in self.keys}
        entry = {"sig": signature, "n": len(raw), "bad": bad, "config": raw[-1].get(CONFIG_KEY) if raw else None,
                 "cols": columns, "timeline": _timeline(columns[ENV_STEPS])}
        self.entries[name] = entry
        self.changed = True
        return entry

    def settings(self, name: str, signature: list[int]) -> dict[str, Any] | None:
        entry = self.entries.get(name)
        found = entry.get("settings") if isinstance(entry, dict) else None
        if isinstance(found, dict) and found.get("sig") == signature and isinstance(found.get("value"), dict):
            return found["value"]
        return None

    def put_settings(self, name: str, signature: list[int], settings: dict[str, Any]) -> None:
        entry = self.entries.get(name)
        if isinstance(entry, dict):  # kept with the trial's rows entry (none where its results did not read)
            entry["settings"] = {"sig": signature, "value": settings}
            self.changed = True

    def checkpoint_metrics(self, name: str, checkpoint: str, signature: list[int] | None) -> dict[str, Any] | None:
        """The metrics kept for checkpoint folder ``checkpoint`` of trial folder ``name``, where its metadata file
        is as it was when they were kept; else None."""
        entry = self.entries.get(name)
        found = entry.get("checkpoints") if isinstance(entry, dict) else None
        kept = found.get(checkpoint) if isinstance(found, dict) else None
        if (signature is not None and isinstance(kept, dict) and kept.get("sig") == signature
                and isinstance(kept.get("metrics"), dict)):
            return kept["metrics"]  # type: ignore[no-any-return]
        return None

    def put_checkpoints(self, name: str, kept: dict[str, Any]) -> None:
        """Keep the trial folder's checkpoints' metrics (checkpoint folder -> signature and metrics): those read
        now, so one deleted since is dropped."""
        entry = self.entries.get(name)
        if isinstance(entry, dict) and entry.get("checkpoints") != kept:  # (none where its results did not read)
            entry["checkpoints"] = kept
            self.changed = True

    def save(self, names: Iterable[str]) -> None:
        """Write the index of the trial folders ``names`` (those read now), where anything changed."""
        kept = {name: self.entries[name] for name in names if name in self.entries}
        if not self.changed and len(kept) == len(self.entries):
            return
        _write_cache(self.path, {"version": _INDEX_VERSION, "keys": self.keys, "trials": kept})


def _write_cache(path: Path, value: Any) -> None:
    """A readers' cache (:data:`CACHE_FILES`) as compact JSON at ``path``; not written where it cannot be
    (read-only, full or gone: the next reader reads the slow way again)."""
    temporary = None
    try:
        # A new file of a name no one can plant a link at (O_EXCL), renamed over the cache: a reader never
        # writes through a link in a folder it was handed, nor sees half a cache.
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(value, separators=(",", ":")))
        os.replace(temporary, path)
    except (OSError, ValueError, TypeError) as exc:
        log.debug("%s: not written (%s)", path, exc)
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


# --- Tune's experiment state ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TuneEntry:
    """One trial as Tune's experiment state lists it.

    Attributes:
        status: One of :data:`TUNE_STATUSES`; None where the entry's is not one of them.
        folder: The trial's folder name as Tune recorded it (None before the trial started).
    """

    trial_id: str
    status: str | None
    failures: int = 0
    folder: str | None = None
    config: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class TuneState:
    """The newest experiment state file, as far as it reads.

    Attributes:
        entries: trial id -> its entry; None where the file cannot be read as Tune's at all.
        problems: What is wrong in it, each naming the file (a reader skips what is odd; a resume refuses).
        damage: Of those, what leaves a reader without Tune's word on every trial (the file cannot be read as
            Tune's at all): the trials' states are then guessed from their own files, an incomplete answer.
    """

    path: Path | None
    entries: dict[str, TuneEntry] | None
    problems: tuple[str, ...] = ()
    damage: tuple[str, ...] = ()
    #: Every entry names its trial: a folder none claims is not one of them.
    whole: bool = True


def _entry_part(part: Any) -> Any:
    """One half of a trial entry: Tune writes each as a JSON string."""
    if isinstance(part, str):
        return json.loads(part)
    return part


def _tune_entry(entry: Any) -> tuple[TuneEntry | None, str | None]:
    """A trial entry of Tune's state (``[trial JSON, runtime JSON]``), and what is odd about it."""
    if not isinstance(entry, list) or not entry:
        return None, f"is {shorten(entry)}, not a trial entry"
    try:
        trial_json = _entry_part(entry[0])
        runtime = _entry_part(entry[1]) if len(entry) > 1 else {}
    except (ValueError, RecursionError):
        return None, "is cut off or garbled (not JSON)"
    if not isinstance(trial_json, dict):
        return None, f"holds {shorten(trial_json)}, not a trial"
    trial_id = trial_json.get(TRIAL_ID_KEY)
    if not isinstance(trial_id, str) or not trial_id:
        return None, f"has trial id {shorten(trial_id)}, not a name"
    status = trial_json.get(STATUS_KEY, PENDING)
    folder = trial_json.get(TRIAL_DIR_KEY)
    failures = runtime.get(FAILURES_KEY, 0) if isinstance(runtime, dict) else 0
    config = trial_json.get(CONFIG_KEY)
    parsed = TuneEntry(
        trial_id=trial_id,
        status=status if status in TUNE_STATUSES else None,
        failures=failures if isinstance(failures, int) and not isinstance(failures, bool) and failures >= 0 else 0,
        # A name inside the experiment's folder; anything else is not where Tune puts a trial.
        folder=folder if isinstance(folder, str) and folder and Path(folder).name == folder and folder != ".." else None,
        config=config if isinstance(config, dict) else None,
    )
    if parsed.status is None:
        return parsed, f"(trial {trial_id}) has status {shorten(status)}, not one of Tune's {', '.join(TUNE_STATUSES)}"
    if len(entry) != 2 or not all(isinstance(part, str) for part in entry):
        # Tune restores an entry as exactly two JSON texts, the trial and its run data.
        return parsed, f"(trial {trial_id}) is not as Tune writes an entry (two JSON texts)"
    if not isinstance(runtime, dict) or parsed.failures != failures:
        what = f"failures {shorten(failures)}" if isinstance(runtime, dict) else f"run data {shorten(runtime)}"
        return parsed, f"(trial {trial_id}) has {what}, not Tune's; read as 0 failures"
    return parsed, None


#: What a reader took from Tune's newest experiment state, kept beside it with that file's signature: Tune's
#: file holds every trial's last results and checkpoints (126 MB at 10,000 trials, 2 s to parse), a reader
#: needs each trial's id, status, failures, folder and config: :data:`STATE_INDEX`, a cache as the rows index is.
_STATE_INDEX_VERSION = 1


def _cached_state(root: Path, newest: Path, signature: list[int] | None) -> TuneState | None:
    """The state :data:`STATE_INDEX` kept for ``newest`` as it is now (its ``signature``); None where it kept none."""
    if signature is None:
        return None
    try:
        data = read_bytes(root / STATE_INDEX)
        found = json.loads(data) if data else None
    except (SweepError, ValueError, RecursionError):
        return None
    if (not isinstance(found, dict) or found.get("version") != _STATE_INDEX_VERSION or found.get("file") != str(newest)
            or found.get("sig") != signature or not isinstance(found.get("entries"), list)
            or not isinstance(found.get("problems"), list) or not isinstance(found.get("whole"), bool)):
        return None
    entries: dict[str, TuneEntry] = {}
    for item in found["entries"]:
        if not (isinstance(item, list) and len(item) == 5 and isinstance(item[0], str)):
            return None
        trial_id, status, failures, folder, config = item
        entries[trial_id] = TuneEntry(trial_id, status, failures, folder, config)
    return TuneState(newest, entries, tuple(str(p) for p in found["problems"]), whole=found["whole"])


def _keep_state(root: Path, newest: Path, signature: list[int], state: TuneState) -> None:
    """Write :data:`STATE_INDEX` for ``state``, read from ``newest`` at ``signature`` (not where it cannot be written)."""
    entries = [[e.trial_id, e.status, e.failures, e.folder, e.config] for e in (state.entries or {}).values()]
    _write_cache(root / STATE_INDEX, {"version": _STATE_INDEX_VERSION, "file": str(newest), "sig": signature,
                                      "entries": entries, "problems": list(state.problems), "whole": state.whole})


def tune_state(root: Path, *, keep: bool = True) -> TuneState:
    """The newest Tune experiment state at ``root``: each trial entry that reads, and what is odd in it.
    ``keep``: write what was read to :data:`STATE_INDEX` for the next reader (False: change nothing)."""
    # Named by the start time of each run of the sweep (a resume adds one); Tune may touch an older one
    # later, so the name orders them, not the modification time.
    files = sorted(root.glob(STATE_GLOB), key=lambda p: p.name)
    if not files:
        return TuneState(None, None)
    newest = files[-1]
    signature = _signature(newest)
    if (cached := _cached_state(root, newest, signature)) is not None:
        return cached
    state = _parse_state(newest)
    # Kept only where the file did not change while it was read (Tune copies it in place, not atomically).
    if keep and signature is not None and state.entries is not None and _signature(newest) == signature:
        _keep_state(root, newest, signature, state)
    return state


def _parse_state(newest: Path) -> TuneState:
    """Tune's experiment state file ``newest``, parsed."""
    # Tune writes the file in its staging folder and copies it here (at most every 10 s, not atomically): one
    # that reads as cut off may be mid-copy, and is read once more before it counts as damaged.
    try:
        try:
            data = _read_json(newest)
        except GarbledFile as exc:
            if not exc.cut_off:
                raise
            time.sleep(STATE_REREAD_S)
            data = _read_json(newest)
    except SweepError as exc:
        problem = f"{exc}; the trials' own files tell their states"
        return TuneState(newest, None, (problem,), (problem,))
    entries = data.get("trial_data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        # Not a state Tune wrote: the trials' own files tell their states.
        problem = f"{newest}: is not a Tune experiment state (no list of trial entries)"
        return TuneState(newest, None, (problem,), (problem,))
    found: dict[str, TuneEntry] = {}
    problems = []
    whole = True
    for index, entry in enumerate(entries):
        parsed, problem = _tune_entry(entry)
        whole = whole and parsed is not None
        if problem is not None:
            problems.append(f"{newest}: trial entry {index} {problem}")
        if parsed is not None:
            if parsed.trial_id in found:
                problems.append(f"{newest}: trial entry {index} lists trial {parsed.trial_id} a second time")
            found[parsed.trial_id] = parsed
    return TuneState(newest, found, tuple(problems), whole=whole)


def trial_states(root: Path) -> dict[str, tuple[str, int]]:
    """trial_id -> (status, failures so far) from the newest Tune experiment state file, for the entries
    whose status is one of Tune's."""
    entries = tune_state(root).entries or {}
    return {e.trial_id: (e.status, e.failures) for e in entries.values() if e.status is not None}


def _complete_pickle(path: Path) -> str | None:
    """What is wrong with the pickle at ``path`` (None: it is whole). Walks its opcodes without running
    any: a cut-off pickle has no STOP."""
    try:
        data = read_bytes(path)
    except UnreadableFile as exc:
        return str(exc)
    if data is None:
        return f"{path.name} is missing"
    try:
        for _ in pickletools.genops(data):
            pass
    except Exception as exc:  # noqa: BLE001 - genops raises ValueError, struct.error, ... on a broken stream
        return f"{path.name} is cut off or not a pickle ({type(exc).__name__})"
    return None


def resume_problems(root: Path) -> list[str]:
    """What stops Tune from restoring the sweep at ``root`` as it was, each naming the file: a missing or
    cut-off tuner; a newest experiment state that is cut off, not Tune's, or has an entry Tune cannot
    restore (an odd entry, a trial id that is no name, a status Tune does not know, which would rerun a
    finished trial); a trial folder Tune's state does not list (a resume would never continue it) or a listed
    one that is gone; a file of a trial that cannot be read; a directory it cannot write. Empty when the
    sweep can be resumed. Reads only; changes nothing."""
    problems = []
    for name in (SWEEP_FILE, SPEC_FILE):
        if (problem := file_problem(root / name)) is not None:
            problems.append(problem)
    with contextlib.suppress(SweepError):  # no sweep info at all is the caller's to refuse
        if (problem := sweep_info_problem(root, read_sweep_info(root))) is not None:
            problems.append(problem)
    if (problem := _complete_pickle(root / TUNER_FILE)) is not None:
        problems.append(problem)
    state = tune_state(root, keep=False)
    problems += state.problems
    if state.path is not None and state.entries is not None and not state.entries:
        problems.append(f"{state.path.name} is not a Tune experiment state (no readable trial entries)")
    if state.entries and file_problem(root / SWEEP_FILE) is None:
        try:
            found = _read_experiment(root, 0, state, cache=False)  # a check that may refuse: it writes nothing
        except SweepError as exc:
            return [*problems, str(exc)]
        problems += [d for t in found.trials for d in t.damage]
        problems += [f"{folder}: a trial folder {state.path.name if state.path else 'Tune'} does not list (Tune "
                     "would never continue it): move it out of the directory" for folder in found.unlisted]
        writable = [root] + [t.path for t in found.trials if t.state not in (TERMINATED, ERROR, MISSING, UNLISTED)]
        problems += [f"{path}: cannot be written (read-only); a resume writes there" for path in writable
                     if not os.access(path, os.W_OK)]
    return problems


# --- reading trials --------------------------------------------------------------------------------------


#: The files that make a folder a trial's, whatever else it holds.
TRIAL_FILES = frozenset({PARAMS_FILE, RESULT_FILE})


def _has_trial_files(folder: Path) -> bool:
    return any(os.path.lexists(folder / name) for name in TRIAL_FILES)


def _listing(folder: Path) -> set[str] | None:
    """The names in ``folder``; None where it cannot be listed."""
    try:
        return set(os.listdir(folder))
    except OSError:
        return None


def _checkpoints(
    trial_dir: Path, damage: list[str], notes: list[str], names: set[str] | None = None, index: _RowsIndex | None = None
) -> tuple[CheckpointRecord, ...]:
    """The trial's checkpoints rlsweep can vouch for. One without its metadata, or whose metadata was cut off
    as it was written (a trial killed mid-save), is skipped with a note; metadata that is there but cannot
    be read (a folder, NUL bytes, garbage, not rlsweep's) is damage. ``names``: the folder's listing, where
    the caller has it. ``index``: the rows index, which keeps each checkpoint's metrics until its metadata
    file changes (a sweep of 10,000 trials has as many checkpoints, each a file to open and parse)."""
    records = []
    kept: dict[str, Any] = {}
    # One listing, not a glob's per-entry work: this runs for every trial of the sweep.
    names = _listing(trial_dir) if names is None else names
    found = sorted(trial_dir / name for name in names or () if fnmatch.fnmatchcase(name, CHECKPOINT_GLOB))
    for directory in found:
        signature = _signature(os.path.join(directory, CHECKPOINT_META)) if index is not None else None
        metrics = index.checkpoint_metrics(trial_dir.name, directory.name, signature) if index is not None else None
        unchanged = metrics is not None
        if metrics is None:
            try:
                meta = read_checkpoint_meta(directory)
            except UnreadableFile as exc:
                damage.append(str(exc))
                continue
            except _DamagedMeta as exc:
                damage.append(f"{exc}: the checkpoint cannot be read")
                continue
            except SweepError as exc:
                if not str(exc).endswith(f"(no {CHECKPOINT_META})"):
                    notes.append(f"{exc}; skipped")
                continue  # incomplete or foreign checkpoint: not one rlsweep can vouch for
            metrics = {k: v for k, v in meta.get("metrics", {}).items() if _finite(v)}
            # Kept only where the file did not change while it was read.
            unchanged = signature is not None and signature == _signature(os.path.join(directory, CHECKPOINT_META))
        if not _is_dir(os.path.join(directory, ALGORITHM_STATE)):
            log.warning("%s: skipped, it has no %s/ (damaged or cut off)", directory, ALGORITHM_STATE)
            continue
        records.append(CheckpointRecord(directory, metrics))
        if unchanged:
            kept[directory.name] = {"sig": signature, "metrics": metrics}
    if index is not None:
        index.put_checkpoints(trial_dir.name, kept)
    return tuple(records)


def _subfolders(root: Path) -> list[Path]:
    """The folders in ``root`` (and links to folders), by name: one listing, which tells most entries' kind
    without a stat each (on 10,000 trials, a tenth of a reader's time went to a stat per folder)."""

    def folder(entry: os.DirEntry[str]) -> bool:
        try:
            return entry.is_dir()  # follows a link, as os.stat does
        except OSError:
            return False

    with os.scandir(root) as listing:
        names = sorted(entry.name for entry in listing if folder(entry))
    return [root / name for name in names]


def _trial_id_from_dirname(name: str) -> str:
    # Tune names trial folders "<trainable>_<trial_id>_<index>_<params>"; the id is "<8 hex>_<5 digits>".
    match = re.search(r"([0-9a-f]{5,8}_[0-9]{5})", name)
    return match.group(1) if match else name


def _folders_of(root: Path, entries: Mapping[str, TuneEntry]) -> tuple[list[Path], dict[Path, str]]:
    """The folders in ``root``, and those Tune's entries name (folder -> trial id): by the folder Tune
    recorded, else the folder whose name holds the trial id as Tune writes it (``<trainable>_<id>_...``)."""
    try:
        folders = _subfolders(root)
    except OSError:
        return [], {}
    by_name = {f.name: f for f in folders}
    by_token: dict[str, Path] = {}
    for folder in folders:
        parts = folder.name.split("_")
        for i in range(len(parts)):
            by_token.setdefault(parts[i], folder)
            if i + 1 < len(parts):
                by_token.setdefault(f"{parts[i]}_{parts[i + 1]}", folder)
    claimed: dict[Path, str] = {}
    for entry in entries.values():
        folder = by_name.get(entry.folder) if entry.folder else None
        folder = folder or by_token.get(entry.trial_id)
        if folder is not None and folder not in claimed:
            claimed[folder] = entry.trial_id
    return folders, claimed


@dataclass(frozen=True)
class _Found:
    trials: list[Trial]
    #: Trial folders the state does not list (only where a state lists trials).
    unlisted: list[Path]
    #: What a reader warns about besides the trials' damage (garbled lines, odd state entries).
    notes: list[str]
    #: What of the experiment, besides its trials, could not be read (Tune's state): an incomplete answer.
    damage: tuple[str, ...] = ()


def _indexed_rows(
    trial_dir: Path, index: _RowsIndex | None, restores_others: bool
) -> tuple[Any, Any, int, Any] | None:
    """The trial's rows and raw rows (unparsed, see :class:`LazyRows`), its skipped lines and its last row's
    config, where the rows index knows its ``result.json`` as it is now; else None."""
    # Paths as text where only a stat needs them: a Path join each, for each trial of 10,000, adds up.
    signature = _signature(os.path.join(trial_dir, RESULT_FILE)) if index is not None else None
    found = index.lookup(trial_dir.name, signature) if index is not None else None
    if found is None or signature is None:
        return None
    source, columns = _RowSource(trial_dir, signature[0], found["n"]), found["cols"]
    raw = LazyRows(source, list(range(found["n"])), columns)
    timeline = found.get("timeline")
    if not (isinstance(timeline, list) and (not timeline or (set(map(type, timeline)) == {int}
                                                            and 0 <= min(timeline) and max(timeline) < found["n"]))):
        timeline = _timeline(columns[ENV_STEPS])
    rows = raw if restores_others else LazyRows(source, timeline, columns)
    return rows, raw, found["bad"], found.get("config")


def _settings(trial_dir: Path, damage: list[str], index: _RowsIndex | None) -> Any:
    """The trial's recorded settings (``rlsweep_trial.json``, written once when it starts): from the index where
    it knows the file as it is, else read (and, where it read whole, kept in the index)."""
    signature = _signature(os.path.join(trial_dir, TRIAL_FILE)) if index is not None else None
    if index is not None and signature is not None and (kept := index.settings(trial_dir.name, signature)) is not None:
        return kept
    path = trial_dir / TRIAL_FILE
    settings = _json_noting(path, damage, "the settings and seed the trial ran with")
    if index is not None and signature is not None and isinstance(settings, dict):  # a damaged file reads as None
        index.put_settings(trial_dir.name, signature, settings)
    return settings


def _read_trial(
    trial_dir: Path, trial_id: str | None, entry: TuneEntry | None, *, restores_others: bool, budget_env_steps: int,
    notes: list[str], index: _RowsIndex | None = None, names: set[str] | None = None,
) -> Trial:
    """One trial folder, read as far as it can be; what cannot is its damage. ``names``: its listing, where the
    caller has it."""
    damage: list[str] = []
    results_readable = True
    # One listing tells which of the trial's files are there: no probe for an error file most trials lack.
    names = _listing(trial_dir) if names is None else names
    if (indexed := _indexed_rows(trial_dir, index, restores_others)) is not None:
        rows, raw, bad, last_config = indexed
    else:
        signature = _signature(trial_dir / RESULT_FILE) if index is not None else None
        try:
            raw, bad = read_results(trial_dir / RESULT_FILE)
        except UnreadableFile as exc:
            raw, bad, results_readable = [], 0, False
            damage.append(f"{exc}: the trial's results cannot be read")
        if index is not None and signature is not None and results_readable and signature == _signature(trial_dir / RESULT_FILE):
            index.put(trial_dir.name, signature, raw, bad)
        rows = raw if restores_others else one_timeline(raw)
        last_config = rows[-1].get(CONFIG_KEY) if rows else None
    if bad:
        notes.append(f"{trial_dir.name}: skipped {bad} unreadable line(s) of {RESULT_FILE}")
    # The config in force at the last result: PBT/PB2 change it during the trial (params.json keeps
    # the first one).
    config = last_config
    if not isinstance(config, Mapping):
        params = _json_noting(trial_dir / PARAMS_FILE, damage, "the trial's config")
        config = params if isinstance(params, dict) else (entry.config if entry is not None and entry.config else {})
    first_id = (rows.column(TRIAL_ID_KEY)[0] if isinstance(rows, LazyRows) else rows[0].get(TRIAL_ID_KEY)) if rows else None
    trial_id = trial_id or (first_id if isinstance(first_id, str) and first_id else _trial_id_from_dirname(trial_dir.name))
    status, failures = (entry.status, entry.failures) if entry is not None else (None, 0)
    error_text = None
    try:
        # Where the listing cannot vouch for the folder's files (none, or files it lists cannot be read), look.
        errors = read_bytes(trial_dir / ERROR_FILE) if names is None or ERROR_FILE in names or not results_readable else None
    except UnreadableFile as exc:
        damage.append(f"{exc}: the trial's error cannot be read")
        errors = None
    if errors is not None:
        text = errors.decode(errors="replace")
        # Tune appends every failure; one the trial recovered from (a retry) is not its error.
        if status in (None, ERROR):
            error_text = text.strip()
            status = status or ERROR
        failures = max(failures, text.count(FAILURE_HEADING))
    if status is None:
        # A diverged trial ends at the row that says so, as Tune's done does.
        last = {k: (rows.column(k) or [None])[-1] for k in (DONE_KEY, DIVERGED, ENV_STEPS)} if isinstance(rows, LazyRows) and rows else (rows[-1] if rows else {})
        done = bool(rows) and (last.get(DONE_KEY) or last.get(DIVERGED) or env_steps(last) >= budget_env_steps)
        status = TERMINATED if done else RUNNING if rows else PENDING
    settings = _settings(trial_dir, damage, index)
    checkpoints = _checkpoints(trial_dir, damage, notes, names, index)
    return Trial(
        trial_id=trial_id,
        path=trial_dir,
        config=config,
        rows=rows if isinstance(rows, LazyRows) else tuple(rows),
        raw_rows=raw if isinstance(raw, LazyRows) else tuple(raw),
        state=status if results_readable else UNREADABLE,
        error=error_text,
        failures=failures,
        checkpoints=checkpoints,
        settings=settings if isinstance(settings, dict) else None,
        damage=tuple(damage),
    )


def _read_experiment(
    root: Path, budget_env_steps: int, state: TuneState | None = None, keys: Iterable[str] = (), *, cache: bool = True
) -> _Found:
    """The experiment's trials; ``cache``: read and update the rows index (:data:`ROWS_INDEX`)."""
    # Reading builds many small objects that live on (every row of every trial): the cyclic collector would
    # walk them again and again as they accumulate, a quarter of the time on 10,000 trials, and frees none.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read_experiment_rows(root, budget_env_steps, state, keys, cache)
    finally:
        if collecting:
            if not gc.get_freeze_count():  # (a program that froze objects of its own keeps them frozen)
                # Every object made while the collector was off (what was read, and anything else the program
                # made meanwhile) moves to the oldest generation without a walk: freeze, then unfreeze into it.
                # What was read lives as long as the sweep; left young, the next two young collections would
                # each walk all of it (on 10,000 trials, a fifth of `rlsweep status`).
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _read_experiment_rows(
    root: Path, budget_env_steps: int, state: TuneState | None, keys: Iterable[str], cache: bool
) -> _Found:
    info = read_sweep_info(root)
    # Trials that restore other trials' checkpoints (PBT/PB2) legitimately jump to another env-step count.
    restores_others = bool(info.get("restores_other_trials", False))
    state = state or tune_state(root)
    entries = state.entries or {}
    notes = [p for p in state.problems if p not in state.damage]
    folders, claimed = _folders_of(root, entries)
    index = _RowsIndex(root, keys) if cache else None
    trials, unlisted = [], []
    for folder in folders:
        trial_id = claimed.get(folder)
        names = _listing(folder)  # one listing a folder, here and for the trial's files
        if trial_id is None and not (_has_trial_files(folder) if names is None else not names.isdisjoint(TRIAL_FILES)):
            continue
        trial = _read_trial(folder, trial_id, entries.get(trial_id) if trial_id else None, restores_others=restores_others,
                            budget_env_steps=budget_env_steps, notes=notes, index=index, names=names)
        if trial_id is None and trial.trial_id in entries and not any(v == trial.trial_id for v in claimed.values()):
            # Its rows name a listed trial whose folder Tune recorded under another name (a renamed folder).
            claimed[folder] = trial.trial_id
            trial = _read_trial(folder, trial.trial_id, entries[trial.trial_id], restores_others=restores_others,
                                budget_env_steps=budget_env_steps, notes=[], index=index)
        elif trial_id is None and entries:
            unlisted.append(folder)
            # Where an entry of the state names no trial, it may be this folder's: then it reads as a trial.
            if state.whole:
                where = state.path.name if state.path is not None else "Tune's experiment state"
                trial = replace(trial, state=UNLISTED)
                notes.append(f"{folder}: a trial folder not in Tune's experiment state ({where}): shown as {UNLISTED}, "
                             "not as a trial of this sweep, and left out of the best trial (while a sweep runs, a trial "
                             "that started since Tune last saved its state; else a folder that is no trial of this sweep)")
        trials.append(trial)
    if index is not None:
        index.save(folder.name for folder in folders)
    found_ids = set(claimed.values())
    for entry in entries.values():
        # A trial that never started has no folder yet; one that did and has none was deleted or moved.
        if entry.trial_id in found_ids or entry.status in (None, PENDING):
            continue
        where = root / (entry.folder or entry.trial_id)
        trials.append(Trial(
            trial_id=entry.trial_id, path=where, config=entry.config or {}, rows=(), state=MISSING,
            failures=entry.failures,
            damage=(f"{where}: trial {entry.trial_id} is listed in {state.path.name if state.path else 'Tune state'} "
                    f"({entry.status}) but its folder is gone",),
        ))
    return _Found(trials, unlisted, notes, state.damage)


@dataclass(frozen=True)
class Experiment:
    """An experiment directory's trials as found on disk.

    Attributes:
        damage: What of the experiment besides its trials could not be read (Tune's state), each naming the
            file; with the trials' own :attr:`Trial.damage`, what makes a reader's answer incomplete.
    """

    trials: list[Trial]
    damage: tuple[str, ...] = ()


def read_experiment(root: Path, *, budget_env_steps: int, keys: Iterable[str] = ()) -> Experiment:
    """Every trial of the experiment at ``root``, as found on disk, plus each trial Tune's state lists whose
    folder is gone (state :data:`MISSING`), and what of the rest could not be read. What cannot be read is
    named in a warning: the experiment's damage, a trial's damage (also in :attr:`Trial.damage`), garbled
    result lines, odd entries of Tune's state.

    Raises:
        SweepError: ``root`` is no rlsweep experiment directory.

    ``keys``: the row keys the caller reads of every trial (its metric, stop keys): with the rows index they
    are read without parsing each trial's rows (:meth:`Trial.column`); rows are parsed when first read.
    """
    found = _read_experiment(root, budget_env_steps, keys=keys)
    _warn_each([*found.damage, *found.notes, *(d for t in found.trials for d in t.damage)])
    return Experiment(found.trials, found.damage)


def read_trials(root: Path, *, budget_env_steps: int) -> list[Trial]:
    """The trials of :func:`read_experiment` (what cannot be read named in a warning).

    Raises:
        SweepError: ``root`` is no rlsweep experiment directory.
    """
    return read_experiment(root, budget_env_steps=budget_env_steps).trials


def matching_trials(trials: list[Trial], name: str) -> list[Trial]:
    """The trials a user means by ``name``: the one with that id, else every one whose id starts with it
    (one match is the trial; several, an ambiguous prefix)."""
    return [t for t in trials if t.trial_id == name] or [t for t in trials if t.trial_id.startswith(name)]


def read_spec_yaml(path: Path) -> str:
    """The text of the spec the sweep ran (as the user may have edited it since)."""
    try:
        data = read_bytes(spec_file(path))
    except UnreadableFile as exc:
        raise SweepError(f"{path}: cannot read the sweep's spec ({str(exc).removeprefix(f'{spec_file(path)}: ')})") from None
    if data is None:
        raise SweepError(f"{path}: cannot read the sweep's spec (No such file: {spec_file(path)})")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise SweepError(f"{path}: cannot read the sweep's spec ({SPEC_FILE} is not UTF-8 text)") from None


def last_error_line(path: Path, limit: int = 300) -> str | None:
    """The last line of the latest failure Tune appended to an ``error.txt`` (the exception, without its
    traceback), or None where there is no readable one."""
    try:
        data = read_bytes(path)  # a folder or a FIFO is no error file (and a FIFO would block the reader)
    except UnreadableFile:
        return None
    if data is None:
        return None
    lines = [line.strip() for line in data[-64 * 1024 :].decode(errors="replace").splitlines() if line.strip()]
    if not lines:
        return None
    return lines[-1] if len(lines[-1]) <= limit else lines[-1][: limit - 3] + "..."
