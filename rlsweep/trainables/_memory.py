"""Peak resident memory of a trial: its own process plus the remote env runners and learners it owns."""

from __future__ import annotations

import functools
import re
import resource
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any


_STATUS, _CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")


def release_freed_memory() -> None:
    """Hand memory an earlier trial freed back to the system: collect its garbage, then ask glibc to
    return its free heap pages (``malloc_trim``). Without it, a trial run in a reused worker process
    (``ray.reuse_actors``) starts with the earlier trial's freed heap still resident: measured with SAC,
    ~12% above what the same trial peaks at in a fresh process."""
    import gc

    gc.collect()
    if (trim := _malloc_trim()) is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None (not glibc: freed pages stay with the allocator)."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def reset_peak_rss() -> None:
    """Start this process's peak resident set afresh (Linux: ``5`` into ``/proc/self/clear_refs`` resets
    ``VmHWM``), so a trial run in a reused worker process reports its own peak, not an earlier trial's
    (whose freed memory :func:`release_freed_memory` returned first)."""
    release_freed_memory()
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:  # not Linux, or not allowed: the peak is the process's lifetime peak
        pass


def peak_rss_mb(*_: Any) -> float:
    """This process's peak resident set in MiB since :func:`reset_peak_rss` (Linux's ``VmHWM``), else over
    its lifetime (``ru_maxrss``: KiB on Linux, bytes on macOS)."""
    try:
        match = re.search(r"^VmHWM:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    except OSError:
        match = None
    if match:
        return int(match.group(1)) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _node_id(*_: Any) -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def remote_node_ids(*algos: Any) -> dict[str, list[str]]:
    """The Ray node of each remote env runner (evaluation runners included) and each remote learner of
    the trial's algorithms: where a trial's processes landed, beside the ``node_id`` of its own."""
    found: dict[str, list[str]] = {"env_runner": [], "learner": []}
    for algo in algos:
        for name in ("env_runner_group", "eval_env_runner_group"):
            group = getattr(algo, name, None)
            if group is not None and group.num_remote_env_runners() > 0:
                found["env_runner"] += group.foreach_env_runner(_node_id, local_env_runner=False)
        learners = getattr(algo, "learner_group", None)
        if learners is not None and not learners.is_local:
            found["learner"] += [r.get() for r in learners.foreach_learner(_node_id) if r.ok]
    return found


def trial_peak_memory_mb(*algos: Any) -> float:
    """Sum of the peak resident sets of every process the trial runs in (its own, and each algorithm's
    remote env runners and learners: a trial with several seeds holds one algorithm per seed). Summing
    peaks is an upper bound on the trial's simultaneous peak: what a node must have free for it."""
    total = peak_rss_mb()
    for algo in algos:
        for name in ("env_runner_group", "eval_env_runner_group"):
            group = getattr(algo, name, None)
            if group is not None and group.num_remote_env_runners() > 0:
                total += sum(group.foreach_env_runner(peak_rss_mb, local_env_runner=False))
        learners = getattr(algo, "learner_group", None)
        if learners is not None and not learners.is_local:
            total += sum(r.get() for r in learners.foreach_learner(peak_rss_mb) if r.ok)
    return total


def module_bytes(learner: Any) -> dict[str, tuple[int, int]]:
    """Policy (module id) -> (parameter bytes, optimizer state bytes) as one learner holds them. Runs in the
    learner's process (a remote learner too): it holds nothing of the trial's."""
    import torch

    found: dict[str, tuple[int, int]] = {}
    for module_id, module in learner.module.items():
        params = sum(p.numel() * p.element_size() for p in module.parameters()) if hasattr(module, "parameters") else 0
        state = 0
        try:
            optimizers = learner.get_optimizers_for_module(module_id)
        except (KeyError, ValueError):  # a policy that does not learn has no optimizer
            optimizers = []
        for _, optimizer in optimizers:
            for values in getattr(optimizer, "state", {}).values():
                state += sum(v.numel() * v.element_size() for v in values.values() if torch.is_tensor(v))
        found[str(module_id)] = (params, state)
    return found


def copies_of_policies(algo: Any) -> tuple[int, int]:
    """``(inference copies, learner copies)``: how many processes hold each policy's weights to act with
    (the local env runner and every remote one, the evaluation runners likewise) and to learn with (every
    learner, each with its optimizer state)."""
    acting = 0
    for name in ("env_runner_group", "eval_env_runner_group"):
        group = getattr(algo, name, None)
        if group is None:
            continue
        remote = group.num_remote_env_runners()
        local = getattr(group, "local_env_runner", None)
        acting += remote + (1 if local is not None and getattr(local, "module", None) is not None else 0)
    learners = getattr(algo, "learner_group", None)
    learning = 0
    if learners is not None:
        learning = 1 if learners.is_local else max(1, int(algo.config.num_learners))
    return acting, learning


def policy_memory_mb(algo: Any) -> dict[str, float]:
    """Policy -> MB of its weights and optimizer state summed over every process that holds a copy:
    parameters x (acting copies + learner copies) + optimizer state x learner copies. What a league of
    frozen opponents costs per env runner, before it runs out of memory."""
    learners = getattr(algo, "learner_group", None)
    if learners is None:
        return {}
    by_learner = [r.get() for r in learners.foreach_learner(module_bytes) if r.ok]
    if not by_learner:
        return {}
    acting, learning = copies_of_policies(algo)
    return {
        module_id: (params * (acting + learning) + state * learning) / 2**20
        for module_id, (params, state) in by_learner[0].items()
    }


@dataclass(frozen=True)
class MemoryReading:
    """Peak resident memory of one trial's processes at the hungriest corner, in MiB.

    Attributes:
        draw: The corner measured.
        main_mb: The trial's own process (its algorithms, local env runner and local learner, buffers).
        env_runner_mb: Each remote env runner (evaluation runners included).
        learner_mb: Each remote learner.
        replay_mb: What the replay buffer adds after the measurement until it is full or the budget spent
            (off-policy algorithms), from the bytes a stored env step took in the measured buffer.
        policy_mb: Each policy's weights and optimizer state over every process holding a copy.
        env_steps: Env steps the measurement sampled per seed.
        seconds: How long the measurement took.
        seeds: Algorithms the trial's process held (``seeds.per_trial``), one per seed.
        reused_from: When the reading was measured, where an earlier command's reading of the same trial,
            versions and machine was reused (:mod:`rlsweep.trainables._readings`); empty for a new one.
        estimated: An upper bound from the trial's settings (:mod:`rlsweep.trainables._estimate`), not a
            measurement.
    """

    draw: dict[str, Any]
    main_mb: float
    env_runner_mb: tuple[float, ...] = ()
    learner_mb: tuple[float, ...] = ()
    replay_mb: float = 0.0
    policy_mb: dict[str, float] = field(default_factory=dict)
    env_steps: int = 0
    seconds: float = 0.0
    seeds: int = 1
    reused_from: str = ""
    estimated: bool = False

    #: What each process reserves above its measured peak: a trial trains longer than the measurement
    #: (benchmarks/memory_prediction.py: real trials peaked 0.6-2.5% above the prediction).
    HEADROOM = 0.05

    @property
    def predicted_mb(self) -> float:
        """One trial's peak as measured: its own process's peak and the replay buffer's growth, and each
        env runner and learner at the largest one's peak (every process's peak summed: an upper bound on
        their simultaneous peak)."""
        return self._raw("main") + self._raw("env_runner") * len(self.env_runner_mb) + self._raw("learner") * len(self.learner_mb)

    @property
    def trial_mb(self) -> float:
        """What one trial reserves, and must find on one node: the prediction and its headroom."""
        return self.predicted_mb * (1 + self.HEADROOM)

    def _raw(self, role: str) -> float:
        if role == "main":
            return self.main_mb + self.replay_mb
        measured = self.env_runner_mb if role == "env_runner" else self.learner_mb
        return max(measured, default=0.0)

    def bundle_mb(self, role: str) -> float:
        """The memory a placement-group bundle of this role reserves, headroom included: the main process
        its own peak and the buffer's growth; an env runner or a learner the largest one measured."""
        return self._raw(role) * (1 + self.HEADROOM)

    def reused(self, measured_at: str) -> MemoryReading:
        """This reading, as reused by a later command (it was measured at ``measured_at``)."""
        return replace(self, reused_from=measured_at)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "env_runner_mb": list(self.env_runner_mb), "learner_mb": list(self.learner_mb)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryReading:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**{**known, "env_runner_mb": tuple(known.get("env_runner_mb", ())), "learner_mb": tuple(known.get("learner_mb", ()))})

    def parts(self) -> str:
        """The reading, process by process, for a person."""
        parts = [f"trial process {self.main_mb:,.0f}"]
        for name, values in (("env runner", self.env_runner_mb), ("learner", self.learner_mb)):
            if values:
                largest = f" ({max(values):,.0f} the largest)" if len(values) > 1 else ""
                parts.append(f"{len(values)} {name}{'s' if len(values) > 1 else ''} {sum(values):,.0f}{largest}")
        if self.replay_mb:
            parts.append(f"replay buffer growth {self.replay_mb:,.0f}")
        return ", ".join(parts)
