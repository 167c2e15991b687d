"""Compile a search space to PBT's ``hyperparam_mutations`` and PB2's ``hyperparam_bounds``."""

from __future__ import annotations

from typing import Any

from rlsweep.search_spaces._base import LOG_AS_LINEAR, SpaceCompiler
from rlsweep.search_spaces._domains import (
    Choice,
    Fixed,
    LogRandInt,
    LogUniform,
    Normal,
    QLogUniform,
    QRandInt,
    QUniform,
    RandInt,
    SearchSpace,
    Uniform,
)
from rlsweep.search_spaces._tune import compile_domain

# PBT resamples from the Tune domain (or perturbs by its factors); a choice mutates to one of its values.
_PBT_HANDLERS = {
    kind: compile_domain
    for kind in (
        Uniform.kind, LogUniform.kind, QUniform.kind, QLogUniform.kind, RandInt.kind, LogRandInt.kind, QRandInt.kind, Normal.kind,
    )
}
_PBT_HANDLERS[Choice.kind] = lambda d: list(d.values)
_PBT_HANDLERS[Fixed.kind] = lambda d: None


class PbtCompiler(SpaceCompiler):
    """``hyperparam_mutations`` for ``PopulationBasedTraining``: every searched parameter mutates."""

    searcher = "pbt"
    role = "scheduler"
    hints = {"grid": "use 'choice'"}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> dict[str, Any]:
        space = self.check(space, _PBT_HANDLERS, lossy)
        return {p.path: m for p in space if (m := _PBT_HANDLERS[p.domain.kind](p.domain)) is not None}


# PB2 fits a GP over a box searched linearly: only linear continuous and integer ranges are exact.
_PB2_HANDLERS = {
    Uniform.kind: lambda d: [d.low, d.high],
    RandInt.kind: lambda d: [d.low, d.high],
    Fixed.kind: lambda d: None,
}


class Pb2Compiler(SpaceCompiler):
    """``hyperparam_bounds`` for ``PB2``: linear ranges only (PB2 would search a log domain linearly)."""

    searcher = "pb2"
    role = "scheduler"
    hints = {
        kind: "PB2 models continuous ranges searched linearly; use 'uniform'/'randint', or scheduler 'pbt'"
        for kind in ("loguniform", "lograndint", "choice", "grid", "quniform", "qloguniform", "qrandint", "normal")
    }
    fallbacks = {"loguniform": LOG_AS_LINEAR}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> dict[str, list[float]]:
        space = self.check(space, _PB2_HANDLERS, lossy)
        return {p.path: b for p in space if (b := _PB2_HANDLERS[p.domain.kind](p.domain)) is not None}
