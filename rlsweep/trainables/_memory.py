"""Peak resident memory of a trial: its own process plus the remote env runners and learners it owns."""

from __future__ import annotations

import re
import resource
import sys
from pathlib import Path
from typing import Any


_STATUS, _CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")


def reset_peak_rss() -> None:
    """Start this process's peak resident set afresh (Linux: ``5`` into ``/proc/self/clear_refs`` resets
    ``VmHWM``), so a trial run in a reused worker process reports its own peak, not an earlier trial's."""
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
