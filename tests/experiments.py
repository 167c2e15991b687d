"""Experiment directories written by hand, laid out as Tune and rlsweep's trials write them (file names from
the store), for tests of what reads them: one result row per 1000 env steps."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from rlsweep import store
from tests.conftest import TINY_SPEC


def new_experiment(root: Path, spec: Mapping[str, Any] = TINY_SPEC, **info: Any) -> Path:
    """An experiment directory at ``root`` with ``spec`` and the sweep info (``sweep_id`` "abc" unless given)."""
    root.mkdir(parents=True)
    (root / store.SPEC_FILE).write_text(yaml.safe_dump(dict(spec)))
    # As rlsweep keeps it: the spec the sweep ran with, which readers trust over an edited spec file.
    (root / store.SWEEP_FILE).write_text(json.dumps({"sweep_id": "abc", "spec": dict(spec), **info}))
    return root


def write_trial(
    root: Path,
    trial_id: str,
    returns: Sequence[float],
    *,
    config: Mapping[str, Any],
    checkpoints: Sequence[int] = (),
    settings: Mapping[str, Any] | None = None,
    config_in_rows: bool = False,
    done: bool = False,
) -> Path:
    """A trial folder: ``params.json``, a row per return (``return_mean`` at 1000, 2000, ... env steps), a
    checkpoint with its metadata at each of ``checkpoints`` env steps, and the settings it recorded. ``done``
    marks the last row as Tune marks a trial's final result (a trial stopped before its budget ended)."""
    trial = root / f"train_{trial_id}_00000_0_x"
    trial.mkdir()
    (trial / store.PARAMS_FILE).write_text(json.dumps(dict(config)))
    with (trial / store.RESULT_FILE).open("w") as out:
        for i, value in enumerate(returns, start=1):
            row = {"trial_id": trial_id, "env_steps": 1000 * i, "return_mean": value, "timestamp": i}
            if config_in_rows:
                row["config"] = dict(config)
            if done and i == len(returns):
                row[store.DONE_KEY] = True
            out.write(json.dumps(row) + "\n")
    for index, step in enumerate(checkpoints):
        directory = trial / f"checkpoint_{index:06d}"
        (directory / store.ALGORITHM_STATE).mkdir(parents=True)
        store.write_checkpoint_meta(directory, {"metrics": {"env_steps": step, "return_mean": returns[step // 1000 - 1]}})
    if settings is not None:
        store.write_trial_settings(lambda name, text: (trial / name).write_text(text), settings)
    return trial
