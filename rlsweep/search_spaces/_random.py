"""Random and grid search: Ray Tune's own domains and variant generator, and random draws that respect
conditions (Tune's generator cannot leave an inactive parameter out)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
from ray import tune
from ray.tune.search.sample import Domain as TuneDomain

from rlsweep import _compat
from rlsweep._entry import NoOptions
from rlsweep._schema import Section
from rlsweep.errors import Problem
from rlsweep.search_spaces._base import CompiledSpace, SearcherEntry, SearchRequest, SpaceCompiler
from rlsweep.search_spaces._domains import (
    Choice,
    Domain,
    Fixed,
    Grid,
    LogRandInt,
    LogUniform,
    Normal,
    Parameter,
    QLogUniform,
    QRandInt,
    QUniform,
    RandInt,
    SearchSpace,
    Uniform,
)
from rlsweep.search_spaces._searcher import OwnSearcher

# Tune's randint and lograndint exclude the upper bound; ours include it, as the user wrote it.
_HANDLERS: dict[str, Callable[[Any], Any]] = {
    Uniform.kind: lambda d: tune.uniform(d.low, d.high),
    LogUniform.kind: lambda d: tune.loguniform(d.low, d.high),
    QUniform.kind: lambda d: tune.quniform(d.low, d.high, d.q),
    QLogUniform.kind: lambda d: tune.qloguniform(d.low, d.high, d.q),
    RandInt.kind: lambda d: tune.randint(d.low, d.high + 1),
    LogRandInt.kind: lambda d: tune.lograndint(d.low, d.high + 1),
    QRandInt.kind: lambda d: tune.qrandint(d.low, d.high, d.q),
    Normal.kind: lambda d: tune.randn(d.mean, d.sd),
    Choice.kind: lambda d: tune.choice(list(d.values)),
    Grid.kind: lambda d: tune.grid_search(list(d.values)),
    Fixed.kind: lambda d: d.value,
}


def compile_domain(domain: Domain) -> Any:
    """One domain as a Tune domain (PBT resamples mutations from these)."""
    return _HANDLERS[domain.kind](domain)


class TuneCompiler(SpaceCompiler):
    """Ray Tune's ``param_space``: a flat dict keyed by the spec's parameter paths. Tune's values are the
    declared ones, so the codec is the identity."""

    searcher = "random"
    handlers = _HANDLERS

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> CompiledSpace:
        space = self.check(space, lossy)
        return CompiledSpace({p.path: _HANDLERS[p.domain.kind](p.domain) for p in space}, tuple(space))


class ConditionalRandomSearcher(OwnSearcher):
    """Independent random draws, each from Tune's own sampler for its domain, where a parameter is drawn
    only when its conditions hold, so inactive parameters are absent from the trial's config."""

    state_fields = ("rng", "queued")

    def __init__(self, request: SearchRequest) -> None:
        super().__init__(request)
        self.parameters: tuple[Parameter, ...] = tuple(request.space)
        self.domains = {p.path: compile_domain(p.domain) for p in self.parameters}
        self.rng = np.random.default_rng(request.seed)

    def draw(self) -> dict[str, Any]:
        draws: dict[str, Any] = {}
        for parameter in self.parameters:
            if parameter.is_active(draws):
                domain = self.domains[parameter.path]
                value = domain.sample(random_state=self.rng) if isinstance(domain, TuneDomain) else domain
                draws[parameter.path] = value.item() if hasattr(value, "item") else value
        return draws

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        return None


def random_draws(space: SearchSpace, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` seeded random draws (conditions respected; a grid drawn from like a choice)."""
    if not len(space):
        return []
    parameters = tuple(replace(p, domain=Choice(p.domain.values)) if isinstance(p.domain, Grid) else p for p in space)
    searcher = ConditionalRandomSearcher(SearchRequest(SearchSpace(parameters), metric="_", mode="max", seed=seed))
    return [searcher.suggest(f"draw_{i}") or {} for i in range(n)]


class RandomSearcher(SearcherEntry):
    name = "random"
    doc = "independent random draws from Tune's samplers; grid domains are crossed; conditions supported"
    compiler = TuneCompiler()
    #: Tune's variant generator draws a population up front; PBT/PB2 accept no other searcher.
    provides = frozenset({"independent_draws"})

    def check(self, space: SearchSpace, options: Any) -> list[Problem]:
        conditional = any(p.when for p in space)
        problems = [p for p in super().check(space, options) if not (conditional and p.path.endswith(".when"))]
        if conditional:
            problems += [
                Problem(f"search_space.{p.path}", "a 'grid' domain cannot be combined with conditions; use 'choice'")
                for p in space
                if isinstance(p.domain, Grid)
            ]
        return problems

    @staticmethod
    def _variants(request: SearchRequest) -> bool:
        # Tune's own generator, unless a condition needs draws it cannot leave out.
        return not any(p.when for p in request.space)

    def build(self, request: SearchRequest) -> tuple[Any, dict[str, Any], int]:
        if not self._variants(request):
            return super().build(request)
        from rlsweep.search_spaces._limiter import TracedVariantGenerator

        # Independent draws need no limiter: without a cap Tune makes them up front and starts each as soon
        # as a trial fits the cluster, so concurrency follows the cluster as nodes join or leave.
        search_alg = TracedVariantGenerator(
            points_to_evaluate=request.points, random_state=request.seed, max_concurrent=request.max_concurrent or 0
        )
        param_space = self.compiler.compile(request.space, lossy=request.lossy).native
        return search_alg, param_space, request.trials // request.space.grid_size()

    def make(self, request: SearchRequest) -> Any:
        return ConditionalRandomSearcher(request)

    def sample(self, request: SearchRequest, n: int) -> list[dict[str, Any]]:
        if not self._variants(request):
            return super().sample(request, n)
        # BasicVariantGenerator runs the points to evaluate first, each standing for one sample, then
        # draws with the same generator and seeding as in a sweep.
        configs = [dict(p) for p in request.points or []][:n]
        variants = _compat.variant_configs(self.compiler.compile(request.space, lossy=request.lossy).native, request.seed)
        while len(configs) < n:
            configs.append(next(variants))
        return configs


class GridSearcher(RandomSearcher):
    name = "grid"
    doc = "every combination of the grid domains (all parameters must be 'grid' or fixed)"
    Options: ClassVar[type[Section]] = NoOptions
    #: A grid is no initial population for PBT (which cannot mutate a grid domain).
    provides = frozenset()

    def check(self, space: SearchSpace, options: Any) -> list[Problem]:
        return super().check(space, options) + [
            Problem(f"search_space.{p.path}", f"searcher 'grid' takes only 'grid' domains or fixed values, got {p.domain.kind!r}")
            for p in space
            if not isinstance(p.domain, (Grid, Fixed))
        ]


ENTRIES = (RandomSearcher(), GridSearcher())
