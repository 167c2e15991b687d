"""Environments as a spec names them: a gymnasium id, or ``package.module:EnvClass``."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Mapping
from typing import Any

from rlsweep.errors import shorten

#: The longest quote of a user exception's message in a problem.
_MESSAGE_CHARS = 300


class UserCodeFailed(Exception):
    """User code (an env, a curriculum function) raised, or exited; the message says which and how, in one
    line."""


def exception_line(exc: BaseException) -> str:
    """An exception in one line: ``ValueError: <its message>`` (never the traceback); ``SystemExit:
    sys.exit(0) was called``."""
    if isinstance(exc, SystemExit):
        return f"SystemExit: sys.exit({exc.code!r}) was called"
    message = " ".join(str(exc).split())
    if len(message) > _MESSAGE_CHARS:
        message = message[:_MESSAGE_CHARS] + "..."
    return type(exc).__name__ + (f": {message}" if message else "")


def ended(what: str, exc: BaseException) -> str:
    """How user code ended, in one line: ``the env's constructor called sys.exit(0)``, or ``... raised
    ValueError: <its message>``."""
    if isinstance(exc, SystemExit):
        return f"{what} called sys.exit({exc.code!r})"
    return f"{what} raised {exception_line(exc)}"


def call_user(what: str, function: Any, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, for user code run before launch: whatever it raises, ``SystemExit``
    and other ``BaseException`` included (they would end rlsweep itself), becomes :class:`UserCodeFailed`;
    only Ctrl-C (``KeyboardInterrupt``) goes through.

    Raises:
        UserCodeFailed: naming ``what`` and how it ended.
    """
    try:
        return function(*args, **kwargs)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - user code may raise or exit in any way
        raise UserCodeFailed(ended(what, exc)) from None


def resolve_env(env: str) -> Any:
    """A gymnasium id stays a string; ``package.module:EnvClass`` becomes the class."""
    if ":" in env:
        module_name, _, attribute = env.partition(":")
        return getattr(importlib.import_module(module_name), attribute)
    return env


def env_problem(env: str) -> str | None:
    """Why ``env`` cannot be found, or None (whether it can be made is :func:`made_env_problem`'s)."""
    if ":" in env:
        module_name, _, attribute = env.partition(":")
        if not module_name or not attribute or not all(part.isidentifier() for part in (*module_name.split("."), attribute)):
            return f"write a gymnasium id or 'package.module:EnvClass', got {shorten(env)}"
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            return f"cannot import module {module_name!r} ({exc})"
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - whatever the user's module raises (or exits with) as it is imported
            return ended(f"importing module {module_name!r}", exc)
        if not hasattr(module, attribute):
            return f"module {module_name!r} has no attribute {attribute!r}"
        if not isinstance(getattr(module, attribute), type):
            return f"{env} is not an env class (it is a {type(getattr(module, attribute)).__name__})"
        return None
    import gymnasium

    try:
        gymnasium.spec(env)
    except gymnasium.error.Error as exc:
        return f"not a registered gymnasium id: {exc}; for a custom env write 'package.module:EnvClass'"
    return None


def make_env(env: str, env_config: Mapping[str, Any]) -> Any:
    """The env as RLlib makes it: ``gymnasium.make(id, **env_config)`` or ``EnvClass(env_config)``."""
    resolved = resolve_env(env)
    if isinstance(resolved, str):
        import gymnasium

        return gymnasium.make(resolved, **dict(env_config))
    return resolved(dict(env_config))


def made_env_problem(env: str, env_config: Mapping[str, Any]) -> tuple[str, str] | None:
    """Make ``env`` once with ``env_config`` as a trial would: (spec path, why) where that fails or makes
    something that is not an env, else None. Catches before launch what would fail every trial."""
    import gymnasium
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    try:
        made = make_env(env, env_config)
    except TypeError as exc:
        return "env_config", f"{env} does not take this env_config: {shorten(str(exc))}"
    except Exception as exc:  # noqa: BLE001 - whatever the user's env raises
        return "env_config", f"making {env} with this env_config raised {type(exc).__name__}: {shorten(str(exc))}"
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - sys.exit() in the env would end rlsweep without a word
        how = ended("the env's constructor", exc)
        return "env", f"{how} (making {env} as a trial would)"
    try:
        if not isinstance(made, (gymnasium.Env, MultiAgentEnv)):
            return "env", f"{env} made a {type(made).__name__}, not a gymnasium.Env or an RLlib MultiAgentEnv"
        if (why := run_problem(made)) is not None:
            return "env", f"{env}: {why}"
    finally:
        if isinstance(made, (gymnasium.Env, MultiAgentEnv)):
            close_quietly(made)
    return None


def run_problem(made: Any) -> str | None:
    """Why ``made`` (an env) cannot run as a trial's env runner runs it, or None: ``reset(seed=...)`` must
    return ``(observation, info)`` and, for a single-agent env, one ``step`` of a sampled action
    ``(observation, reward, terminated, truncated, info)``. Whatever the env raises or exits with is the why."""
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    try:
        reset = call_user("the env's reset(seed=0)", made.reset, seed=0)
        if not (isinstance(reset, tuple) and len(reset) == 2):
            return f"reset(seed=0) returned {shorten(reset)}, not (observation, info) as gymnasium's API says"
        if isinstance(getattr(made, "unwrapped", made), MultiAgentEnv):
            return None  # a multi-agent step needs an action per agent, from spaces RLlib may fill in itself
        action = call_user("sampling the env's action_space", lambda: made.action_space.sample())
        stepped = call_user(f"the env's step({shorten(action)})", made.step, action)
        if not (isinstance(stepped, tuple) and len(stepped) == 5):
            return (f"step() returned {shorten(stepped)}, not (observation, reward, terminated, truncated, info) as "
                    "gymnasium's API says")
    except UserCodeFailed as exc:
        return str(exc)
    return None


def close_quietly(made: Any) -> None:
    """Close an env made for a check; whatever its ``close`` does is not the check's business."""
    close = getattr(made, "close", None)
    if callable(close):
        with contextlib.suppress(UserCodeFailed):
            call_user("the env's close()", close)
