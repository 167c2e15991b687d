"""The package's structure as ARCHITECTURE's package map states it: no import cycle (function-local and
type-checking imports included), each stage importing only what it may, another package's private names used
only in ``rlsweep/_compat.py`` (each with its version), and the export working without Ray."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.experiments import new_experiment, write_trial

PACKAGE = REPO / "rlsweep"


def _module_name(path: Path, base: Path) -> str:
    parts = path.relative_to(base).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, base: Path) -> bool:
    path = base.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (annotations only; never executed)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skipped |= {id(inner) for child in node.body for inner in ast.walk(child)}
    return skipped


def import_graph(root: Path = PACKAGE, *, annotations: bool = False) -> dict[str, set[str]]:
    """module -> the rlsweep modules it imports anywhere in its source, top level and inside functions
    alike, each ``from package import name`` resolved to the submodule where there is one. Imports under
    ``if TYPE_CHECKING`` are left out unless ``annotations`` (they never run, so they cannot form a cycle
    at import time; the package map's rules count them)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root.parent)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = graph.setdefault(module, set())
        tree = ast.parse(path.read_text(), str(path))
        skipped = set() if annotations else _type_checking_only(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names if alias.name.split(".")[0] == "rlsweep"}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                if base.split(".")[0] != "rlsweep":
                    continue
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    edges.add(target if _is_module(target, root.parent) else base)
        edges.discard(module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph.get(node, ()):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def stage(module: str) -> str:
    """A module's room: its subpackage (``rlsweep.analysis``) or, for a top-level module, itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else module


def stage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    stages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        stages.setdefault(stage(module), set()).update(stage(t) for t in targets if stage(t) != stage(module))
    return stages


def test_no_import_cycle_between_modules():
    assert cycles(import_graph()) == []
    # Not even an annotation points back.
    assert cycles(import_graph(annotations=True)) == []


def test_no_import_cycle_between_stages():
    # Between stages, not even an annotation points back.
    assert cycles(stage_graph(import_graph(annotations=True))) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path):
    # The check above must be able to fail: two modules importing each other, one inside a function.
    package = tmp_path / "rlsweep"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from rlsweep import b\n")
    (package / "b.py").write_text("def f():\n    from rlsweep.a import x\n")
    assert cycles(import_graph(package)) == [["rlsweep.a", "rlsweep.b"]]


#: stage -> stages it must not import (ARCHITECTURE's package map, "must not").
MUST_NOT = {
    "rlsweep._host": {"rlsweep.spec", "rlsweep.store", "rlsweep.search_spaces", "rlsweep.schedulers", "rlsweep.trainables", "rlsweep.sweep", "rlsweep.runtime", "rlsweep.analysis"},
    "rlsweep.spec": {"rlsweep.schedulers", "rlsweep.trainables", "rlsweep.sweep", "rlsweep.analysis", "rlsweep.store"},
    "rlsweep.store": {"rlsweep.spec", "rlsweep.search_spaces", "rlsweep.schedulers", "rlsweep.trainables", "rlsweep.sweep", "rlsweep.analysis"},
    "rlsweep.search_spaces": {"rlsweep.spec", "rlsweep.schedulers", "rlsweep.trainables", "rlsweep.sweep", "rlsweep.analysis"},
    "rlsweep.schedulers": {"rlsweep.trainables", "rlsweep.sweep", "rlsweep.analysis"},
    "rlsweep.warm_start": {"rlsweep.trainables", "rlsweep.sweep", "rlsweep.analysis"},
    "rlsweep.trainables": {"rlsweep.sweep", "rlsweep.analysis"},
    "rlsweep.sweep": {"rlsweep.analysis"},
    "rlsweep.runtime": {"rlsweep.sweep", "rlsweep.analysis", "rlsweep.search_spaces", "rlsweep.schedulers", "rlsweep.store"},
    "rlsweep.analysis": {"rlsweep.sweep", "rlsweep.runtime", "rlsweep.trainables", "rlsweep.schedulers"},
}
#: The arrows the map allows across a "must not", each taken inside a function, at call time, where the
#: stage asks another to do its part: (importing module, imported module) -> why.
ASKS = {
    ("rlsweep.analysis._load", "rlsweep.sweep"): "Sweep.confirm() asks the sweep stage to retrain the configurations",
}


def _arrows_beyond_the_asks(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {module: {t for t in targets if (module, t) not in ASKS} for module, targets in graph.items()}


@pytest.mark.parametrize("room", sorted(MUST_NOT))
def test_each_stage_imports_only_what_the_package_map_allows(room):
    imports = stage_graph(_arrows_beyond_the_asks(import_graph(annotations=True))).get(room, set())
    assert not imports & MUST_NOT[room], f"{room} imports {sorted(imports & MUST_NOT[room])}"


def test_each_ask_across_the_map_is_taken_inside_a_function_and_still_there():
    # An ask named here that no longer exists is stale; one made at import time is a dependency, not an ask.
    graph = import_graph(annotations=True)
    for importer, imported in ASKS:
        assert imported in graph.get(importer, set()), f"{importer} no longer asks {imported}: remove it from ASKS"
        tree = ast.parse((PACKAGE.parent / (importer.replace(".", "/") + ".py")).read_text())
        at_top = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                  and imported in ({a.name for a in node.names} if isinstance(node, ast.Import) else {node.module})
                  and not any(node in ast.walk(f) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)))]
        assert not at_top, f"{importer} imports {imported} at import time: that is a dependency the map forbids"


# --- A dependency's private names: only in rlsweep/_compat.py ------------------------------------------


@dataclass(frozen=True)
class PrivateUse:
    """One use of a name another package keeps private (``_name``), found in the source of a package."""

    path: str  #: the file, relative to the package's parent folder
    line: int
    name: str  #: the private name (``_learner_class``), or the dotted path of a private module or string
    code: str  #: the expression that uses it

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} in `{self.code}`"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _has_private_part(dotted: str) -> bool:
    return any(_is_private(part) for part in dotted.split("."))


#: The calls that read or write an attribute named by a string: the object is the first argument.
_BY_STRING = {"getattr", "hasattr", "setattr", "delattr", "__getattribute__", "__getattr__", "__setattr__", "__delattr__"}
#: A dotted name written as a string (a logger's, a module's), as a whole.
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.\w+)+")


def _imports(tree: ast.AST, module: str, is_package: bool) -> dict[str, str]:
    """local name -> the dotted path it stands for, from every import in the file (function-local too)."""
    package = module if is_package else module.rpartition(".")[0]
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{base}.{alias.name}"
    return bound


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*anchor, node.module] if node.module else anchor)


def _dotted(expr: ast.expr, imports: dict[str, str]) -> str | None:
    """The dotted path an ``a.b.c`` expression names, where ``a`` is imported; else None."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name) and expr.id in imports:
        return ".".join([imports[expr.id], *reversed(parts)])
    return None


def _resolve(dotted: str) -> Any:
    """The object a dotted path names (a module, or an attribute of one); None where it is not there."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part, None)
        return found
    return None


_PRIVATES: dict[type, frozenset[str]] = {}


def _private_names_of(cls: type, own: str) -> frozenset[str]:
    """The private names the classes of another package in ``cls``'s MRO have: their attributes and
    methods, their slots, and the ``self._x`` their source reads or sets (an instance attribute)."""
    found: set[str] = set()
    for klass in cls.__mro__:
        if klass is object or klass.__module__.split(".")[0] == own:
            continue
        if klass not in _PRIVATES:
            names = {name for name in vars(klass) if _is_private(name)}
            slots = vars(klass).get("__slots__", ())
            names |= {slots} if isinstance(slots, str) else set(slots)
            try:
                source = textwrap.dedent(inspect.getsource(klass))
            except (OSError, TypeError):  # written in C, or no source shipped
                source = ""
            for node in ast.walk(ast.parse(source)) if source else ():
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id in ("self", "cls") and _is_private(node.attr)):
                    names.add(node.attr)
            _PRIVATES[klass] = frozenset(n for n in names if _is_private(n))
        found |= _PRIVATES[klass]
    return frozenset(found)


@dataclass
class _ClassFacts:
    node: ast.ClassDef
    runtime: type | None  #: the class itself, where it can be named (module level, or its bases resolved)
    bases: list[Any]  #: its bases as objects, or None for a base that cannot be resolved (a parameter)
    path: Path
    defined: set[str] = field(default_factory=set)  #: private names its body defines, or its methods set on self
    foreign: frozenset[str] = frozenset()  #: private names of the other packages' classes it is mixed with
    unknown_base: bool = False


def _class_definitions(node: ast.ClassDef) -> set[str]:
    """Private names a class's body defines (methods, class attributes, slots) or its methods set on
    ``self``/``cls`` (also through ``setattr``/``object.__setattr__``)."""
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(item.name)
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                if isinstance(target, ast.Name):
                    names.add(target.id)
                    if target.id == "__slots__" and item.value is not None:
                        names |= {c.value for c in ast.walk(item.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store) and _is_self(inner.value):
            names.add(inner.attr)
        elif (isinstance(inner, ast.Call) and _by_string(inner) and _by_string(inner)[0] in ("setattr", "__setattr__")
              and _is_self(inner.args[0])):
            names.add(inner.args[1].value)  # type: ignore[attr-defined]
    return {n for n in names if _is_private(n)}


def _is_self(expr: ast.expr) -> bool:
    """``self``, ``cls``, ``super()``, ``type(self)``: the class being defined or its bases."""
    if isinstance(expr, ast.Name):
        return expr.id in ("self", "cls")
    return (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)
            and (expr.func.id == "super" or (expr.func.id == "type" and len(expr.args) == 1 and _is_self(expr.args[0]))))


def _by_string(call: ast.Call) -> tuple[str, ast.expr, str] | None:
    """``getattr(obj, "_name", ...)`` and its kin as (function, obj, name); None for any other call."""
    func = call.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if called not in _BY_STRING or len(call.args) < 2:
        return None
    name = call.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    return called, call.args[0], name.value


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def private_uses(root: Path = PACKAGE, *, skip: tuple[str, ...] = ("_compat.py",)) -> list[PrivateUse]:
    """Every use, in the package at ``root``, of a name another package keeps private: an attribute
    ``x._name`` (also as ``getattr(x, "_name")`` and its kin) whose object is not the package's own, an
    import of ``pkg._private`` or of ``_name`` from another package, a dotted string naming a private
    module (a logger's name), and a class of the package that overrides, reads or sets a private name of a
    class of another package it is mixed with (found by importing it and reading that class's source).

    The package's own: a name imported from it; ``self._x`` and ``cls._x`` where no other package's class
    in the MRO has ``_x``; on any other object, a private name a class of the same file defines (a method,
    a class attribute, a slot, a ``self._x = ...``), or one starting with ``_<package>`` (a mark the package
    puts on another package's object). Files named in ``skip`` are left out. Not seen: a private name
    reached through ``vars()`` or ``__dict__``, or a nested class mixed in elsewhere (a factory's mixin)."""
    own = root.name
    sources: dict[Path, tuple[str, ast.Module, dict[str, str]]] = {}
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root.parent)
        tree = ast.parse(path.read_text(), str(path))
        sources[path] = (module, tree, _imports(tree, module, path.name == "__init__.py"))

    # The package's classes, with the other packages' classes each is mixed with (a mixin counts with every
    # class that mixes it in).
    facts: dict[int, _ClassFacts] = {}
    by_class: dict[type, _ClassFacts] = {}
    for path, (module, tree, imports) in sources.items():
        loaded = importlib.import_module(module)
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            runtime = getattr(loaded, node.name, None) if id(node) in top else None
            if isinstance(runtime, type) and runtime.__module__ == module:
                bases: list[Any] = list(runtime.__bases__)
            else:
                runtime = None
                bases = []
                for base in node.bases:
                    dotted = _dotted(base, imports)
                    if dotted is None and isinstance(base, ast.Name):
                        dotted = f"{module}.{base.id}"
                    found = _resolve(dotted) if dotted else None
                    bases.append(found if isinstance(found, type) else None)
            fact = facts[id(node)] = _ClassFacts(node, runtime, bases, path, _class_definitions(node))
            fact.unknown_base = None in bases
            fact.foreign = frozenset().union(*(_private_names_of(b, own) for b in bases if b is not None))
            if runtime is not None:
                by_class[runtime] = fact
    for klass in by_class:
        mixed = _private_names_of(klass, own)
        for ancestor in klass.__mro__:
            if ancestor in by_class:
                by_class[ancestor].foreign |= mixed
    defined_in: dict[Path, set[str]] = {}
    for fact in facts.values():
        defined_in.setdefault(fact.path, set()).update(fact.defined - fact.foreign)
    defined_by_package = set().union(*(names for path, names in defined_in.items() if path.name not in skip))

    found: list[PrivateUse] = []
    for path, (module, tree, imports) in sources.items():
        if path.name not in skip:
            scan = _FileScan(path, root, module, tree, imports, facts, defined_in.get(path, set()), defined_by_package)
            scan.visit(tree, None)
            found += scan.found
    return sorted(found, key=lambda u: (u.path, u.line, u.name))


@dataclass
class _FileScan:
    """The private uses of one file of the package (see :func:`private_uses`)."""

    path: Path
    root: Path
    module: str
    tree: ast.Module
    imports: dict[str, str]
    facts: dict[int, _ClassFacts]
    defined_here: set[str]  #: private names the file's own classes define
    defined_by_package: set[str]  #: private names any class of the package defines
    found: list[PrivateUse] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.own = self.root.name
        self.source = self.path.read_text()
        self.docstrings = _docstrings(self.tree)

    def use(self, node: ast.AST, name: str) -> None:
        code = (ast.get_source_segment(self.source, node) or name).splitlines()[0]
        self.found.append(PrivateUse(str(self.path.relative_to(self.root.parent)), node.lineno, name, code))

    def on_object(self, node: ast.AST, obj: ast.expr, name: str, cls: _ClassFacts | None) -> None:
        if not _is_private(name) or name.startswith(f"_{self.own}"):
            return
        dotted = _dotted(obj, self.imports)
        if dotted is not None:  # a module or class imported by name: the package's own or another's
            if dotted.split(".")[0] != self.own:
                self.use(node, name)
            return
        if cls is not None and _is_self(obj):
            if name in cls.foreign or (cls.unknown_base and name not in cls.defined) or (
                    not cls.unknown_base and name not in self.defined_by_package):
                self.use(node, name)
            return
        if name not in self.defined_here:  # another object: own only if a class of this file has the name
            self.use(node, name)

    def visit(self, node: ast.AST, cls: _ClassFacts | None) -> None:
        if isinstance(node, ast.ClassDef):
            cls = self.facts[id(node)]
            for item in node.body:  # what the body defines: an override where another package's class has it
                names = ([item.name] if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else
                         [t.id for t in (item.targets if isinstance(item, ast.Assign) else [item.target])
                          if isinstance(t, ast.Name)] if isinstance(item, (ast.Assign, ast.AnnAssign)) else [])
                for name in names:
                    if _is_private(name) and not name.startswith(f"_{self.own}") and (
                            name in cls.foreign or cls.unknown_base):
                        self.use(item, name)
        elif isinstance(node, ast.Attribute):
            self.on_object(node, node.value, node.attr, cls)
        elif isinstance(node, ast.Call) and (called := _by_string(node)):
            self.on_object(node, called[1], called[2], cls)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != self.own and _has_private_part(alias.name):
                    self.use(node, alias.name)
        elif isinstance(node, ast.ImportFrom):
            package = self.module if self.path.name == "__init__.py" else self.module.rpartition(".")[0]
            base = _absolute(node, package)
            if base.split(".")[0] != self.own:
                if _has_private_part(base):
                    self.use(node, base)
                for alias in node.names:
                    if _is_private(alias.name):
                        self.use(node, f"{base}.{alias.name}")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in self.docstrings
              and _DOTTED.fullmatch(node.value) and _has_private_part(node.value)
              and node.value.split(".")[0] != self.own and importlib.util.find_spec(node.value.split(".")[0])):
            self.use(node, node.value)
        for child in ast.iter_child_nodes(node):
            self.visit(child, cls)


#: A dependency's private names used outside ``rlsweep/_compat.py``, for now: (file, name) -> where they go.
#: A use not listed here fails the test below, and so does an entry no use needs any more.
PRIVATE_USES_ALLOWED: dict[tuple[str, str], str] = {}


def test_a_dependencys_private_names_are_used_only_in_the_compat_module():
    uses = private_uses()
    new = [str(use) for use in uses if (use.path, use.name) not in PRIVATE_USES_ALLOWED]
    assert not new, (
        "a private name of Ray, RLlib or another package is used outside rlsweep/_compat.py; put it in a function "
        "or class there, with the version it was checked against and why:\n" + "\n".join(new))
    needed = {(use.path, use.name) for use in uses}
    assert not set(PRIVATE_USES_ALLOWED) - needed, f"allowed but no longer used: {sorted(set(PRIVATE_USES_ALLOWED) - needed)}"


#: A version as the compat module states one ("Ray 2.60", "torch 2.13", "Ax 1.3.1").
_VERSION = re.compile(r"\b\d+\.\d+")


def test_each_private_use_in_the_compat_module_says_which_version_it_was_checked_against():
    # Each top-level function, class or constant of _compat.py that uses a private name says in its docstring,
    # or in the comment right above it, the version of the package it was written against.
    path = PACKAGE / "_compat.py"
    lines = path.read_text().splitlines()
    uses = [use for use in private_uses(skip=()) if use.path == "rlsweep/_compat.py"]
    assert uses  # the finder reads the compat module too
    unversioned = []
    for node in ast.parse(path.read_text()).body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        inside = sorted({use.name for use in uses if first <= use.line <= (node.end_lineno or first)})
        if not inside:
            continue
        told = (ast.get_docstring(node) or "") if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ""
        above = first - 2
        while above >= 0 and lines[above].lstrip().startswith("#"):
            told += "\n" + lines[above]
            above -= 1
        if not _VERSION.search(told):
            unversioned.append(f"rlsweep/_compat.py:{node.lineno}: {getattr(node, 'name', '')} uses {inside}")
    assert not unversioned, "say the version each was checked against:\n" + "\n".join(unversioned)


#: A package of one's own beside another's, with one private use of each kind the finder looks for; each line
#: marked ``# found`` must be found, and nothing else.
FAKE_PACKAGE = {
    "__init__.py": "",
    "_own.py": (
        "def _helper():\n"
        "    return 1\n"
    ),
    "mod.py": (
        "import logging\n"
        "import threading\n"
        "import json.decoder\n"
        "from json import _default_decoder  # found\n"
        "from email._parseaddr import quote  # found\n"
        "import unittest._log  # found\n"
        "from fakepkg import _own\n"
        "from fakepkg._own import _helper\n"
        "\n"
        "\n"
        "class Mine:\n"
        "    __slots__ = ('_slot',)\n"
        "\n"
        "    def __init__(self):\n"
        "        self._slot = _own._helper() + _helper()\n"
        "        self._other = 2\n"
        "\n"
        "    def _mine(self, other):\n"
        "        return other._slot + self._other + getattr(self, '_slot') + Mine._mine.__code__.co_argcount\n"
        "\n"
        "\n"
        "class MyThread(threading.Thread):\n"
        "    def _bootstrap(self):  # found\n"
        "        self._started.set()  # found\n"
        "        self._own_state = 1\n"
        "        return super()._bootstrap()  # found\n"
        "\n"
        "\n"
        "class Mixin:\n"
        "    def _wait_for_tstate_lock(self, *args):  # found\n"
        "        return self._mixin_state\n"
        "\n"
        "    _mixin_state = 0\n"
        "\n"
        "\n"
        "class Mixed(Mixin, threading.Thread):\n"
        "    pass\n"
        "\n"
        "\n"
        "def reach(config, exporter, record):\n"
        "    logging.getLogger('logging._private_child')  # found\n"
        "    record._fakepkg_mark = 1\n"
        "    config._learner_class = None  # found\n"
        "    json.decoder._CONSTANTS  # found\n"
        "    return getattr(exporter, '_endpoint', None)  # found\n"
        "\n"
        "\n"
        "def make(base):\n"
        "    class Dynamic(base):\n"
        "        def _hook(self):  # found\n"
        "            return 1\n"
        "\n"
        "        def method(self):\n"
        "            return self._hook() + self._inherited  # found\n"
        "\n"
        "    return Dynamic\n"
    ),
}


def test_the_private_use_finder_finds_each_kind_and_nothing_of_the_packages_own(tmp_path, monkeypatch):
    package = tmp_path / "fakepkg"
    package.mkdir()
    for name, text in FAKE_PACKAGE.items():
        (package / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    found = {(use.path, use.line) for use in private_uses(package, skip=())}
    marked = {(f"fakepkg/{name}", number) for name, text in FAKE_PACKAGE.items()
              for number, line in enumerate(text.splitlines(), 1) if line.endswith("# found")}
    assert found == marked, (sorted(found - marked), sorted(marked - found))
    for name in [n for n in sys.modules if n == "fakepkg" or n.startswith("fakepkg.")]:
        del sys.modules[name]


def test_the_export_reads_the_store_without_ray(tmp_path):
    """An experiment directory written by hand (as Tune and a trial would) exports to MLflow in a process
    that never imports Ray, with each trial's draw as its params and its other settings as tags, as the trial
    recorded them."""
    root = new_experiment(tmp_path / "exp", searcher="optuna", scheduler="asha")
    recorded = {"settings": {"training.num_epochs": 7, "reporting.min_time_s_per_iteration": 0}, "config": {"training.lr": 0.01}}
    write_trial(root, "abc12_00000", [10.0, 20.0], config={"training.lr": 0.01}, settings=recorded)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    script = (
        "import sys, json\n"
        "from rlsweep.analysis import load\n"
        f"load({str(root)!r}).to_mlflow(tracking_uri={uri!r}, experiment='e')\n"
        "from mlflow import MlflowClient\n"
        f"c = MlflowClient({uri!r})\n"
        "runs = c.search_runs([c.get_experiment_by_name('e').experiment_id], \"tags.`rlsweep.kind` = 'trial'\")\n"
        "print(json.dumps({'ray': 'ray' in sys.modules, 'params': runs[0].data.params, 'tags': runs[0].data.tags}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["ray"] is False
    assert result["params"] == {"training.lr": "0.01"}
    assert result["tags"]["rlsweep.setting.training.num_epochs"] == "7"


def test_loading_and_checking_a_spec_document_imports_no_ray():
    script = (
        "import sys\n"
        "from rlsweep.spec import parse_spec\n"
        "from tests.conftest import TINY_SPEC\n"
        "spec, problems = parse_spec(TINY_SPEC)\n"
        "assert spec is not None and not problems, problems\n"
        "print('ray' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
