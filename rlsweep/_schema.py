"""One checker for every declared section: pydantic validates, and each error becomes a :class:`Problem`
that names the spec path, the rule and the value, in rlsweep's words.

The spec's sections and every searcher's and scheduler's options are pydantic models; they are checked
here, so a message reads the same wherever the rule was declared.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from rlsweep.errors import Problem, shorten


class Section(BaseModel):
    """Base of every declared section: unknown keys and silent type coercion are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)


_TYPE_WORDS = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a non-empty string",
    "string_too_short": "a non-empty string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "tuple_type": "a list",
}

_BOUNDS = {"greater_than_equal": ("ge", ">="), "greater_than": ("gt", ">"), "less_than_equal": ("le", "<="), "less_than": ("lt", "<")}


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) and value.is_integer() else str(value)


def _allowed_keys(model: Any, loc: tuple[Any, ...]) -> list[str] | None:
    """The keys a model allows at ``loc`` (a path of field names inside it)."""
    for part in loc:
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        model = model.model_fields[part].annotation
        # Optional sections: the model inside ``X | None``.
        model = next((a for a in getattr(model, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)), model)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(model.model_fields)
    return None


def _message(error: Mapping[str, Any], model: Any) -> str:
    kind, value = error["type"], error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, tuple(error["loc"][:-1]))
        return f"unknown key; expected one of {allowed}" if allowed else "unknown key"
    if kind in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[kind]}, got {shorten(value)}"
    if kind in _BOUNDS:
        key, sign = _BOUNDS[kind]
        return f"must be {sign} {_number(ctx[key])}, got {shorten(value)}"
    if kind == "literal_error":
        return f"must be {ctx['expected']}, got {shorten(value)}"
    if kind in ("value_error", "assertion_error"):
        return str(ctx.get("error", error["msg"]))
    text = str(error["msg"])
    return f"{text[:1].lower()}{text[1:]}, got {shorten(value)}"


def problems_of(exc: ValidationError, where: str = "", model: Any = None) -> list[Problem]:
    """Every error of a pydantic ``ValidationError`` as a problem at ``where`` + its location."""
    problems = []
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error["loc"] if not (isinstance(part, str) and part.startswith("function-"))]
        path = ".".join([where, *loc] if where else loc)
        problems.append(Problem(path, _message(error, model)))
    return problems


@lru_cache(maxsize=None)
def _adapter(annotation: Any, field: FieldInfo) -> TypeAdapter:
    return TypeAdapter(Annotated[annotation, field])


def check_field(model: type[BaseModel], name: str, value: Any, where: str) -> tuple[Any, list[Problem]]:
    """Validate one field of ``model`` on its own (so a problem elsewhere hides nothing here)."""
    field = model.model_fields[name]
    try:
        return _adapter(field.annotation, field).validate_python(value), []
    except ValidationError as exc:
        inner = field.annotation
        inner = next((a for a in getattr(inner, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)), inner)
        return None, problems_of(exc, where, inner)


def check_model(model: type[BaseModel], value: Any, where: str) -> tuple[Any, list[Problem]]:
    """Validate ``value`` as ``model``; returns the instance (or None) and every problem."""
    try:
        return model.model_validate(value), []
    except ValidationError as exc:
        return None, problems_of(exc, where, model)
