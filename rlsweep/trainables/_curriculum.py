"""Curriculum learning: the task every env of a trial trains on, set on every env runner (the local one,
the remote ones, the evaluation ones) after each iteration. RLlib 2.60 removed
``AlgorithmConfig.environment(env_task_fn=...)``; this keeps its contract (``(train_result, env,
env_context) -> task`` on envs with ``set_task``/``get_task``, RLlib's ``TaskSettableEnv``), or follows a
schedule in env steps."""

from __future__ import annotations

import copy
import importlib
import inspect
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from rlsweep._envs import UserCodeFailed, call_user, exception_line, run_problem
from rlsweep.errors import Problem, shorten
from rlsweep.search_spaces import Choice, Fixed
from rlsweep.spec import curriculum_slot

if TYPE_CHECKING:
    from rlsweep.spec import CurriculumSpec, SweepSpec

#: The result keys a curriculum function receives (RLlib's result without the per-module learner
#: details, which can be large and hold tensors): what an old env_task_fn read.
_PASSED_KEYS = ("env_runners", "num_env_steps_sampled_lifetime", "training_iteration", "time_total_s")

#: What a curriculum function is called with before launch, once, to see that it runs: the keys of
#: :data:`_PASSED_KEYS` as a first iteration in which episodes ended reports them.
STAND_IN_RESULT: dict[str, Any] = {
    "env_runners": {
        "episode_return_mean": 0.0, "episode_return_min": 0.0, "episode_return_max": 0.0, "episode_len_mean": 0.0,
        "num_episodes": 1, "num_episodes_lifetime": 1, "num_env_steps_sampled": 1, "num_env_steps_sampled_lifetime": 1,
    },
    "num_env_steps_sampled_lifetime": 1,
    "training_iteration": 1,
    "time_total_s": 0.0,
}
#: How the trial calls a curriculum function (RLlib's old env_task_fn).
CALLED_AS = "fn(train_result, env, env_context)"


def load_function(path: str) -> Any:
    """``module:function`` imported. Raises ImportError, AttributeError or TypeError (not callable)."""
    module, _, name = path.partition(":")
    found = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    if not callable(found):
        raise TypeError(f"{path} is a {type(found).__name__}, not a function")
    return found


def _sub_envs(env_runner: Any) -> list[Any]:
    """The unwrapped envs an env runner steps (gymnasium's synchronous vector env holds them in-process)."""
    env = getattr(env_runner, "env", None)
    if env is None:
        return []
    vector = env.unwrapped
    envs = getattr(vector, "envs", None)
    if envs is None:
        raise TypeError(
            f"{type(vector).__name__} runs its envs in other processes; a curriculum needs "
            "env_runners.gym_env_vectorize_mode: SYNC (the default)"
        )
    return [e.unwrapped for e in envs]


def set_tasks(env_runner: Any, task: Any = None, fn_path: str | None = None, result: Mapping[str, Any] | None = None) -> list[Any]:
    """On one env runner: set ``task`` on each of its envs, or the task ``fn_path`` returns for each; returns
    the tasks its envs report (``get_task``). With neither, it only reads them."""
    fn = load_function(fn_path) if fn_path is not None else None
    tasks = []
    for env in _sub_envs(env_runner):
        if fn is not None:
            env.set_task(fn(dict(result or {}), env, env_runner.config.env_config))
        elif task is not None:
            env.set_task(task)
        tasks.append(env.get_task())
    return tasks


def apply(algo: Any, curriculum: CurriculumSpec, env_steps: int, result: Mapping[str, Any] | None = None) -> Any:
    """Set the curriculum's task on every env runner of ``algo``; returns the task the envs now report (the
    first env's). A function without a result yet (at the start) sets nothing."""
    kwargs: dict[str, Any]
    if curriculum.fn is not None:
        # Before the first result there is nothing to decide from: the envs' own first task is read.
        passed = {k: result[k] for k in _PASSED_KEYS if k in result} if result is not None else None
        kwargs = {"fn_path": curriculum.fn, "result": passed} if result is not None else {}
    else:
        kwargs = {"task": curriculum.task_at(env_steps)}
    found: list[Any] = []
    for name in ("env_runner_group", "eval_env_runner_group"):
        group = getattr(algo, name, None)
        if group is None:
            continue
        for tasks in group.foreach_env_runner(lambda runner: set_tasks(runner, **kwargs), local_env_runner=True):
            found += tasks or []
    return found[0] if found else None


def curriculum_for(spec: SweepSpec, sampled: Mapping[str, Any]) -> CurriculumSpec | None:
    """The spec's curriculum with what the trial's draw sets in it (``curriculum.schedule.<i>.<j>``: the
    env steps at which a task starts, or the task), entries kept in their order of env steps."""
    curriculum = spec.curriculum
    if curriculum is None or curriculum.schedule is None:
        return curriculum
    schedule = [list(entry) for entry in curriculum.schedule]
    for path, value in sampled.items():
        slot = curriculum_slot(path)  # validate refused every other curriculum path
        if slot is not None and slot[0] < len(schedule):
            schedule[slot[0]][slot[1]] = value
    return curriculum.model_copy(update={"schedule": sorted(schedule, key=lambda entry: entry[0])})


def problems(spec: SweepSpec, env: Any) -> list[Problem]:
    """The spec's curriculum against an env made as a trial makes it: the env must take tasks; a function
    must import, take ``(train_result, env, env_context)`` and, called once so, return a task the env takes;
    each task of a schedule (and each a search space sets in it) must be one the env takes and runs with.
    Whatever the user's code raises or exits with is a problem at the path of what was checked."""
    curriculum = spec.curriculum
    if curriculum is None:
        return []
    found = []
    base = env.unwrapped if hasattr(env, "unwrapped") else env
    missing = [m for m in ("set_task", "get_task") if not callable(getattr(base, m, None))]
    if missing:
        found.append(Problem(
            "curriculum", f"{spec.env} has no {' or '.join(missing)}: a curriculum sets each env's task through "
            "set_task(task) and reads it with get_task() (RLlib's TaskSettableEnv)",
        ))
    if curriculum.fn is not None:
        try:
            fn = load_function(curriculum.fn)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a module may raise anything (or exit) as it is imported
            return [*found, Problem("curriculum.fn", f"cannot load {shorten(curriculum.fn)}: {exception_line(exc)}")]
        if not missing:
            found += _fn_problems(spec, fn, base)
    elif not missing:
        for path, task in _scheduled_tasks(spec):
            if (why := _task_problem(base, task)) is not None:
                found.append(Problem(path, f"task {shorten(task)}: {why}"))
    return found


def _fn_problems(spec: SweepSpec, fn: Any, env: Any) -> list[Problem]:
    """``fn`` called once as the trial calls it after an iteration, and what it returns set on ``env``."""
    name = shorten(spec.curriculum.fn if spec.curriculum is not None else fn)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C function: nothing to read; the call below tells
        signature = None
    if signature is not None:
        try:
            signature.bind(copy.deepcopy(STAND_IN_RESULT), env, dict(spec.env_config))
        except TypeError as exc:
            return [Problem("curriculum.fn", f"{name} takes {signature}, but the trial calls it as {CALLED_AS} "
                                             f"(RLlib's env_task_fn): {exc}")]
    try:
        task = call_user(f"{name}, called as {CALLED_AS}", fn, copy.deepcopy(STAND_IN_RESULT), env, dict(spec.env_config))
    except UserCodeFailed as exc:
        return [Problem("curriculum.fn", f"{exc} (called once before launch, on a stand-in of a first "
                                         f"iteration's result with the keys {sorted(STAND_IN_RESULT)})")]
    if (why := _task_problem(env, task)) is not None:
        return [Problem("curriculum.fn", f"{name} returned {shorten(task)}, a task the env cannot take: {why}")]
    return []


def _scheduled_tasks(spec: SweepSpec) -> Iterator[tuple[str, Any]]:
    """Each task a trial may set, with its spec path: the schedule's, then the values a search space sets
    in it (``curriculum.schedule.<i>.1``: each choice, or a range's ends)."""
    curriculum = spec.curriculum
    for index, (_, task) in enumerate(curriculum.schedule or () if curriculum is not None else ()):
        yield f"curriculum.schedule.{index}.1", task
    for parameter in spec.search_space:
        slot = curriculum_slot(parameter.path)
        if slot is not None and slot[1] == 1:
            domain = parameter.domain
            if isinstance(domain, Fixed):
                values: tuple[Any, ...] = (domain.value,)
            elif isinstance(domain, Choice):
                values = tuple(domain.values)
            else:
                values = tuple(v for v in (getattr(domain, "low", None), getattr(domain, "high", None)) if v is not None)
            for value in values:
                yield f"search_space.{parameter.path}", value


def _task_problem(env: Any, task: Any) -> str | None:
    """Why ``env`` cannot train on ``task`` as a trial sets it, or None: ``set_task(task)``, then
    ``get_task()`` (whose value travels between Ray's processes), then a reset and a step on it."""
    from ray import cloudpickle

    try:
        call_user("its set_task()", env.set_task, task)
        reported = call_user("its get_task()", env.get_task)
    except UserCodeFailed as exc:
        return f"{type(env).__name__}'s {str(exc).removeprefix('its ')}"
    try:
        cloudpickle.dumps(reported)
    except Exception as exc:  # noqa: BLE001 - pickling raises TypeError, PicklingError, AttributeError, ...
        return (f"{type(env).__name__}.get_task() then returned {shorten(reported)}, which cannot be sent between Ray's "
                f"processes ({exception_line(exc)})")
    if (why := run_problem(env)) is not None:
        return f"{type(env).__name__} on this task: {why}"
    return None
