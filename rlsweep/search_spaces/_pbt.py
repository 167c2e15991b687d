"""PBT and PB2 mutation spaces: ``hyperparam_mutations`` and ``hyperparam_bounds`` compiled exactly, and the
explore step that maps every perturbed value back into its declared domain."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rlsweep.search_spaces._base import CompiledSpace, SpaceCompiler, log_as_linear
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


def _clip(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def _on_grid(value: float, low: float, high: float, q: float) -> float:
    # Quantized bounds are multiples of q (a parse-time rule), so the clipped multiple stays on the grid.
    return _clip(round(value / q) * q, low, high)


#: Domain kind -> the nearest value of that domain to a perturbed one, in the declared Python type.
_PROJECTIONS: dict[str, Callable[[Any, Any], Any]] = {
    Uniform.kind: lambda d, v: _clip(float(v), d.low, d.high),
    LogUniform.kind: lambda d, v: _clip(float(v), d.low, d.high),
    QUniform.kind: lambda d, v: float(_on_grid(float(v), d.low, d.high, d.q)),
    QLogUniform.kind: lambda d, v: float(_on_grid(float(v), d.low, d.high, d.q)),
    RandInt.kind: lambda d, v: int(_clip(round(float(v)), d.low, d.high)),
    LogRandInt.kind: lambda d, v: int(_clip(round(float(v)), d.low, d.high)),
    QRandInt.kind: lambda d, v: int(_on_grid(float(v), d.low, d.high, d.q)),
    Normal.kind: lambda d, v: float(v),
}


class IntoDomains:
    """PBT/PB2's ``custom_explore_fn``: Ray multiplies a value by a perturbation factor (lr at its upper
    bound * 1.2 leaves the declared range, a quantized value leaves its grid) and PB2 hands back float32
    numpy values just outside the bounds. This maps every explored value to the nearest value its
    declared domain can take, as a plain Python number. Picklable, as Tune saves the scheduler."""

    def __init__(self, space: SearchSpace) -> None:
        self.domains = {p.path: p.domain for p in space if p.domain.kind in _PROJECTIONS}

    def __call__(self, config: Mapping[str, Any]) -> dict[str, Any]:
        projected = dict(config)
        for path, domain in self.domains.items():
            if path in projected:
                projected[path] = _PROJECTIONS[domain.kind](domain, projected[path])
        return projected
