"""Search spaces: canonical domains and conditions, compiled exactly to each searcher's native form."""

from rlsweep.search_spaces._base import SpaceCompiler
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
    parse_search_space,
)
from rlsweep.search_spaces._optuna import OptunaCompiler
from rlsweep.search_spaces._tune import TuneCompiler

__all__ = [
    "DOMAIN_KINDS",
    "Choice",
    "Domain",
    "Fixed",
    "Grid",
    "LogRandInt",
    "LogUniform",
    "Normal",
    "OptunaCompiler",
    "Parameter",
    "QLogUniform",
    "QRandInt",
    "QUniform",
    "RandInt",
    "SearchSpace",
    "SpaceCompiler",
    "TuneCompiler",
    "Uniform",
    "parse_search_space",
]
