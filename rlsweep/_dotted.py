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


#: What a path segment that indexes a list must be, said in every refusal of one.
INDEX_RULE = "a list index is written in the ASCII digits 0-9, without a sign or leading zeros (0, 1, 12)"
#: An index past any list a spec can hold (its values are bounded far below): longer digit strings are not
#: read as numbers, so Python's limit on ``int(str)`` is never reached.
_MAX_INDEX_DIGITS = 18


def list_index(segment: str) -> int | None:
    """``segment`` read as a list index, or None where it is not one.

    One form only, so each entry has one name: ASCII digits (``str.isdigit`` also takes ``'²'`` and
    ``'٣'``, which ``int`` then refuses or reads as 3), no sign, no leading zero (``01`` would name entry 1
    a second way), at most 18 digits.
    """
    if not (0 < len(segment) <= _MAX_INDEX_DIGITS and segment.isascii() and segment.isdigit()):
        return None
    if segment[0] == "0" and segment != "0":
        return None
    return int(segment)


def set_in_lists(document: dict[str, Any], parts: list[str], value: Any) -> None:
    """:func:`set_in`, except that a segment reaching a list indexes it (``curriculum.schedule.1.0``): an
    entry the list has, named as :func:`list_index` reads it.

    Raises:
        ValueError: a segment meets a list and is not the index of one of its entries; the message names
            the path up to that list, the rule and the segment.
    """
    target: Any = document
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(target, list):
            index = list_index(part)
            where = ".".join(parts[:depth])
            if index is None:
                raise ValueError(f"{where} is a list, so the segment after it is an entry's index; {INDEX_RULE}, got {part!r}")
            if index >= len(target):
                has = f"entries 0 to {len(target) - 1}" if target else "no entries"
                raise ValueError(f"{where} is a list with {has}, so it has no entry {index}")
            if last:
                target[index] = value
            elif not isinstance(target[index], (dict, list)):
                target[index] = {}
            target = target[index]
            continue
        if last:
            target[part] = value
        else:
            if not isinstance(target.get(part), (dict, list)):
                target[part] = {}
            target = target[part]
