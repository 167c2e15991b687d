"""Shared fixtures: one Ray runtime for the whole session, tiny valid specs."""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent

# Memory readings kept between commands (rlsweep.trainables._readings) go to a folder of this test run's
# own, inherited by the commands the tests start: a reading from a developer's earlier run must not stand
# in for a measurement a test expects.
os.environ["RLSWEEP_CACHE_DIR"] = tempfile.mkdtemp(prefix="rlsweep-test-readings-")

#: A spec that runs in seconds: PPO on CartPole, 1000 env steps per iteration, few epochs.
TINY_SPEC: dict[str, Any] = {
    "name": "tiny",
    "algorithm": "PPO",
    "env": "CartPole-v1",
    "config": {
        "training.train_batch_size": 1000,
        "training.minibatch_size": 250,
        "training.num_epochs": 2,
        # One env per runner: an iteration then samples exactly the train batch (8 vectorized envs, the
        # default for PPO, overshoot it by a few steps), and the tests check env-step counts exactly.
        "env_runners.num_envs_per_env_runner": 1,
    },
    "search_space": {
        "training.lr": {"loguniform": [1.0e-4, 3.0e-3]},
        "rl_module.model_config.fcnet_hiddens": {"choice": [[16], [32, 32]]},
    },
    "searcher": {"name": "optuna", "seed": 0},
    "scheduler": {"name": "asha", "grace_env_steps": 2000, "reduction_factor": 2},
    "budget": {"env_steps": 4000, "trials": 3},
    "checkpoint": {"every_env_steps": 2000, "keep": 2},
    "metric": {"name": "return_mean", "mode": "max"},
    # No pre-flight memory measurement (5-30 s a sweep): tests/test_memory_check.py tests it.
    "ray": {"memory_check": False},
    # No held-out stage (on by default, it retrains the best configuration after a search of 10 trials or
    # more): tests/test_holdout_stage.py tests it, the others keep their budget.
    "holdout": None,
}


#: A test without the ``slow`` mark takes seconds (the slowest about 8 s). One still running after two minutes
#: fails there with every thread's stack (pytest-timeout), instead of holding the run for the 15 minutes
#: (``timeout`` in pyproject.toml) a slow test with Ray trials may need: the fast tier's 4 minutes stay 4.
FAST_TEST_TIMEOUT_S = 120


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(FAST_TEST_TIMEOUT_S))


@pytest.fixture
def tiny_spec(tmp_path: Path) -> dict[str, Any]:
    spec = copy.deepcopy(TINY_SPEC)
    spec["storage"] = str(tmp_path / "results")
    spec["mlflow"] = {"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}", "experiment": "tests"}
    return spec


@pytest.fixture(scope="session")
def ray_runtime():
    """One local Ray runtime shared by every test that runs trials (started on first use)."""
    import ray

    if not ray.is_initialized():
        # "local": this run's own runtime, never a cluster another test's `Cluster` (or another user's
        # `ray start`) recorded as the machine's latest, which Ray's default would join.
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


# --- the fast tier starts no Ray ------------------------------------------------------------------------
# `pytest -m "not slow"` is the inner loop: it must not start a Ray runtime (seconds to start, hundreds of MB).
# A test that does (in this process or in a subprocess, e.g. `rlsweep run`) fails here, telling its author
# to mark it slow. Off for the whole suite, where the slow tests start Ray on purpose.

#: Set in this process's environment in the fast tier; the processes it starts inherit it, and so would the
#: raylet and GCS server any of them started: that is how the watcher tells ours from other users' Ray.
FAST_TIER_MARK = "RLSWEEP_FAST_TIER_PID"
_RAY_PROCESSES = ("raylet", "gcs_server")


def _fast_tier(config: pytest.Config) -> bool:
    return "not slow" in (config.getoption("markexpr", "") or "")


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def _ours(pid: int, mark: str) -> bool:
    """Started under this run: ``mark`` in its environment, or this process among its ancestors (a test
    may start a subprocess with an environment of its own)."""
    with open(f"/proc/{pid}/environ", "rb") as environ:
        if mark.encode() in environ.read().split(b"\0"):
            return True
    ancestor = pid
    while ancestor > 1:
        ancestor = _parent(ancestor)
        if ancestor == os.getpid():
            return True
    return False


def _our_ray_processes(mark: str) -> list[int]:
    """Live raylet / GCS server processes started under this run."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/comm") as comm:
                if comm.read().strip() not in _RAY_PROCESSES:
                    continue
            if _ours(int(entry.name), mark):
                found.append(int(entry.name))
        except OSError:  # gone, or another user's
            continue
    return found


class _RayWatcher(threading.Thread):
    """Polls /proc while the fast tier runs and records which test was running when one of this run's Ray
    processes was alive (a subprocess's Ray lives as long as its driver: seconds, so a poll sees it)."""

    def __init__(self, mark: str) -> None:
        super().__init__(daemon=True, name="fast-tier-ray-watcher")
        self.mark, self.current, self.seen = mark, "", {}
        self.blamed: set[int] = set()  # a Ray left running fails the test that started it, not each one after
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.2):
            pids = _our_ray_processes(self.mark)
            if pids and self.current:
                self.seen.setdefault(self.current, set()).update(pids)


@pytest.fixture(scope="session", autouse=True)
def _fast_tier_watcher(request: pytest.FixtureRequest):
    if not _fast_tier(request.config) or not os.path.isdir("/proc"):
        yield None
        return
    mark = f"{FAST_TIER_MARK}={os.getpid()}"
    os.environ[FAST_TIER_MARK] = str(os.getpid())
    watcher = _RayWatcher(mark)
    watcher.start()
    yield watcher
    watcher.stopped.set()
    os.environ.pop(FAST_TIER_MARK, None)


@pytest.fixture(autouse=True)
def _fast_tier_starts_no_ray(request: pytest.FixtureRequest, _fast_tier_watcher, monkeypatch: pytest.MonkeyPatch):
    """In the fast tier, ``ray.init`` raises and a Ray process started by the test (in a subprocess too)
    fails it: a test that starts Ray belongs in the slow tier."""
    if _fast_tier_watcher is None:
        yield
        return
    import ray
    import ray._private.worker

    def refuse(*args, **kwargs):
        raise RuntimeError(f"{request.node.nodeid} starts Ray (ray.init): mark it @pytest.mark.slow")

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.setattr(ray._private.worker, "init", refuse)
    _fast_tier_watcher.current = request.node.nodeid
    yield
    _fast_tier_watcher.current = ""
    started = _fast_tier_watcher.seen.pop(request.node.nodeid, set()) | set(_our_ray_processes(_fast_tier_watcher.mark))
    started -= _fast_tier_watcher.blamed
    _fast_tier_watcher.blamed |= started
    if started:
        pytest.fail(f"{request.node.nodeid} started a Ray runtime (raylet/gcs_server pids {sorted(started)}) in the "
                    "fast tier: mark it @pytest.mark.slow")


def small_ppo(name: str, storage: Path, *, batch: int = 500, minibatch: int = 125, epochs: int = 2, **sections: Any) -> dict[str, Any]:
    """A PPO-on-CartPole spec document with a small train batch, random search over lr and FIFO, no MLflow
    export; ``sections`` replace or add top-level sections."""
    document: dict[str, Any] = {
        "name": name,
        "algorithm": "PPO",
        "env": "CartPole-v1",
        "config": {
            "training.train_batch_size_per_learner": batch,
            "training.minibatch_size": minibatch,
            "training.num_epochs": epochs,
            "env_runners.num_envs_per_env_runner": 1,  # exact env-step counts (see TINY_SPEC)
        },
        "search_space": {"training.lr": {"loguniform": [1.0e-4, 3.0e-3]}},
        "searcher": {"name": "random", "seed": 0},
        "scheduler": "fifo",
        "storage": str(storage),
        "mlflow": None,
        "ray": {"memory_check": False},  # see TINY_SPEC
        "holdout": None,  # see TINY_SPEC
    }
    document.update(sections)
    return document


@contextlib.contextmanager
def logged_to(name: str) -> Iterator[list[str]]:
    """The messages logger ``name`` passes on inside the block, after its filters. Ray's loggers do not
    propagate to the root, so pytest's caplog sees none of them."""
    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    try:
        yield said
    finally:
        logger.removeHandler(handler)
