"""PBT and PB2 mutation spaces: ``hyperparam_mutations`` and ``hyperparam_bounds`` compiled exactly, and the
explore step that maps every perturbed value back into its declared domain."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlsweep.search_spaces._base import CompiledSpace, SpaceCompiler, log_as_linear
from rlsweep.search_spaces._domains import (
    PROJECTIONS,
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
    nearest,
)
from rlsweep.search_spaces._random import compile_domain

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
    handlers = _PBT_HANDLERS
    hints = {"grid": "use 'choice'"}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> CompiledSpace:
        space = self.check(space, lossy)
        return CompiledSpace({p.path: m for p in space if (m := _PBT_HANDLERS[p.domain.kind](p.domain)) is not None}, tuple(space))


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
    handlers = _PB2_HANDLERS
    hints = {
        kind: "PB2 models continuous ranges searched linearly; use 'uniform'/'randint', or scheduler 'pbt'"
        for kind in ("loguniform", "lograndint", "choice", "grid", "quniform", "qloguniform", "qrandint", "normal")
    }
    fallbacks = {"loguniform": log_as_linear}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> CompiledSpace:
        space = self.check(space, lossy)
        return CompiledSpace({p.path: b for p in space if (b := _PB2_HANDLERS[p.domain.kind](p.domain)) is not None}, tuple(space))




class IntoDomains:
    """PBT/PB2's ``custom_explore_fn``: Ray multiplies a value by a perturbation factor (lr at its upper
    bound * 1.2 leaves the declared range, a quantized value leaves its grid) and PB2 hands back float32
    numpy values just outside the bounds. This maps every explored value to the nearest value its
    declared domain can take, as a plain Python number. Picklable, as Tune saves the scheduler."""

    def __init__(self, space: SearchSpace) -> None:
        self.domains = {p.path: p.domain for p in space if p.domain.kind in PROJECTIONS}

    def __call__(self, config: Mapping[str, Any]) -> dict[str, Any]:
        projected = dict(config)
        for path, domain in self.domains.items():
            if path in projected:
                projected[path] = nearest(domain, projected[path])
        return projected
