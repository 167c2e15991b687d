"""The Tune function trainable: one RLlib algorithm trained to an env-step budget, reporting normalized
metrics with a per-iteration timing split, checkpointing every ``checkpoint.every_env_steps``."""

from __future__ import annotations

import difflib
import json
import math
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsweep.errors import SpecError
from rlsweep.metrics import NORMALIZED_METRICS, RLLIB_PREFIX
from rlsweep.trainables._config import algorithm_class, build_config
from rlsweep.trainables._hyperparams import in_effect, reapply_learning_rates
from rlsweep.trainables._memory import trial_peak_memory_mb
from rlsweep.trainables._metrics import MetricNormalizer, lifetime_env_steps, rllib_section
from rlsweep.trainables._timing import PhaseTimer

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

#: Written into every checkpoint: the metrics at the time it was taken, so the best one can be chosen.
CHECKPOINT_META = "rlsweep_checkpoint.json"

#: Without ``checkpoint.every_env_steps``, a trial checkpoints this many times over its budget, so a
#: retried failure or a resumed sweep loses at most a tenth of a trial's work.
DEFAULT_CHECKPOINTS_PER_TRIAL = 10


class NonFiniteLossError(RuntimeError):
    """A learner reported a NaN or infinite loss: the trial fails, and Tune retries it from its latest
    checkpoint (``failure.max_retries``)."""


def _non_finite_losses(result: Mapping[str, Any]) -> list[str]:
    learners = result.get("learners")
    if not isinstance(learners, Mapping):
        return []
    bad = []
    for module, values in learners.items():
        if not isinstance(values, Mapping):
            continue
        for key, value in values.items():
            if key.endswith("loss") and isinstance(value, (int, float)) and not math.isfinite(value):
                bad.append(f"{module}/{key}={value}")
    return bad


def checkpoint_interval(spec: SweepSpec) -> int:
    return spec.checkpoint.every_env_steps or max(1, spec.budget.env_steps // DEFAULT_CHECKPOINTS_PER_TRIAL)


def _limit_torch_threads() -> None:
    # A 1-CPU trial that lets torch spawn a thread per core slows its neighbours down.
    import ray
    import torch

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1)
    torch.set_num_threads(max(1, int(cpus)))


def _check_reported_keys(spec: SweepSpec, reported: Mapping[str, Any]) -> None:
    keys = [spec.metric.name, *spec.stop]
    missing = [k for k in keys if k not in reported]
    if missing:
        rllib_keys = [k for k in reported if k.startswith(RLLIB_PREFIX)]
        hints = {k: difflib.get_close_matches(k, rllib_keys + list(NORMALIZED_METRICS), n=3) for k in missing}
        raise SpecError(
            [
                f"metric key {k!r} is not in this algorithm's results; close matches: {hints[k] or 'none'}"
                for k in missing
            ],
            "metric.name",
        )


def _next_multiple(env_steps: int, every: int) -> int:
    return (env_steps // every + 1) * every


def _evaluate(algo: Any) -> tuple[dict[str, Any], float]:
    """Greedy evaluation episodes on the algorithm's evaluation env runner; returns RLlib's result and the
    seconds it took (reported as ``eval_time_s``, outside the iteration's timing split)."""
    start = time.perf_counter()
    result = algo.evaluate()
    return result, time.perf_counter() - start


def train(sampled: dict[str, Any], spec: SweepSpec) -> None:
    """Tune function trainable. ``sampled`` is the trial's draw, keyed by spec parameter paths."""
    import ray
    from ray import tune

    from rlsweep.schedulers import SCHEDULERS

    _limit_torch_threads()
    node_id = ray.get_runtime_context().get_node_id()
    algo = build_config(spec, sampled).build_algo()
    normalizer = MetricNormalizer()
    timer = PhaseTimer(algo)
    every = checkpoint_interval(spec)
    # The reports at which the scheduler acts on the trial's latest checkpoint (PBT copies it, HyperBand
    # pauses and later resumes from it): those must carry a fresh checkpoint.
    rule = SCHEDULERS[spec.scheduler.name].checkpoint_rule(spec)
    evaluation = spec.evaluation is not None
    # Without an interval, evaluation runs once, when the trial reaches its budget.
    eval_every = (spec.evaluation.every_env_steps or spec.budget.env_steps) if spec.evaluation is not None else 0
    searched = spec.search_space.paths

    checkpoint = tune.get_checkpoint()
    next_checkpoint = every
    next_eval = eval_every
    last_rule = 0
    if checkpoint is not None:
        with checkpoint.as_directory() as directory:
            algo.restore_from_path(directory)
            meta = json.loads((Path(directory) / CHECKPOINT_META).read_text())
        # The checkpoint may be another trial's (PBT): its optimizer state carries that trial's learning rate.
        reapply_learning_rates(algo)
        normalizer.restore(meta.get("carried", {}))
        restored_steps = meta["metrics"]["env_steps"]
        if restored_steps >= spec.budget.env_steps:
            # PBT can hand a trial the checkpoint of one that already finished: nothing is left to train,
            # so the trial ends at the budget with the metrics it copied.
            tune.report({**meta["metrics"], **in_effect(algo, searched)})
            algo.stop()
            return
        next_checkpoint = _next_multiple(restored_steps, every)
        next_eval = _next_multiple(restored_steps, eval_every) if evaluation else 0
        last_rule = meta.get("rule_env_steps", restored_steps)

    try:
        first = True
        while True:
            # Read before the iteration: the values its first update uses.
            hyperparams = in_effect(algo, searched)
            with timer.iteration():
                result = algo.train()
            env_steps = lifetime_env_steps(result)
            if losses := _non_finite_losses(result):
                raise NonFiniteLossError(
                    f"non-finite loss at {env_steps} env steps: {', '.join(losses)}; the trial is retried from its "
                    f"latest checkpoint up to failure.max_retries={spec.failure.max_retries} times"
                )
            done = env_steps >= spec.budget.env_steps
            eval_time = 0.0
            if evaluation and (env_steps >= next_eval or done):
                result["evaluation"], eval_time = _evaluate(algo)
                next_eval = _next_multiple(env_steps, eval_every)
            metrics = normalizer(result, evaluation=evaluation)
            metrics.update(timer.last)
            if evaluation:
                metrics["eval_time_s"] = eval_time
            metrics["peak_memory_mb"] = trial_peak_memory_mb(algo)
            metrics["time_total_s"] = result.get("time_total_s", 0.0)
            reported = {**metrics, **hyperparams, **rllib_section(result), "node_id": node_id}
            if first:
                _check_reported_keys(spec, reported)
                first = False
            needed = rule is not None and rule.fires(env_steps, last_rule)
            if needed:
                last_rule = env_steps
            if env_steps >= next_checkpoint or done or needed:
                next_checkpoint = _next_multiple(env_steps, every)
                with tempfile.TemporaryDirectory(prefix="rlsweep-ckpt-") as directory:
                    algo.save_to_path(directory)
                    meta = {"metrics": metrics, "carried": normalizer.state(), "config": sampled, "rule_env_steps": last_rule}
                    Path(directory, CHECKPOINT_META).write_text(json.dumps(meta, default=str))
                    tune.report(reported, checkpoint=tune.Checkpoint.from_directory(directory))
            else:
                tune.report(reported)
            if done:
                break
    finally:
        algo.stop()


def trial_resources(spec: SweepSpec, sampled: Mapping[str, Any]) -> Any:
    """The placement group one trial needs: RLlib's own request for its config (env runners, learners)."""
    return algorithm_class(spec.algorithm).default_resource_request(build_config(spec, sampled))


def make_trainable(spec: SweepSpec) -> Any:
    """The trainable handed to ``tune.Tuner``, carrying the spec and asking for each trial's resources."""
    from ray import tune

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    trainable = tune.with_parameters(train, spec=spec)
    return tune.with_resources(trainable, lambda sampled: trial_resources(spec, sampled))
