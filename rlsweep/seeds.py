"""Training seeds: which seed each trial trains with, derived from the spec so a sweep reruns the same way.

A trial's seed follows from the sweep's seed base and the trial's index (the order in which the searcher
suggested it): with ``searcher.seed`` set, the base is that seed, so the same spec run twice gives its k-th
trial the same config and the same training seed. Without it, the base comes from the sweep's id, stable
across a resume. Seeds are drawn from ``seeds.tuning`` (inclusive); RLlib's ``debugging.seed`` seeds
torch, numpy and Python's ``random`` in the trial and each env (env seeds derive from it and the env's
index).
"""

from __future__ import annotations

import zlib

import numpy as np

#: The RLlib setting a trial's seed goes to.
SEED_PATH = "debugging.seed"


def seed_base(searcher_seed: int | None, sweep_id: str) -> int:
    """The sweep's seed base: ``searcher.seed`` when set, else a number from the sweep's id."""
    return int(searcher_seed) if searcher_seed is not None else zlib.crc32(sweep_id.encode())


def trial_seed(base: int, index: int, low: int, high: int) -> int:
    """The training seed of the trial suggested ``index``-th, drawn from ``low..high`` (inclusive)."""
    draw = np.random.SeedSequence([base, index]).generate_state(1, dtype=np.uint64)[0]
    return low + int(draw % (high - low + 1))
