"""Compile a search space to bayesian-optimization bounds: continuous domains only, log ones in log space."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlsweep.search_spaces._base import DROP_Q, NORMAL_AS_UNIFORM, SpaceCompiler
from rlsweep.search_spaces._domains import Fixed, LogUniform, Parameter, SearchSpace, Uniform

_HANDLERS = {
    Uniform.kind: lambda d: (d.low, d.high),
    # Searched as ln(x), so the Gaussian process sees the scale the user declared.
    LogUniform.kind: lambda d: (math.log(d.low), math.log(d.high)),
    Fixed.kind: lambda d: None,
}


@dataclass(frozen=True)
class BayesOptSpace:
    """``pbounds`` for ``BayesianOptimization`` and the codecs between its coordinates and configs."""

    pbounds: dict[str, tuple[float, float]]
    parameters: tuple[Parameter, ...]

    def decode(self, suggestion: Mapping[str, float]) -> dict[str, Any]:
        config: dict[str, Any] = {}
        for parameter in self.parameters:
            domain = parameter.domain
            if isinstance(domain, Fixed):
                config[parameter.path] = domain.value
            elif isinstance(domain, LogUniform):
                config[parameter.path] = min(max(math.exp(float(suggestion[parameter.path])), domain.low), domain.high)
            else:
                config[parameter.path] = float(suggestion[parameter.path])
        return config

    def encode(self, point: Mapping[str, Any]) -> dict[str, float]:
        return {
            p.path: math.log(point[p.path]) if isinstance(p.domain, LogUniform) else float(point[p.path])
            for p in self.parameters
            if p.path in self.pbounds
        }


class BayesOptCompiler(SpaceCompiler):
    """Only ``uniform`` and ``loguniform`` (and fixed values): a Gaussian process over a box."""

    searcher = "bayesopt"

    hints = {
        kind: "bayesian-optimization searches continuous ranges only; use searcher 'optuna', 'hyperopt' or 'bohb'"
        for kind in ("choice", "grid", "randint", "qrandint", "lograndint", "qloguniform")
    }
    fallbacks = {"quniform": DROP_Q, "normal": NORMAL_AS_UNIFORM}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> BayesOptSpace:
        space = self.check(space, _HANDLERS, lossy)
        pbounds = {p.path: bounds for p in space if (bounds := _HANDLERS[p.domain.kind](p.domain)) is not None}
        return BayesOptSpace(pbounds=pbounds, parameters=tuple(space))
