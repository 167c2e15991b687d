"""Compile a search space to Ray Tune's own domains (random and grid search)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlsweep.search_spaces._base import SpaceCompiler
from rlsweep.search_spaces._domains import (
    Choice,
    Domain,
    Fixed,
    Grid,
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


def _tune() -> Any:
    from ray import tune

    return tune


# Tune's randint and lograndint exclude the upper bound; ours include it, as the user wrote it.
_HANDLERS: dict[str, Callable[[Any], Any]] = {
    Uniform.kind: lambda d: _tune().uniform(d.low, d.high),
    LogUniform.kind: lambda d: _tune().loguniform(d.low, d.high),
    QUniform.kind: lambda d: _tune().quniform(d.low, d.high, d.q),
    QLogUniform.kind: lambda d: _tune().qloguniform(d.low, d.high, d.q),
    RandInt.kind: lambda d: _tune().randint(d.low, d.high + 1),
    LogRandInt.kind: lambda d: _tune().lograndint(d.low, d.high + 1),
    QRandInt.kind: lambda d: _tune().qrandint(d.low, d.high, d.q),
    Normal.kind: lambda d: _tune().randn(d.mean, d.sd),
    Choice.kind: lambda d: _tune().choice(list(d.values)),
    Grid.kind: lambda d: _tune().grid_search(list(d.values)),
    Fixed.kind: lambda d: d.value,
}


class TuneCompiler(SpaceCompiler):
    """Ray Tune's ``param_space``: a flat dict keyed by the spec's parameter paths."""

    searcher = "random"

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> dict[str, Any]:
        space = self.check(space, _HANDLERS, lossy)
        return {p.path: _HANDLERS[p.domain.kind](p.domain) for p in space}


def compile_domain(domain: Domain) -> Any:
    """One domain as a Tune domain (used where a single value is needed, e.g. mutations)."""
    return _HANDLERS[domain.kind](domain)
