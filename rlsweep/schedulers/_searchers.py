"""The searchers a spec can name, each compiling the search space exactly through its own compiler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rlsweep.errors import IncompatibleError, Problem
from rlsweep.schedulers._base import Entry
from rlsweep.search_spaces import Fixed, Grid, OptunaCompiler, SpaceCompiler, TuneCompiler

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec


class Searcher(Entry):
    section = "searcher"
    #: Model-based searchers learn from results; grid points make no sense for them.
    model_based: ClassVar[bool] = False
    compiler: ClassVar[type[SpaceCompiler]]

    def check(self, spec: SweepSpec) -> list[Problem]:
        problems: list[Problem] = []
        try:
            self.compiler().compile(spec.search_space)
        except IncompatibleError as exc:
            problems.extend(exc.problems)
        if self.model_based:
            problems += [
                Problem(
                    f"search_space.{p.path}",
                    f"a 'grid' domain cannot be combined with the model-based searcher {self.name!r}; "
                    "use 'choice', or searcher 'grid'/'random'",
                )
                for p in spec.search_space
                if isinstance(p.domain, Grid)
            ]
        return problems

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        """Returns ``(search_alg or None, param_space)`` for ``tune.Tuner``."""
        raise NotImplementedError


class RandomSearcher(Searcher):
    name = "random"
    doc = "independent random draws (Ray Tune's BasicVariantGenerator); grid domains are crossed"
    compiler = TuneCompiler

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        from ray.tune.search import BasicVariantGenerator

        grid_points = spec.search_space.grid_size()
        search_alg = BasicVariantGenerator(
            random_state=spec.searcher.seed, max_concurrent=context.get("max_concurrent") or 0
        )
        return search_alg, TuneCompiler().compile(spec.search_space), spec.budget.trials // grid_points


class GridSearcher(RandomSearcher):
    name = "grid"
    doc = "every combination of the grid domains (all parameters must be 'grid' or fixed)"

    def check(self, spec: SweepSpec) -> list[Problem]:
        return super().check(spec) + [
            Problem(f"search_space.{p.path}", f"searcher 'grid' takes only 'grid' domains or fixed values, got {p.domain.kind!r}")
            for p in spec.search_space
            if not isinstance(p.domain, (Grid, Fixed))
        ]


class OptunaSearcher(Searcher):
    name = "optuna"
    doc = "Optuna's TPE sampler over a define-by-run space (conditions supported)"
    model_based = True
    compiler = OptunaCompiler

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        import optuna
        from ray.tune.search import ConcurrencyLimiter
        from ray.tune.search.optuna import OptunaSearch

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        searcher = OptunaSearch(
            space=OptunaCompiler().compile(spec.search_space),
            metric=spec.metric.name,
            mode=spec.metric.mode,
            sampler=optuna.samplers.TPESampler(seed=spec.searcher.seed),
        )
        # Without a limiter, a model-based searcher launches trials one at a time under Tune.
        max_concurrent = context.get("max_concurrent")
        if max_concurrent:
            searcher = ConcurrencyLimiter(searcher, max_concurrent=max_concurrent)
        return searcher, {}, spec.budget.trials


#: Every searcher by the name a spec uses. The CLI's choices and the docs come from here.
SEARCHERS: dict[str, Searcher] = {s.name: s for s in (RandomSearcher(), GridSearcher(), OptunaSearcher())}
