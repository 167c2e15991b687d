"""The upper bound on a trial's memory from its settings: above every real trial's peak that
benchmarks/memory_prediction.py measured, used only with room to spare, and refused (None: measure) for
what it cannot bound. (A run that uses it on a real Ray runtime: tests/test_memory_check.py.)"""

from __future__ import annotations

import copy
import json

import pytest

from rlsweep import load_spec
from rlsweep.trainables import MemoryReading, estimate_reading, far_below, hungriest_draw
from tests.conftest import REPO, TINY_SPEC

MEASURED = sorted((REPO / "benchmarks" / "results").glob("memory_prediction-*.json"))


def _estimate(document):
    spec = load_spec(document, preflight=False)
    return estimate_reading(spec, hungriest_draw(spec.search_space))


@pytest.mark.parametrize("case", json.loads(MEASURED[-1].read_text())["cases"], ids=lambda c: c["case"])
def test_the_bound_is_above_every_measured_trials_peak(case):
    estimate = _estimate(case["document"])
    if "policies" in case["document"]:
        assert estimate is None  # several policies: measured
        return
    assert estimate is not None and estimate.estimated
    # Each real trial of the case, over its whole budget, and the pre-flight measurement of its corner.
    assert estimate.predicted_mb >= max(case["measured_mb"]) and estimate.predicted_mb >= case["predicted_mb"]
    assert len(estimate.env_runner_mb) == len(case["reading"]["env_runner_mb"])
    for role in ("main", "env_runner"):
        measured = MemoryReading.from_dict(case["reading"])
        assert estimate.bundle_mb(role) >= measured.bundle_mb(role)


@pytest.mark.parametrize(
    "change",
    [
        {"env": "tests.envs.corridor:Corridor"},  # an env of the user's own: its memory is its own
        {"config": {"rl_module.model_config": {"use_lstm": True}}},
        {"seeds": {"per_trial": 2}},
        {"env": "NoSuchEnv-v9"},
        {"config": {"learners.num_gpus_per_learner": 1}},  # CUDA's context alone is 1-2 GB of host memory
        {"config": {"env_runners.gym_env_vectorize_mode": "ASYNC"}},  # a process per env
    ],
    ids=["own env", "lstm", "two seeds", "unknown env", "a GPU", "async envs"],
)
def test_what_it_cannot_bound_is_measured(change):
    assert _estimate({**copy.deepcopy(TINY_SPEC), **change}) is None


def test_a_wider_network_a_bigger_batch_and_more_env_runners_need_more():
    base = _estimate(copy.deepcopy(TINY_SPEC))
    for key, value in (("rl_module.model_config", {"fcnet_hiddens": [2048, 2048]}), ("training.train_batch_size", 64000),
                       ("env_runners.num_env_runners", 2)):
        document = copy.deepcopy(TINY_SPEC)
        document["config"][key] = value
        if key == "rl_module.model_config":
            document["search_space"].pop("rl_module.model_config.fcnet_hiddens")
        assert _estimate(document).trial_mb > base.trial_mb, key


def test_only_used_where_twice_it_fits_every_trial_the_cpus_run():
    reading = MemoryReading(draw={}, main_mb=1000.0, estimated=True)
    need = 2 * reading.trial_mb
    assert far_below(reading, [need + 1], by_cpus=1, max_concurrent=None)
    assert not far_below(reading, [need - 1], by_cpus=1, max_concurrent=None)
    # Two nodes that hold one trial each, twice over: two trials at once, not three.
    assert far_below(reading, [need + 1, need + 1], by_cpus=2, max_concurrent=None)
    assert not far_below(reading, [need + 1, need + 1], by_cpus=3, max_concurrent=None)
    assert far_below(reading, [need + 1, need + 1], by_cpus=3, max_concurrent=2)
    assert not far_below(reading, [], by_cpus=1, max_concurrent=None)
