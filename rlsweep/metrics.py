"""rlsweep's normalized metric names: the stable names users write in ``metric``, ``stop`` and read back.

The mapping from RLlib's result keys to these names lives in :mod:`rlsweep.trainables._metrics`; this
module holds only the names, so the spec can be checked without importing Ray.
"""

from __future__ import annotations

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
    "time_total_s": "wall time of the trial so far",
    "peak_memory_mb": "peak resident memory of the trial's processes (its own, remote env runners, learners)",
    "eval_return_mean": "mean return of the latest separate greedy evaluation episodes",
    "eval_time_s": "time the evaluation after this iteration took (0 where none ran; not in iteration_time_s)",
}

#: Reported only when the spec has an ``evaluation`` section.
EVALUATION_METRICS = ("eval_return_mean", "eval_time_s")

#: Metrics whose "better" is unambiguous, for the checks on ``metric.mode``.
HIGHER_IS_BETTER = {"return_mean", "return_min", "return_max", "eval_return_mean"}

#: Prefix under which RLlib's own (flattened) result keys are reported beside the normalized ones.
RLLIB_PREFIX = "rllib/"

#: Hyperparameters read back from the running algorithm are reported as ``hp/<spec path>``.
HP_PREFIX = "hp/"
