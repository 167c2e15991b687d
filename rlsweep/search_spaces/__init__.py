"""Search spaces: canonical domains and conditions, and one backend module per searcher library, each
compiling a space exactly (or refusing it) and holding its codec, Tune adapter, registry entry and sample
path. Backends are imported on first use; :data:`SEARCHERS` names them all."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from rlsweep.search_spaces._base import (
    CompiledSpace,
    LossyConversionWarning,
    SearcherEntry,
    SearcherOptions,
    SearchRequest,
    SpaceCompiler,
    point_problems,
)
from rlsweep.search_spaces._domains import (
    DOMAIN_KINDS,
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
    domain_json_schema,
    parse_search_space,
)

#: searcher name -> the backend module (in this package) whose ``ENTRIES`` hold it.
_BACKENDS: dict[str, str] = {
    "random": "_random",
    "grid": "_random",
    "optuna": "_optuna",
    "hyperopt": "_hyperopt",
    "bohb": "_bohb",
    "bayesopt": "_bayesopt",
    "nevergrad": "_nevergrad",
    "ax": "_ax",
}


class _Searchers(Mapping[str, SearcherEntry]):
    """Every searcher by the name a spec uses; a backend (and its library) is imported on first use. The
    CLI's choices and the docs come from here."""

    def __getitem__(self, name: str) -> SearcherEntry:
        module = importlib.import_module(f"{__name__}.{_BACKENDS[name]}")
        return next(entry for entry in module.ENTRIES if entry.name == name)

    def __iter__(self) -> Iterator[str]:
        return iter(_BACKENDS)

    def __len__(self) -> int:
        return len(_BACKENDS)


SEARCHERS: Mapping[str, SearcherEntry] = _Searchers()


def mutation_compiler(name: str) -> SpaceCompiler:
    """PBT's or PB2's mutation-space compiler (``pbt`` | ``pb2``)."""
    from rlsweep.search_spaces._pbt import Pb2Compiler, PbtCompiler

    return {"pbt": PbtCompiler, "pb2": Pb2Compiler}[name]()


def explore_into_domains(space: SearchSpace) -> Any:
    """PBT/PB2's ``custom_explore_fn`` that keeps every explored value inside its declared domain."""
    from rlsweep.search_spaces._pbt import IntoDomains

    return IntoDomains(space)


def random_draws(space: SearchSpace, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` seeded random draws from ``space`` (conditions respected)."""
    from rlsweep.search_spaces._random import random_draws as draws

    return draws(space, n, seed)


__all__ = [
    "DOMAIN_KINDS",
    "SEARCHERS",
    "Choice",
    "CompiledSpace",
    "Domain",
    "Fixed",
    "Grid",
    "LogRandInt",
    "LogUniform",
    "LossyConversionWarning",
    "Normal",
    "Parameter",
    "QLogUniform",
    "QRandInt",
    "QUniform",
    "RandInt",
    "SearchRequest",
    "SearchSpace",
    "SearcherEntry",
    "SearcherOptions",
    "SpaceCompiler",
    "Uniform",
    "domain_json_schema",
    "explore_into_domains",
    "mutation_compiler",
    "parse_search_space",
    "point_problems",
    "random_draws",
]
