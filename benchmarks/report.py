"""Writes docs/benchmarks.md from the results files in ``benchmarks/results/``, quoting only current figures.

Each section of the page names the results file(s) it reads (a glob and a rule: the newest file by the date in
its name, among those that have what the section shows), the code whose changes make those results stale, the
command that measures them again and about how long it takes. A results file is **current** when every commit
it records (a pooled file: each file it pooled; ``+dirty`` stripped) is at or after the last commit that
touched the section's code paths::

    git log -1 --format=%H -- <code paths>                      # the last change
    git merge-base --is-ancestor <last change> <results commit>  # current if this succeeds

A commit listed in ``benchmarks/unchanged-revs.txt`` with its reason (a fix that provably leaves what was measured
as it was, e.g. one that only turns a crash into an answer) is not a change here.

A results file that records no commit is never current. Current results are rendered as a table with one or
two sentences on what they show; stale ones are not quoted: they are listed at the end of the page with what
they measure, the command that refreshes them and its time.

    .venv/bin/python benchmarks/report.py                      # write docs/benchmarks.md
    .venv/bin/python benchmarks/report.py --check              # exit 1 if docs/benchmarks.md is not what it would write
    .venv/bin/python benchmarks/report.py --refresh --dry-run  # print the commands that would refresh stale results
    .venv/bin/python benchmarks/report.py --refresh            # run them one after another, then write the page

``--refresh`` is Ray-heavy: it runs every stale benchmark in turn, each using every core, several hours in all
on a 2-core machine (the page's list says how long each takes). Run it on a machine with nothing else to do,
and commit the new results files with the page.

Needs git and the repository's full history (a clone that is not shallow); without them it stops with an
error rather than call anything current.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path("benchmarks/results")
PAGE = Path("docs/benchmarks.md")
PYTHON = ".venv/bin/python"

_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2})(?:T(\d{4}))?\.json$")

Results = dict[str, Any]


class HistoryError(RuntimeError):
    """git or the repository's history is missing, so no figure can be called current."""


# --------------------------------------------------------------------------------------------------- git


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    except FileNotFoundError as error:
        raise HistoryError("git is not installed: benchmarks/report.py needs it to tell current results") from error


def check_history(repo: Path) -> None:
    """Raises HistoryError unless ``repo`` is a git work tree with its full history."""
    inside = _git(repo, "rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        raise HistoryError(f"{repo} is not a git work tree: benchmarks/report.py needs the repository's history "
                           f"({inside.stderr.strip()})")
    shallow = _git(repo, "rev-parse", "--is-shallow-repository")
    if shallow.stdout.strip() == "true":
        raise HistoryError(f"{repo} is a shallow clone: benchmarks/report.py needs the full history "
                           "(git fetch --unshallow)")


#: Commits that touch measured code without changing what any benchmark measured, one a line with why:
#: ``<full commit> <reason>`` (as ``.git-blame-ignore-revs`` lists formatting commits). The reason names the
#: test that shows the measured behaviour is the same.
UNCHANGED_REVS = "benchmarks/unchanged-revs.txt"


def unchanged_revs(repo: Path) -> set[str]:
    """The commits :data:`UNCHANGED_REVS` lists; HistoryError for a line without a full commit and a reason."""
    path = repo / UNCHANGED_REVS
    if not path.exists():
        return set()
    listed = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        commit, _, reason = line.strip().partition(" ")
        if not re.fullmatch(r"[0-9a-f]{40}", commit) or not reason.strip():
            raise HistoryError(f"{UNCHANGED_REVS}:{number}: expected '<full commit> <reason>', got {line.strip()!r}")
        listed.add(commit)
    return listed


def last_change(repo: Path, paths: Sequence[str]) -> str:
    """The last commit that touched any of ``paths``, leaving out those :data:`UNCHANGED_REVS` lists."""
    log = _git(repo, "log", "--format=%H", "--", *paths)
    if log.returncode != 0:
        raise HistoryError(f"git log failed: {log.stderr.strip()}")
    skipped = unchanged_revs(repo)
    commit = next((c for c in log.stdout.split() if c not in skipped), "")
    if not commit:
        raise HistoryError(f"no commit touches {' '.join(paths)}: a section's code paths are wrong, or the "
                           "history is missing")
    return commit


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    """Whether ``ancestor`` is ``descendant`` or one of its ancestors; False for a commit not in the history."""
    return _git(repo, "merge-base", "--is-ancestor", ancestor, descendant).returncode == 0


# ------------------------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class Source:
    """One results file a section reads: the newest match of ``pattern`` (by the date in its name) that
    ``has`` accepts."""

    label: str
    pattern: str
    has: Callable[[Results], bool] = lambda results: True


@dataclass(frozen=True)
class Section:
    """One section of the page."""

    heading: str
    measures: str  # one line, for the list of what is not measured at the current code
    sources: tuple[Source, ...]
    code_paths: tuple[str, ...]
    command: str  # what re-runs it, as markdown (commands in code spans)
    duration: str  # about how long the command takes, from the results files' own timings
    render: Callable[[list[Loaded]], str]  # the current sources -> markdown
    refresh: tuple[Callable[[Plan], list[str]], ...] = ()  # argv of each step, built when it is its turn

    @property
    def anchor(self) -> str:
        return slug(self.heading)


@dataclass
class Plan:
    """What a refresh step needs to build its command: the repository, whether the steps before it really ran,
    and the time-to-solve seeds already planned (each run gets seeds no run used)."""

    repo: Path
    dry_run: bool = False
    seeds_planned: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Loaded:
    """A source's chosen file, and whether it is current."""

    source: Source
    path: Path | None
    data: Results | None
    commits: tuple[str, ...]
    last_change: str
    current: bool
    why: str = field(default="")


def slug(heading: str) -> str:
    """The anchor MkDocs gives a heading (its default ``toc`` slugify)."""
    text = re.sub(r"[^\w\s-]", "", heading.lstrip("#").strip().lower())
    return re.sub(r"[-\s]+", "-", text).strip("-")


def stamp(path: Path) -> str:
    match = _STAMP.search(path.name)
    return f"{match.group(1)}T{match.group(2) or '0000'}" if match else ""


def newest(results_dir: Path, source: Source) -> tuple[Path, Results] | None:
    for path in sorted(results_dir.glob(source.pattern), key=lambda p: (stamp(p), p.name), reverse=True):
        data = json.loads(path.read_text())
        if source.has(data):
            return path, data
    return None


def _pooled_entries(data: Results) -> list[dict[str, Any]] | None:
    """The files a pooled results file pooled (``pooled.py``'s "files", ``seed_robustness.py --pool``'s
    "pooled_from"); None for a file of one run."""
    for key in ("pooled_from", "files"):
        entries = data.get(key)
        if isinstance(entries, list) and entries and all(isinstance(e, dict) and "file" in e for e in entries):
            return entries
    return None


def recorded_commits(data: Results) -> tuple[str, ...]:
    """Every commit a results file measured, ``+dirty`` stripped; empty when it records none."""
    pooled = _pooled_entries(data)
    if pooled is not None:  # a pooled file: every file it pooled
        commits = [entry.get("commit") for entry in pooled]
    elif isinstance(data.get("commits"), dict):  # an A/B of two checkouts measures the "after" one
        commits = [data["commits"].get("after")]
    else:
        commits = [data.get("commit")]
    if not all(isinstance(commit, str) and commit for commit in commits):
        return ()
    return tuple(dict.fromkeys(str(commit).removesuffix("+dirty") for commit in commits))


def load(repo: Path, results_dir: Path, source: Source, code_paths: Sequence[str]) -> Loaded:
    """The source's file and whether it is current at the code paths' last change."""
    changed = last_change(repo, code_paths)
    found = newest(results_dir, source)
    if found is None:
        return Loaded(source, None, None, (), changed, False, "no results file")
    path, data = found
    commits = recorded_commits(data)
    if not commits:
        return Loaded(source, path, data, (), changed, False, "the results file records no commit")
    behind = [commit for commit in commits if not is_ancestor(repo, changed, commit)]
    why = f"measured before the last change to {', '.join(code_paths)}" if behind else ""
    return Loaded(source, path, data, commits, changed, not behind, why)


# --------------------------------------------------------------------------------------------- helpers


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _num(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}"


def _share(value: float) -> str:
    return f"{100 * value:.0f}%"


def _machine(data: Results) -> str:
    machine = data.get("machine") or {}
    parts = []
    if machine.get("cpus"):
        parts.append(f"{machine['cpus']} CPUs")
    platform = str(machine.get("platform", ""))
    if platform:
        parts.append("Linux x86_64" if platform.startswith("Linux") and "x86_64" in platform else platform)
    python = machine.get("python") or (data.get("versions") or {}).get("python")
    if python:
        parts.append(f"Python {python}")
    condition = str(machine.get("condition") or "quiet").split(" (")[0]
    if condition != "quiet":
        parts.append(condition)
    return ", ".join(parts)


def _versions(data: Results, names: Sequence[str] = ("ray", "torch", "optuna", "stable_baselines3")) -> str:
    versions = data.get("versions") or {}
    return ", ".join(f"{name} {versions[name]}" for name in names if name in versions)


def _date(data: Results, path: Path) -> str:
    for key in ("date", "started", "created"):
        if isinstance(data.get(key), str):
            return data[key][:10]
    return stamp(path)[:10]


def _provenance(loaded: Loaded, data: Results | None = None) -> str:
    """Where a table comes from: its file, date, machine and versions."""
    assert loaded.path is not None and loaded.data is not None
    data = data or loaded.data
    bits = [f"`{RESULTS / loaded.path.name}`", f"measured {_date(loaded.data, loaded.path)}"]
    for text in (_machine(data), _versions(data)):
        if text:
            bits.append(text)
    return "Source: " + "; ".join(bits) + "."


def _sources(current: list[Loaded], origin: Callable[[Loaded], Results] | None = None) -> str:
    """The provenance of each table's file, one line each."""
    lines = [_provenance(loaded, origin(loaded) if origin else None) for loaded in current]
    return lines[0] if len(lines) == 1 else "\n".join(f"- {line}" for line in lines)


def _pooled_source(loaded: Loaded) -> Results:
    """The first results file a pooled file pooled: its machine and versions (pooled files record none)."""
    assert loaded.data is not None and loaded.path is not None
    for entry in _pooled_entries(loaded.data) or []:
        path = loaded.path.parent / entry["file"]
        if path.exists():
            return json.loads(path.read_text())
    return loaded.data


# ------------------------------------------------------------------------------------------- renderers

_SIDE = {"raw-tune": "hand-written Tune", "zoo": "rl-baselines3-zoo", "rlsweep": "rlsweep"}


def render_time_to_solve(current: list[Loaded]) -> str:
    rows = []
    for loaded in current:
        assert loaded.data is not None
        comparisons = loaded.data["comparisons"]
        for comparison in comparisons:
            other = comparison["against"]
            median = comparison["median_s"]
            solved = comparison["solved"]
            low, high = comparison["ratio_95_interval"]
            cap = comparison["cap_s"]

            def shown(side: str, median: dict = median, cap: float = cap) -> str:
                return f"not solved in {_num(cap)} s" if median[side] >= cap else f"{_num(median[side])} s"

            first = comparison.get("first_result")
            rows.append([
                loaded.source.label, _SIDE.get(other, other), str(comparison["seeds"]),
                f"{shown('rlsweep')} ({solved['rlsweep']} solved)", f"{shown(other)} ({solved[other]} solved)",
                f"**{comparison['ratio_of_medians']:.2f}** ({low:.2f}-{high:.2f})",
                (f"{first['ratio_of_medians']:.2f} ({first['ratio_95_interval'][0]:.2f}-"
                 f"{first['ratio_95_interval'][1]:.2f})") if first else "not recorded",
            ])
    table = _table(["task, condition", "against", "seeds", "rlsweep: median time to solve",
                    "the other side", "rlsweep / other (95% interval)", "launch to first result, rlsweep / other"],
                   rows)
    caps = ", ".join(f"{loaded.source.label} {loaded.data['comparisons'][0]['cap_s']:.0f} s"  # type: ignore[index]
                     for loaded in current)
    sources = _sources(current, _pooled_source)
    return (
        "Each side searches the task's hyperparameters with the same trials, env steps, evaluations and "
        "concurrency (2 trials at a time), timed from the launch of its own process (imports and start-up "
        "included) to the first greedy evaluation whose mean return reaches the task's bar. A ratio under 1 "
        "means rlsweep solved sooner; the interval is a 95% paired bootstrap over the seeds, and where it "
        f"spans 1 the seeds do not settle which side is faster. A run that does not solve counts as the cap "
        f"({caps}).\n\n{table}\n\n{sources}"
    )


def yardstick_noise(data: Results, seeds: int = 10, resamples: int = 2000) -> float | None:
    """How far a ``seeds``-seed test IQM lands from the IQM of the configuration it scores, from seed noise
    alone: each chosen configuration's test-seed scores resampled ``seeds`` at a time, the median distance
    to their own IQM, then the median over configurations, as a share of the task's score range. A gap
    smaller than this cannot be told from the noise of the check itself. None with fewer than 3
    configurations of 4 scores or more (one that two sides chose and scored alike counts once)."""
    import numpy as np
    from scipy import stats

    low, high = data["setup"]["range"]
    # A configuration two sides chose, scored on the same seeds, counts once.
    distinct = {tuple(sorted(run["per_test_seed"].items())) for run in data.get("runs", []) if len(run.get("per_test_seed") or {}) >= 4}
    scored = [np.array([value for _, value in seeds], dtype=float) for seeds in sorted(distinct)]
    if len(scored) < 3:
        return None
    rng = np.random.default_rng(0)
    distances = [float(np.median(np.abs(stats.trim_mean(rng.choice(values, (resamples, seeds)), 0.25, axis=1)
                                         - stats.trim_mean(values, 0.25)))) for values in scored]
    return float(np.median(distances)) / (high - low)


def render_seed_robustness(current: list[Loaded]) -> str:
    side_names = {"per1": "one seed a trial (the search's answer)",
                  "per3": "three seeds a trial (IQM)",
                  "lcb": "three seeds a trial (mean less one standard error)",
                  "holdout": "the held-out stage",
                  "zoo": "rl-baselines3-zoo's search (its best trial), retrained by rl-zoo3",
                  "per1_entry": "one seed a trial, over rl-baselines3-zoo's entry for the task",
                  "holdout_entry": "the held-out stage, over rl-baselines3-zoo's entry for the task",
                  "holdout_entry_batch": "the held-out stage, over rl-baselines3-zoo's entry, also searching the batch",
                  "per1_entry_batch": "one seed a trial (the search's answer), over rl-baselines3-zoo's entry, also searching the batch",
                  "per3_entry_batch": "three seeds a trial (IQM), over rl-baselines3-zoo's entry, also searching the batch",
                  "adaptive_entry_batch": "up to three seeds a trial, added while a contender (IQM, 11 trials), over "
                                          "rl-baselines3-zoo's entry, also searching the batch",
                  "adaptive14_entry_batch": "the same with 14 trials"}
    parts = []
    for loaded in current:
        data = loaded.data
        assert data is not None
        low, high = data["setup"]["range"]
        rows = []
        for side, summary in data["summary"].items():
            runs = summary.get("median_runs")
            rows.append([
                side_names.get(side, side), str(summary["sweeps"]), "" if runs is None else f"{runs:g}", _num(summary["median_reported"]),
                _num(summary["median_test_iqm"]), f"{summary['median_gap']:+,.1f}",
                _share(abs(summary["median_gap_share_of_range"])), str(summary["covered"]),
            ])
        setup = data["setup"]
        parts.append(
            f"**{setup['env']}**, {setup['algorithm']}, {setup['env_steps']:,} env steps a run, scores from "
            f"{_num(low, 0)} to {_num(high, 0)}:\n\n"
            + _table(["answer from", "sweeps", "runs a sweep (median)", "median reported", "median on 10 new seeds", "median gap",
                      "median gap size / score range", "interval covers the new-seed score"], rows)
        )
        said = []
        for key, what in (("holdout_minus_per1", "the held-out stage's winner against the search's own"),
                          ("per3_minus_per1", "three seeds a trial (IQM) against one"),
                          ("lcb_minus_per1", "three seeds a trial (lower bound) against one"),
                          ("holdout_minus_lcb", "the held-out stage against three seeds a trial (lower bound)"),
                          ("holdout_minus_zoo", "the held-out stage against rl-baselines3-zoo's answer, each retrained by its own tool"),
                          ("per1_minus_zoo", "the search's own answer against rl-baselines3-zoo's"),
                          ("holdout_entry_minus_holdout", "the held-out stage over rl-baselines3-zoo's entry against the same over the task's own settings"),
                          ("holdout_entry_minus_zoo", "the held-out stage over rl-baselines3-zoo's entry against rl-baselines3-zoo's answer"),
                          ("per1_entry_minus_per1", "the search's own answer over rl-baselines3-zoo's entry against the same over the task's own settings"),
                          ("per1_entry_minus_zoo", "the search's own answer over rl-baselines3-zoo's entry against rl-baselines3-zoo's answer"),
                          ("holdout_entry_batch_minus_holdout", "the held-out stage over rl-baselines3-zoo's entry, searching the batch, against the same over the task's own settings"),
                          ("holdout_entry_batch_minus_holdout_entry", "searching the batch too against not"),
                          ("holdout_entry_batch_minus_zoo", "the held-out stage over rl-baselines3-zoo's entry, searching the batch, against rl-baselines3-zoo's answer"),
                          ("holdout_entry_batch_minus_per1_entry_batch", "over rl-baselines3-zoo's entry, searching the batch, the held-out stage's winner against the search's own"),
                          ("per3_entry_batch_minus_per1_entry_batch", "over the same, three seeds a trial (IQM) against one"),
                          ("holdout_entry_batch_minus_per3_entry_batch", "over the same, the held-out stage against three seeds a trial"),
                          ("per1_entry_batch_minus_zoo", "the search's own answer over rl-baselines3-zoo's entry, searching the batch, against rl-baselines3-zoo's answer"),
                          ("adaptive_entry_batch_minus_per1_entry_batch", "over the same, seeds added while a contender against one seed a trial"),
                          ("adaptive_entry_batch_minus_per3_entry_batch", "over the same, seeds added while a contender against three seeds a trial"),
                          ("holdout_entry_batch_minus_adaptive_entry_batch", "over the same, the held-out stage against seeds added while a contender"),
                          ("adaptive14_entry_batch_minus_per1_entry_batch", "over the same, seeds added while a contender (14 trials) against one seed a trial"),
                          ("adaptive14_entry_batch_minus_per3_entry_batch", "over the same, seeds added while a contender (14 trials) against three seeds a trial"),
                          ("holdout_entry_batch_minus_adaptive14_entry_batch", "over the same, the held-out stage against seeds added while a contender (14 trials)")):
            versus = data.get(key)
            if versus and versus.get("sweeps", 0) >= 2:
                ci_low, ci_high = versus["ci95"]
                verdict = versus["verdict"] if versus["sweeps"] >= 5 else "unsettled, from fewer than 5 sweeps"
                said.append(f"{what}: {versus['mean']:+,.1f} on average over {versus['sweeps']} sweeps (95% interval "
                            f"{ci_low:+,.1f} to {ci_high:+,.1f}: {verdict})")
        if said:
            parts.append("Scored on the new seeds, paired by sweep seed: " + "; ".join(said) + ".")
        if (noise := yardstick_noise(data)) is not None:
            parts.append(f"The new-seed score is itself an IQM of 10 seeds. Resampling each chosen configuration's "
                         f"10 test seeds, it lands a median {_share(noise)} of the score range from that configuration's "
                         f"own IQM ({yardstick_noise(data, seeds=30):.0%} with 30 seeds): a gap smaller than that is "
                         "within the noise of the check itself.")
        origin = data if "machine" in data else _pooled_source(loaded)
        parts.append(_provenance(loaded, origin))
    return (
        "Each sweep spends the same number of training runs on every side. Its answer (the configuration it "
        "picks and the value it reports) is then retrained on 10 seeds no part of the sweep used. The gap is "
        "reported minus what the new seeds scored: positive means the sweep promised more than its answer "
        "delivers; its size, whichever the sign, is the median gap size. The held-out stage reports a 95% interval; the last column counts the sweeps where that "
        "interval held the new-seed score.\n\n" + "\n\n".join(parts)
    )


def render_holdout_calibration(current: list[Loaded]) -> str:
    parts = []
    for loaded in current:
        data = loaded.data
        assert data is not None
        small = data["small_stage"]
        tasks = [task for task in ("cartpole", "acrobot", "pendulum", "real") if task in small]
        seeds = sorted({n for task in tasks for n in small[task] if n.isdigit()}, key=int)
        rows = [[n] + [f"{small[task][n]['coverage']:.2f}" if n in small[task] else "" for task in tasks]
                for n in seeds]
        names = {"real": "real CartPole and Acrobot scores"}
        parts.append(
            f"How often the interval for the search's best configuration, scored alone on n test seeds, "
            f"holds what it scores on 10 new seeds ({small['sweeps']} simulated sweeps of {small['trials']} "
            f"trials a task; the goal is 0.9 or more). The stage gives its winner at least {data['min_seeds']} "
            "seeds.\n\n"
            + _table(["test seeds"] + [names.get(task, f"simulated {task}") for task in tasks], rows)
            + "\n\n" + _provenance(loaded)
        )
    return "\n\n".join(parts)


def render_suggest_latency(current: list[Loaded]) -> str:
    rows, seen, marks, goal = [], set(), [100, 1_000, 10_000], ""
    # a case measured in several files is shown from the newest
    for loaded in sorted(current, key=lambda entry: stamp(entry.path) if entry.path else "", reverse=True):
        data = loaded.data
        assert data is not None
        marks, goal = data["settings"]["marks"], data["goal"]
        for case in data["cases"]:
            if case["case"] in seen:
                continue
            seen.add(case["case"])
            cells = []
            for mark in marks:
                window = case["windows"].get(str(mark))
                if window is None and case["capped"]:
                    reached = max(case["windows"], key=int)
                    window, note = case["windows"][reached], f" (stopped at trial {int(reached):,})"
                else:
                    note = ""
                timing = (window or {}).get("suggest") or (window or {}).get("next_trial")
                cells.append(f"{timing['median_ms']:,.1f} ms{note}" if timing else "")
            rows.append([f"`{case['case']}`", case.get("note", ""), *cells, f"{case['rss_mb_at_end']:,.0f} MB"])
    conditions = sorted({str(loaded.data["machine"].get("condition", "quiet")) for loaded in current if loaded.data})
    return (
        f"The median time a searcher takes to suggest the next trial, by how many trials the sweep has run, and "
        f"the driver's memory at the end; no training, so only the searcher's own work is timed (the goal: "
        f"{goal}). The machine was {'; '.join(conditions)}.\n\n"
        + _table(["case", "searcher", *[f"at trial {mark:,}" for mark in marks], "memory at the end"], rows)
        + "\n\n" + _sources(current)
    )


def render_readers_scale(current: list[Loaded]) -> str:
    rows = []
    for loaded in current:
        data = loaded.data
        assert data is not None
        for trials, measured in sorted(data["results"].items(), key=lambda item: int(item[0])):
            cells = [f"{int(trials):,} x {data['iterations']} ({_num(measured['size_mb'], 0)} MB)"]
            for key in ("first_load", "load", "table", "best", "cli_status", "cli_best", "cli_plot"):
                wall = measured[key]["wall_s"] if key in measured else None
                cells.append("-" if wall is None else f"{_num(wall, 2 if wall < 1 else 1)} s")
            rows.append(cells)
    condition = current[0].data["condition"] if current and current[0].data else "quiet"
    return (
        "How long the readers take on a sweep of many trials: in Python, and each command in a fresh process as a "
        "user runs it, imports included (the goal: at most 2 s each at 10,000 trials). The folders are made from a "
        f"real sweep's trial folders ({_source_of(current)}), each trial's rows repeated to the length shown. The first "
        "read of a sweep parses every row of every trial and writes the rows index beside them; every later read "
        "(the other columns) parses only the result files that changed since. `.table()` and `.best()` are timed on "
        f"a sweep `load()` has read. The machine was {condition}.\n\n"
        + _table(["trials x rows", "first `load()`", "`load()`", "`.table()`", "`.best()`", "`rlsweep status`",
                  "`rlsweep best`", "`rlsweep plot`"], rows)
        + "\n\n" + _sources(current)
    )


def render_mlflow_scale(current: list[Loaded]) -> str:
    rows = []
    for loaded in current:
        data = loaded.data
        assert data is not None
        for trials, measured in sorted(data["results"].items(), key=lambda item: int(item[0])):
            cells = [f"{int(trials):,} x {data['iterations']}", str(data.get("trial_runs", ""))]
            for key in ("sqlite_export", "sqlite_export_again", "sqlite_search_runs", "server_export",
                        "server_export_again", "server_search_runs"):
                wall = measured.get(key, {}).get("wall_s")
                cells.append("-" if wall is None else f"{_num(wall, 1)} s")
            for key in ("experiment_page", "run_page"):
                page = measured.get(key)
                cells.append("-" if page is None else f"{_num(page['cold_s'], 1)} / {_num(page['warm_s'], 1)} s")
            rows.append(cells)
    condition = current[0].data["condition"] if current and current[0].data else "quiet"
    return (
        "What a sweep of thousands of trials costs in MLflow (the goals: each export at most 60 s, each page open "
        "in at most 3 s). `rlsweep export` runs in a fresh process into a new store, then again with nothing new "
        "to write; past `mlflow.trial_runs` trials only the best get a child run, and every trial is a row of the "
        "parent run's `trials.csv`. The server is `rlsweep ui`'s (`mlflow server` over SQLite on 127.0.0.1); "
        "`search_runs` is `mlflow.search_runs` of the experiment; a page is timed in headless Chromium until it "
        "shows the sweep's run (the experiment page) or the parent run's `trials.csv` (its artifacts page), first "
        f"with a cold browser cache, then warm. The folders are made as for the readers above ({_source_of(current)}). "
        f"The machine was {condition}.\n\n"
        + _table(["trials x rows", "child runs", "export, SQLite", "again", "`search_runs`", "export, server", "again",
                  "`search_runs`", "experiment page", "run page"], rows)
        + "\n\n" + _sources(current)
    )


def _source_of(current: list[Loaded]) -> str:
    source = (current[0].data or {}).get("source", {}) if current else {}
    return f"{source['algorithm']} on {source['env']}" if source.get("algorithm") and source.get("env") else "PPO"


def _each_file(body: Callable[[Results], str]) -> Callable[[list[Loaded]], str]:
    """A section's renderer that draws each current file with ``body`` and names the file under it."""

    def render(current: list[Loaded]) -> str:
        parts = []
        for loaded in current:
            assert loaded.data is not None
            parts.append(body(loaded.data) + "\n\n" + _provenance(loaded))
        return "\n\n".join(parts)

    return render


def _step_cost(data: Results) -> str:
    rows = []
    for corner, summary in data["summary"].items():
        cost = summary["cpu_ms_per_env_step"]
        rows.append([f"`{corner}`", *(f"{cost[side]:.3f}" if side in cost else "" for side in
                                      ("rllib", "rllib-sb3", "sb3")), f"{summary['floor_cpu_ms_per_env_step']:.3f}"])
    return (
        "CPU milliseconds per env step of one PPO trial on CartPole-v1 (8 envs, one torch thread), the same "
        "work on each side; `floor` is a bare torch loop doing the same updates. Corners are minibatch, "
        "batch, epochs and network width.\n\n"
        + _table(["corner", "RLlib as rlsweep builds it", "the same with SB3's PPO settings",
                  "Stable-Baselines3", "floor"], rows))


render_step_cost = _each_file(_step_cost)


def _sac_throughput(data: Results) -> str:
    rows = [[f"`{case}`", _num(median), f"{data['ratio_to_first'][case]:.2f}"]
            for case, median in data["median"].items()]
    return (f"{data['setup']}\n\n" + _table(["variant", "env steps per second (median)", "ratio"], rows))


render_sac_throughput = _each_file(_sac_throughput)


def _zoo_fidelity(data: Results) -> str:
    rows = []
    for entry, result in data["entries"].items():
        published = result["published"]
        rows.append([f"`{entry}`", _num(published.get("mean", float("nan"))), _num(result["mean_of_seeds"]),
                     f"{result['seeds_reaching']} of {len(result['per_seed'])}",
                     "yes" if result["holds"] else "no"])
    return (
        "An rl-baselines3-zoo entry converted by `rlsweep convert --from zoo`, trained in rlsweep on several "
        "seeds, each evaluated greedily; against the mean return rl-baselines3-zoo publishes for it.\n\n"
        + _table(["entry", "published mean", "rlsweep, mean of seeds", "seeds reaching it", "holds"], rows))


render_zoo_fidelity = _each_file(_zoo_fidelity)


def _overhead(data: Results) -> str:
    rows = [[_SIDE.get(side.replace(" ", "-"), side), ", ".join(f"{t:.1f} s" for t in times), f"{sum(times):.1f} s"]
            for side, times in data["times_s"].items()]
    settings = data["settings"]
    return (
        f"The same {settings['trials']} PPO trials on CartPole-v1 ({settings['env_steps']:,} env steps each, "
        f"{settings['max_concurrent']} at a time) through `rlsweep.run` and through hand-written "
        f"`tune.Tuner` code, alternated in one process: rlsweep took **{data['ratio_of_totals']:.2f}** of "
        "hand-written Tune's total time.\n\n"
        + _table(["side", "each round", "total"], rows))


render_overhead = _each_file(_overhead)


def _scale(data: Results) -> str:
    rss = data["driver_rss_mb"]
    rows = [
        ["trials run", f"{data['trials']:,} ({_num(data['trials_per_min'])} a minute)"],
        ["driver memory, trial 100 to the end", f"{rss['at_trial_100']:,.0f} MB to {rss['end']:,.0f} MB "
                                                f"({_share(rss['growth_from_trial_100'])})"],
        ["experiment folder", f"{data['experiment_dir_mb']:,.1f} MB"],
        ["`load` / `.table()` / `.best()`", f"{data['load_s']:.3f} s / {data['table_s']:.3f} s / "
                                            f"{data['best_s']:.3f} s"],
        ["MLflow export, then again", f"{data['export_s']:.1f} s, {data['export_again_s']:.1f} s"],
    ]
    return ("One sweep of many short PPO trials, then the readers on the folder it wrote.\n\n"
                 + _table(["measure", "value"], rows))


render_scale = _each_file(_scale)


def _hostile_validate(data: Results) -> str:
    summary = data["summary"]
    rows = [
        ["the spec check in Python (median, slowest)",
         f"{summary['check_s']['median'] * 1000:.1f} ms, {summary['check_s']['max']:.2f} s"],
        ["`rlsweep validate` from launch to exit (median, slowest)",
         f"{summary['validate_s']['median']:.2f} s, {summary['validate_s']['max']:.2f} s"],
        ["`rlsweep validate --help` (the floor of any command)", f"{summary['validate_help_s']['min']:.2f} s"],
    ]
    return ("Hand-made hostile or broken specs (alias bombs, deep nesting, huge numbers, 50,000 unknown "
                 "keys): how long until they are refused.\n\n" + _table(["measure", "time"], rows))


render_hostile_validate = _each_file(_hostile_validate)


def _memory_prediction(data: Results) -> str:
    rows = [[f"`{case['case']}`", f"{case['predicted_mb']:,.0f} MB",
             ", ".join(f"{mb:,.0f} MB" for mb in case["measured_mb"]),
             ", ".join(f"{error:+.1%}" for error in case["errors"])]
            for case in data["cases"] if case.get("predicted_mb") and case.get("measured_mb")]
    return ("The pre-flight memory check's prediction against each real trial's peak memory; a negative "
                 "error is an under-prediction, the direction that can run a machine out of memory.\n\n"
                 + _table(["case", "predicted", "measured, per trial", "error"], rows))


render_memory_prediction = _each_file(_memory_prediction)


def _tracing_overhead(data: Results) -> str:
    return (
        "The same sweep with tracing off and on, alternated: a trial's time per iteration with tracing on "
        f"was **{data['iteration_ratio_median_of_rounds']:.2f}** of its time with tracing off, its whole "
        f"wall time {data['trial_ratio_median_of_rounds']:.2f}.")


render_tracing_overhead = _each_file(_tracing_overhead)


def _export_long_trial(data: Results) -> str:
    after = data["summary"]["after"]
    return (f"Timed: {data['what']}. A median of **{after['median_s']:.1f} s** over "
                 f"{len(after['runs_s'])} runs.")


render_export_long_trial = _each_file(_export_long_trial)


# ------------------------------------------------------------------------------------------- sections

_TRIAL_CODE = ("rlsweep/api.py", "rlsweep/sweep.py", "rlsweep/runtime.py", "rlsweep/spec.py", "rlsweep/trainables/",
               "rlsweep/search_spaces/", "rlsweep/schedulers/")


def _fresh_seeds(plan: Plan, count: int) -> list[int]:
    """Seeds no time-to-solve run has used, nor a run planned before this one."""
    used = [run["seed"] for path in (plan.repo / RESULTS).glob("time_to_solve-*.json")
            for run in json.loads(path.read_text()).get("runs", []) if isinstance(run.get("seed"), int)]
    start = max([*used, *plan.seeds_planned], default=0) + 1
    seeds = list(range(start, start + count))
    plan.seeds_planned.extend(seeds)
    return seeds


def _time_to_solve_steps(task: str, name: str, cap_s: int,
                         wrap: Sequence[str] = ()) -> tuple[Callable[[Plan], list[str]], ...]:
    """Ten new seeds of the task, then those seeds pooled."""
    def run(plan: Plan) -> list[str]:
        seeds = [str(seed) for seed in _fresh_seeds(plan, 10)]
        return [*wrap, PYTHON, "benchmarks/time_to_solve.py", "--task", task, "--seeds", *seeds, "--cap-s", str(cap_s)]

    def pool(plan: Plan) -> list[str]:
        files = sorted((plan.repo / RESULTS).glob(f"time_to_solve-{task}-*.json"), key=stamp)
        if plan.dry_run or not files:
            newest_file = f"benchmarks/results/time_to_solve-{task}-<the file the step before writes>.json"
        else:
            newest_file = str(files[-1].relative_to(plan.repo))
        return [PYTHON, "benchmarks/pooled.py", "--name", name, newest_file]

    return (run, pool)


def _has_case(data: Results, name: str) -> bool:
    return any(case.get("case") == name for case in data.get("cases", []))


def _fixed(*argv: str) -> Callable[[Plan], list[str]]:
    return lambda plan: list(argv)


_RAY_NEIGHBOUR = (PYTHON, "benchmarks/ray_neighbour.py", "3000", "--work", "20", "--")

SECTIONS: tuple[Section, ...] = (
    Section(
        heading="Time to solve: rlsweep, hand-written Ray Tune and rl-baselines3-zoo",
        measures="how long each tool takes from launch to a solved task (PPO on CartPole-v1 and Acrobot-v1, "
                 "SAC on Pendulum-v1), quiet and beside a neighbour that runs Ray",
        sources=(Source("CartPole-v1, quiet", "pooled-cartpole-quiet-2*.json"),
                 Source("CartPole-v1, beside a Ray neighbour", "pooled-cartpole-ray-neighbour-2*.json"),
                 Source("Acrobot-v1, quiet", "pooled-acrobot-quiet-2*.json"),
                 Source("Pendulum-v1, quiet", "pooled-pendulum-quiet-2*.json")),
        code_paths=_TRIAL_CODE,
        command=f"`{PYTHON} benchmarks/time_to_solve.py --task cartpole --seeds <10 new seeds> --cap-s 200`, then "
                f"`{PYTHON} benchmarks/pooled.py --name cartpole-quiet <its results file>`; the same for Acrobot-v1 "
                "(`--cap-s 300`), Pendulum-v1 (`--cap-s 240`) and CartPole-v1 beside `benchmarks/ray_neighbour.py` "
                ", as `--refresh --dry-run` prints them",
        # from the newest results files' wall_s: 4.3 min a seed for the three sides on CartPole, 8.7 on
        # Acrobot, 10.2 on Pendulum
        duration="about 5 hours: 45-50 min for each CartPole set, 90 min for Acrobot, 100 min for Pendulum",
        render=render_time_to_solve,
        refresh=(*_time_to_solve_steps("cartpole", "cartpole-quiet", 200),
                 *_time_to_solve_steps("cartpole", "cartpole-ray-neighbour", 200, _RAY_NEIGHBOUR),
                 *_time_to_solve_steps("acrobot", "acrobot-quiet", 300),
                 *_time_to_solve_steps("pendulum", "pendulum-quiet", 240)),
    ),
    Section(
        heading="The held-out stage: does the answer hold on new seeds?",
        measures="whether the value a sweep reports for its winner holds when the winner is retrained on seeds "
                 "the search never saw, with and without the held-out stage",
        sources=(Source("CartPole-v1", "seed_robustness-cartpole-*.json", lambda d: bool(d.get("summary"))),
                 Source("Acrobot-v1", "seed_robustness-acrobot-*.json", lambda d: bool(d.get("summary")))),
        code_paths=("rlsweep/holdout.py", "rlsweep/api.py", "rlsweep/sweep.py", "rlsweep/seeds.py",
                    "rlsweep/trainables/", "rlsweep/analysis/_confirm.py"),
        command=f"`{PYTHON} benchmarks/seed_robustness.py --task cartpole --sweep-seeds 0 1 2 3 4 --sides per1 holdout`, "
                "and the same with `--task acrobot`; `--sides per3 lcb` measures the other two, `--sides zoo` "
                "rl-baselines3-zoo's (in its own venv, made once by `benchmarks/_zoo.py`), and `--pool FILE ...` "
                "joins results files into one",
        # the runs' sweep_s + confirm_s: about 8.5 min a sweep seed on CartPole for per1 and holdout, 20 on Acrobot;
        # per3 and lcb about 12 min each a sweep seed on CartPole; zoo 3-21 min a sweep seed on CartPole, 14-20 on Acrobot
        duration="about 45 min for CartPole and 100 min for Acrobot (per3 and lcb: about 1 h more each on CartPole; "
                 "zoo: about 45 min on CartPole, 90 min on Acrobot)",
        render=render_seed_robustness,
        refresh=(_fixed(PYTHON, "benchmarks/seed_robustness.py", "--task", "cartpole", "--sweep-seeds", "0", "1", "2", "3", "4",
                        "--sides", "per1", "holdout"),
                 _fixed(PYTHON, "benchmarks/seed_robustness.py", "--task", "acrobot", "--sweep-seeds", "0", "1", "2", "3", "4",
                        "--sides", "per1", "holdout")),
    ),
    Section(
        heading="How many seeds the held-out winner needs",
        measures="how often the held-out stage's interval holds the winner's score on new seeds, by its number "
                 "of test seeds (simulated sweeps, no training)",
        sources=(Source("simulated and real scores", "holdout_calibration-*.json", lambda d: bool(d.get("small_stage"))),),
        code_paths=("rlsweep/holdout.py",),
        command=f"`{PYTHON} benchmarks/holdout_calibration.py --small-only`",
        duration="about a minute; the whole study, without `--small-only`, about 7 min",  # its "seconds": 32 and 408
        render=render_holdout_calibration,
        refresh=(_fixed(PYTHON, "benchmarks/holdout_calibration.py", "--small-only"),),
    ),
    Section(
        heading="How fast a searcher suggests trials in a long sweep",
        measures="how long each searcher takes to suggest a trial as a sweep grows to 10,000 trials (no Ray)",
        sources=(Source("the default and other searchers", "suggest_latency-*.json", lambda d: _has_case(d, "optuna")),
                 Source("Optuna's QMC sampler", "suggest_latency-*.json", lambda d: _has_case(d, "optuna-qmc"))),
        code_paths=("rlsweep/search_spaces/", "rlsweep/schedulers/"),
        command=f"`{PYTHON} benchmarks/suggest_latency.py --cases optuna optuna-ungrouped random optuna-cmaes "
                "nevergrad hyperopt optuna-independent optuna-qmc`",
        duration="about 70 min",  # the cases' total_s
        render=render_suggest_latency,
        refresh=(_fixed(PYTHON, "benchmarks/suggest_latency.py", "--cases", "optuna", "optuna-ungrouped", "random",
                        "optuna-cmaes", "nevergrad", "hyperopt", "optuna-independent", "optuna-qmc"),),
    ),
    Section(
        heading="What an env step costs: RLlib's PPO against Stable-Baselines3's",
        measures="CPU per env step of one PPO trial as rlsweep builds it, against Stable-Baselines3 on the same work",
        sources=(Source("PPO, CartPole-v1", "step_cost-*.json"),),
        code_paths=("rlsweep/trainables/", "rlsweep/_zoo.py"),
        command=f"`{PYTHON} benchmarks/step_cost.py --rounds 3 --iterations 4`",
        duration="about 15 min",
        render=render_step_cost,
        refresh=(_fixed(PYTHON, "benchmarks/step_cost.py", "--rounds", "3", "--iterations", "4"),),
    ),
    Section(
        heading="SAC's env steps per second",
        measures="SAC's training throughput on Pendulum-v1 by replay buffer and Q network",
        sources=(Source("SAC, Pendulum-v1", "sac_throughput-*.json"),),
        code_paths=("rlsweep/trainables/",),
        command=f"`{PYTHON} benchmarks/sac_throughput.py --ab prioritized,fast,fast+concat --rounds 3`",
        duration="about 10 min",
        render=render_sac_throughput,
        refresh=(_fixed(PYTHON, "benchmarks/sac_throughput.py", "--ab", "prioritized,fast,fast+concat", "--rounds", "3"),),
    ),
    Section(
        heading="A converted rl-baselines3-zoo entry against its published score",
        measures="whether an rl-baselines3-zoo entry converted by `rlsweep convert --from zoo` scores what "
                 "rl-baselines3-zoo publishes for it",
        sources=(Source("zoo entries", "zoo_fidelity-*.json"),),
        code_paths=("rlsweep/_zoo.py", "rlsweep/convert.py", "rlsweep/trainables/", "rlsweep/analysis/_evaluate.py"),
        command=f"`{PYTHON} benchmarks/zoo_fidelity.py --storage /tmp/zoo-fidelity`",
        duration="about 15 min an entry",  # the entries' train_s, and their evaluation
        render=render_zoo_fidelity,
        refresh=(_fixed(PYTHON, "benchmarks/zoo_fidelity.py", "--storage", "/tmp/zoo-fidelity"),),
    ),
    Section(
        heading="Overhead against hand-written Ray Tune",
        measures="the wall time of the same PPO trials run through rlsweep and through hand-written Tune code",
        sources=(Source("PPO, CartPole-v1", "overhead-*.json"),),
        code_paths=_TRIAL_CODE,
        command=f"`{PYTHON} benchmarks/overhead.py --rounds 2 --env-steps 8000`",
        duration="about 5 min",  # times_s: about 2 min a round
        render=render_overhead,
        refresh=(_fixed(PYTHON, "benchmarks/overhead.py", "--rounds", "2", "--env-steps", "8000"),),
    ),
    Section(
        heading="Reading a sweep of 10,000 trials",
        measures="how long `load()`, `table()`, `best()` and `rlsweep status`, `best` and `plot` take on 1,000 and 10,000 trials",
        sources=(Source("readers", "readers_scale-*.json"),),
        code_paths=("rlsweep/store.py", "rlsweep/analysis/", "rlsweep/cli.py", "rlsweep/metrics.py"),
        command=f"`{PYTHON} benchmarks/readers_scale.py --source <an experiment folder a sweep wrote>`",
        duration="about 10 min",
        render=render_readers_scale,
    ),
    Section(
        heading="A sweep of 10,000 trials in MLflow",
        measures="how long `rlsweep export` of 10,000 trials takes into SQLite and an MLflow server, `search_runs` and the UI's pages",
        sources=(Source("mlflow", "mlflow_scale-*.json"),),
        code_paths=("rlsweep/analysis/_mlflow.py", "rlsweep/analysis/_plots.py", "rlsweep/analysis/_load.py",
                    "rlsweep/store.py", "rlsweep/cli.py", "rlsweep/spec.py"),
        command=f"`{PYTHON} benchmarks/mlflow_scale.py --source <an experiment folder a sweep wrote>`",
        duration="about 3 min",  # 2 min at 10,000 trials, plus about 20 s to make the folder
        render=render_mlflow_scale,
    ),
    Section(
        heading="Sweeps of many trials",
        measures="driver memory, folder size and the readers' and export's times over a sweep of hundreds of trials",
        sources=(Source("PPO, CartPole-v1", "scale-*.json"),),
        code_paths=(*_TRIAL_CODE, "rlsweep/analysis/", "rlsweep/store.py"),
        command=f"`{PYTHON} benchmarks/scale.py --trials 1000 --iterations 10`",
        duration="about 40 min, its sweep stopping at a 30 min cap",
        render=render_scale,
        refresh=(_fixed(PYTHON, "benchmarks/scale.py", "--trials", "1000", "--iterations", "10"),),
    ),
    Section(
        heading="Exporting a long trial to MLflow",
        measures="how long `rlsweep export` takes for one trial of 30,002 result rows",
        sources=(Source("export", "export_long_trial-*.json"),),
        code_paths=("rlsweep/analysis/_mlflow.py", "rlsweep/analysis/_load.py", "rlsweep/store.py", "rlsweep/cli.py"),
        command=f"`{PYTHON} benchmarks/export_long_trial.py --checkout after=. --runs 3`",
        duration="about 2 min",  # runs' seconds
        render=render_export_long_trial,
        refresh=(_fixed(PYTHON, "benchmarks/export_long_trial.py", "--checkout", "after=.", "--runs", "3"),),
    ),
    Section(
        heading="Refusing a hostile spec",
        measures="how long a hostile or broken spec takes to be refused, in Python and from the command line",
        sources=(Source("specs", "hostile_validate-*.json"),),
        code_paths=("rlsweep/spec.py", "rlsweep/_schema.py", "rlsweep/validate.py", "rlsweep/errors.py",
                    "rlsweep/cli.py"),
        command=f"`{PYTHON} benchmarks/hostile_validate.py --rounds 2`",
        duration="about 3 min",
        render=render_hostile_validate,
        refresh=(_fixed(PYTHON, "benchmarks/hostile_validate.py", "--rounds", "2"),),
    ),
    Section(
        heading="Memory prediction",
        measures="the pre-flight memory check's prediction against real trials' peaks (PPO, SAC, a league)",
        sources=(Source("trials", "memory_prediction-*.json"),),
        code_paths=("rlsweep/trainables/", "rlsweep/sweep.py"),
        command=f"`{PYTHON} benchmarks/memory_prediction.py`",
        duration="about 20 min",  # the cases' wall_s
        render=render_memory_prediction,
        refresh=(_fixed(PYTHON, "benchmarks/memory_prediction.py"),),
    ),
    Section(
        heading="What tracing costs a trial",
        measures="a trial's time per iteration with tracing to MLflow on and off",
        sources=(Source("PPO, CartPole-v1", "tracing_overhead-*.json"),),
        code_paths=("rlsweep/tracing.py", "rlsweep/trainables/", "rlsweep/schedulers/_traced.py"),
        command=f"`{PYTHON} benchmarks/tracing_overhead.py --rounds 3`",
        duration="about 10 min",
        render=render_tracing_overhead,
        refresh=(_fixed(PYTHON, "benchmarks/tracing_overhead.py", "--rounds", "3"),),
    ),
)


# ------------------------------------------------------------------------------------------- the page

_INTRO = """\
# Benchmarks

What rlsweep costs and what its answers are worth, measured by the scripts in `benchmarks/`. Every figure
on this page comes from a results file in `benchmarks/results/` that was measured at or after the last change
to the code it measures; each table names its file, the date, the machine and the library versions. A
benchmark whose results predate a change to its code is not quoted: it is listed under
[Not measured at the current code](#not-measured-at-the-current-code) with the command that measures it again.
The files of earlier runs stay in `benchmarks/results/`.

How to read the tables: times and scores are medians over seeds unless a column says otherwise; an interval is
95%; "unsettled" means the interval spans the line the comparison is about, so those seeds cannot say which
side of it the truth lies.

This page is written by `benchmarks/report.py` (`.venv/bin/python benchmarks/report.py`); do not edit it by
hand. `.venv/bin/python benchmarks/report.py --refresh` re-runs every stale benchmark one after another and
writes the page again; it runs Ray on every core for hours, so run it on a machine with nothing else to do
(`--refresh --dry-run` prints the commands first)."""


def status(repo: Path = REPO, sections: Sequence[Section] = SECTIONS) -> list[tuple[Section, list[Loaded]]]:
    check_history(repo)
    return [(section, [load(repo, repo / RESULTS, source, section.code_paths) for source in section.sources])
            for section in sections]


def _refresh_line(section: Section) -> str:
    return f"{section.measures[0].upper()}{section.measures[1:]}. Measure again: {section.command}; {section.duration}."


def render_page(statuses: list[tuple[Section, list[Loaded]]]) -> str:
    body = [_INTRO]
    stale_entries: list[str] = []
    for section, loaded in statuses:
        current = [entry for entry in loaded if entry.current]
        stale = [entry for entry in loaded if not entry.current]
        if current:
            text = section.render(current).strip()
            rerun = f"Measure again: {section.command}; {section.duration}."
            body.append(f"## {section.heading}\n\n{text}\n\n{rerun}")
            if stale:
                labels = ", ".join(entry.source.label for entry in stale)
                body.append(f"Not measured at the current code, so not shown: {labels}.")
        elif stale:
            stale_entries.append(f"### {section.heading}\n\n" + _refresh_line(section))
    if stale_entries:
        body.append("## Not measured at the current code\n\nThese benchmarks have results only from before the "
                    "last change to the code they measure, so their figures are not quoted. Each line says what "
                    "it measures, the command that measures it again and about how long that takes on a 2-core "
                    "machine.")
        body.extend(stale_entries)
    return "\n\n".join(body) + "\n"


def generate(repo: Path = REPO) -> str:
    return render_page(status(repo))


def refresh_plan(repo: Path = REPO) -> list[tuple[Section, list[Callable[[Plan], list[str]]]]]:
    """The stale sections and the steps that measure them again."""
    return [(section, list(section.refresh)) for section, loaded in status(repo)
            if any(not entry.current for entry in loaded)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/benchmarks.md is not what it would write")
    parser.add_argument("--refresh", action="store_true",
                        help="re-run each stale benchmark, one after another (Ray-heavy, hours), then write the page")
    parser.add_argument("--dry-run", action="store_true", help="with --refresh: print the commands, run nothing")
    args = parser.parse_args(argv)
    page = REPO / PAGE
    try:
        if args.refresh:
            plan = Plan(REPO, dry_run=args.dry_run)
            for section, steps in refresh_plan(REPO):
                print(f"# {section.heading}: {section.duration}", flush=True)
                for step in steps:
                    argv_ = step(plan)
                    print(shlex.join(argv_), flush=True)
                    if not args.dry_run:
                        subprocess.run(argv_, cwd=REPO, check=True)
            if args.dry_run:
                return 0
        text = generate(REPO)
    except HistoryError as error:
        print(f"benchmarks/report.py: {error}", file=sys.stderr)
        return 2
    if args.check:
        old = page.read_text() if page.exists() else ""
        if old != text:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                       str(PAGE), "what benchmarks/report.py writes"))
            print(f"{PAGE} is not current: run .venv/bin/python benchmarks/report.py", file=sys.stderr)
            return 1
        return 0
    page.write_text(text)
    print(f"wrote {PAGE}: {sum(1 for _ in text.splitlines())} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
