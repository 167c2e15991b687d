"""The package's structure as ARCHITECTURE's package map states it: no import cycle (function-local and
type-checking imports included), each stage importing only what it may, and the export working without Ray."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

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
    "rlsweep.spec": {"rlsweep.schedulers", "rlsweep.trainables", "rlsweep.sweep", "rlsweep.analysis", "rlsweep.store"},
    "rlsweep.store": {"rlsweep.spec", "rlsweep.search_spaces", "rlsweep.schedulers", "rlsweep.trainables", "rlsweep.sweep", "rlsweep.analysis"},
    "rlsweep.search_spaces": {"rlsweep.spec", "rlsweep.schedulers", "rlsweep.trainables", "rlsweep.sweep", "rlsweep.analysis"},
    "rlsweep.schedulers": {"rlsweep.trainables", "rlsweep.sweep", "rlsweep.analysis"},
    "rlsweep.warm_start": {"rlsweep.trainables", "rlsweep.sweep", "rlsweep.analysis"},
    "rlsweep.trainables": {"rlsweep.sweep", "rlsweep.analysis"},
    "rlsweep.sweep": {"rlsweep.analysis"},
    "rlsweep.analysis": {"rlsweep.sweep", "rlsweep.trainables", "rlsweep.schedulers"},
}


@pytest.mark.parametrize("room", sorted(MUST_NOT))
def test_each_stage_imports_only_what_the_package_map_allows(room):
    imports = stage_graph(import_graph(annotations=True)).get(room, set())
    assert not imports & MUST_NOT[room], f"{room} imports {sorted(imports & MUST_NOT[room])}"


def test_private_ray_internals_are_touched_only_in_the_compat_module():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ray"):
                offenders += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                # Our own private names are fine; RLlib's/Tune's known private attributes are not.
                if node.attr in {"_learner", "_optimizer_lr_schedules", "_set_optimizer_lr", "_get_optimizer_lr",
                                 "_s_max_1", "_time_attr", "_max_t_attr", "_convert_categories_to_indices"}:
                    offenders.append(f"{path.name}: .{node.attr}")
    assert offenders == []


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
