"""bayesian-optimization 3.x: a Gaussian process over a box of continuous domains, log ones in log space,
through its suggest/register API (Ray 2.60's ``BayesOptSearch`` wants bayesian-optimization < 2)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlsweep.search_spaces._base import (
    CompiledSpace,
    SearcherEntry,
    SearchRequest,
    SpaceCompiler,
    drop_q,
    normal_as_uniform,
)
from rlsweep.search_spaces._domains import Fixed, LogUniform, SearchSpace, Uniform
from rlsweep.search_spaces._searcher import OwnSearcher

_HANDLERS = {
    Uniform.kind: lambda d: (d.low, d.high),
    # Searched as ln(x), so the Gaussian process sees the scale the user declared.
    LogUniform.kind: lambda d: (math.log(d.low), math.log(d.high)),
    Fixed.kind: lambda d: None,
}


@dataclass(frozen=True)
class BayesOptSpace(CompiledSpace):
    """``native`` is the ``pbounds`` for ``BayesianOptimization``; the codec maps its coordinates."""

    def decode(self, native: Mapping[str, float]) -> dict[str, Any]:
        config: dict[str, Any] = {}
        for parameter in self.parameters:
            domain = parameter.domain
            if isinstance(domain, Fixed):
                config[parameter.path] = domain.value
            elif isinstance(domain, LogUniform):
                config[parameter.path] = min(max(math.exp(float(native[parameter.path])), domain.low), domain.high)
            else:
                config[parameter.path] = float(native[parameter.path])
        return config

    def encode(self, config: Mapping[str, Any]) -> dict[str, float]:
        return {
            p.path: math.log(config[p.path]) if isinstance(p.domain, LogUniform) else float(config[p.path])
            for p in self.parameters
            if p.path in self.native
        }


class BayesOptCompiler(SpaceCompiler):
    """Only ``uniform`` and ``loguniform`` (and fixed values): a Gaussian process over a box."""

    searcher = "bayesopt"
    handlers = _HANDLERS
    hints = {
        kind: "bayesian-optimization searches continuous ranges only; use searcher 'optuna', 'hyperopt' or 'bohb'"
        for kind in ("choice", "grid", "randint", "qrandint", "lograndint", "qloguniform")
    }
    fallbacks = {"quniform": drop_q, "normal": normal_as_uniform}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> BayesOptSpace:
        space = self.check(space, lossy)
        pbounds = {p.path: bounds for p in space if (bounds := _HANDLERS[p.domain.kind](p.domain)) is not None}
        return BayesOptSpace(pbounds, tuple(space))


class BayesOptTuneSearcher(OwnSearcher):
    """Tune's searcher protocol over ``BayesianOptimization``'s suggest/register API.

    Works in the compiled coordinates; minimization registers the negated metric. A trial that errored
    or never reported the metric teaches the model nothing.
    """

    state_fields = ("optimizer", "queued", "live")

    def __init__(self, space: BayesOptSpace, request: SearchRequest) -> None:
        from bayes_opt import BayesianOptimization

        super().__init__(request, space.encode)
        self.space = space
        self.optimizer = BayesianOptimization(
            f=None, pbounds=dict(space.native), random_state=request.seed, verbose=0, allow_duplicate_points=True
        )
        self.live: dict[str, dict[str, float]] = {}

    def draw(self) -> dict[str, Any]:
        return {k: float(v) for k, v in self.optimizer.suggest().items()}

    def accept(self, trial_id: str, native: dict[str, Any]) -> dict[str, Any]:
        self.live[trial_id] = native
        return self.space.decode(native)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        coordinates = self.live.pop(trial_id, None)
        if coordinates is None or error or not result:
            return
        value = result.get(self.metric)
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            return
        self.optimizer.register(params=coordinates, target=float(value) if self.mode == "max" else -float(value))


class BayesOptSearcher(SearcherEntry):
    name = "bayesopt"
    doc = "a Gaussian process (bayesian-optimization 3.x) over continuous domains; log domains in log space"
    model_based = True
    compiler = BayesOptCompiler()

    def make(self, request: SearchRequest) -> Any:
        return BayesOptTuneSearcher(self.compiler.compile(request.space, lossy=request.lossy), request)


ENTRIES = (BayesOptSearcher(),)
