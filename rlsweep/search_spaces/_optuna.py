"""Optuna: a define-by-run space (so conditions work), TPE through Tune's ``OptunaSearch``."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt

from rlsweep._schema import Section
from rlsweep.errors import Problem

from rlsweep.search_spaces._base import (
    CompiledSpace,
    SearcherEntry,
    SearcherOptions,
    SearchRequest,
    SpaceCompiler,
    drop_q,
    normal_as_uniform,
)
from rlsweep.search_spaces._domains import (
    Choice,
    Fixed,
    LogRandInt,
    LogUniform,
    Parameter,
    QRandInt,
    QUniform,
    RandInt,
    SearchSpace,
    Uniform,
)

_PRIMITIVES = (type(None), bool, int, float, str)


def _primitive(domain: Choice) -> bool:
    """Whether Optuna can store the choice's values as they are (else they go by ``repr`` label)."""
    return all(isinstance(v, _PRIMITIVES) for v in domain.values)


def _categorical(trial: Any, name: str, domain: Choice) -> Any:
    # Optuna stores only primitive categories; other values (lists, dicts) are suggested by label and
    # decoded here, so the trial gets the declared object, never a label or an index.
    if _primitive(domain):
        return trial.suggest_categorical(name, list(domain.values))
    labels = [repr(v) for v in domain.values]
    return domain.values[labels.index(trial.suggest_categorical(name, labels))]


_HANDLERS: dict[str, Callable[[Any, str, Any], Any]] = {
    Uniform.kind: lambda t, n, d: t.suggest_float(n, d.low, d.high),
    LogUniform.kind: lambda t, n, d: t.suggest_float(n, d.low, d.high, log=True),
    # Bounds are multiples of q (checked when parsed), so Optuna's steps from low are exactly the multiples.
    QUniform.kind: lambda t, n, d: t.suggest_float(n, d.low, d.high, step=d.q),
    RandInt.kind: lambda t, n, d: t.suggest_int(n, d.low, d.high),
    LogRandInt.kind: lambda t, n, d: t.suggest_int(n, d.low, d.high, log=True),
    QRandInt.kind: lambda t, n, d: t.suggest_int(n, d.low, d.high, step=d.q),
    Choice.kind: _categorical,
    Fixed.kind: lambda t, n, d: d.value,
}


class DefineByRun:
    """The native space: called with an Optuna trial, suggests each active parameter in order, so
    inactive conditional parameters are never suggested. A class rather than a closure so searcher state
    can be pickled (Tune saves it for resume)."""

    def __init__(self, parameters: tuple[Parameter, ...]) -> None:
        self.parameters = parameters

    def __call__(self, trial: Any) -> dict[str, Any]:
        draws: dict[str, Any] = {}
        for parameter in self.parameters:
            if parameter.is_active(draws):
                draws[parameter.path] = _HANDLERS[parameter.domain.kind](trial, parameter.path, parameter.domain)
        return draws


@dataclass(frozen=True)
class OptunaSpace(CompiledSpace):
    """Optuna stores non-primitive choices by ``repr`` label: a point is enqueued in that form. What the
    define-by-run function returns is already declared values."""

    def encode(self, config: Mapping[str, Any]) -> dict[str, Any]:
        labelled = {p.path for p in self.parameters if isinstance(p.domain, Choice) and not _primitive(p.domain)}
        return {k: repr(v) if k in labelled else v for k, v in config.items()}


class OptunaCompiler(SpaceCompiler):
    searcher = "optuna"
    supports_conditions = True
    handlers = _HANDLERS
    hints = {
        "normal": "use 'uniform' over a range, or searcher 'random' or 'hyperopt'",
        "qloguniform": "use 'loguniform' or 'quniform', or searcher 'random' or 'hyperopt'",
        "grid": "use 'choice', or searcher 'grid'",
    }
    fallbacks = {"normal": normal_as_uniform, "qloguniform": drop_q}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> OptunaSpace:
        space = self.check(space, lossy)
        return OptunaSpace(DefineByRun(tuple(space)), tuple(space))


class OptunaOptions(SearcherOptions):
    startup_trials: Annotated[StrictInt, Field(ge=1)] | None = None
    """random trials before TPE models the results (default: a quarter of budget.trials, 2 to 10; Optuna's
    own default of 10 leaves a 12-trial sweep a random search)"""
    multivariate: StrictBool = True
    """model the parameters jointly (multivariate TPE, grouped by condition) rather than one by one"""
    sampler: Literal["tpe", "gp", "cmaes", "qmc", "random"] = "tpe"
    """Optuna's sampler: tpe (default), gp (Gaussian process), cmaes (CMA-ES; needs the cmaes package),
    qmc (scrambled Sobol quasi-random), random. Each samples the same define-by-run space; gp and cmaes
    model the numeric parameters jointly and draw choices and conditional parameters independently"""


#: Packages a sampler needs beyond Optuna, by the name pip installs.
SAMPLER_PACKAGES = {"cmaes": "cmaes", "gp": "scipy"}


def startup_trials(options: Any, trials: int) -> int:
    """How many random trials TPE starts with for a sweep of ``trials``."""
    given = getattr(options, "startup_trials", None)
    return int(given) if given is not None else max(2, min(10, trials // 4))


def _sampler(request: SearchRequest) -> Any:
    """The Optuna sampler the options name, seeded, with the sweep's number of random startup trials where
    it has them."""
    import optuna

    name = getattr(request.options, "sampler", "tpe")
    startup = startup_trials(request.options, request.trials)
    quiet = {"warn_independent_sampling": False}  # choices and conditions are drawn independently: documented
    if name == "random":
        return optuna.samplers.RandomSampler(seed=request.seed)
    if name == "qmc":
        return optuna.samplers.QMCSampler(qmc_type="sobol", scramble=True, seed=request.seed, **quiet)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=request.seed, n_startup_trials=startup, **quiet)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=request.seed, n_startup_trials=startup, **quiet)
    multivariate = bool(getattr(request.options, "multivariate", True))
    return optuna.samplers.TPESampler(
        seed=request.seed,
        n_startup_trials=startup,
        multivariate=multivariate,
        group=multivariate,  # joint models per set of parameters that are active together
        # Trials run concurrently: a running trial counts as a bad result while it runs, so two suggestions
        # in a row do not land on the same point.
        constant_liar=True,
    )


class OptunaSearcher(SearcherEntry):
    name = "optuna"
    doc = "Optuna over a define-by-run space (conditions supported); sampler: tpe (default), gp, cmaes, qmc, random"
    model_based = True
    # Each draw reads every earlier one: 10,000 took 53 s here with 8 parameters; 3000 a tenth of that.
    max_samples = 3000
    compiler = OptunaCompiler()
    Options: ClassVar[type[Section]] = OptunaOptions

    def check(self, space: SearchSpace, options: Any) -> list[Problem]:
        """The entry's checks, and a sampler whose package does not import, named with the pip command."""
        import importlib.util

        problems = super().check(space, options)
        sampler = getattr(options, "sampler", "tpe")
        if (package := SAMPLER_PACKAGES.get(sampler)) is not None and importlib.util.find_spec(package) is None:
            problems.append(Problem("searcher.sampler", f"Optuna's {sampler!r} sampler needs the {package} package, "
                                    f"which is not installed; install it with: pip install {package} "
                                    "(or: pip install 'rlsweep[searchers]')"))
        return problems

    def make(self, request: SearchRequest) -> Any:
        import optuna

        from rlsweep.search_spaces._optuna_search import TrialAwareOptunaSearch

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        compiled = self.compiler.compile(request.space, lossy=request.lossy)
        with warnings.catch_warnings():
            # multivariate, group, constant_liar and GP are marked experimental in Optuna 5; rlsweep pins Optuna.
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = _sampler(request)
        return TrialAwareOptunaSearch(space=compiled.native, metric=request.metric, mode=request.mode,
                                      points_to_evaluate=request.points_for(compiled), sampler=sampler)

    def add_evaluated(self, searcher: Any, request: SearchRequest) -> None:
        """Each earlier trial becomes a finished (or pruned) trial of the study, with the distributions the
        define-by-run space gives its config, so TPE models it like one of its own."""
        import optuna

        from rlsweep._compat import optuna_study

        compiled = self.compiler.compile(request.space, lossy=request.lossy)
        study = optuna_study(searcher)
        for trial in request.evaluated:
            fixed = optuna.trial.FixedTrial(compiled.encode(trial.config))
            compiled.native(fixed)
            study.add_trial(
                optuna.trial.create_trial(
                    state=optuna.trial.TrialState.PRUNED if trial.pruned else optuna.trial.TrialState.COMPLETE,
                    value=None if trial.pruned else trial.value,
                    params=fixed.params,
                    distributions=fixed.distributions,
                    intermediate_values=dict(enumerate(trial.intermediate)),
                )
            )


ENTRIES = (OptunaSearcher(),)
