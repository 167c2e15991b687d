"""The searchers a spec can name, each compiling the search space exactly through its own compiler."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from rlsweep.errors import IncompatibleError, Problem
from rlsweep.schedulers._base import Entry, Option
from rlsweep.search_spaces import (
    BayesOptCompiler,
    Choice,
    ConfigSpaceCompiler,
    Fixed,
    Grid,
    HyperOptCompiler,
    OptunaCompiler,
    SearchSpace,
    SpaceCompiler,
    TuneCompiler,
)

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

#: Options every searcher that can start from known configs accepts.
POINTS_OPTION = Option(
    (list,), None, doc="configs to try first (flat, keyed by parameter path), e.g. RLlib's tuned example"
)


def point_problems(space: SearchSpace, points: Any, where: str = "searcher.points_to_evaluate") -> list[Problem]:
    """Each point must give every active parameter a value its domain can draw, and nothing else."""
    if not isinstance(points, list):
        return [Problem(where, f"must be a list of configs, got {points!r}")]
    problems = []
    by_path = {p.path: p for p in space}
    for index, point in enumerate(points):
        loc = f"{where}[{index}]"
        if not isinstance(point, Mapping):
            problems.append(Problem(loc, f"must map parameter paths to values, got {point!r}"))
            continue
        for key in point:
            if key not in by_path:
                problems.append(Problem(f"{loc}.{key}", "is not a parameter of search_space"))
        seen: dict[str, Any] = {}
        for parameter in space:
            active = parameter.is_active(seen)
            if parameter.path not in point:
                if active and not isinstance(parameter.domain, Fixed):
                    problems.append(Problem(f"{loc}.{parameter.path}", "is missing; give every active parameter a value"))
                continue
            value = point[parameter.path]
            if not active:
                problems.append(Problem(f"{loc}.{parameter.path}", "is set but its condition does not hold in this point"))
            elif not parameter.domain.contains(value) and not _int_for_float(parameter, value):
                problems.append(Problem(f"{loc}.{parameter.path}", f"{value!r} cannot be drawn from its {parameter.domain.kind} domain"))
            seen[parameter.path] = value
    return problems


def _int_for_float(parameter: Any, value: Any) -> bool:
    # ``lr: 1`` in YAML is an int; a float domain accepts it as the same number.
    return isinstance(value, int) and not isinstance(value, bool) and parameter.domain.contains(float(value))


def points_to_evaluate(spec: SweepSpec) -> list[dict[str, Any]] | None:
    points = spec.searcher.options.get("points_to_evaluate")
    if not points:
        return None
    normalized = []
    for point in points:
        converted = dict(point)
        for parameter in spec.search_space:
            if parameter.path in converted and _int_for_float(parameter, converted[parameter.path]):
                converted[parameter.path] = float(converted[parameter.path])
        normalized.append(converted)
    return normalized


LOSSY_OPTION = Option((bool,), False, doc="accept a lossy conversion of a domain the searcher cannot express, with a warning")


def _lossy(spec: SweepSpec) -> bool:
    return bool(spec.searcher.options.get("lossy", False))


def _encoded_points(spec: SweepSpec, encode: Any) -> list[dict[str, Any]] | None:
    points = points_to_evaluate(spec)
    return [encode(point) for point in points] if points else None


class Searcher(Entry):
    section = "searcher"
    options: ClassVar[Mapping[str, Option]] = {"points_to_evaluate": POINTS_OPTION, "lossy": LOSSY_OPTION}
    #: Model-based searchers learn from results; grid points make no sense for them.
    model_based: ClassVar[bool] = False
    compiler: ClassVar[type[SpaceCompiler]]

    def check(self, spec: SweepSpec) -> list[Problem]:
        problems: list[Problem] = []
        try:
            self.compiler().compile(spec.search_space, lossy=_lossy(spec))
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
        if "points_to_evaluate" in spec.searcher.options and "points_to_evaluate" in self.options:
            problems += point_problems(spec.search_space, spec.searcher.options["points_to_evaluate"])
        return problems

    def build(self, spec: SweepSpec, **context: Any) -> tuple[Any, dict[str, Any], int]:
        """Returns ``(search_alg, param_space, num_samples)`` for ``tune.Tuner``."""
        searcher = self.make(spec)
        # Without a limiter, a model-based searcher launches trials one at a time under Tune.
        max_concurrent = context.get("max_concurrent")
        if max_concurrent:
            from ray.tune.search import ConcurrencyLimiter

            searcher = ConcurrencyLimiter(searcher, max_concurrent=max_concurrent)
        return searcher, {}, spec.budget.trials

    def make(self, spec: SweepSpec) -> Any:
        """The Tune ``Searcher``, suggesting flat configs with the declared types."""
        raise NotImplementedError


class RandomSearcher(Searcher):
    name = "random"
    doc = "independent random draws from Tune's samplers; grid domains are crossed; conditions supported"
    compiler = TuneCompiler

    def check(self, spec: SweepSpec) -> list[Problem]:
        conditional = any(p.when for p in spec.search_space)
        problems = [p for p in super().check(spec) if not (conditional and p.path.endswith(".when"))]
        if conditional:
            problems += [
                Problem(f"search_space.{p.path}", "a 'grid' domain cannot be combined with conditions; use 'choice'")
                for p in spec.search_space
                if isinstance(p.domain, Grid)
            ]
        return problems

    def build(self, spec: SweepSpec, **context: Any) -> tuple[Any, dict[str, Any], int]:
        if any(p.when for p in spec.search_space):
            return super().build(spec, **context)
        from ray.tune.search import BasicVariantGenerator

        search_alg = BasicVariantGenerator(
            points_to_evaluate=points_to_evaluate(spec),
            random_state=spec.searcher.seed,
            max_concurrent=context.get("max_concurrent") or 0,
        )
        return search_alg, TuneCompiler().compile(spec.search_space, lossy=_lossy(spec)), spec.budget.trials // spec.search_space.grid_size()

    def make(self, spec: SweepSpec) -> Any:
        from rlsweep.schedulers._adapters import ConditionalRandomSearcher

        return ConditionalRandomSearcher(
            tuple(spec.search_space),
            metric=spec.metric.name,
            mode=spec.metric.mode,
            seed=spec.searcher.seed,
            points_to_evaluate=points_to_evaluate(spec),
        )


class GridSearcher(RandomSearcher):
    name = "grid"
    doc = "every combination of the grid domains (all parameters must be 'grid' or fixed)"
    options: ClassVar[Mapping[str, Option]] = {}

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

    def make(self, spec: SweepSpec) -> Any:
        import optuna
        from ray.tune.search.optuna import OptunaSearch

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        points = points_to_evaluate(spec)
        if points:
            # Optuna stores non-primitive choices by label; enqueue points in that form.
            labelled = {
                p.path for p in spec.search_space if isinstance(p.domain, Choice) and not OptunaCompiler.primitive(p.domain)
            }
            points = [{k: repr(v) if k in labelled else v for k, v in point.items()} for point in points]
        return OptunaSearch(
            space=OptunaCompiler().compile(spec.search_space, lossy=_lossy(spec)),
            metric=spec.metric.name,
            mode=spec.metric.mode,
            sampler=optuna.samplers.TPESampler(seed=spec.searcher.seed),
            points_to_evaluate=points,
        )


class HyperOptSearcher(Searcher):
    name = "hyperopt"
    doc = "HyperOpt's TPE; conditions as nested choices (one 'choice' parent per parameter)"
    model_based = True
    compiler = HyperOptCompiler

    def make(self, spec: SweepSpec) -> Any:
        from rlsweep.schedulers._adapters import DecodingSearcher, EncodedPointsHyperOptSearch

        compiled = HyperOptCompiler().compile(spec.search_space, lossy=_lossy(spec))
        searcher = EncodedPointsHyperOptSearch(
            space=compiled.space,
            metric=spec.metric.name,
            mode=spec.metric.mode,
            random_state_seed=spec.searcher.seed,
            points_to_evaluate=_encoded_points(spec, compiled.encode),
        )
        return DecodingSearcher(searcher, compiled.decode)


class BohbSearcher(Searcher):
    name = "bohb"
    doc = "BOHB's model over a ConfigSpace space (conditions supported); pairs with the 'bohb' scheduler"
    model_based = True
    partners = frozenset({"bohb"})
    partners_reason = (
        "BOHB's model is fitted per budget, and only the 'bohb' scheduler (HyperBandForBOHB) tells it the budgets; "
        "use preset 'bohb', or searcher 'optuna'/'hyperopt' with another scheduler"
    )
    compiler = ConfigSpaceCompiler

    def make(self, spec: SweepSpec) -> Any:
        from ray.tune.search.bohb import TuneBOHB

        from rlsweep.schedulers._adapters import DecodingSearcher

        compiled = ConfigSpaceCompiler().compile(spec.search_space, lossy=_lossy(spec), seed=spec.searcher.seed)
        searcher = TuneBOHB(
            space=compiled.space,
            metric=spec.metric.name,
            mode=spec.metric.mode,
            seed=spec.searcher.seed,
            points_to_evaluate=_encoded_points(spec, compiled.encode),
        )
        return DecodingSearcher(searcher, compiled.decode)


class BayesOptSearcher(Searcher):
    name = "bayesopt"
    doc = "a Gaussian process (bayesian-optimization 3.x) over continuous domains; log domains in log space"
    model_based = True
    compiler = BayesOptCompiler

    def make(self, spec: SweepSpec) -> Any:
        from rlsweep.schedulers._adapters import BayesOptSearcher as Adapter

        return Adapter(
            BayesOptCompiler().compile(spec.search_space, lossy=_lossy(spec)),
            metric=spec.metric.name,
            mode=spec.metric.mode,
            seed=spec.searcher.seed,
            points_to_evaluate=points_to_evaluate(spec),
        )


#: Every searcher by the name a spec uses. The CLI's choices and the docs come from here.
SEARCHERS: dict[str, Searcher] = {
    s.name: s
    for s in (RandomSearcher(), GridSearcher(), OptunaSearcher(), HyperOptSearcher(), BohbSearcher(), BayesOptSearcher())
}
