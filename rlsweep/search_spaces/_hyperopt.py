"""Compile a search space to HyperOpt: ``hp`` expressions, conditions as nested ``hp.choice``.

Choices are searched as ``hp.choice`` over indices and decoded here, so any value (lists, dicts) comes back
as the declared object and HyperOpt never interprets a value as a sub-space. A conditional parameter lives
inside the branch of its parent's ``hp.choice`` for which it is active; the parent must be a choice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rlsweep import _compat
from rlsweep.errors import IncompatibleError
from rlsweep.search_spaces._base import CompiledSpace, SearcherEntry, SearchRequest, SpaceCompiler
from rlsweep.search_spaces._domains import (
    Choice,
    Fixed,
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

#: The key a choice branch carries its index under.
INDEX = "__index__"


def _hp() -> Any:
    from hyperopt import hp

    return hp


# label -> domain -> hyperopt expression. Integer domains are decoded to Python ints.
_HANDLERS: dict[str, Callable[[str, Any], Any]] = {
    Uniform.kind: lambda label, d: _hp().uniform(label, d.low, d.high),
    LogUniform.kind: lambda label, d: _hp().loguniform(label, math.log(d.low), math.log(d.high)),
    QUniform.kind: lambda label, d: _hp().quniform(label, d.low, d.high, d.q),
    QLogUniform.kind: lambda label, d: _hp().qloguniform(label, math.log(d.low), math.log(d.high), d.q),
    RandInt.kind: lambda label, d: _hp().randint(label, d.low, d.high + 1),
    QRandInt.kind: lambda label, d: _hp().quniform(label, d.low, d.high, d.q),
    # round(exp(u)) over [ln low, ln high]: every integer of [low, high] reachable, log-distributed.
    LogRandInt.kind: lambda label, d: _hp().qloguniform(label, math.log(d.low), math.log(d.high), 1),
    Normal.kind: lambda label, d: _hp().normal(label, d.mean, d.sd),
    Choice.kind: lambda label, d: _hp().choice(label, list(range(len(d.values)))),
    Fixed.kind: lambda label, d: d.value,
}

_INTEGER_KINDS = {RandInt.kind, QRandInt.kind, LogRandInt.kind}


@dataclass(frozen=True)
class HyperOptSpace(CompiledSpace):
    """The compiled space: ``native`` for ``HyperOptSearch(space=...)`` plus the codec around it."""

    def _by_path(self) -> dict[str, Parameter]:
        return {p.path: p for p in self.parameters}

    def decode(self, native: Mapping[str, Any]) -> dict[str, Any]:
        """A (nested) HyperOpt suggestion -> a flat rlsweep config with the declared types."""
        by_path = self._by_path()
        flat: dict[str, Any] = {}

        def walk(node: Mapping[str, Any]) -> None:
            for key, value in node.items():
                if key == INDEX:
                    continue
                parameter = by_path[key]
                domain = parameter.domain
                if isinstance(domain, Choice):
                    index = int(value[INDEX]) if isinstance(value, Mapping) else int(value)
                    flat[key] = domain.values[index]
                    if isinstance(value, Mapping):
                        walk(value)
                elif domain.kind in _INTEGER_KINDS:
                    flat[key] = int(round(float(value)))
                elif isinstance(domain, Fixed):
                    flat[key] = value
                else:
                    flat[key] = float(value)

        walk(native)
        return {p.path: flat[p.path] for p in self.parameters if p.path in flat}

    def encode(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A flat rlsweep config -> HyperOpt's ``{label: raw value}`` (choices as indices), for
        ``points_to_evaluate``. Only the active parameters' labels appear."""
        encoded: dict[str, Any] = {}
        for parameter in self.parameters:
            if parameter.path not in config or isinstance(parameter.domain, Fixed):
                continue
            value = config[parameter.path]
            if isinstance(parameter.domain, Choice):
                value = next(i for i, v in enumerate(parameter.domain.values) if Choice((v,)).contains(value))
            encoded[_label(parameter, config)] = value
        return encoded


def _label(parameter: Parameter, draws: Mapping[str, Any]) -> str:
    # HyperOpt labels must be unique across branches: a conditional parameter is named by its branch.
    if not parameter.when:
        return parameter.path
    (parent, _), = parameter.when.items()
    return f"{parameter.path}|{parent}={draws.get(parent)!r}"


class HyperOptCompiler(SpaceCompiler):
    """See the module docstring. Conditions need a single parent that is a ``choice``."""

    searcher = "hyperopt"
    supports_conditions = True
    handlers = _HANDLERS

    hints = {"grid": "use 'choice', or searcher 'grid'"}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> HyperOptSpace:
        space = self.check(space, lossy)
        children, problems = self.choice_parents(space)
        if problems:
            raise IncompatibleError(problems)

        def build(parameter: Parameter, draws: dict[str, Any]) -> Any:
            label = _label(parameter, draws)
            domain = parameter.domain
            if not isinstance(domain, Choice) or parameter.path not in children:
                return _HANDLERS[domain.kind](label, domain)
            branches = []
            for index, value in enumerate(domain.values):
                branch_draws = {**draws, parameter.path: value}
                branch: dict[str, Any] = {INDEX: index}
                for child in children[parameter.path]:
                    if child.is_active(branch_draws):
                        branch[child.path] = build(child, branch_draws)
                branches.append(branch)
            return _hp().choice(label, branches)

        top = {p.path: build(p, {}) for p in space if not p.when}
        return HyperOptSpace(top, tuple(space))


class HyperOptSearcher(SearcherEntry):
    name = "hyperopt"
    doc = "HyperOpt's TPE; conditions as nested choices (one 'choice' parent per parameter)"
    model_based = True
    # TPE's draws slow as it drew more: 1000 took 4 s here with 2 parameters, 14 s with 8 (3000: 21 s with 2).
    max_samples = 1000
    compiler = HyperOptCompiler()

    def make(self, request: SearchRequest) -> Any:
        from rlsweep.search_spaces._searcher import DecodingSearcher

        compiled = self.compiler.compile(request.space, lossy=request.lossy)
        search = _compat.hyperopt_search_with_encoded_points()
        return DecodingSearcher(
            search(space=compiled.native, metric=request.metric, mode=request.mode,
                   points_to_evaluate=request.points_for(compiled), random_state_seed=request.seed),
            compiled.decode,
        )


ENTRIES = (HyperOptSearcher(),)
