"""nevergrad: its optimizers (NGOpt by default, or one named: CMA, TwoPointsDE, PSO, ...) over an
``ng.p.Dict`` of the space, through Tune's ``NevergradSearch``.

Log domains are ``ng.p.Log``; integers are integer-cast scalars; a quantized domain is searched as the
integer index k of its multiples (value = k * q, exact, as for BOHB); a choice is ``ng.p.Choice`` over
indices, decoded here, so any value (lists, dicts) comes back as the declared object. nevergrad has no
conditional parameters and no normal prior: both are refused (``lossy: true`` searches a normal as uniform
over mean ± 3 sd).
"""

from __future__ import annotations

import difflib
import importlib
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import StrictStr

from rlsweep._schema import Section
from rlsweep.errors import IncompatibleError, Problem
from rlsweep.search_spaces._base import (
    IndexedSpace,
    SearcherEntry,
    SearcherOptions,
    SearchRequest,
    SpaceCompiler,
    normal_as_uniform,
)
from rlsweep.search_spaces._domains import (
    Choice,
    Fixed,
    LogRandInt,
    LogUniform,
    QLogUniform,
    QRandInt,
    QUniform,
    RandInt,
    SearchSpace,
    Uniform,
)
from rlsweep.search_spaces._searcher import DecodingSearcher

DEFAULT_OPTIMIZER = "NGOpt"

#: nevergrad's optimizers that wrap bayesian-optimization 1.x; rlsweep's stack has 3.x (searcher
#: 'bayesopt'), so nevergrad loads without them.
BAYES_OPT_FAMILY = ("BO", "BOSplit", "ParametrizedBO", "BO_Init", "MidQRBO", "LHSBO", "QRBO", "RBO")


def import_nevergrad() -> Any:
    """nevergrad, loaded beside bayesian-optimization 3.x.

    nevergrad imports ``bayes_opt.UtilityFunction`` when it loads, for its BO optimizers, and
    bayesian-optimization 2.0 removed that name: a plain ``import nevergrad`` fails on this stack. nevergrad
    skips those optimizers when ``bayes_opt`` is not installed, so it is loaded with ``bayes_opt`` hidden
    for the length of the import; ``bayes_opt`` itself is left as it was."""
    if "nevergrad" in sys.modules:
        return sys.modules["nevergrad"]
    loaded = sys.modules.get("bayes_opt")
    sys.modules["bayes_opt"] = None  # type: ignore[assignment]  # import raises ModuleNotFoundError
    try:
        import nevergrad
    finally:
        if loaded is None:
            del sys.modules["bayes_opt"]
        else:
            sys.modules["bayes_opt"] = loaded
    return nevergrad


def _ng() -> Any:
    return import_nevergrad()


def _index_bounds(domain: Any) -> tuple[int, int]:
    return int(round(domain.low / domain.q)), int(round(domain.high / domain.q))


def _steps(domain: Any) -> Any:
    low, high = _index_bounds(domain)
    return _ng().p.Scalar(lower=low, upper=high).set_integer_casting()


_HANDLERS: dict[str, Callable[[Any], Any]] = {
    Uniform.kind: lambda d: _ng().p.Scalar(lower=d.low, upper=d.high),
    LogUniform.kind: lambda d: _ng().p.Log(lower=d.low, upper=d.high),
    RandInt.kind: lambda d: _ng().p.Scalar(lower=d.low, upper=d.high).set_integer_casting(),
    LogRandInt.kind: lambda d: _ng().p.Log(lower=d.low, upper=d.high).set_integer_casting(),
    QUniform.kind: _steps,
    QRandInt.kind: _steps,
    # Log-distributed over [low, high], then the nearest multiple of q (as HyperOpt's qloguniform).
    QLogUniform.kind: lambda d: _ng().p.Log(lower=d.low, upper=d.high),
    Choice.kind: lambda d: _ng().p.Choice(list(range(len(d.values)))),
    Fixed.kind: lambda d: None,
}


def _constant(domain: Any) -> bool:
    return isinstance(domain, Fixed) or (isinstance(domain, Choice) and len(domain.values) < 2)


@dataclass(frozen=True)
class NevergradSpace(IndexedSpace):
    """``native`` is a function building the ``ng.p.Dict`` (seeded per searcher). A ``qloguniform`` is an
    ``ng.p.Log`` whose value is rounded to the nearest multiple of q, not an index."""

    quantized: ClassVar[tuple[type, ...]] = (QUniform, QRandInt)

    def searches(self, path: str) -> bool:
        return not _constant(next(p.domain for p in self.parameters if p.path == path))


class NevergradCompiler(SpaceCompiler):
    searcher = "nevergrad"
    handlers = _HANDLERS
    hints = {
        "normal": "nevergrad has no normal prior; use 'uniform' over a range, or searcher 'random' or 'hyperopt'",
        "grid": "use 'choice', or searcher 'grid'",
    }
    fallbacks = {"normal": normal_as_uniform}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> NevergradSpace:
        space = self.check(space, lossy)
        # A choice of one value is a constant (nevergrad's NGOpt would pick an optimizer that needs fcmaes
        # for it), decoded as that value.
        searched = tuple(p for p in space if not _constant(p.domain))
        if not searched:
            raise IncompatibleError([Problem("search_space", "searcher 'nevergrad' needs at least one searched parameter "
                                             "(a range, or a choice of two or more values); use searcher 'random'")])

        def parametrization(seed: int | None) -> Any:
            import numpy as np

            dict_ = _ng().p.Dict(**{p.path: _HANDLERS[p.domain.kind](p.domain) for p in searched})
            dict_.random_state = np.random.RandomState(seed)
            return dict_

        return NevergradSpace(parametrization, tuple(space))


class NevergradOptions(SearcherOptions):
    optimizer: StrictStr = DEFAULT_OPTIMIZER
    """nevergrad's optimizer by its registry name: NGOpt (default: nevergrad picks one for the space, the
    budget and the number of trials at once), CMA, TwoPointsDE, DE, PSO, OnePlusOne, RandomSearch, ...;
    the ones that propose a single point at a time and wait for its result (Powell, Cobyla, SQP, ...) are
    refused"""


def _registry() -> Mapping[str, Any]:
    return _ng().optimizers.registry


def optimizer_problems(name: str) -> list[Problem]:
    """Whether nevergrad has an optimizer ``name`` that can propose trials that run together."""
    registry = _registry()
    if name not in registry:
        if name in BAYES_OPT_FAMILY:
            why = ("nevergrad's BO optimizers need bayesian-optimization 1.x, and rlsweep's stack has 3.x; "
                   "use searcher 'bayesopt' or 'ax' for a Gaussian process")
        else:
            close = difflib.get_close_matches(name, list(registry), n=4, cutoff=0.6)
            why = f"not one of nevergrad's {len(registry)} optimizers" + (f"; did you mean {', '.join(map(repr, close))}?" if close else
                                                                          f"; e.g. {DEFAULT_OPTIMIZER!r}, 'CMA', 'TwoPointsDE', 'PSO'")
        return [Problem("searcher.optimizer", f"{name!r}: {why}")]
    if getattr(registry[name], "no_parallelization", False):
        return [Problem("searcher.optimizer", f"nevergrad's {name!r} proposes one point at a time and waits for its result "
                        "(a trial that fails would stall it, and trials could not run together); use "
                        f"{DEFAULT_OPTIMIZER!r}, 'CMA', 'TwoPointsDE', 'DE', 'PSO' or 'OnePlusOne'")]
    return []


def _workers(request: SearchRequest) -> int:
    """How many trials the optimizer is told run at once. NGOpt picks its algorithm by it, and for one
    worker it may pick one that proposes a point only after the last one's result (a deadlock when Tune
    asks ahead, or a trial fails): it is told at least two."""
    counts = [n for n in (request.max_concurrent, request.capacity() if request.capacity else None) if n]
    return max(2, min(counts) if counts else 2)


class NevergradSearcher(SearcherEntry):
    name = "nevergrad"
    doc = "nevergrad's optimizers (optimizer: NGOpt by default, CMA, TwoPointsDE, PSO, ...); no conditions"
    model_based = True
    # 1000 draws took ~10 s here with 8 parameters (3000: 6 s with 2).
    max_samples = 1000
    compiler = NevergradCompiler()
    Options: ClassVar[type[Section]] = NevergradOptions

    packages = ("nevergrad",)
    install = "pip install 'rlsweep[searchers]'   (or: pip install 'nevergrad==1.0.3')"

    def check(self, space: SearchSpace, options: Any) -> list[Problem]:
        if missing := self.missing():
            return missing
        return super().check(space, options) + optimizer_problems(getattr(options, "optimizer", DEFAULT_OPTIMIZER))

    def make(self, request: SearchRequest) -> Any:
        import_nevergrad()
        from ray.tune.search.nevergrad import nevergrad_search

        if nevergrad_search.ng is None:
            # Ray's module was imported before rlsweep's shim, when ``import nevergrad`` failed: it holds
            # None for nevergrad and its optimizer classes until it is loaded again.
            nevergrad_search = importlib.reload(nevergrad_search)
        compiled = self.compiler.compile(request.space, lossy=request.lossy)
        name = getattr(request.options, "optimizer", DEFAULT_OPTIMIZER)
        search = nevergrad_search.NevergradSearch(
            optimizer=_registry()[name],
            optimizer_kwargs={"budget": max(1, request.trials), "num_workers": _workers(request)},
            space=compiled.native(request.seed),
            metric=request.metric,
            mode=request.mode,
            points_to_evaluate=request.points_for(compiled),
        )
        return FiniteResults(search, compiled.decode)


class FiniteResults(DecodingSearcher):
    """nevergrad is told a trial's result only when the metric is a finite number: a trial that errored,
    or ended with NaN, teaches the optimizer nothing (Tune's adapter would pass NaN on, or fail on a
    missing metric)."""

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        value = (result or {}).get(self.searcher.metric)
        finite = isinstance(value, (int, float)) and math.isfinite(value)
        self.searcher.on_trial_complete(trial_id, result=result if finite and not error else None, error=error)


ENTRIES = (NevergradSearcher(),)
