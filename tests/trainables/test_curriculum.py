"""Curriculum plumbing without Ray, pinned where mutation testing (mutmut) found it unchecked: loading the
function, reaching each env runner's envs, what is set on them, and a draw's schedule."""

from __future__ import annotations

import os.path
import threading
from types import SimpleNamespace

import pytest

import rlsweep
from rlsweep.search_spaces import Choice, Fixed, Normal, Parameter, SearchSpace, Uniform
from rlsweep.spec import CurriculumSpec
from rlsweep.trainables import _curriculum as cur
from tests.conftest import small_ppo

BUDGET = {"env_steps": 3000, "trials": 1}


class _Env:
    def __init__(self, task=1):
        self.task, self.calls = task, []

    @property
    def unwrapped(self):
        return self

    def set_task(self, task):
        self.calls.append(task)
        self.task = task

    def get_task(self):
        return self.task


def _runner(*envs, env_config=None):
    vector = SimpleNamespace(envs=list(envs))
    return SimpleNamespace(env=SimpleNamespace(unwrapped=vector), config=SimpleNamespace(env_config=env_config or {"k": 1}))


def test_a_function_is_loaded_by_module_and_dotted_name_and_must_be_callable():
    assert cur.load_function("os.path:join") is os.path.join
    assert cur.load_function("tests.envs.tasks:TaskedEnv.get_task") is __import__("tests.envs.tasks").envs.tasks.TaskedEnv.get_task
    with pytest.raises(TypeError, match=r"^math:pi is a float, not a function$"):
        cur.load_function("math:pi")
    with pytest.raises(AttributeError):
        cur.load_function("math:nope")


def test_the_envs_of_a_runner_are_its_vectors_unwrapped_envs_and_an_async_vector_is_refused():
    assert cur._sub_envs(SimpleNamespace()) == [] and cur._sub_envs(SimpleNamespace(env=None)) == []
    inner = _Env()
    wrapped = SimpleNamespace(unwrapped=inner)
    assert cur._sub_envs(SimpleNamespace(env=SimpleNamespace(unwrapped=SimpleNamespace(envs=[wrapped])))) == [inner]

    class AsyncVectorEnv:
        pass

    with pytest.raises(TypeError, match=r"^AsyncVectorEnv runs its envs in other processes; a curriculum needs "
                                        r"env_runners.gym_env_vectorize_mode: SYNC \(the default\)$"):
        cur._sub_envs(SimpleNamespace(env=SimpleNamespace(unwrapped=AsyncVectorEnv())))


def _record(result, env, env_context):
    return (sorted(result), env.get_task() + 1, dict(env_context))


def test_set_tasks_sets_a_task_or_what_the_function_returns_and_reports_the_envs_tasks():
    a, b = _Env(1), _Env(2)
    assert cur.set_tasks(_runner(a, b), task=0) == [0, 0]  # 0 is a task too
    assert a.calls == [0] and b.calls == [0]
    assert cur.set_tasks(_runner(a, b)) == [0, 0] and a.calls == [0]  # neither: only read
    fn = f"{__name__}:_record"
    tasks = cur.set_tasks(_runner(a, env_config={"level": 3}), fn_path=fn, result={"x": 1})
    assert tasks == [(["x"], 1, {"level": 3})]
    assert cur.set_tasks(_runner(b), fn_path=fn)[0][0] == []  # no result: an empty one


class _Group:
    def __init__(self, *runners):
        self.runners, self.local = runners, None

    def foreach_env_runner(self, func, local_env_runner):
        self.local = local_env_runner
        return [func(r) for r in self.runners]


def test_apply_sets_the_scheduled_task_on_every_runner_of_both_groups_and_returns_the_first():
    train, evaluate = _Env(), _Env()
    algo = SimpleNamespace(env_runner_group=_Group(_runner(train)), eval_env_runner_group=_Group(_runner(evaluate)))
    curriculum = CurriculumSpec(schedule=[[0, 1], [100, 2]])
    assert cur.apply(algo, curriculum, 150) == 2
    assert train.calls == [2] and evaluate.calls == [2]
    assert algo.env_runner_group.local is True and algo.eval_env_runner_group.local is True
    only_eval = SimpleNamespace(env_runner_group=None, eval_env_runner_group=_Group(_runner(_Env(5))))
    assert cur.apply(only_eval, curriculum, 0) == 1
    assert cur.apply(SimpleNamespace(), curriculum, 0) is None
    assert cur.apply(SimpleNamespace(env_runner_group=_Group(_runner())), curriculum, 0) is None


def test_apply_passes_a_function_only_the_results_known_keys_and_reads_the_tasks_before_the_first_result():
    env = _Env(7)
    algo = SimpleNamespace(env_runner_group=_Group(_runner(env)))
    curriculum = CurriculumSpec(fn=f"{__name__}:_record")
    result = {"training_iteration": 1, "env_runners": {}, "learners": {"big": 1}, "time_total_s": 1.0,
              "num_env_steps_sampled_lifetime": 5}
    keys, task, _ = cur.apply(algo, curriculum, 0, result)
    assert keys == sorted(cur._PASSED_KEYS) and task == 8
    env2 = _Env(7)
    assert cur.apply(SimpleNamespace(env_runner_group=_Group(_runner(env2))), curriculum, 0, None) == 7
    assert env2.calls == []
    # The first env's task is the first runner's of the training group, not the evaluation group's.
    both = SimpleNamespace(env_runner_group=_Group(_runner(_Env(3)), _runner(_Env(4))),
                           eval_env_runner_group=_Group(_runner(_Env(9))))
    assert cur.apply(both, curriculum, 0, None) == 3


def test_a_draw_sets_schedule_entries_and_the_entries_stay_in_order_of_env_steps(tmp_path):
    spec = rlsweep.load_spec(small_ppo("c", tmp_path, budget=BUDGET, curriculum={"schedule": [[0, 1], [1000, 2], [2000, 3]]}), preflight=False)
    found = cur.curriculum_for(spec, {"curriculum.schedule.1.0": 2500, "curriculum.schedule.2.1": 9,
                                      "curriculum.schedule.0": 5, "training.lr": 0.1})
    assert found.schedule == [[0, 1], [2000, 9], [2500, 2]]
    assert spec.curriculum.schedule == [[0, 1], [1000, 2], [2000, 3]]  # the spec's own is left as written
    fn_spec = rlsweep.load_spec(small_ppo("f", tmp_path, budget=BUDGET, curriculum={"fn": "tests.envs.tasks:harder_when_solved"}), preflight=False)
    assert cur.curriculum_for(fn_spec, {"curriculum.schedule.1.0": 1}) is fn_spec.curriculum
    assert cur.curriculum_for(rlsweep.load_spec(small_ppo("n", tmp_path, budget=BUDGET), preflight=False), {}) is None


def test_the_tasks_to_check_are_the_schedules_then_each_searched_value(tmp_path):
    spec = rlsweep.load_spec(small_ppo("c", tmp_path, budget=BUDGET, curriculum={"schedule": [[0, 1], [1000, 2]]}), preflight=False)
    spec = spec.model_copy(update={"search_space": SearchSpace((
        Parameter("curriculum.schedule.1.1", Choice((3, 4))),
        Parameter("curriculum.schedule.0.1", Fixed(6)),
        Parameter("curriculum.schedule.1.0", Choice((500, 600))),  # env steps, not a task
        Parameter("training.lr", Uniform(0.1, 0.2)),
        Parameter("curriculum.schedule.1.1.x", Uniform(7.0, 8.0)),
    ))})
    assert list(cur._scheduled_tasks(spec)) == [
        ("curriculum.schedule.0.1", 1), ("curriculum.schedule.1.1", 2),
        ("search_space.curriculum.schedule.1.1", 3), ("search_space.curriculum.schedule.1.1", 4),
        ("search_space.curriculum.schedule.0.1", 6),
    ]
    ranged = spec.model_copy(update={"search_space": SearchSpace((Parameter("curriculum.schedule.1.1", Uniform(2.0, 4.0)),))})
    assert list(cur._scheduled_tasks(ranged))[2:] == [("search_space.curriculum.schedule.1.1", 2.0),
                                                      ("search_space.curriculum.schedule.1.1", 4.0)]


class _Runs(_Env):
    """A tasked env that resets and steps as gymnasium's API says; a task of "bad" is refused."""

    action_space = SimpleNamespace(sample=lambda: 0)

    def set_task(self, task):
        if task == "bad":
            raise ValueError("no such task")
        super().set_task(task)

    def reset(self, seed=None):
        return 0, {}

    def step(self, action):
        return 0, 1.0, False, False, {}


class _Bare:
    """A tasked env with no ``unwrapped`` at all."""

    action_space = SimpleNamespace(sample=lambda: 0)

    def __init__(self):
        self.task = 1

    def set_task(self, task):
        self.task = task

    def get_task(self):
        return self.task

    def reset(self, seed=None):
        return 0, {}

    def step(self, action):
        return 0, 1.0, False, False, {}


class _Wrapper:
    """A wrapper without set_task, around an env with it (as gymnasium wraps an env)."""

    def __init__(self, env):
        self.unwrapped = env


def _spec(fn=None, schedule=None, space=()):
    return SimpleNamespace(curriculum=SimpleNamespace(fn=fn, schedule=schedule), env="tests:Env", env_config={"level": 2},
                           search_space=SearchSpace(tuple(space)))


def _messages(spec, env):
    return [(p.path, p.message) for p in cur.problems(spec, env)]


def test_the_env_checked_is_the_unwrapped_one_and_an_env_without_a_wrapper_is_itself():
    assert _messages(_spec(schedule=[[0, 1], [10, 2]]), _Wrapper(_Runs())) == []
    bare = _Runs()
    assert not hasattr(_Bare(), "unwrapped") and _messages(_spec(schedule=[[0, 1]]), _Bare()) == []
    assert _messages(_spec(schedule=[[0, 1], [10, "bad"]]), bare) == [
        ("curriculum.schedule.1.1", "task 'bad': _Runs's set_task() raised ValueError: no such task")]


def _reads_all(result, env, env_context):
    result["env_runners"]["episode_return_mean"] = 99.0  # a function may change what it is given
    return env.get_task() + env_context["level"]


def _raises(result, env, env_context):
    raise RuntimeError("boom")


def _bad(result, env, env_context):
    return "bad"


def test_a_function_is_called_with_a_copy_of_the_stand_in_the_env_and_its_config_and_named_in_problems():
    env = _Runs(1)
    before = {k: (dict(v) if isinstance(v, dict) else v) for k, v in cur.STAND_IN_RESULT.items()}
    assert _messages(_spec(fn=f"{__name__}:_reads_all"), env) == []
    assert env.calls == [3] and cur.STAND_IN_RESULT == before  # 1 + the env_config's level; the stand-in kept
    ((path, message),) = _messages(_spec(fn=f"{__name__}:_raises"), _Runs())
    assert path == "curriculum.fn" and message.startswith(
        f"'{__name__}:_raises', called as fn(train_result, env, env_context) raised RuntimeError: boom")
    ((path, message),) = _messages(_spec(fn=f"{__name__}:_bad"), _Runs())
    assert message == (f"'{__name__}:_bad' returned 'bad', a task the env cannot take: _Runs's set_task() raised "
                       "ValueError: no such task")


def test_a_function_without_a_readable_signature_is_checked_by_calling_it():
    ((path, message),) = _messages(_spec(fn="builtins:max"), _Runs())
    assert path == "curriculum.fn" and "'builtins:max', called as" in message and "raised TypeError" in message


def test_an_env_that_takes_no_tasks_is_refused_saying_what_a_curriculum_needs():
    assert _messages(_spec(schedule=[[0, 1]]), SimpleNamespace(get_task=lambda: 1)) == [(
        "curriculum", "tests:Env has no set_task: a curriculum sets each env's task through set_task(task) and reads "
        "it with get_task() (RLlib's TaskSettableEnv)")]


def test_a_function_path_with_two_colons_names_an_attribute_that_is_not_there():
    with pytest.raises(AttributeError):
        cur.load_function("os:path:join")


class _Unreadable(_Runs):
    def get_task(self):
        raise KeyError("gone")


class _Unsendable(_Runs):
    def get_task(self):
        return threading.Lock()  # cloudpickle cannot send a lock


class _NoReset(_Runs):
    def reset(self, seed=None):
        return None


def test_a_task_is_checked_by_reading_it_back_sending_it_and_running_on_it():
    assert cur._task_problem(_Runs(), 2) is None
    assert cur._task_problem(_Unreadable(), 2) == "_Unreadable's get_task() raised KeyError: 'gone'"
    why = cur._task_problem(_Unsendable(), 2)
    assert why.startswith("_Unsendable.get_task() then returned <unlocked _thread.lock object") and (
        "which cannot be sent between Ray's processes (TypeError: " in why)
    assert cur._task_problem(_NoReset(), 2) == (
        "_NoReset on this task: reset(seed=0) returned None, not (observation, info) as gymnasium's API says")


def test_a_searched_task_of_a_normal_domain_lists_no_ends():
    spec = _spec(schedule=[[0, 1]], space=[Parameter("curriculum.schedule.0.1", Normal(1.0, 1.0))])
    assert list(cur._scheduled_tasks(spec)) == [("curriculum.schedule.0.1", 1)]
