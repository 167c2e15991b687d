"""docs/benchmarks.md quotes only results measured at the current code, and is what benchmarks/report.py writes.

A change to the code a benchmark measures makes its results stale: the page then differs from what
report.py writes (the figures move to "Not measured at the current code") and the first test fails until the
page is written again or the benchmark is run again. The other tests check the rule itself on a small git
repository made for the test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _import_report():
    spec = importlib.util.spec_from_file_location("benchmarks_report", REPO / "benchmarks" / "report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


report = _import_report()


def _history_or_fail(repo: Path) -> None:
    if shutil.which("git") is None:
        pytest.fail("git is not installed: the benchmarks page's figures cannot be checked against the code")
    try:
        report.check_history(repo)
    except report.HistoryError as error:
        pytest.fail(f"{error}; the benchmarks page needs a full clone to be checked")


def test_the_page_is_what_report_writes_at_this_commit():
    _history_or_fail(REPO)
    page = (REPO / report.PAGE).read_text()
    assert page == report.generate(REPO), (
        "docs/benchmarks.md is not what benchmarks/report.py writes now: a change to measured code made a quoted "
        "figure stale, or new results arrived. Run `.venv/bin/python benchmarks/report.py` (or `--refresh` to "
        "measure again) and commit the page"
    )


@pytest.mark.parametrize("section", report.SECTIONS, ids=lambda section: report.slug(section.heading))
def test_every_section_renders_its_newest_results_whether_current_or_not(section):
    """The page renders only current sections; a stale section's table would first be drawn the day its
    benchmark is run again. Draw each from its newest file now, so a renderer that no longer fits its file
    fails here instead."""
    loaded = []
    for source in section.sources:
        found = report.newest(REPO / report.RESULTS, source)
        if found is not None:
            path, data = found
            loaded.append(report.Loaded(source, path, data, report.recorded_commits(data), "", True))
    if not loaded:
        pytest.skip(f"no results file for {section.heading}")
    text = section.render(loaded)
    for entry in loaded:
        assert entry.path is not None and entry.path.name in text, (section.heading, entry.path)


def test_every_sections_code_paths_exist():
    for section in report.SECTIONS:
        missing = [path for path in section.code_paths if not (REPO / path).exists()]
        assert not missing, f"{section.heading}: code paths that do not exist: {missing}"


def test_refresh_dry_run_prints_the_stale_commands_and_runs_nothing(monkeypatch, capsys):
    _history_or_fail(REPO)
    real_run = subprocess.run

    def only_git(argv, *args, **kwargs):
        assert argv[0] == "git", f"--refresh --dry-run ran {argv}"
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(report.subprocess, "run", only_git)
    before = (REPO / report.PAGE).read_text()
    assert report.main(["--refresh", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    stale = [section for section, loaded in report.status(REPO) if any(not entry.current for entry in loaded)]
    for section in stale:
        assert f"# {section.heading}: {section.duration}" in printed
    assert (REPO / report.PAGE).read_text() == before


# ------------------------------------------------------------------------- the rule, on a repository of its own


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _commit(repo: Path, path: str, text: str) -> str:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    _git(repo, "add", path)
    _git(repo, "commit", "-q", "-m", f"change {path}")
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.fail("git is not installed")
    _git(tmp_path, "init", "-q", "-b", "main")
    return tmp_path


SOURCE = report.Source("thing", "thing-*.json")
CODE = ("pkg/measured.py",)


def _results(repo: Path, name: str, **fields) -> None:
    results = repo / "results"
    results.mkdir(exist_ok=True)
    (results / name).write_text(json.dumps(fields))


def _current(repo: Path) -> bool:
    return report.load(repo, repo / "results", SOURCE, CODE).current


def test_results_after_the_last_change_are_current_and_before_it_stale(repo):
    first = _commit(repo, "pkg/measured.py", "v1")
    _results(repo, "thing-2026-01-01T0000.json", commit=first)
    assert _current(repo)
    second = _commit(repo, "pkg/measured.py", "v2")  # the code changes after the measurement
    assert not _current(repo)
    _results(repo, "thing-2026-01-02T0000.json", commit=second + "+dirty")  # measured again; +dirty is ignored
    assert _current(repo)
    _commit(repo, "pkg/other.py", "unrelated")  # a change elsewhere does not make it stale
    assert _current(repo)


def test_results_on_a_branch_without_the_change_are_stale(repo):
    base = _commit(repo, "pkg/measured.py", "v1")
    _git(repo, "checkout", "-q", "-b", "side")
    measured_on_side = _commit(repo, "notes.txt", "measured here")
    _git(repo, "checkout", "-q", "main")
    _commit(repo, "pkg/measured.py", "v2")  # later in time than the side commit, but not its ancestor
    _results(repo, "thing-2026-01-01T0000.json", commit=measured_on_side)
    assert not _current(repo)
    _results(repo, "thing-2026-01-01T0000.json", commit=base)
    assert not _current(repo)


def test_a_pooled_file_is_current_only_when_every_file_it_pooled_is(repo):
    first = _commit(repo, "pkg/measured.py", "v1")
    second = _commit(repo, "pkg/measured.py", "v2")
    after = _commit(repo, "notes.txt", "later")
    _results(repo, "thing-2026-01-01T0000.json", files=[{"file": "a.json", "commit": first},
                                                        {"file": "b.json", "commit": after}])
    assert not _current(repo)
    _results(repo, "thing-2026-01-01T0000.json", pooled_from=[{"file": "a.json", "commit": second},
                                                              {"file": "b.json", "commit": after}])
    assert _current(repo)
    _results(repo, "thing-2026-01-01T0000.json", files=[{"file": "a.json", "commit": None}])
    assert not _current(repo)


def test_results_without_a_commit_or_with_an_unknown_one_are_never_current(repo):
    _commit(repo, "pkg/measured.py", "v1")
    _results(repo, "thing-2026-01-01T0000.json", started="2026-01-01")
    assert not _current(repo)
    _results(repo, "thing-2026-01-01T0000.json", commit="0" * 40)
    assert not _current(repo)


def test_the_newest_file_by_the_date_in_its_name_is_read(repo):
    old = _commit(repo, "pkg/measured.py", "v1")
    new = _commit(repo, "pkg/measured.py", "v2")
    _results(repo, "thing-2026-01-02T0900.json", commit=new)
    _results(repo, "thing-pooled-2026-01-02T1000.json", commit=old)  # newer by name, measured at the old code
    loaded = report.load(repo, repo / "results", SOURCE, CODE)
    assert loaded.path.name == "thing-pooled-2026-01-02T1000.json" and not loaded.current
    picky = report.Source("thing", "thing-*.json", lambda data: data.get("commit") == new)
    assert report.load(repo, repo / "results", picky, CODE).path.name == "thing-2026-01-02T0900.json"


def test_a_stale_section_is_listed_with_its_command_and_not_quoted(repo):
    first = _commit(repo, "pkg/measured.py", "v1")
    _results(repo, "thing-2026-01-01T0000.json", commit=first, value=123.456)
    section = report.Section(
        heading="The thing", measures="what the thing costs", sources=(SOURCE,), code_paths=CODE,
        command="`run-thing`", duration="about 1 min",
        render=lambda current: f"value {current[0].data['value']}",
    )
    statuses = [(section, [report.load(repo, repo / "results", SOURCE, CODE)])]
    assert "value 123.456" in report.render_page(statuses)
    _commit(repo, "pkg/measured.py", "v2")
    statuses = [(section, [report.load(repo, repo / "results", SOURCE, CODE)])]
    page = report.render_page(statuses)
    assert "123.456" not in page
    assert "### The thing\n\nWhat the thing costs. Measure again: `run-thing`; about 1 min." in page


def test_a_missing_history_is_an_error_not_a_pass(tmp_path, repo):
    nowhere = tmp_path.parent / f"{tmp_path.name}-not-a-repository"
    nowhere.mkdir()
    with pytest.raises(report.HistoryError, match="not a git work tree"):
        report.check_history(nowhere)
    _commit(repo, "pkg/measured.py", "v1")
    _commit(repo, "pkg/measured.py", "v2")
    shallow = tmp_path.parent / f"{tmp_path.name}-shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True)
    with pytest.raises(report.HistoryError, match="shallow"):
        report.check_history(shallow)
    with pytest.raises(report.HistoryError, match="no commit touches"):
        report.last_change(repo, ("pkg/never.py",))


def test_a_commit_listed_as_unchanged_with_its_reason_is_no_change_and_only_that_one(repo):
    first = _commit(repo, "pkg/measured.py", "v1")
    _results(repo, "thing-2026-01-01T0000.json", commit=first)
    fix = _commit(repo, "pkg/measured.py", "v1, a crash turned into an answer")
    assert not _current(repo)
    (repo / report.UNCHANGED_REVS).parent.mkdir(parents=True, exist_ok=True)
    (repo / report.UNCHANGED_REVS).write_text(f"# why each is no change\n{fix} the crash only: tests/test_x.py\n")
    assert _current(repo) and report.last_change(repo, CODE) == first
    _commit(repo, "pkg/measured.py", "v2")  # a later change still counts
    assert not _current(repo)


@pytest.mark.parametrize("line", ["abc123 too short", "{fix}", "{fix}   "])
def test_a_listed_commit_without_a_full_hash_and_a_reason_is_an_error(repo, line):
    fix = _commit(repo, "pkg/measured.py", "v1")
    (repo / report.UNCHANGED_REVS).parent.mkdir(parents=True, exist_ok=True)
    (repo / report.UNCHANGED_REVS).write_text(line.format(fix=fix) + "\n")
    with pytest.raises(report.HistoryError, match="expected '<full commit> <reason>'"):
        report.last_change(repo, CODE)


def test_every_listed_commit_is_in_the_history_and_touches_measured_code():
    repo = Path(__file__).resolve().parents[1]
    measured = {path for section in report.SECTIONS for path in section.code_paths}
    for commit in report.unchanged_revs(repo):
        touched = _git(repo, "show", "--name-only", "--format=", commit).split()
        assert any(t == p or t.startswith(p) for t in touched for p in measured), (commit, touched)


def test_the_checks_own_seed_noise_is_read_from_the_test_seeds_scores():
    def results(*configs):
        return {"setup": {"range": [-500.0, 0.0]},
                "runs": [{"per_test_seed": {str(1000 + i): v for i, v in enumerate(values)}} for values in configs]}

    def steady(shift):
        return [-80.0 + i + shift for i in range(10)]

    def bimodal(shift):
        return [-500.0, -80.0 + shift] * 5

    # A configuration that scores the same on every seed: its 10-seed IQM is always its own.
    assert report.yardstick_noise(results([-90.0] * 10, [-85.0] * 10, [-70.0] * 10)) == 0.0
    # Runs that learn (about -80) or stay at the floor (-500), half and half: the check is far noisier
    # than on steady ones, and less noisy with more seeds.
    learns_or_not = results(bimodal(0), bimodal(1), bimodal(2))
    assert report.yardstick_noise(learns_or_not) > 0.1 > report.yardstick_noise(results(steady(0), steady(1), steady(2)))
    assert report.yardstick_noise(learns_or_not, seeds=30) < report.yardstick_noise(learns_or_not)
    # Too little to say: fewer than 3 configurations, or fewer than 4 scores each; one that two sides chose
    # and scored alike counts once.
    assert report.yardstick_noise(results(bimodal(0), bimodal(1))) is None
    assert report.yardstick_noise(results(bimodal(0), bimodal(1), bimodal(1))) is None
    assert report.yardstick_noise(results([-1.0] * 3, [-2.0] * 3, [-3.0] * 3)) is None
