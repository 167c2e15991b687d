"""Optuna: a define-by-run space (so conditions work), TPE through Tune's ``OptunaSearch``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


class OptunaSearcher(SearcherEntry):
    name = "optuna"
    doc = "Optuna's TPE sampler over a define-by-run space (conditions supported)"
    model_based = True
    compiler = OptunaCompiler()

    def make(self, request: SearchRequest) -> Any:
        import optuna
        from ray.tune.search.optuna import OptunaSearch

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        compiled = self.compiler.compile(request.space, lossy=request.lossy)
        sampler = optuna.samplers.TPESampler(seed=request.seed)
        return OptunaSearch(space=compiled.native, metric=request.metric, mode=request.mode,
                            points_to_evaluate=request.points_for(compiled), sampler=sampler)


ENTRIES = (OptunaSearcher(),)
