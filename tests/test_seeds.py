"""Every trial trains with a seed that follows from the spec, so a trial, and a whole small sweep, reruns the
same way on CPU; ``rlsweep reproduce`` reruns one trial from what it recorded."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

import rlsweep
from rlsweep.analysis import load
from rlsweep.cli import main
from rlsweep.seeds import trial_seed
from tests.conftest import TINY_SPEC


def seeded_doc(storage: Path, **changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(TINY_SPEC)
    doc.update(name="seeded", storage=str(storage), mlflow=None, scheduler="fifo")
    doc["budget"] = {"env_steps": 2000, "trials": 2, "max_concurrent": 1}
    doc["checkpoint"] = {"every_env_steps": 2000}
    doc.update(changes)
    return doc


def by_index(path: Path) -> list[Any]:
    # Tune names a trial folder train_<id>_<creation index>_<config>_<time>.
    return sorted(load(path).trials, key=lambda t: int(t.path.name.split(f"_{t.trial_id}_", 1)[1].split("_")[0]))


def learning(row: dict[str, Any]) -> dict[str, float]:
    """What the first iteration learned and saw: its losses and its episodes' returns."""
    keys = [k for k in row if k.startswith("rllib/learners/default_policy/") and "loss" in k]
    assert keys, sorted(row)
    return {k: row[k] for k in [*keys, "return_mean", "episodes"]}


def test_the_same_spec_twice_reruns_the_same_configs_seeds_and_metrics(ray_runtime, tmp_path):
    sweeps = [by_index(rlsweep.run(rlsweep.load_spec(seeded_doc(tmp_path / run)), verbose=0).path) for run in ("a", "b")]
    first, second = sweeps
    assert [dict(t.config) for t in first] == [dict(t.config) for t in second]
    assert [t.seed for t in first] == [t.seed for t in second]
    # Each trial has its own seed in seeds.tuning, drawn from searcher.seed (0) and its index.
    assert len({t.seed for t in first}) == 2 and all(0 <= t.seed <= 99 for t in first)
    for a, b in zip(first, second):
        assert learning(a.rows[0]) == learning(b.rows[0])
        assert [r["return_mean"] for r in a.rows] == [r["return_mean"] for r in b.rows]
    # The seed is in the table and in the settings the export logs.
    table = load(first[0].path.parent).table().set_index("trial_id")
    assert table.loc[first[0].trial_id, "seed"] == first[0].seed
    assert first[0].settings["settings"]["debugging.seed"] == first[0].seed


def test_the_seed_drives_what_a_trial_learns(ray_runtime, tmp_path):
    # No searched parameter: both trials run the same config. Their own seeds make them differ...
    doc = seeded_doc(tmp_path / "own", search_space={})
    own = by_index(rlsweep.run(rlsweep.load_spec(doc), verbose=0).path)
    assert own[0].seed != own[1].seed
    assert learning(own[0].rows[0]) != learning(own[1].rows[0])
    # ...and one seed set in config makes them the same.
    doc = seeded_doc(tmp_path / "fixed", search_space={})
    doc["config"]["debugging.seed"] = 7
    fixed = by_index(rlsweep.run(rlsweep.load_spec(doc), verbose=0).path)
    assert [t.seed for t in fixed] == [7, 7]
    assert learning(fixed[0].rows[0]) == learning(fixed[1].rows[0])


def test_reproduce_reruns_a_trial_into_a_new_directory(ray_runtime, tmp_path, capsys):
    original = by_index(rlsweep.run(rlsweep.load_spec(seeded_doc(tmp_path / "results")), verbose=0).path)
    trial = original[1]
    assert main(["reproduce", str(trial.path.parent), trial.trial_id[:5]]) == 0
    printed = capsys.readouterr().out
    (again,) = load(tmp_path / "results" / f"seeded-reproduce-{trial.trial_id}").trials
    assert f"seeded-reproduce-{trial.trial_id}" in printed
    assert (again.seed, dict(again.config)) == (trial.seed, {**trial.config, "debugging.seed": trial.seed})
    assert [learning(r) for r in again.rows] == [learning(r) for r in trial.rows]


def test_reproduce_names_what_is_wrong(tmp_path, capsys):
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "sweep")
    write_trial(root, "abc", [1.0], config={"training.lr": 1e-3, "rl_module.model_config.fcnet_hiddens": [16]})
    assert main(["reproduce", str(root), "zzz"]) == 2
    assert "TRIAL: 'zzz' is not a trial of this sweep; its trials: abc" in capsys.readouterr().err
    assert main(["reproduce", str(root), "abc"]) == 2  # hand-written: it recorded no settings
    assert "recorded no settings" in capsys.readouterr().err


def test_trial_seeds_follow_the_base_and_index_within_the_range():
    seeds = [trial_seed(0, index, 10, 20) for index in range(200)]
    assert seeds == [trial_seed(0, index, 10, 20) for index in range(200)]
    assert set(seeds) == set(range(10, 21))  # every seed of the range is drawn, none outside it
    assert seeds != [trial_seed(1, index, 10, 20) for index in range(200)]


@pytest.mark.parametrize("tuning", [[5, 3], [5], [-1, 4]])
def test_a_seed_range_that_cannot_work_is_an_error_at_its_path(tuning):
    doc = copy.deepcopy(TINY_SPEC)
    doc["seeds"] = {"tuning": tuning}
    with pytest.raises(rlsweep.SpecError) as caught:
        rlsweep.load_spec(doc, preflight=False)
    assert caught.value.problems[0].path.startswith("seeds.tuning")
