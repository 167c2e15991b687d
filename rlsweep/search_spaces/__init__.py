"""Search spaces: canonical domains and conditions, compiled exactly to each searcher's native form."""

from rlsweep.search_spaces._base import SpaceCompiler
from rlsweep.search_spaces._bayesopt import BayesOptCompiler, BayesOptSpace
from rlsweep.search_spaces._configspace import ConfigSpaceCompiler, ConfigSpaceSpace
from rlsweep.search_spaces._hyperopt import HyperOptCompiler, HyperOptSpace
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
from rlsweep.search_spaces._pbt import IntoDomains, Pb2Compiler, PbtCompiler
from rlsweep.search_spaces._tune import TuneCompiler

__all__ = [
    "BayesOptCompiler",
    "BayesOptSpace",
    "ConfigSpaceCompiler",
    "ConfigSpaceSpace",
    "HyperOptCompiler",
    "HyperOptSpace",
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
    "IntoDomains",
    "Pb2Compiler",
    "PbtCompiler",
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
