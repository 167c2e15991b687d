"""Environments as a spec names them: a gymnasium id, or ``package.module:EnvClass``."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Mapping
from typing import Any

from rlsweep.errors import shorten


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
        except Exception as exc:  # noqa: BLE001 - whatever the user's module raises as it is imported
            return f"importing module {module_name!r} raised {type(exc).__name__}: {shorten(str(exc))}"
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
    try:
        if not isinstance(made, (gymnasium.Env, MultiAgentEnv)):
            return "env", f"{env} made a {type(made).__name__}, not a gymnasium.Env or an RLlib MultiAgentEnv"
    finally:
        close = getattr(made, "close", None)
        if callable(close) and isinstance(made, (gymnasium.Env, MultiAgentEnv)):
            with contextlib.suppress(Exception):
                close()
    return None
