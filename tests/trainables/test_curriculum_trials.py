"""Curriculum learning from the spec, on real PPO trials: a schedule in env steps and RLlib's old
env_task_fn contract, set on the remote env runner that samples and on the evaluation runner, seen in
what the episodes return (tests/envs/tasks.py pays 10 / task per episode), reported as ``task`` and
exported to MLflow; and what pre-flight refuses."""

from __future__ import annotations

import copy

import pytest
from mlflow.tracking import MlflowClient

import rlsweep
from rlsweep.analysis import load
from rlsweep.analysis._mlflow import TRIAL_TAG
from rlsweep.errors import SpecError
from tests.conftest import TINY_SPEC, small_ppo

ENV = "tests.envs.tasks:TaskedEnv"


def _tasked(tmp_path, curriculum, **sections):
    document = small_ppo(
        "curriculum", tmp_path / "results", batch=500, minibatch=250, epochs=1, budget={"env_steps": 3000, "trials": 1},
        env=ENV, curriculum=curriculum, **sections,
    )
    # One remote env runner samples (the trial's own one does not); one-iteration smoothing window: an
    # iteration is 50 whole episodes of one task, so its return_mean is exactly 10 / task.
    document["config"].update({"env_runners.num_env_runners": 1, "reporting.metrics_num_episodes_for_smoothing": 50})
    return document


@pytest.mark.slow
def test_a_schedule_sets_the_task_on_the_remote_and_evaluation_runners_and_is_reported(tmp_path, ray_runtime):
    document = _tasked(
        tmp_path, {"schedule": [[0, 1], [1000, 2], [2000, 4]]}, evaluation={"episodes": 5},
        mlflow={"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}", "experiment": "curriculum"},
    )
    result = rlsweep.run(rlsweep.load_spec(document), verbose=0)
    (trial,) = load(result.path).trials
    rows = trial.rows
    assert [r["env_steps"] for r in rows] == [500, 1000, 1500, 2000, 2500, 3000]
    # Each iteration trained on the task in effect at its start: set after the iteration that crossed
    # 1,000 and 2,000 env steps.
    assert [r["task"] for r in rows] == [1, 1, 2, 2, 4, 4]
    assert [r["return_mean"] for r in rows] == pytest.approx([10, 10, 5, 5, 2.5, 2.5])
    # The evaluation runner's envs were on the last task too.
    assert rows[-1]["eval_return_mean"] == pytest.approx(2.5)
    # task is an MLflow metric of the trial's run.
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (child,) = client.search_runs([client.get_experiment_by_name("curriculum").experiment_id],
                                  filter_string=f"tags.`{TRIAL_TAG}` = '{trial.trial_id}'")
    history = client.get_metric_history(child.info.run_id, "task")
    assert [(m.step, m.value) for m in history] == [(500, 1), (1000, 1), (1500, 2), (2000, 2), (2500, 4), (3000, 4)]


@pytest.mark.slow
def test_a_function_decides_the_next_task_from_the_result_as_rllibs_env_task_fn_did(tmp_path, ray_runtime):
    document = _tasked(tmp_path, {"fn": "tests.envs.tasks:harder_when_solved"})
    document["budget"]["env_steps"] = 2000
    result = rlsweep.run(rlsweep.load_spec(document), verbose=0)
    (trial,) = load(result.path).trials
    # Return 10 on task 1, so 2; return 5 on task 2, so 4; return 2.5 on task 4, so it stays.
    assert [r["task"] for r in trial.rows] == [1, 2, 4, 4]
    assert [r["return_mean"] for r in trial.rows] == pytest.approx([10, 5, 2.5, 2.5])


def _problems(document):
    with pytest.raises(SpecError) as info:
        rlsweep.load_spec(document)
    return {p.path: p.message for p in info.value.problems}


@pytest.mark.parametrize(
    ("env_steps", "task"),
    [(0, 1), (999, 1), (1000, 2), (1001, 2), (2499, 2), (2500, 3), (10**9, 3)],
)
def test_a_schedules_task_starts_at_its_entrys_env_steps(env_steps, task):
    """An entry's task applies from its env steps on: at exactly 1,000 the envs already train on task 2."""
    from rlsweep.spec import CurriculumSpec

    assert CurriculumSpec(schedule=[[0, 1], [1000, 2], [2500, 3]]).task_at(env_steps) == task


def test_an_env_without_set_task_is_refused_before_launch():
    document = copy.deepcopy(TINY_SPEC)
    document["curriculum"] = {"schedule": [[0, 1], [1000, 2]]}
    message = _problems(document)["curriculum"]
    assert "CartPole-v1 has no set_task or get_task" in message and "TaskSettableEnv" in message


def test_a_function_that_does_not_import_is_refused_naming_it():
    document = copy.deepcopy(TINY_SPEC)
    document.update(env=ENV, curriculum={"fn": "tests.envs.tasks:no_such_function"})
    assert "cannot load 'tests.envs.tasks:no_such_function': AttributeError" in _problems(document)["curriculum.fn"]


@pytest.mark.parametrize(
    ("curriculum", "path", "says"),
    [
        ({}, "curriculum", "set either fn"),
        ({"fn": "a:b", "schedule": [[0, 1]]}, "curriculum", "set either fn"),
        ({"schedule": [[100, 1]]}, "curriculum.schedule", "must start at 0"),
        ({"schedule": [[0, 1], [500, 2], [500, 3]]}, "curriculum.schedule", "must rise"),
        ({"schedule": [[0, 1], [-5, 2]]}, "curriculum.schedule.1", "a whole number >= 0"),
        ({"fn": "nocolon"}, "curriculum.fn", "expects module:function"),
    ],
)
def test_bad_curricula_are_refused_with_their_path(curriculum, path, says):
    document = copy.deepcopy(TINY_SPEC)
    document.update(env=ENV, curriculum=curriculum)
    assert says in _problems(document)[path]


@pytest.mark.slow
def test_a_searched_parameter_sets_when_the_task_changes(tmp_path, ray_runtime):
    document = _tasked(tmp_path, {"schedule": [[0, 1], [1000, 2]]})
    document.update(search_space={"curriculum.schedule.1.0": {"grid": [500, 1500]}}, searcher="grid",
                    budget={"env_steps": 2000, "trials": 2, "max_concurrent": 1})
    result = rlsweep.run(rlsweep.load_spec(document), verbose=0)
    tasks = {t.config["curriculum.schedule.1.0"]: [r["task"] for r in t.rows] for t in load(result.path).trials}
    assert tasks == {500: [1, 2, 2, 2], 1500: [1, 1, 1, 2]}


def test_a_curriculum_parameter_must_name_an_entry_of_the_schedule():
    document = copy.deepcopy(TINY_SPEC)
    document.update(env=ENV, curriculum={"schedule": [[0, 1], [1000, 2]]},
                    search_space={"curriculum.schedule.2.0": {"choice": [10, 20]}, "curriculum.schedule.1.1": {"choice": [2, 3]}})
    problems = _problems(document)
    assert "of an entry the spec's schedule has (2 entries)" in problems["search_space.curriculum.schedule.2.0"]
    assert "search_space.curriculum.schedule.1.1" not in problems
