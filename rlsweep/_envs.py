"""Environments as a spec names them: a gymnasium id, or ``package.module:EnvClass``."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def resolve_env(env: str) -> Any:
    """A gymnasium id stays a string; ``package.module:EnvClass`` becomes the class."""
    if ":" in env:
        module_name, _, attribute = env.partition(":")
        return getattr(importlib.import_module(module_name), attribute)
    return env


def env_problem(env: str) -> str | None:
    """Why ``env`` cannot be made, or None."""
    if ":" in env:
        module_name, _, attribute = env.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            return f"cannot import module {module_name!r} ({exc})"
        if not hasattr(module, attribute):
            return f"module {module_name!r} has no attribute {attribute!r}"
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
