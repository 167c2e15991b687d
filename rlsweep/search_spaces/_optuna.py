"""Compile a search space to an Optuna define-by-run function (so conditions work)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlsweep.search_spaces._base import DROP_Q, NORMAL_AS_UNIFORM, SpaceCompiler
from rlsweep.search_spaces._domains import (
    Choice,
    Fixed,
    LogRandInt,
    LogUniform,
    Parameter,
    QUniform,
    QRandInt,
    RandInt,
    SearchSpace,
    Uniform,
)

_PRIMITIVES = (type(None), bool, int, float, str)


def _categorical(trial: Any, name: str, domain: Choice) -> Any:
    # Optuna stores only primitive categories; other values (lists, dicts) are suggested by label and
    # decoded here, so the trial gets the declared object, never a label or an index.
    if OptunaCompiler.primitive(domain):
        return trial.suggest_categorical(name, list(domain.values))
    labels = [repr(v) for v in domain.values]
    label = trial.suggest_categorical(name, labels)
    return domain.values[labels.index(label)]


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


class OptunaCompiler(SpaceCompiler):
    """A define-by-run function ``space(trial) -> {path: value}`` for ``OptunaSearch(space=...)``.

    Inactive conditional parameters are never suggested, so they are absent from the trial's config.
    """

    searcher = "optuna"
    supports_conditions = True

    @staticmethod
    def primitive(domain: Choice) -> bool:
        """Whether Optuna can store the choice's values as they are (else they go by ``repr`` label)."""
        return all(isinstance(v, _PRIMITIVES) for v in domain.values)

    hints = {
        "normal": "use 'uniform' over a range, or searcher 'random' or 'hyperopt'",
        "qloguniform": "use 'loguniform' or 'quniform', or searcher 'random' or 'hyperopt'",
        "grid": "use 'choice', or searcher 'grid'",
    }
    fallbacks = {"normal": NORMAL_AS_UNIFORM, "qloguniform": DROP_Q}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> DefineByRun:
        space = self.check(space, _HANDLERS, lossy)
        return DefineByRun(tuple(space))


class DefineByRun:
    """The compiled space: called with an Optuna trial, suggests each active parameter in order.

    A class rather than a closure so searcher state can be pickled (Tune saves it for resume).
    """

    def __init__(self, parameters: tuple[Parameter, ...]) -> None:
        self.parameters = parameters

    def __call__(self, trial: Any) -> dict[str, Any]:
        draws: dict[str, Any] = {}
        for parameter in self.parameters:
            if parameter.is_active(draws):
                draws[parameter.path] = _HANDLERS[parameter.domain.kind](trial, parameter.path, parameter.domain)
        return draws
