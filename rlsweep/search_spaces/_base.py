"""The protocol every search backend implements, and what backends share.

A backend is one module holding everything about one library: its compiler (``compile(space) ->
CompiledSpace``, exact or refused), the codec between its native values and the declared ones
(``encode`` / ``decode``), its Tune searcher adapter, its registry entry and its ``sample`` path.
"""

from __future__ import annotations

import abc
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, ClassVar

from pydantic import Field, StrictBool, StrictStr

from rlsweep._entry import Entry
from rlsweep._schema import Section
from rlsweep.errors import IncompatibleError, Problem
from rlsweep.search_spaces._domains import (
    Choice,
    Domain,
    Fixed,
    Grid,
    LogUniform,
    Parameter,
    QLogUniform,
    QRandInt,
    QUniform,
    RandInt,
    SearchSpace,
    Uniform,
    nearest,
)


class LossyConversionWarning(UserWarning):
    """A domain was changed to one the backend can express, because the user opted in (``lossy: true``)."""


#: Fallbacks a user may opt into: domain -> (a domain the backend can express, what changed).
Fallback = Callable[[Any], tuple[Domain, str]]


def drop_q(domain: Any) -> tuple[Domain, str]:
    return (LogUniform if isinstance(domain, QLogUniform) else Uniform)(domain.low, domain.high), f"quantization q={domain.q} dropped"


def normal_as_uniform(domain: Any) -> tuple[Domain, str]:
    return Uniform(domain.mean - 3 * domain.sd, domain.mean + 3 * domain.sd), f"normal({domain.mean}, {domain.sd}) searched as uniform over mean ± 3 sd"


def log_as_linear(domain: Any) -> tuple[Domain, str]:
    return Uniform(domain.low, domain.high), "log scale dropped: searched linearly"


@dataclass(frozen=True)
class CompiledSpace:
    """A space in one backend's native form, and the codec between native and declared values.

    Attributes:
        native: What the backend takes (a Tune ``param_space``, an Optuna define-by-run function, ...).
        parameters: The declared parameters it was compiled from (after any opted-in lossy change).
    """

    native: Any
    parameters: tuple[Parameter, ...] = ()

    def encode(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A flat declared config -> the backend's values (for ``points_to_evaluate``)."""
        return dict(config)

    def decode(self, native: Mapping[str, Any]) -> dict[str, Any]:
        """A backend suggestion -> a flat config with the declared Python values."""
        return dict(native)


def choice_index(domain: Choice, value: Any) -> int:
    """The index of ``value`` among a choice's values (lists and dicts compared as declared)."""
    return next(i for i, v in enumerate(domain.values) if Choice((v,)).contains(value))


@dataclass(frozen=True)
class IndexedSpace(CompiledSpace):
    """The codec of a backend that searches a choice by the index of its value and a quantized domain by
    the integer index k of its multiples (value = k * q), and whose numbers may come back as numpy scalars
    or a hair past a bound. Parameters the backend does not search (fixed values, one-value choices) and
    inactive conditional ones are decoded as declared."""

    #: The quantized kinds the backend searches as the index of their multiples.
    quantized: ClassVar[tuple[type, ...]] = (QUniform, QRandInt, QLogUniform)

    def searches(self, path: str) -> bool:
        """Whether the backend has a parameter for ``path``."""
        return True

    def decode(self, native: Mapping[str, Any]) -> dict[str, Any]:
        config: dict[str, Any] = {}
        for parameter in self.parameters:
            domain, path = parameter.domain, parameter.path
            if not parameter.is_active(config):
                continue
            if isinstance(domain, Fixed):
                config[path] = domain.value
            elif isinstance(domain, Choice):
                config[path] = domain.values[int(native.get(path, 0))]
            elif isinstance(domain, self.quantized):
                config[path] = nearest(domain, int(native[path]) * domain.q)
            else:
                config[path] = nearest(domain, native[path])
        return config

    def encode(self, config: Mapping[str, Any]) -> dict[str, Any]:
        encoded: dict[str, Any] = {}
        for parameter in self.parameters:
            domain, path = parameter.domain, parameter.path
            if isinstance(domain, Fixed) or not self.searches(path) or path not in config:
                continue
            value = config[path]
            if isinstance(domain, Choice):
                value = choice_index(domain, value)
            elif isinstance(domain, self.quantized):
                value = int(round(value / domain.q))
            elif isinstance(domain, RandInt):
                value = int(value)
            else:
                value = float(value)
            encoded[path] = value
        return encoded


class SpaceCompiler(abc.ABC):
    """Compiles a :class:`SearchSpace` to one backend's native form, exactly or not at all.

    Subclasses keep a table of handlers, one per domain kind they can express; a kind missing from it is
    an :class:`IncompatibleError` naming the parameter, the backend and what to do instead, unless the
    user opted into a lossy conversion and :attr:`fallbacks` has one for that kind.
    """

    #: The backend's name, and whether it is a searcher or a scheduler, for messages.
    searcher: ClassVar[str]
    role: ClassVar[str] = "searcher"
    #: Whether ``when:`` conditions can be expressed.
    supports_conditions: ClassVar[bool] = False
    #: kind -> how the backend expresses it.
    handlers: ClassVar[Mapping[str, Callable[..., Any]]] = {}
    #: kind -> what to do instead, quoted in the error.
    hints: ClassVar[Mapping[str, str]] = {}
    fallbacks: ClassVar[Mapping[str, Fallback]] = {}

    @abc.abstractmethod
    def compile(self, space: SearchSpace, *, lossy: bool = False) -> CompiledSpace:
        """Return the backend's native search space. Raises :class:`IncompatibleError`."""

    def check(self, space: SearchSpace, lossy: bool = False) -> SearchSpace:
        """Raise one error listing every parameter this backend cannot express; with ``lossy``, return
        the space with each such domain replaced by its fallback, warning what changed."""
        problems = []
        parameters = []
        for parameter in space:
            kind = parameter.domain.kind
            if kind not in self.handlers:
                if lossy and kind in self.fallbacks:
                    domain, change = self.fallbacks[kind](parameter.domain)
                    warnings.warn(
                        f"search_space.{parameter.path}: {self.role} {self.searcher!r} cannot express {kind!r}; {change}",
                        LossyConversionWarning,
                        stacklevel=3,
                    )
                    parameter = replace(parameter, domain=domain)
                else:
                    problems.append(self._unsupported(parameter, parameter.domain))
            if parameter.when and not self.supports_conditions:
                problems.append(
                    Problem(
                        f"search_space.{parameter.path}.when",
                        f"{self.role} {self.searcher!r} cannot express conditions; use searcher 'random', 'optuna', "
                        "'hyperopt', 'bohb' or 'ax', or drop the condition",
                    )
                )
            parameters.append(parameter)
        if problems:
            raise IncompatibleError(problems)
        return SearchSpace(tuple(parameters))

    def choice_parents(self, space: SearchSpace) -> tuple[dict[str, list[Parameter]], list[Problem]]:
        """For a backend whose conditions nest under a choice (HyperOpt's nested ``hp.choice``, Ax's
        hierarchical space): each parent's conditional children, and a problem for every condition on more
        than one parent or on a parent that is not a ``choice``."""
        by_path = {p.path: p for p in space}
        children: dict[str, list[Parameter]] = {}
        problems = []
        for parameter in space:
            if not parameter.when:
                continue
            where = f"search_space.{parameter.path}.when"
            if len(parameter.when) > 1:
                problems.append(Problem(where, f"{self.role} {self.searcher!r} can condition a parameter on one parent only; "
                                        "use searcher 'optuna' or 'bohb'"))
                continue
            (parent, _), = parameter.when.items()
            if not isinstance(by_path[parent].domain, Choice):
                problems.append(Problem(where, f"{self.role} {self.searcher!r} needs the parent {parent!r} to be a 'choice' "
                                        "domain; use searcher 'optuna' or 'bohb'"))
                continue
            children.setdefault(parent, []).append(parameter)
        return children, problems

    def _unsupported(self, parameter: Parameter, domain: Domain) -> Problem:
        hint = self.hints.get(domain.kind, f"use another {self.role} or another domain")
        optin = " (or set searcher.lossy: true to accept a conversion)" if domain.kind in self.fallbacks else ""
        return Problem(
            f"search_space.{parameter.path}",
            f"{self.role} {self.searcher!r} cannot express a {domain.kind!r} domain exactly; {hint}{optin}",
        )


# --- searchers ---------------------------------------------------------------------------------------


class SearcherOptions(Section):
    """Options every searcher that can start from known configs accepts."""

    points_to_evaluate: list[dict[str, Any]] | None = None
    """configs to try first (flat, keyed by parameter path), e.g. RLlib's tuned example"""
    lossy: StrictBool = False
    """accept a lossy conversion of a domain the searcher cannot express, with a warning"""
    warm_start: Annotated[StrictStr, Field(min_length=1)] | None = None
    """'zoo': rl-baselines3-zoo's published hyperparameters for the algorithm and env, tried first; or a
    previous sweep's directory, whose finished trials reach the searcher without being rerun (optuna)"""


@dataclass(frozen=True)
class SearchRequest:
    """What a searcher is built from: the space, the metric, its seed and options, and the sweep's size."""

    space: SearchSpace
    metric: str
    mode: str
    seed: int | None = None
    options: Any = field(default_factory=SearcherOptions)
    trials: int = 1
    #: At most this many trials at once (``budget.max_concurrent``); None: no cap of the user's.
    max_concurrent: int | None = None
    #: How many trials the Ray cluster holds now; the searcher's concurrency follows it while the sweep runs.
    capacity: Callable[[], int] | None = None
    #: Points a warm start puts first (before ``points_to_evaluate``), flat and declared.
    warm_points: tuple[dict[str, Any], ...] = ()
    #: Trials of an earlier sweep the searcher learns from without running them (``config``, ``value``,
    #: ``pruned``, ``intermediate``).
    evaluated: tuple[Any, ...] = ()

    @property
    def lossy(self) -> bool:
        return bool(getattr(self.options, "lossy", False))

    @property
    def points(self) -> list[dict[str, Any]] | None:
        """``points_to_evaluate`` with ints given for float domains as floats (``lr: 1`` in YAML)."""
        points = [*self.warm_points, *(getattr(self.options, "points_to_evaluate", None) or [])]
        if not points:
            return None
        return [
            {k: float(v) if _int_for_float(self.space, k, v) else v for k, v in point.items()}
            for point in points
        ]


    def points_for(self, compiled: CompiledSpace) -> list[dict[str, Any]] | None:
        """The points to evaluate in the backend's encoding, or None."""
        points = self.points
        return [compiled.encode(point) for point in points] if points else None


def _int_for_float(space: SearchSpace, path: str, value: Any) -> bool:
    # ``lr: 1`` in YAML is an int; a float domain accepts it as the same number.
    parameter = next((p for p in space if p.path == path), None)
    return (
        parameter is not None
        and isinstance(value, int)
        and not isinstance(value, bool)
        and not parameter.domain.contains(value)
        and parameter.domain.contains(float(value))
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
            elif not parameter.domain.contains(value) and not _int_for_float(space, parameter.path, value):
                problems.append(Problem(f"{loc}.{parameter.path}", f"{value!r} cannot be drawn from its {parameter.domain.kind} domain"))
            seen[parameter.path] = value
    return problems


class SearcherEntry(Entry):
    """A searcher a spec can name: one backend's compiler, adapter and sample path."""

    section = "searcher"
    Options: ClassVar[type[Section]] = SearcherOptions
    #: Model-based searchers learn from results; grid points make no sense for them.
    model_based: ClassVar[bool] = False
    #: The most configs :meth:`sample` draws in a dry run (``rlsweep sample -n``): a searcher whose draws
    #: grow slower as it suggests more (a model refit per draw) sets what it draws within ~15 s on 2 cores.
    max_samples: ClassVar[int] = 10_000

    def samples_problem(self, n: int) -> str | None:
        """Why a dry run of ``n`` draws is refused (fewer than one, or more than :attr:`max_samples`), or None."""
        if n < 1:
            return f"must be >= 1 (a dry run of a sweep's first configs), got {n}"
        if n > self.max_samples:
            # Model-based searchers refit per draw, so a dry run's cost grows faster than its length.
            return f"a dry run of searcher {self.name!r} draws at most {self.max_samples:,} configs (so that it ends within seconds), got {n}"
        return None
    compiler: ClassVar[SpaceCompiler]

    #: The modules this backend imports beyond rlsweep's own dependencies (an optional extra), and the
    #: pip command that installs them.
    packages: ClassVar[tuple[str, ...]] = ()
    install: ClassVar[str] = ""

    def missing(self) -> list[Problem]:
        """The backend's packages that are not installed, with the command that installs them."""
        import importlib.util

        absent = [name for name in self.packages if importlib.util.find_spec(name) is None]
        if not absent:
            return []
        return [Problem("searcher.name", f"searcher {self.name!r} needs {' and '.join(absent)}, which "
                        f"{'is' if len(absent) == 1 else 'are'} not installed; install with: {self.install}")]

    def check(self, space: SearchSpace, options: Any) -> list[Problem]:
        """Every problem of this searcher with this space and these (valid) options."""
        problems: list[Problem] = self.missing()
        if problems:
            return problems
        try:
            self.compiler.compile(space, lossy=bool(getattr(options, "lossy", False)))
        except IncompatibleError as exc:
            problems.extend(exc.problems)
        if self.model_based:
            problems += [
                Problem(
                    f"search_space.{p.path}",
                    f"a 'grid' domain cannot be combined with the model-based searcher {self.name!r}; "
                    "use 'choice', or searcher 'grid'/'random'",
                )
                for p in space
                if isinstance(p.domain, Grid)
            ]
        points = getattr(options, "points_to_evaluate", None)
        if points is not None:
            problems += point_problems(space, points)
        return problems

    def check_budget(self, space: SearchSpace, options: Any, budget: Any) -> list[Problem]:
        """Problems of this searcher, with these (valid) options, with the spec's ``budget`` (its trials
        and ``max_concurrent``)."""
        return []

    def build(self, request: SearchRequest) -> tuple[Any, dict[str, Any], int]:
        """Returns ``(search_alg, param_space, num_samples)`` for ``tune.Tuner``."""
        searcher = self.searcher(request)
        # Suggest no more trials than may run at once: a model-based searcher then draws each with every
        # result in so far, instead of queueing a draw that waits PENDING for a free CPU.
        if request.max_concurrent or request.capacity:
            from rlsweep.search_spaces._limiter import ClusterLimiter

            searcher = ClusterLimiter(searcher, cap=request.max_concurrent, capacity=request.capacity)
        return searcher, {}, request.trials

    @abc.abstractmethod
    def make(self, request: SearchRequest) -> Any:
        """The Tune ``Searcher``, suggesting flat configs with the declared types."""

    def searcher(self, request: SearchRequest) -> Any:
        """:meth:`make`'s searcher, told about the request's evaluated trials."""
        searcher = self.make(request)
        if request.evaluated:
            self.add_evaluated(searcher, request)
        return searcher

    def add_evaluated(self, searcher: Any, request: SearchRequest) -> None:
        """Tell ``searcher`` about trials that ran elsewhere (``searcher.warm_start: DIR``)."""
        raise IncompatibleError([Problem("searcher.warm_start", f"searcher {self.name!r} takes no evaluated trials")])

    def sample(self, request: SearchRequest, n: int) -> list[dict[str, Any]]:
        """The first ``n`` configs this searcher would suggest, without running a trial."""
        searcher = self.searcher(request)
        configs: list[dict[str, Any]] = []
        for i in range(n):
            suggestion = searcher.suggest(f"sample_{i:05d}")
            if not isinstance(suggestion, Mapping):  # None, or Searcher.FINISHED: nothing more to draw
                break
            configs.append(dict(suggestion))
        return configs
