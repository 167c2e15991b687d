"""BOHB: a ConfigSpace ``ConfigurationSpace`` (conditions included) for Tune's ``TuneBOHB``, which runs
only beside the 'bohb' scheduler (HyperBand for BOHB).

Choices become categorical hyperparameters over labels (``repr`` of each value) and are decoded back to
the declared objects, so BOHB's ``np.str_`` values never reach a trial. Quantized linear domains become
integer hyperparameters over the multiple's index k (value = k * q), which is exact: ConfigSpace 1.x has
no ``q`` and hpbandster's BOHB refuses ordinal hyperparameters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rlsweep.errors import IncompatibleError, Problem
from rlsweep.search_spaces._base import CompiledSpace, SearcherEntry, SearchRequest, SpaceCompiler, drop_q
from rlsweep.search_spaces._domains import (
    Choice,
    Fixed,
    LogRandInt,
    LogUniform,
    Normal,
    QRandInt,
    QUniform,
    RandInt,
    SearchSpace,
    Uniform,
)

#: A normal domain is truncated this many standard deviations out (ConfigSpace needs bounds).
NORMAL_SDS = 10


def _cs() -> Any:
    import ConfigSpace

    return ConfigSpace


def _labels(domain: Choice) -> list[str]:
    return [repr(v) for v in domain.values]


def _multiple_index(domain: Any, value: float) -> int:
    return int(round(value / domain.q))


def _from_index(domain: Any, index: Any) -> int | float:
    return int(index) * domain.q if isinstance(domain, QRandInt) else float(int(index) * domain.q)


_HANDLERS: dict[str, Callable[[str, Any], Any]] = {
    Uniform.kind: lambda n, d: _cs().UniformFloatHyperparameter(n, d.low, d.high),
    LogUniform.kind: lambda n, d: _cs().UniformFloatHyperparameter(n, d.low, d.high, log=True),
    RandInt.kind: lambda n, d: _cs().UniformIntegerHyperparameter(n, d.low, d.high),
    LogRandInt.kind: lambda n, d: _cs().UniformIntegerHyperparameter(n, d.low, d.high, log=True),
    QUniform.kind: lambda n, d: _cs().UniformIntegerHyperparameter(n, _multiple_index(d, d.low), _multiple_index(d, d.high)),
    QRandInt.kind: lambda n, d: _cs().UniformIntegerHyperparameter(n, _multiple_index(d, d.low), _multiple_index(d, d.high)),
    Normal.kind: lambda n, d: _cs().NormalFloatHyperparameter(
        n, d.mean, d.sd, d.mean - NORMAL_SDS * d.sd, d.mean + NORMAL_SDS * d.sd
    ),
    Choice.kind: lambda n, d: _cs().CategoricalHyperparameter(n, _labels(d)),
    Fixed.kind: lambda n, d: None,
}


@dataclass(frozen=True)
class ConfigSpaceSpace(CompiledSpace):
    """The ``ConfigurationSpace`` and the codec between its values and the declared ones."""

    def decode(self, native: Mapping[str, Any]) -> dict[str, Any]:
        flat: dict[str, Any] = {}
        for parameter in self.parameters:
            domain = parameter.domain
            if isinstance(domain, Fixed):
                if parameter.is_active(flat):
                    flat[parameter.path] = domain.value
                continue
            if parameter.path not in native:
                continue
            value = native[parameter.path]
            if isinstance(domain, Choice):
                flat[parameter.path] = domain.values[_labels(domain).index(str(value))]
            elif isinstance(domain, (QUniform, QRandInt)):
                flat[parameter.path] = _from_index(domain, value)
            elif isinstance(domain, RandInt):
                flat[parameter.path] = int(value)
            else:
                flat[parameter.path] = float(value)
        return flat

    def encode(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A flat rlsweep config -> ConfigSpace values (choices as labels), for ``points_to_evaluate``."""
        encoded = {}
        for parameter in self.parameters:
            if parameter.path in config and not isinstance(parameter.domain, Fixed):
                value, domain = config[parameter.path], parameter.domain
                if isinstance(domain, Choice):
                    value = repr(value)
                elif isinstance(domain, (QUniform, QRandInt)):
                    value = _multiple_index(domain, value)
                encoded[parameter.path] = value
        return encoded


class ConfigSpaceCompiler(SpaceCompiler):
    """See the module docstring."""

    searcher = "bohb"
    supports_conditions = True
    handlers = _HANDLERS

    hints = {
        "qloguniform": "ConfigSpace 1.x has no quantization on a log scale; use 'loguniform' or 'lograndint'",
        "grid": "use 'choice', or searcher 'grid'",
    }
    fallbacks = {"qloguniform": drop_q}

    def compile(self, space: SearchSpace, *, lossy: bool = False, seed: int | None = None) -> ConfigSpaceSpace:
        space = self.check(space, lossy)
        cs = _cs()
        problems = []
        configuration_space = cs.ConfigurationSpace(seed=seed)
        hyperparameters = {}
        for parameter in space:
            hyperparameter = _HANDLERS[parameter.domain.kind](parameter.path, parameter.domain)
            if hyperparameter is not None:
                hyperparameters[parameter.path] = hyperparameter
                configuration_space.add(hyperparameter)
        for parameter in space:
            if not parameter.when or parameter.path not in hyperparameters:
                continue
            conditions = []
            for parent, allowed in parameter.when.items():
                where = f"search_space.{parameter.path}.when.{parent}"
                if parent not in hyperparameters:
                    problems.append(Problem(where, "searcher 'bohb' cannot condition on a fixed value; drop the condition"))
                    continue
                parent_domain = next(p.domain for p in space if p.path == parent)
                values = [repr(v) if isinstance(parent_domain, Choice) else v for v in allowed]
                child, parent_hp = hyperparameters[parameter.path], hyperparameters[parent]
                conditions.append(
                    cs.EqualsCondition(child, parent_hp, values[0]) if len(values) == 1 else cs.InCondition(child, parent_hp, values)
                )
            if len(conditions) == 1:
                configuration_space.add(conditions[0])
            elif conditions:
                configuration_space.add(cs.AndConjunction(*conditions))
        if problems:
            raise IncompatibleError(problems)
        return ConfigSpaceSpace(configuration_space, tuple(space))


class BohbSearcher(SearcherEntry):
    name = "bohb"
    doc = "BOHB's model over a ConfigSpace space (conditions supported); pairs with the 'bohb' scheduler"
    model_based = True
    provides = frozenset({"bohb_model"})
    requires = frozenset({"bohb_budgets"})
    requires_reason = (
        "BOHB's model is fitted per budget, and only the 'bohb' scheduler (HyperBandForBOHB) tells it the budgets; "
        "use preset 'bohb', or searcher 'optuna'/'hyperopt' with another scheduler"
    )
    compiler = ConfigSpaceCompiler()

    def make(self, request: SearchRequest) -> Any:
        from ray.tune.search.bohb import TuneBOHB

        from rlsweep.search_spaces._searcher import DecodingSearcher

        compiled = self.compiler.compile(request.space, lossy=request.lossy, seed=request.seed)
        return DecodingSearcher(
            TuneBOHB(space=compiled.native, metric=request.metric, mode=request.mode,
                     points_to_evaluate=request.points_for(compiled), seed=request.seed),
            compiled.decode,
        )


ENTRIES = (BohbSearcher(),)
