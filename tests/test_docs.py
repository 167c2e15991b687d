"""The documentation: the site builds in strict mode (a broken link or a missing page fails), the spec
reference is what the code generates, the README starts with the two commands and a quickstart and links
to the docs, and nothing in the repository points outside it."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import docs_hooks  # noqa: E402


def test_the_site_builds_in_strict_mode(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    home = (tmp_path / "site" / "index.html").read_text()
    assert "./scripts/demo" in home and 'href="guides/spec/"' in home and 'src="img/mlflow.png"' in home
    # A page's link to README.md (right when browsing the repository) is the home page on the site.
    assert 'href="../../#the-two-commands"' in (tmp_path / "site" / "guides" / "first-sweep" / "index.html").read_text()
    reference = (tmp_path / "site" / "reference" / "spec" / "index.html").read_text()
    assert "budget" in reference and "nevergrad" in reference


def test_the_spec_reference_is_what_the_schema_generates():
    committed = (REPO / "docs" / "reference" / "spec.md").read_text()
    assert committed == docs_hooks.reference(), "docs/reference/spec.md is stale: run python scripts/docs_hooks.py"
    # Every top-level section of a spec and every searcher and scheduler has its place.
    from rlsweep.schedulers import SCHEDULERS, SEARCHERS, spec_json_schema

    for key in spec_json_schema()["properties"]:
        assert f"| `{key}` |" in committed, key
    for name in [*SEARCHERS, *SCHEDULERS]:
        assert f"### `{name}`" in committed, name


def test_the_readme_starts_with_the_two_commands_and_a_quickstart_and_links_to_the_docs():
    readme = (REPO / "README.md").read_text()
    head = readme.split("## Documentation")[0]
    assert "./scripts/demo" in head and "./scripts/test" in head and "## Quickstart" in head
    assert head.index("./scripts/test") < head.index("## Quickstart")
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / target).exists(), target


#: What a reader of the repository cannot follow: a folder beside the project, an issue tracker's note.
OUTSIDE = ("../" + "shared", "closing " + "note")


def test_nothing_in_the_repository_points_outside_it():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        path = REPO / name
        if path.suffix not in {".md", ".py", ".yaml", ".yml", ".toml", ".txt", ""} or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        assert not any(words in text.lower() for words in OUTSIDE), name


def test_the_pairing_table_in_the_choosing_guide_is_what_validate_enforces():
    """Each cell of the guide's searcher x scheduler table says what the registry's pairing rule decides, and
    every searcher and scheduler has its row or column."""
    from rlsweep.schedulers import SCHEDULERS, SEARCHERS
    from rlsweep.schedulers._registry import pairs

    text = (REPO / "docs" / "guides" / "choosing.md").read_text()
    table = text.split("## What pairs with what", 1)[1].split("\n\n", 2)[1]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()]
    header, body = rows[0], rows[2:]
    columns = [re.findall(r"`([\w-]+)`", cell) for cell in header[1:]]
    seen_searchers = set()
    for row in body:
        for searcher in re.findall(r"`([\w-]+)`", row[0]):
            seen_searchers.add(searcher)
            for names, cell in zip(columns, row[1:]):
                for scheduler in names:
                    says = cell.split()[0]
                    assert says in ("yes", "no"), cell
                    assert (says == "yes") == pairs(SEARCHERS[searcher], SCHEDULERS[scheduler]), (searcher, scheduler)
    assert seen_searchers == set(SEARCHERS)
    assert {name for names in columns for name in names} == set(SCHEDULERS)


def _package_map_rows() -> dict[str, str]:
    """CONTRIBUTING.md's package map: the first cell's module or package path -> the whole row."""
    text = (REPO / "CONTRIBUTING.md").read_text()
    section = text.split("## Package map", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `rlsweep/"):
            rows[line.split("`")[1]] = line
    return rows


def unmapped_modules(rows: dict[str, str]) -> list[str]:
    """The package's modules the map does not name: a top-level module by its path in a row of its own, a
    subpackage's module by its file name in the subpackage's row."""
    missing = []
    for path in sorted((REPO / "rlsweep").rglob("*.py")):
        relative = path.relative_to(REPO).as_posix()
        if path.name == "__init__.py":
            continue
        package = path.parent.relative_to(REPO).as_posix() + "/"
        if package == "rlsweep/":
            named = relative in rows
        else:
            named = f"`{path.name}`" in rows.get(package, "")
        if not named:
            missing.append(relative)
    return missing


def test_contributings_package_map_names_every_module():
    rows = _package_map_rows()
    assert not unmapped_modules(rows), f"CONTRIBUTING.md's package map does not name {unmapped_modules(rows)}"
    # It can fail: a row gone leaves its module unnamed.
    assert unmapped_modules({k: v for k, v in rows.items() if k != "rlsweep/runtime.py"}) == ["rlsweep/runtime.py"]
