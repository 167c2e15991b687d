"""Shared fixtures: one Ray runtime for the whole session, tiny valid specs."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent

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
}


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
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


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
    }
    document.update(sections)
    return document
