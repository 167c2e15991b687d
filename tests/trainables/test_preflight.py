"""`rlsweep validate` passes only specs that can run: user code named in the spec (the env, a curriculum
function) that raises, exits or returns the wrong thing, a curriculum task the env does not take, and a
config value of a type RLlib's setter does not take, are each a spec error naming the path, found without
Ray, never a traceback, a silent exit 0 or "valid". Runs ``rlsweep.cli.main`` in-process."""

from __future__ import annotations

import copy
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlsweep.cli import EXIT_INVALID, EXIT_OK, main
from rlsweep.errors import Problem, SpecError
from tests.conftest import TINY_SPEC
from tests.envs.tasks import TaskedEnv

TASKED = "tests.envs.tasks:TaskedEnv"

#: Written into a folder put on sys.path: each a module a spec can name.
MODULES = {
    "r3_envs": '''
        import sys

        import numpy as np

        from tests.envs.tasks import TaskedEnv


        class ExitsInInit(TaskedEnv):
            def __init__(self, config=None):
                sys.exit(0)


        class ResetRaises(TaskedEnv):
            def reset(self, *, seed=None, options=None):
                raise RuntimeError("no reset today")


        class StepReturnsFour(TaskedEnv):
            def step(self, action):
                return np.zeros(1, dtype=np.float32), 0.0, False, {}


        class ExitsOnTaskThree(TaskedEnv):
            def set_task(self, task):
                if task == 3:
                    sys.exit(3)
                super().set_task(task)
    ''',
    "r3_fns": '''
        import sys

        #: What ``returns`` returns and ``raises`` raises; a test sets them.
        VALUE = 1
        ERROR = RuntimeError("boom")


        def two_arguments(train_result, env):
            return 1


        def returns(train_result, env, env_context):
            return VALUE


        def raises(train_result, env, env_context):
            raise ERROR


        def exits(train_result, env, env_context):
            sys.exit(0)


        def reads_the_result(train_result, env, env_context):
            return 2 if train_result["env_runners"]["episode_return_mean"] >= 0 else 1
    ''',
    "r3_syntax_error": "def broken(:\n    pass\n",
    "r3_raises_on_import": 'raise ValueError("not today")\n',
    "r3_exits_on_import": "import sys\nsys.exit(1)\n",
}


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "modules"
    folder.mkdir()
    for name, text in MODULES.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text).lstrip())
    monkeypatch.syspath_prepend(str(folder))
    # Each test imports them afresh: a property test sets r3_fns.VALUE and .ERROR, which an imported module
    # would carry into the next test (the result then depended on the order the tests ran in).
    for name in MODULES:
        sys.modules.pop(name, None)
    yield folder
    for name in MODULES:
        sys.modules.pop(name, None)


def _validate(tmp_path: Path, capsys: pytest.CaptureFixture, **changes: Any) -> tuple[int, dict[str, str], str]:
    """``rlsweep validate --no-memory-check`` on TINY_SPEC with ``changes``: the exit code, the problems by
    path (from stderr) and stdout."""
    document = copy.deepcopy(TINY_SPEC)
    document.update(changes)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(document))
    capsys.readouterr()
    code = main(["validate", str(path), "--no-memory-check"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    problems = dict(line.split(": ", 1) for line in err.splitlines() if ": " in line)
    return code, problems, out


@pytest.mark.parametrize(
    ("curriculum", "path", "says"),
    [
        ({"fn": "r3_fns:two_arguments"}, "curriculum.fn", "takes (train_result, env), but the trial calls it as fn(train_result, env, env_context)"),
        ({"fn": "r3_fns:raises"}, "curriculum.fn", "raised RuntimeError: boom"),
        ({"fn": "r3_fns:exits"}, "curriculum.fn", "called sys.exit(0)"),
        ({"fn": "r3_syntax_error:broken"}, "curriculum.fn", "cannot load 'r3_syntax_error:broken': SyntaxError: "),
        ({"fn": "r3_raises_on_import:f"}, "curriculum.fn", "cannot load 'r3_raises_on_import:f': ValueError: not today"),
        ({"fn": "r3_exits_on_import:f"}, "curriculum.fn", "cannot load 'r3_exits_on_import:f': SystemExit: sys.exit(1)"),
        ({"schedule": [[0, 1], [1000, "hard"]]}, "curriculum.schedule.1.1", "task 'hard': TaskedEnv's set_task() raised ValueError"),
        # Task 0 passes int() but divides by zero in the env: only setting it on a real env shows it.
        ({"schedule": [[0, 1], [1000, 0]]}, "curriculum.schedule.1.1", "raised ZeroDivisionError"),
    ],
)
def test_a_curriculum_that_cannot_run_is_refused_at_its_path(modules, tmp_path, capsys, curriculum, path, says):
    code, problems, out = _validate(tmp_path, capsys, env=TASKED, curriculum=curriculum)
    assert code == EXIT_INVALID and "valid" not in out
    assert says in problems[path], problems


def test_a_curriculum_function_that_runs_and_returns_a_task_passes(modules, tmp_path, capsys):
    code, problems, out = _validate(tmp_path, capsys, env=TASKED, curriculum={"fn": "r3_fns:reads_the_result"})
    assert (code, problems) == (EXIT_OK, {})
    assert ": valid (" in out


def test_a_searched_task_the_env_does_not_take_is_refused_at_its_search_space_path(modules, tmp_path, capsys):
    search_space = {**TINY_SPEC["search_space"], "curriculum.schedule.1.1": {"choice": [2, 3]}}
    code, problems, _ = _validate(tmp_path, capsys, env="r3_envs:ExitsOnTaskThree", search_space=search_space,
                                  curriculum={"schedule": [[0, 1], [1000, 2]]})
    assert code == EXIT_INVALID
    assert "task 3: ExitsOnTaskThree's set_task() called sys.exit(3)" in problems["search_space.curriculum.schedule.1.1"]
    assert "curriculum.schedule.1.1" not in problems  # its own task, 2, is fine


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ("r3_envs:ExitsInInit", "the env's constructor called sys.exit(0)"),
        ("r3_envs:ResetRaises", "the env's reset(seed=0) raised RuntimeError: no reset today"),
        ("r3_envs:StepReturnsFour", "not (observation, reward, terminated, truncated, info)"),
        ("r3_exits_on_import:Env", "importing module 'r3_exits_on_import' called sys.exit(1)"),
    ],
)
def test_an_env_that_exits_or_cannot_run_is_refused_at_env(modules, tmp_path, capsys, env, says):
    code, problems, out = _validate(tmp_path, capsys, env=env)
    assert code == EXIT_INVALID and out == ""
    assert says in problems["env"], problems


@pytest.mark.parametrize(
    ("changes", "path", "says"),
    [
        ({"config": {**TINY_SPEC["config"], "training.num_epochs": "many"}}, "config.training.num_epochs",
         "PPOConfig.training() takes num_epochs as int or null, got 'many' (str)"),
        ({"config": {**TINY_SPEC["config"], "training.minibatch_size": [250]}}, "config.training.minibatch_size",
         "takes minibatch_size as int or null, got [250] (list)"),
        ({"search_space": {"training.kl_target": {"choice": [0.01, "low"]}}}, "search_space.training.kl_target",
         "takes kl_target as float or null, got 'low' (str)"),
    ],
)
def test_a_config_value_of_a_type_rllib_does_not_take_is_refused_before_any_trial(tmp_path, capsys, changes, path, says):
    code, problems, out = _validate(tmp_path, capsys, **changes)
    assert code == EXIT_INVALID and out == ""
    assert says in problems[path], problems


def test_no_minibatch_size_over_several_learners_is_refused_before_any_trial(tmp_path, capsys):
    # RLlib 2.60 takes minibatch_size null (the whole batch per update, what convert --from zoo writes where SB3
    # takes the whole rollout) but splits a batch over learners by multiplying by it: a TypeError at the
    # first update. One learner, or none, is fine.
    base = {**TINY_SPEC["config"], "training.minibatch_size": None}
    code, problems, out = _validate(tmp_path, capsys, config={**base, "learners.num_learners": 1})
    assert code == EXIT_OK, problems
    code, problems, out = _validate(tmp_path, capsys, config={**base, "learners.num_learners": 2})
    assert code == EXIT_INVALID and out == ""
    assert "cannot be split over num_learners=2 learners" in problems[
        "config.learners.num_learners, config.training.minibatch_size"], problems


def test_values_rllib_annotates_narrowly_but_takes_are_not_refused(tmp_path, capsys):
    # RLlib annotates num_cpus_per_env_runner Optional[int], and Ray takes half a CPU; a float where an int
    # goes, an int where a bool goes, null where None goes.
    config = {**TINY_SPEC["config"], "env_runners.num_cpus_per_env_runner": 0.5, "env_runners.explore": 1,
              "training.num_epochs": 2.0, "debugging.seed": None}
    code, problems, out = _validate(tmp_path, capsys, config=config)
    assert code == EXIT_OK, problems
    assert ": valid (" in out


def test_validate_says_valid_only_after_the_memory_check_passed(tmp_path, capsys, monkeypatch):
    """The measured trial is the last check that can refuse the spec: "valid" must not come before it."""
    import rlsweep.api

    def refuses(spec: Any, *, address: str | None = None) -> None:
        raise SpecError([Problem("config.training.num_epochs", "refused by the measured trial")])

    monkeypatch.setattr(rlsweep.api, "check_memory", refuses)
    document = {**copy.deepcopy(TINY_SPEC), "ray": {"memory_check": True}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(document))
    assert main(["validate", str(path)]) == EXIT_INVALID
    out, err = capsys.readouterr()
    assert "valid (" not in out and "checking one trial's memory" in out
    assert "config.training.num_epochs: refused by the measured trial" in err


def _takes(task: Any) -> bool:
    """Whether TaskedEnv trains on ``task``: what the trial would find."""
    try:
        env = TaskedEnv()
        env.set_task(task)
        env.reset(seed=0)
        env.step(0)
    except Exception:  # noqa: BLE001
        return False
    return True


TASKS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=5),
                  st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(task=TASKS)
def test_whatever_a_curriculum_function_returns_validate_agrees_with_the_env(modules, tmp_path, capsys, task):
    import r3_fns  # type: ignore[import-not-found]

    r3_fns.VALUE = task
    code, problems, out = _validate(tmp_path, capsys, env=TASKED, curriculum={"fn": "r3_fns:returns"})
    if _takes(task):
        assert code == EXIT_OK, problems
    else:
        assert code == EXIT_INVALID and "valid" not in out
        assert "returned" in problems["curriculum.fn"] and "a task the env cannot take" in problems["curriculum.fn"]


class _Custom(BaseException):
    pass


ERRORS = st.sampled_from([ValueError, KeyError, TypeError, ZeroDivisionError, RecursionError, GeneratorExit, _Custom])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(error=ERRORS, message=st.text(max_size=40), exit_code=st.one_of(st.none(), st.integers(-3, 300), st.text(max_size=5)),
       exits=st.booleans())
def test_whatever_a_curriculum_function_raises_is_one_line_at_curriculum_fn(modules, tmp_path, capsys, error, message, exit_code, exits):
    import r3_fns  # type: ignore[import-not-found]

    r3_fns.ERROR = SystemExit(exit_code) if exits else error(message)
    code, problems, out = _validate(tmp_path, capsys, env=TASKED, curriculum={"fn": "r3_fns:raises"})
    assert code == EXIT_INVALID and "valid" not in out
    said = problems["curriculum.fn"]
    assert (f"called sys.exit({exit_code!r})" if exits else f"raised {error.__name__}") in said
    assert "\n" not in said and len(said) < 1000


@pytest.mark.parametrize(
    ("metric", "refused"),
    [
        ("rllib/env_runners/episode_return_meen", "did you mean 'rllib/env_runners/episode_return_mean'?"),
        ("rllib/env_runners/episode_return_mean", None),
        ("rllib/learners/default_policy/vf_explained_var", None),
        ("rllib/my_callback/steps_to_goal", None),  # a callback's own metric: checked at the first result
    ],
)
def test_an_rllib_metric_key_one_typo_from_rllibs_own_is_refused_at_validate(tmp_path, capsys, metric, refused):
    code, problems, out = _validate(tmp_path, capsys, metric={"name": metric, "mode": "max"})
    if refused is None:
        assert code == EXIT_OK, problems
    else:
        assert code == EXIT_INVALID and refused in problems["metric.name"] and "valid (" not in out
