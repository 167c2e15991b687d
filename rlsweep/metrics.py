"""The result row: the one schema every trial reports, and every reader (the analysis tables, the live
logger, the MLflow export, the schedulers' clock) reads.

A row holds rlsweep's normalized metrics (the stable names users write in ``metric`` and ``stop``), the
hyperparameters read back from the running learner (``hp/<spec path>``), RLlib's own numeric keys
(``rllib/<key>``) and the node the trial ran on. The mapping from RLlib's result keys to the normalized
names lives in :mod:`rlsweep.trainables._metrics`; this module imports no Ray, so the spec, the store and
the export can use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: name -> what it means. Every trial reports each of these (:data:`EVALUATION_METRICS` only with ``evaluation``).
NORMALIZED_METRICS: dict[str, str] = {
    "return_mean": "mean episode return over RLlib's smoothing window of recent training episodes",
    "return_min": "lowest episode return in that window",
    "return_max": "highest episode return in that window",
    "episode_len_mean": "mean episode length in that window",
    "episodes": "episodes finished so far in the trial's lifetime",
    "env_steps": "environment steps sampled so far in the trial's lifetime (the budget's unit)",
    "iteration": "training iterations so far",
    "iteration_time_s": "wall time of this iteration",
    "sample_time_s": "time of this iteration spent collecting samples",
    "learn_time_s": "time of this iteration spent in learner updates (IMPALA/APPO: the learner thread's)",
    "other_time_s": "the rest of this iteration (replay buffer, weight sync, metrics)",
    "env_steps_per_s": "env steps sampled in this iteration per second of its wall time (sampling and learning)",
    "time_total_s": "wall time of the trial so far",
    "setup_time_s": "time the trial took to start before its first iteration (settings recorded, algorithm built)",
    "peak_memory_mb": "peak resident memory of the trial's processes (its own, remote env runners, learners)",
    "policy_memory_mb": "MB of every policy's weights and optimizer state, summed over the processes that hold "
    "a copy (env runners act with one, learners learn with one and its optimizer state); per policy as "
    "policy_memory_mb/<policy>",
    "eval_return_mean": "mean return of the latest separate greedy evaluation episodes",
    "eval_time_s": "time the evaluation after this iteration took (0 where none ran; not in iteration_time_s)",
    "task": "the curriculum task the envs trained on in this iteration (as their get_task() reports it)",
    "seeds": "how many training seeds the row's values are over (with seeds.adaptive: 1 at the start, one more "
    "at each check the trial passed as a contender)",
}

#: Reported only when the spec has an ``evaluation`` section.
EVALUATION_METRICS = ("eval_return_mean", "eval_time_s")
#: Reported only when the spec has a ``curriculum`` (and its tasks are numbers).
CURRICULUM_METRICS = ("task",)
#: Reported only with ``seeds.adaptive``: the number of seeds a row is over.
SEEDS_METRIC = "seeds"
ADAPTIVE_SEEDS_METRICS = (SEEDS_METRIC,)

#: The row's clock: lifetime env steps. Budgets, scheduler time, checkpoints and MLflow steps use it.
ENV_STEPS = "env_steps"

#: An iteration's wall time: ``sample_time_s`` + ``learn_time_s`` + ``other_time_s``.
TIMING_TOTAL = "iteration_time_s"

#: Prefix under which RLlib's own (flattened) result keys are reported beside the normalized ones.
RLLIB_PREFIX = "rllib/"

#: Hyperparameters read back from the running algorithm are reported as ``hp/<spec path>``.
HP_PREFIX = "hp/"

#: Each policy's share of ``policy_memory_mb`` is reported as ``policy_memory_mb/<policy id>``.
POLICY_MEMORY_PREFIX = "policy_memory_mb/"

#: The Ray node a row was computed on (a string, never exported as a metric).
NODE_ID = "node_id"

#: On a trial's last row only, where its config diverged (a learner's loss went NaN or infinite): the
#: losses, ``module/key=value, ...`` (a string). The trial ends there, once: a retry from a checkpoint
#: would diverge again, and the searcher learns from it as from a pruned trial.
DIVERGED = "diverged"

#: The Ray nodes of the trial's remote processes, comma-separated, one per process (strings, present only
#: where the trial has remote env runners or learners): ``env_runner_node_ids``, ``learner_node_ids``.
REMOTE_NODE_IDS = "{role}_node_ids"

#: With ``seeds.per_trial`` > 1, each seed's own values are reported as ``seed/<k>/<name>`` (k = 0, 1, ...
#: in the order of the trial's recorded seeds) beside the aggregate under the plain name.
PER_SEED_PREFIX = "seed/"

#: The metrics a trial with several seeds reports per seed, as ``seed/<k>/<name>``.
PER_SEED_METRICS = ("return_mean", "return_min", "return_max", "episode_len_mean", "episodes", "env_steps",
                    "eval_return_mean")

#: Of those, what its seeds learned: the row's plain name holds their aggregate (``seeds.aggregate``).
#: ``episodes`` adds up over the seeds, ``env_steps`` is their common clock (the least of them), times add
#: up (:data:`SUMMED_OVER_SEEDS`); hyperparameters and RLlib's own keys are the first seed's, except RLlib
#: keys the spec names in ``metric`` or ``stop``, which are aggregated too.
AGGREGATED_OVER_SEEDS = ("return_mean", "return_min", "return_max", "episode_len_mean", "eval_return_mean")

#: Per-row times that add up over a trial's seeds (they run one after the other in the trial's process).
SUMMED_OVER_SEEDS = ("iteration_time_s", "sample_time_s", "learn_time_s", "other_time_s", "time_total_s",
                     "setup_time_s", "eval_time_s")


def per_seed_key(index: int, name: str) -> str:
    return f"{PER_SEED_PREFIX}{index}/{name}"


def row(
    normalized: Mapping[str, Any],
    *,
    hyperparams: Mapping[str, float],
    rllib: Mapping[str, Any],
    node_id: str,
) -> dict[str, Any]:
    """One reported row; the normalized metrics win over an RLlib key of the same name."""
    return {**normalized, **{HP_PREFIX + path: value for path, value in hyperparams.items()},
            **{RLLIB_PREFIX + key: value for key, value in rllib.items()}, NODE_ID: node_id}


def metric_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a metric a user writes in ``metric`` or ``stop``, or None."""
    if name in NORMALIZED_METRICS or name.startswith(RLLIB_PREFIX):
        return None
    return (
        f"unknown metric {name!r}; use one of rlsweep's names {sorted(NORMALIZED_METRICS)} "
        f"or an RLlib result key prefixed with {RLLIB_PREFIX!r} (checked when the first result arrives)"
    )


def exported(key: str) -> bool:
    """Whether a row's key becomes an MLflow metric: the normalized metrics, each seed's
    (``seed/<k>/...``), ``hp/...`` (PBT's hyperparameters change per row, and MLflow params cannot) and
    each policy's memory (``policy_memory_mb/<policy>``)."""
    if key.startswith(PER_SEED_PREFIX):
        return key.rsplit("/", 1)[-1] in NORMALIZED_METRICS
    return key in NORMALIZED_METRICS or key.startswith((HP_PREFIX, POLICY_MEMORY_PREFIX))


def exported_values(row_: Mapping[str, Any]) -> dict[str, float]:
    """The row's finite numeric values that are exported, by name."""
    return {
        name: float(value)
        for name, value in row_.items()
        if exported(name) and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    }


def env_steps(row_: Mapping[str, Any]) -> int:
    value = row_.get(ENV_STEPS, 0)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
