"""Memory readings kept between commands, so one spec's trial is measured once: ``rlsweep validate`` then
``rlsweep run``, the same sweep run again, or ``confirm`` after it, reuse the reading of the same corner,
on the same versions and machine.

A reading is kept under a key of everything that shapes a trial's memory: the spec (less what does not:
its name, searcher, scheduler, metric, stop rules, storage, MLflow and tracing settings, how many trials
and how many at once; not the Ray address, so a cluster's reading is not a local one's), the corner measured, the source of an env module of the user's own, the versions of
rlsweep and the stack, and the machine. A change to any of them measures again; so does a reading older
than :data:`MAX_AGE_S`. Where the cache cannot be read or written, the trial is measured as before.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import importlib.util
import json
import os
import platform
import sys
import tempfile
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsweep.trainables._memory import MemoryReading

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

#: Where readings are kept (default: ``$XDG_CACHE_HOME/rlsweep/memory``, else ``~/.cache/rlsweep/memory``).
CACHE_DIR_ENV = "RLSWEEP_CACHE_DIR"
#: A kept reading older than this is measured again (libraries, kernels and allocators change under it).
MAX_AGE_S = 30 * 24 * 3600.0
#: Spec sections that do not change what a trial holds in memory.
_NOT_MEMORY = ("name", "searcher", "scheduler", "metric", "stop", "storage", "mlflow", "tracing", "search_space")
_NOT_MEMORY_BUDGET = ("trials", "max_concurrent", "time_s")
_STACK = ("rlsweep", "ray", "torch", "gymnasium", "numpy")


def cache_dir() -> Path:
    if given := os.environ.get(CACHE_DIR_ENV):
        return Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rlsweep" / "memory"


def reading_key(spec: SweepSpec, draw: Mapping[str, Any]) -> str:
    """The key of one trial's reading at ``draw``: equal keys, equal memory (as far as rlsweep can tell)."""
    document = {k: v for k, v in spec.document.items() if k not in _NOT_MEMORY}
    if isinstance(document.get("budget"), Mapping):
        document["budget"] = {k: v for k, v in document["budget"].items() if k not in _NOT_MEMORY_BUDGET}
    facts = {
        "spec": document,
        "draw": dict(draw),
        "env_source": _module_digest(spec.env),
        "versions": {"python": sys.version, **{name: _version(name) for name in _STACK}},
        "machine": [platform.node(), platform.machine(), platform.release(), os.cpu_count()],
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=repr).encode()).hexdigest()


def cached_reading(spec: SweepSpec, draw: Mapping[str, Any], *, now: float | None = None) -> MemoryReading | None:
    """The reading kept for this spec's trial at ``draw``, or None (none kept, too old, or unreadable)."""
    try:
        path = cache_dir() / f"{reading_key(spec, draw)}.json"
        if not path.is_file():
            return None
        kept = json.loads(path.read_text())
        reading = MemoryReading.from_dict(kept["reading"])
        measured = _dt.datetime.fromisoformat(kept["measured_at"]).timestamp()
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):  # RuntimeError: no home folder to keep it in
        return None
    age = (now if now is not None else _dt.datetime.now().timestamp()) - measured
    if not 0 <= age <= MAX_AGE_S or reading.main_mb <= 0:
        return None
    return reading.reused(kept["measured_at"])


def remember_reading(spec: SweepSpec, draw: Mapping[str, Any], reading: MemoryReading) -> None:
    """Keep ``reading`` for the next command that measures this trial (written whole or not at all)."""
    entry = {"measured_at": _dt.datetime.now().isoformat(timespec="seconds"), "reading": reading.as_dict()}
    try:
        directory = cache_dir()
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=directory, suffix=".tmp", delete=False) as out:
            json.dump(entry, out, default=repr)
        Path(out.name).replace(directory / f"{reading_key(spec, draw)}.json")
    except (OSError, RuntimeError):  # a cache that cannot be written (or no home): the next command measures again
        with contextlib.suppress(OSError, NameError):
            Path(out.name).unlink(missing_ok=True)


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _module_digest(env: str) -> str | None:
    """A digest of the source of the module an env id names (``package.module:Class``), so an edited env
    is measured again; None for a registered gymnasium id (the versions cover it)."""
    if ":" not in env:
        return None
    try:
        found = importlib.util.find_spec(env.split(":", 1)[0])
    except (ImportError, ValueError):
        return None
    origin = getattr(found, "origin", None)
    try:
        return hashlib.sha256(Path(origin).read_bytes()).hexdigest() if origin else None
    except OSError:
        return None
