"""Trainables: RLlib config building, metric normalization, the timing split, checkpoints, pre-flight."""

from rlsweep.trainables._config import RLSWEEP_DEFAULTS, algorithm_class, algorithm_names, build_config
from rlsweep.trainables._metrics import RLLIB_KEYS, MetricNormalizer
from rlsweep.trainables._preflight import extreme_draws, resource_problems, static_problems
from rlsweep.trainables._timing import PhaseTimer
from rlsweep.trainables._trainable import CHECKPOINT_META, make_trainable, train, trial_resources

__all__ = [
    "CHECKPOINT_META",
    "RLLIB_KEYS",
    "RLSWEEP_DEFAULTS",
    "MetricNormalizer",
    "PhaseTimer",
    "algorithm_class",
    "algorithm_names",
    "build_config",
    "extreme_draws",
    "make_trainable",
    "resource_problems",
    "static_problems",
    "train",
    "trial_resources",
]
