"""Dotted paths: the one flatten/unflatten pair for nested mappings (spec paths, RLlib result keys)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any


def flatten(
    document: Mapping[str, Any],
    sep: str = ".",
    *,
    keep: Callable[[Any], Any | None] | None = None,
    skip: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``. An empty mapping stays a leaf.

    Args:
        sep: What joins the keys.
        keep: Maps each leaf to the value kept, or None to drop it (e.g. numbers only).
        skip: Top-level keys left out.
    """
    flat: dict[str, Any] = {}

    def walk(node: Mapping[str, Any], prefix: str) -> None:
        for key, value in node.items():
            if not prefix and key in skip:
                continue
            name = f"{prefix}{key}"
            if isinstance(value, Mapping) and value:
                walk(value, f"{name}{sep}")
                continue
            kept = keep(value) if keep is not None else value
            if keep is None or kept is not None:
                flat[name] = kept

    walk(document, "")
    return flat


def unflatten(flat: Mapping[str, Any], sep: str = ".") -> dict[str, Any]:
    """``{"training.lr": 1e-3, "rl_module.model_config.fcnet_hiddens": [64]}`` ->
    ``{"training": {"lr": 1e-3}, "rl_module": {"model_config": {"fcnet_hiddens": [64]}}}``. A key set
    where a mapping was (or the reverse) replaces it: the later key wins."""
    nested: dict[str, Any] = {}
    for path, value in flat.items():
        # A copy: a later, deeper path would otherwise write into the caller's own mapping.
        set_in(nested, path.split(sep), copy.deepcopy(value))
    return nested


def set_in(document: dict[str, Any], parts: list[str], value: Any) -> None:
    """Set ``document[parts[0]][parts[1]]...`` to ``value``, making (or replacing non-mapping) parents."""
    target = document
    for part in parts[:-1]:
        if not isinstance(target.get(part), dict):
            target[part] = {}
        target = target[part]
    target[parts[-1]] = value
