"""The Ray runtime a sweep runs on: starting a local one or joining a cluster, and the checks against it
before a trial starts (each trial's CPUs, the storage every node must see, the memory room and how many
trials it holds). It knows the spec's resources and budget, not its search space's backends or the Tuner
(:mod:`rlsweep.sweep`)."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsweep import _compat
from rlsweep.errors import IncompatibleError, Problem, UsageError
from rlsweep.spec import SweepSpec
from rlsweep.trainables import (
    MemoryFit,
    MemoryReading,
    far_below,
    memory_fit,
    node_memory_mb,
    reading_for,
    reading_without_measuring,
    resource_problems,
    trials_that_fit,
)


def _quiet_token_notice() -> None:
    """Ray 2.60 warns on every local start that it enabled token authentication for the local runtime
    (a default the user cannot act on here: rlsweep's runtime listens on this machine only). Only that
    notice is dropped; Ray's other warnings, and its token errors, still print."""
    _compat.drop_message(*_compat.TOKEN_AUTHENTICATION_NOTICE)


def ensure_ray(spec: SweepSpec, address: str | None = None) -> float:
    """Join ``address`` (or the spec's), or start a local runtime; returns the cluster's CPUs."""
    import ray

    # RAY_ADDRESS is a user's explicit choice, as --address is: joined, never overridden by "local" below.
    address = address or spec.ray.address or os.environ.get("RAY_ADDRESS") or None
    # Tune snapshots its state after every `keep` checkpoints of a trial, which rlsweep relies on for
    # resume; its warning that this happens often is noise here.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    if not ray.is_initialized():
        os.environ.setdefault("RAY_DEDUP_LOGS", "1")
        _quiet_token_notice()
        # Workers' logs stay in Ray's session folder; trial errors reach the user through Tune's error files.
        kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": False}
        if address:
            _check_reachable(address)
            try:
                ray.init(address=address, **kwargs)
            except ConnectionError as exc:
                raise UsageError(f"cannot join the Ray cluster at {address!r}: {str(exc).splitlines()[0]}",
                                 "--address / ray.address") from None
        else:
            # "local": a runtime of this sweep's own. Ray's default (no address) instead joins the cluster
            # the last `ray start` on this machine recorded in /tmp/ray/ray_current_cluster, another user's
            # or another job's, and the trials would queue behind its work on its CPUs.
            ray.init(address="local", num_cpus=spec.ray.num_cpus, **kwargs)
    return float(ray.cluster_resources().get("CPU", 0))


def ray_running() -> bool:
    """Whether this process has a Ray runtime (without importing Ray if nothing did)."""
    return "ray" in sys.modules and sys.modules["ray"].is_initialized()


def stop_ray() -> None:
    """End this process's Ray runtime, if it has one."""
    if ray_running():
        sys.modules["ray"].shutdown()


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail in seconds where nothing answers at a ``host:port`` (or ``ray://host:port``) address: Ray itself
    retries joining for minutes. ``auto`` is left to Ray, which finds a local cluster or says there is none."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    # 0-9 only: '²'.isdigit() is true and int('²') fails; a port past 65535 fails create_connection with OverflowError
    if not sep or not (len(port) <= 5 and port.isascii() and port.isdigit() and int(port) <= 65535):
        if address != "auto":
            raise UsageError(f"expects 'auto', 'host:port' or 'ray://host:port' (a port from 0 to 65535 in the digits 0-9), "
                             f"got {address!r}", "--address / ray.address")
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise UsageError(
            f"nothing answers at {address!r} ({exc.strerror or exc}); start the cluster there (`ray start --head`) "
            "or leave the address out to run on a local runtime", "--address / ray.address"
        ) from None


@dataclass(frozen=True)
class ClusterCapacity:
    """How many trials of ``trial_cpus`` CPUs (and ``trial_mb`` of memory, each on one node, when the
    pre-flight measured it) the Ray cluster holds now, from its live nodes, at least 1. The searcher asks
    it while the sweep runs, so concurrency follows nodes that join or die; it is saved with the searcher,
    and a resumed sweep asks the cluster it resumes on."""

    trial_cpus: float
    trial_mb: float = 0.0

    def __call__(self) -> int:
        import ray

        by_cpus = math.floor(ray.cluster_resources().get("CPU", 0) / max(self.trial_cpus, 1e-9))
        if self.trial_mb > 0:
            by_cpus = min(by_cpus, trials_that_fit(self.trial_mb, node_memory_mb()))
        return max(1, by_cpus)


def fit_cluster(spec: SweepSpec, address: str | None, storage: Path | None = None) -> float:
    """Join or start the Ray runtime and check that the largest trial fits it, and that every node sees
    ``storage`` (the folder the trials will write into; None: not checked); returns the CPUs one trial
    needs. Raises :class:`IncompatibleError` where it does not fit."""
    import ray

    cpus = ensure_ray(spec, address)
    nodes = [(float(n["Resources"].get("CPU", 0)), float(n["Resources"].get("GPU", 0))) for n in ray.nodes() if n.get("Alive")]
    problems, trial_cpus = resource_problems(spec, cpus, float(ray.cluster_resources().get("GPU", 0)), nodes)
    if storage is not None:
        problems += storage_problems(storage, address or spec.ray.address)
    if problems:
        raise IncompatibleError(problems)
    return trial_cpus


#: How long a node may take to start a worker and answer whether it sees the storage folder.
STORAGE_CHECK_TIMEOUT_S = 120.0


def storage_problems(storage: Path, address: str | None) -> list[Problem]:
    """The nodes of the joined cluster that cannot read a file this process writes under ``storage``.

    A trial writes its rows and checkpoints into the experiment directory from whichever node it runs on, and
    the driver reads them there; a folder local to one machine is another, empty folder on the others (Ray
    then fails each trial there at its first checkpoint, minutes in). Checked when the cluster has more than
    one node, or the driver joined it from outside (``ray://``): a task on each node reads the file back.
    """
    import uuid

    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    alive = [n for n in ray.nodes() if n.get("Alive")]
    if len(alive) < 2 and not str(address or "").startswith("ray://"):
        return []
    storage = Path(storage).expanduser().resolve()
    storage.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    marker = storage / f".rlsweep-storage-check-{token}"
    marker.write_text(token)
    read = ray.remote(num_cpus=0, max_retries=0)(_read_text)
    try:
        reads = {
            node["NodeID"]: read.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            ).remote(str(marker))
            for node in alive
        }
        ready, _ = ray.wait(list(reads.values()), num_returns=len(reads), timeout=STORAGE_CHECK_TIMEOUT_S)
        blind = []
        for node in alive:
            ref = reads[node["NodeID"]]
            seen = ray.get(ref) if ref in ready else None
            if seen != token:
                why = "did not answer" if ref not in ready else "cannot read it"
                blind.append(f"{node['NodeID'][:8]} at {node.get('NodeManagerAddress', '?')} ({why})")
    finally:
        marker.unlink(missing_ok=True)
    if not blind:
        return []
    return [Problem("storage", (
        f"{storage} is not shared with every node of the cluster: a file written there from this process is not "
        f"there for node {', '.join(blind)}. Trials write their results and checkpoints into it from the node "
        f"they run on; use a folder every node mounts at the same path (NFS), with storage or --storage"
    ))]


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def fit_memory(spec: SweepSpec, trial_cpus: float) -> MemoryFit | None:
    """Measure one trial at the space's hungriest corner on the Ray runtime this process joined (unless
    ``ray.memory_check`` is off), and what the nodes' memory allows.

    Raises:
        IncompatibleError: one trial fits no node, or ``budget.max_concurrent`` trials do not fit.
    """
    if not spec.ray.memory_check:
        return None
    nodes, by_cpus = _room(trial_cpus)
    reading = reading_for(
        spec, "search_space" if len(spec.search_space) else "config",
        room=lambda estimate: far_below(estimate, nodes, by_cpus, spec.budget.max_concurrent),
    )
    return check_reading(spec, reading, trial_cpus, (nodes, by_cpus))


def check_memory(spec: SweepSpec, address: str | None = None) -> MemoryFit | None:
    """:func:`fit_cluster` then :func:`fit_memory`, for a command that checks and does not run (``rlsweep
    validate``). Where the sweep would start a runtime of its own and no trial needs measuring (a kept
    reading, or an estimate far below the room), the node's CPUs and memory are read as Ray would resolve
    them and no runtime starts: a validate then takes seconds, not Ray's start.

    Raises:
        IncompatibleError: one trial fits no node (CPUs or memory), or ``budget.max_concurrent`` trials do
            not fit.
    """
    if spec.ray.memory_check and not (address or spec.ray.address or os.environ.get("RAY_ADDRESS") or ray_running()):
        if (found := _fit_without_runtime(spec)) is not None:
            return found
    return fit_memory(spec, fit_cluster(spec, address, Path(spec.storage)))


def _fit_without_runtime(spec: SweepSpec) -> MemoryFit | None:
    """:func:`check_memory` on this machine's resources as a local runtime would offer them; None where
    that needs a runtime (Ray's resolution failed, or a trial must be measured)."""
    resources = _compat.local_node_resources(spec.ray.num_cpus)
    if resources is None:
        return None
    cpus, gpus = resources.get("CPU", 0.0), resources.get("GPU", 0.0)
    problems, trial_cpus = resource_problems(spec, cpus, gpus, [(cpus, gpus)])
    if problems:
        raise IncompatibleError(problems)
    nodes, by_cpus = [resources.get("memory", 0.0) / 2**20], math.floor(cpus / max(trial_cpus, 1e-9))
    reading = reading_without_measuring(spec, lambda estimate: far_below(estimate, nodes, by_cpus, spec.budget.max_concurrent))
    return check_reading(spec, reading, trial_cpus, (nodes, by_cpus)) if reading is not None else None


def _room(trial_cpus: float) -> tuple[list[float], int]:
    """The memory Ray offers trials on each live node, and how many trials of ``trial_cpus`` its CPUs hold."""
    import ray

    return node_memory_mb(), math.floor(ray.cluster_resources().get("CPU", 0) / max(trial_cpus, 1e-9))


def check_reading(
    spec: SweepSpec, reading: MemoryReading, trial_cpus: float, room: tuple[list[float], int] | None = None
) -> MemoryFit:
    """What the cluster this process joined allows for trials of ``reading``'s size (a resumed sweep's is
    the one it recorded: the cluster may be another now). ``room``: :func:`_room`, where just read.

    Raises:
        IncompatibleError: one trial fits no node, or ``budget.max_concurrent`` trials do not fit.
    """
    nodes, by_cpus = room if room is not None else _room(trial_cpus)
    found, problems = memory_fit(reading, nodes, by_cpus, spec.budget.max_concurrent, spec.search_space.paths)
    if problems:
        raise IncompatibleError(problems)
    return found


#: Free bytes under which the filesystem of a sweep whose driver failed counts as full: Tune's own reads of
#: what it failed to write (an empty ``error.pkl``) raise other errors than the write's ``ENOSPC``.
FULL_BELOW_BYTES = 1 << 20


@contextlib.contextmanager
def seed_race(spec: SweepSpec, sweep_id: str, known: Mapping[int, Mapping[str, Mapping[str, Any]]] | None = None
              ) -> Iterator[tuple[str, str] | None]:
    """With ``seeds.adaptive``, the sweep's race (:class:`rlsweep.seeds.SeedRace`) as a Ray actor its trials
    call at each check, for as long as the block runs; yields its name and namespace (None without
    ``seeds.adaptive``). ``known``: what the trials handed in before and the answers (a resumed sweep's, from
    their records: :func:`rlsweep.seeds.race_record`). The actor asks for no CPU, so it takes no trial's place."""
    if not spec.seeds.adaptive:
        yield None
        return
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from rlsweep.seeds import SeedRace

    name = f"rlsweep-seed-race-{sweep_id}"
    context = ray.get_runtime_context()
    # On the driver's node, which the sweep cannot lose and go on: a lost worker node takes no race with it.
    here = NodeAffinitySchedulingStrategy(node_id=context.get_node_id(), soft=False)
    actor = ray.remote(num_cpus=0)(SeedRace).options(name=name, namespace=context.namespace, scheduling_strategy=here).remote(
        spec.seeds.contenders, spec.metric.mode, known
    )
    try:
        yield name, context.namespace
    finally:
        with contextlib.suppress(Exception):  # Ray already down (the sweep's own error is the one to see)
            ray.kill(actor)


def storage_is_full(folder: Path) -> bool:
    """Whether the filesystem holding ``folder`` (or its nearest existing parent) has less than
    :data:`FULL_BELOW_BYTES` free."""
    for existing in (folder, *folder.parents):
        try:
            found = os.statvfs(existing)
        except OSError:
            continue
        return found.f_bavail * found.f_frsize < FULL_BELOW_BYTES
    return False


# --- The driver's freed memory --------------------------------------------------------------------------

#: How often, at most, the sweep's driver hands the heap memory it has freed back to the system.
RETURN_FREED_EVERY_S = 10.0


def return_freed_memory() -> bool:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim(0)``); False where the C
    library has no such call (not glibc) and nothing was done.

    Why: each save of Tune's experiment state (every trial, as JSON) builds its text in pieces on the C heap,
    and glibc keeps what was freed for later allocations instead of returning it. The state grows with the
    trials, so the driver's resident memory grew by what the largest save took: about 64 kB per finished
    trial of free heap kept, against about 40 kB per trial still in use (``benchmarks/scale.py --replay``).
    A trim of that heap takes a millisecond or two."""
    trim = _malloc_trim()
    return bool(trim is not None and trim(0) >= 0)


def _malloc_trim() -> Any:
    global _MALLOC_TRIM
    if _MALLOC_TRIM is False:
        import ctypes

        _MALLOC_TRIM = None
        if sys.platform.startswith("linux"):
            try:
                function = ctypes.CDLL(None).malloc_trim  # the C library this process runs on
            except (OSError, AttributeError):  # musl and other C libraries have none
                function = None
            if function is not None:
                function.argtypes, function.restype = [ctypes.c_size_t], ctypes.c_int
                _MALLOC_TRIM = function
    return _MALLOC_TRIM


_MALLOC_TRIM: Any = False


def freed_memory_callback_class() -> type:
    """A Tune callback that calls :func:`return_freed_memory` after a step of Tune's loop, at most every
    ``every_s`` seconds (Tune saves its experiment state from the same loop, every 10 s or more). Kept as
    this module's ``ReturnFreedMemory``, so Tune can pickle it with the sweep by reference."""
    cls = globals().get("ReturnFreedMemory")
    if cls is None:
        import time

        from ray.tune import Callback

        class ReturnFreedMemory(Callback):
            def __init__(self, every_s: float = RETURN_FREED_EVERY_S) -> None:
                self.every_s, self.last = every_s, time.monotonic()

            def setup(self, **info: Any) -> None:
                # Tune pickles its callbacks with the sweep; a resumed one (after a reboot, on another host)
                # brings another clock's reading.
                self.last = time.monotonic()

            def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
                if not 0 <= time.monotonic() - self.last < self.every_s:
                    return_freed_memory()
                    self.last = time.monotonic()

            def on_experiment_end(self, trials: list, **info: Any) -> None:
                return_freed_memory()

        ReturnFreedMemory.__qualname__ = "ReturnFreedMemory"
        cls = globals()["ReturnFreedMemory"] = ReturnFreedMemory
    return cls


def __getattr__(name: str) -> Any:
    # Unpickling a saved sweep (rlsweep resume) looks the callback's class up here before anything made it.
    if name == "ReturnFreedMemory":
        return freed_memory_callback_class()
    raise AttributeError(name)
