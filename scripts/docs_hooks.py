"""The spec reference page, generated from the JSON Schema that ``rlsweep schema`` prints (and the
searchers' and schedulers' option schemas): ``python scripts/docs_hooks.py`` writes
``docs/reference/spec.md``, and a test fails when the committed page differs from what the code generates.
As an MkDocs hook it also makes the site's home page from README.md (its ``docs/`` links made relative)."""

from __future__ import annotations

import json
from typing import Any

REFERENCE = "reference/spec.md"


def _type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "enum" in prop:
        return " | ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    if "anyOf" in prop or "oneOf" in prop:
        kinds = [_type(p) for p in prop.get("anyOf", prop.get("oneOf", []))]
        return " or ".join(dict.fromkeys(k for k in kinds if k))
    kind = prop.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and "items" in prop:
        return f"list of {_type(prop['items'])}"
    return str(kind or "any")


def _cell(text: Any) -> str:
    return str(text).replace("\n", " ").replace("|", "\\|")


def _default(prop: dict[str, Any], required: bool) -> str:
    if required:
        return "**required**"
    if "default" not in prop:
        return ""
    return f"`{json.dumps(prop['default'])}`"


def _table(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", ()))
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, prop in schema.get("properties", {}).items():
        lines.append(f"| `{key}` | {_cell(_type(prop))} | {_cell(_default(prop, key in required))} | {_cell(prop.get('description', ''))} |")
    return lines


def _entries(title: str, table: Any) -> list[str]:
    lines = [f"## {title}", ""]
    for name in table:
        entry = table[name]
        lines += [f"### `{name}`", "", _cell(entry.doc) or "", ""]
        options = entry.Options.model_json_schema()
        if options.get("properties"):
            lines += _table(options) + [""]
        else:
            lines += ["No options.", ""]
    return lines


def reference() -> str:
    from rlsweep.schedulers import SCHEDULERS, SEARCHERS, spec_json_schema
    from rlsweep.search_spaces import DOMAIN_KINDS

    schema = spec_json_schema()
    lines = [
        "# Spec reference",
        "",
        "Generated from the JSON Schema that `rlsweep schema` prints (`python scripts/docs_hooks.py`; a test "
        "fails when this page and the code differ): every "
        "section of a spec, each key's type, default and meaning, every domain a `search_space` value may be, "
        "and every searcher's and scheduler's options. `rlsweep validate` checks a spec against all of it and "
        "more (the rules that tie sections together: pairings, budgets, paths RLlib knows); each error names "
        "its spec path. See the [spec guide](../guides/spec.md) for how the sections work together.",
        "",
        "## Top level",
        "",
        *_table(schema),
        "",
    ]
    for name, section in schema.get("$defs", {}).items():
        if section.get("properties"):
            lines += [f"## {name}", "", _cell(section.get("description", "")), "", *_table(section), ""]
    lines += [
        "## Search space domains",
        "",
        "Each `search_space` value is one of these (or a fixed value), optionally with `when:` (a condition on "
        "other parameters' values). Which searcher expresses which is in [Searchers](../guides/searchers.md).",
        "",
        *(f"- `{kind}`" for kind in DOMAIN_KINDS),
        "",
    ]
    lines += _schedules()
    lines += _entries("Searchers", SEARCHERS) + _entries("Schedulers", SCHEDULERS)
    return "\n".join(lines) + "\n"


def _schedules() -> list[str]:
    from rlsweep._schedules import KINDS
    from rlsweep.trainables._schedulable import SCHEDULABLE

    return [
        "## Schedules",
        "",
        "A value in `config` (or in `search_space`) may change with the trial's env steps; RLlib gets it as its "
        "own schedule, `[[env_steps, value], ...]` over the trial's lifetime env steps, and each row reports the "
        "value in force as `hp/<path>`. See [Schedules](../guides/spec.md#schedules).",
        "",
        *(f"- `{{schedule: {kind}, {', '.join(f'{key}: ...' for key in keys)}}}`" for kind, keys in KINDS.items()),
        "",
        "Settings rlsweep schedules, per algorithm (a schedule on any other setting is refused at validate):",
        "",
        "| algorithm | settings |",
        "|---|---|",
        *(f"| {name} | {', '.join(f'`{path}`' for path in paths)} |" for name, paths in SCHEDULABLE.items()),
        "",
    ]


def home(readme: str, pages: set[str]) -> str:
    """README.md as the site's home page: its links into ``docs/`` made relative to the site; a link to a
    file of the repository outside ``docs/`` (CONTRIBUTING.md) is left as its text."""
    import re

    def link(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        if target.startswith("docs/") and target.removeprefix("docs/").split("#")[0] in pages:
            return f"[{text}]({target.removeprefix('docs/')})"
        return text

    return re.sub(r"(?<!!)\[([^\]]+)\]\((?!https?:)([^)\s]+)\)", link, readme).replace("](docs/img/", "](img/")


def on_files(files: Any, config: Any) -> Any:
    from pathlib import Path

    from mkdocs.structure.files import File

    readme = (Path(config["config_file_path"]).parent / "README.md").read_text()
    files.append(File.generated(config, "index.md", content=home(readme, {f.src_uri for f in files})))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """A page's link to the repository's README.md (the home page when browsing the repository) is the
    site's home page, which is made from it."""
    import re

    home = "../" * page.file.src_uri.count("/") + "index.md"
    return re.sub(r"\]\((?:\.\./)+README\.md(#[^)\s]*)?\)", lambda m: f"]({home}{m.group(1) or ''})", markdown)


if __name__ == "__main__":
    from pathlib import Path

    target = Path(__file__).resolve().parent.parent / "docs" / REFERENCE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(reference())
    print(target)
