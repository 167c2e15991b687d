"""Trainables: the trial loop in named phases, RLlib config building, metric normalization, the timing
split, pre-flight."""

from rlsweep.trainables._config import (
    RLSWEEP_DEFAULTS,
    algorithm_class,
    algorithm_names,
    build_config,
    settings_for,
    trial_resources,
)
from rlsweep.trainables._describe import iteration_line, replay_buffer_line
from rlsweep.trainables._estimate import estimate_reading
from rlsweep.trainables._footprint import (
    MemoryFit,
    far_below,
    hungriest_draw,
    measure_memory,
    memory_fit,
    node_memory_mb,
    reading_for,
    reading_without_measuring,
    trials_that_fit,
)
from rlsweep.trainables._memory import MemoryReading
from rlsweep.trainables._loop import (
    TrialLoop,
    TrialPlan,
    make_confirmation_trainable,
    make_trainable,
    non_finite_losses,
    plan_for,
    train,
)
from rlsweep.trainables._metrics import RLLIB_KEYS, MetricNormalizer
from rlsweep.trainables._preflight import extreme_draws, resource_problems, static_problems
from rlsweep.trainables._timing import PhaseTimer

__all__ = [
    "RLLIB_KEYS",
    "RLSWEEP_DEFAULTS",
    "MemoryFit",
    "MemoryReading",
    "MetricNormalizer",
    "PhaseTimer",
    "TrialLoop",
    "TrialPlan",
    "algorithm_class",
    "algorithm_names",
    "build_config",
    "estimate_reading",
    "extreme_draws",
    "far_below",
    "hungriest_draw",
    "iteration_line",
    "make_confirmation_trainable",
    "make_trainable",
    "measure_memory",
    "memory_fit",
    "node_memory_mb",
    "non_finite_losses",
    "plan_for",
    "reading_for",
    "reading_without_measuring",
    "replay_buffer_line",
    "resource_problems",
    "settings_for",
    "static_problems",
    "train",
    "trial_resources",
    "trials_that_fit",
]
