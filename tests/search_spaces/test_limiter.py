"""How many trials a model-based searcher suggests at once: as many as the cluster holds now, capped by
``budget.max_concurrent``. (A node joining a real cluster mid-sweep: tests/test_reliability.py.)"""

from __future__ import annotations

import pickle

import pytest

import rlsweep
from rlsweep.schedulers import SEARCHERS, search_request
from rlsweep.search_spaces._limiter import ClusterLimiter
from tests.conftest import small_ppo


class Cluster:
    """Stands in for the cluster's answer: how many trials it holds now."""

    def __init__(self, holds: int) -> None:
        self.holds = holds

    def __call__(self) -> int:
        return self.holds


def _searcher(tmp_path, cluster, **budget):
    spec = rlsweep.load_spec(
        small_ppo("limits", tmp_path, searcher={"name": "optuna", "seed": 0}, budget={"env_steps": 1000, "trials": 8, **budget}),
        preflight=False,
    )
    searcher, _, _ = SEARCHERS["optuna"].build(search_request(spec, capacity=cluster))
    assert isinstance(searcher, ClusterLimiter)
    return searcher


def _suggest_all(searcher, prefix: str) -> list[str]:
    """Ask until the searcher declines; the trials it suggested."""
    started = []
    while searcher.suggest(f"{prefix}{len(started)}") is not None:
        started.append(f"{prefix}{len(started)}")
    return started


@pytest.fixture(autouse=True)
def look_every_time(monkeypatch):
    monkeypatch.setattr(ClusterLimiter, "refresh_s", 0.0)


def test_suggestions_follow_the_cluster_as_it_grows_and_shrinks(tmp_path):
    cluster = Cluster(1)
    searcher = _searcher(tmp_path, cluster)
    assert _suggest_all(searcher, "a") == ["a0"]
    cluster.holds = 3  # two nodes joined
    assert _suggest_all(searcher, "b") == ["b0", "b1"]
    cluster.holds = 1  # they died: no new trial until the running ones are done
    for trial_id in ("a0", "b0"):
        searcher.on_trial_complete(trial_id, {"return_mean": 1.0, "env_steps": 1000})
        assert searcher.suggest(f"after-{trial_id}") is None
    searcher.on_trial_complete("b1", {"return_mean": 1.0, "env_steps": 1000})
    assert _suggest_all(searcher, "c") == ["c0"]


def test_max_concurrent_caps_a_larger_cluster_and_a_smaller_cluster_caps_it(tmp_path):
    cluster = Cluster(4)
    assert _suggest_all(_searcher(tmp_path, cluster, max_concurrent=2), "a") == ["a0", "a1"]
    cluster.holds = 1
    assert _suggest_all(_searcher(tmp_path, cluster, max_concurrent=2), "b") == ["b0"]


def test_a_limiter_saved_with_the_sweep_asks_the_cluster_it_resumes_on(tmp_path):
    cluster = Cluster(1)
    searcher = _searcher(tmp_path, cluster)
    assert _suggest_all(searcher, "a") == ["a0"]
    restored = pickle.loads(pickle.dumps(searcher))
    restored.capacity.holds = 2
    assert _suggest_all(restored, "b") == ["b0"]
