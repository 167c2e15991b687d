"""Curriculum learning: the task every env of a trial trains on, set on every env runner (the local one,
the remote ones, the evaluation ones) after each iteration. RLlib 2.60 removed
``AlgorithmConfig.environment(env_task_fn=...)``; this keeps its contract (``(train_result, env,
env_context) -> task`` on envs with ``set_task``/``get_task``, RLlib's ``TaskSettableEnv``), or follows a
schedule in env steps."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlsweep.errors import Problem, shorten

if TYPE_CHECKING:
    from rlsweep.spec import CurriculumSpec, SweepSpec

#: The result keys a curriculum function receives (RLlib's result without the per-module learner
#: details, which can be large and hold tensors): what an old env_task_fn read.
_PASSED_KEYS = ("env_runners", "num_env_steps_sampled_lifetime", "training_iteration", "time_total_s")


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
        parts = path.split(".")
        if path.startswith("curriculum.schedule.") and len(parts) == 4:
            schedule[int(parts[2])][int(parts[3])] = value
    return curriculum.model_copy(update={"schedule": sorted(schedule, key=lambda entry: entry[0])})


def problems(spec: SweepSpec, env: Any) -> list[Problem]:
    """The spec's curriculum against the env made once before launch: it must take tasks, and a function
    must import."""
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
            load_function(curriculum.fn)
        except (ImportError, AttributeError, TypeError, ValueError) as exc:
            found.append(Problem("curriculum.fn", f"cannot load {shorten(curriculum.fn)}: {type(exc).__name__}: {exc}"))
    return found
