"""Traces of a real sweep sent to a real MLflow server's OTLP endpoint (``tracing: {to: mlflow}``), read
back through ``MlflowClient`` and opened in the MLflow UI in headless Chromium; and no OpenTelemetry at all
when tracing is off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from mlflow import MlflowClient

import rlsweep
from rlsweep.analysis import load
from tests.analysis.test_mlflow_server import _chromium, screenshot, ui_server
from tests.conftest import REPO, small_ppo

pytestmark = pytest.mark.slow

EXPERIMENT = "traced"
TRIALS = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from ui_server(tmp_path_factory)


def _attribute(span, name):
    value = span.attributes.get(f"rlsweep.{name}")
    return json.loads(value) if isinstance(value, str) and value[:1] in "[{" else value


@pytest.fixture(scope="module")
def traced(tmp_path_factory, ray_runtime, server):
    root = tmp_path_factory.mktemp("traced")
    spec = rlsweep.load_spec(
        small_ppo(
            "traced", root / "results",
            search_space={"training.lr": {"loguniform": [1.0e-4, 3.0e-3]}},
            scheduler={"name": "asha", "grace_env_steps": 1000, "reduction_factor": 2},
            budget={"env_steps": 2000, "trials": TRIALS},
            checkpoint={"every_env_steps": 1000},
            evaluation={"episodes": 2, "every_env_steps": 1000},
            mlflow={"tracking_uri": server, "experiment": EXPERIMENT, "export": False},
            tracing={"to": "mlflow"},
            # CartPole that records whether each process it is made in has imported OpenTelemetry: with
            # tracing on, the trials' processes have (the control for the tracing-off probe test below).
            env="tests.envs.import_probe:ImportProbe", env_config={"out": str(root / "probe.jsonl")},
        )
    )
    result = rlsweep.run(spec, verbose=0)
    client = MlflowClient(tracking_uri=server)
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    # Every process flushed its spans as it ended; the server stores them as they arrive.
    deadline = time.monotonic() + 60
    while True:
        traces = client.search_traces(locations=[experiment_id], max_results=100)
        if len(traces) >= TRIALS + 1 or time.monotonic() > deadline:
            break
        time.sleep(1)
    return load(result.path), traces, experiment_id


def _by_root(traces):
    """root span name -> [(trace, its spans)]"""
    found = {}
    for trace in traces:
        spans = trace.data.spans
        (root,) = [s for s in spans if s.parent_id is None]
        found.setdefault(root.name, []).append((root, spans))
    return found


def test_one_trace_per_trial_and_one_for_the_sweep_with_the_spans_a_user_looks_for(traced):
    sweep, traces, _ = traced
    roots = _by_root(traces)
    assert sorted(roots) == ["sweep", "trial"]
    ((sweep_root, sweep_spans),) = roots["sweep"]
    assert _attribute(sweep_root, "sweep_id") == sweep.sweep_id
    # The driver: pre-flight, a suggestion per trial, the scheduler's decisions.
    names = [s.name for s in sweep_spans]
    assert names.count("preflight") == 1
    suggested = {_attribute(s, "trial_id") for s in sweep_spans if s.name == "suggest"}
    assert suggested == {t.trial_id for t in sweep.trials}
    decisions = [s for s in sweep_spans if s.name == "decide"]
    assert decisions and {_attribute(s, "decision") for s in decisions} <= {"CONTINUE", "PAUSE", "STOP"}
    assert {_attribute(s, "trial_id") for s in decisions} == {t.trial_id for t in sweep.trials}

    trials = {_attribute(root, "trial_id"): (root, spans) for root, spans in roots["trial"]}
    assert set(trials) == {t.trial_id for t in sweep.trials}
    for trial in sweep.trials:
        root, spans = trials[trial.trial_id]
        assert _attribute(root, "algorithm") == "PPO" and _attribute(root, "state") == "TERMINATED"
        assert _attribute(root, "config.training.lr") == pytest.approx(trial.config["training.lr"])
        assert _attribute(root, "sweep_id") == sweep.sweep_id
        assert _attribute(root, "env_steps") == trial.rows[-1]["env_steps"]
        names = [s.name for s in spans]
        (build,) = [s for s in spans if s.name == "build"]
        assert _attribute(build, "node_id") == trial.rows[0]["node_id"]
        assert _attribute(build, "seeds") == trial.settings["seeds"]
        # Everything the trial's process sent sits inside the root span the driver made.
        assert all(root.start_time_ns <= s.start_time_ns and s.end_time_ns <= root.end_time_ns for s in spans)
        assert names.count("iteration") == len(trial.rows)
        assert names.count("evaluate") == sum(r["env_steps"] % 1000 == 0 for r in trial.rows)  # every 1,000
        assert names.count("checkpoint") == sum(bool(r.get("checkpoint_dir_name")) for r in trial.raw_rows)
        assert {"sample", "learn"} <= set(names)
        iterations = [s for s in spans if s.name == "iteration"]
        assert [_attribute(s, "env_steps") for s in iterations] == [r["env_steps"] for r in trial.rows]


def test_each_trial_trace_links_to_the_sweep_trace(traced):
    _, traces, _ = traced
    roots = _by_root(traces)
    ((sweep_root, _),) = roots["sweep"]
    for root, _ in roots["trial"]:
        assert root.trace_id != sweep_root.trace_id  # a trace of its own
        links = root.links or []
        assert any(link.trace_id == sweep_root.trace_id and link.span_id == sweep_root.span_id for link in links), links


def test_an_iterations_phase_spans_tile_it_and_agree_with_the_reported_times(traced):
    sweep, traces, _ = traced
    trials = {_attribute(root, "trial_id"): spans for root, spans in _by_root(traces)["trial"]}
    checked = 0
    for trial in sweep.trials:
        spans = trials[trial.trial_id]
        rows = {r["env_steps"]: r for r in trial.rows}
        for iteration in (s for s in spans if s.name == "iteration"):
            row = rows[_attribute(iteration, "env_steps")]
            children = sorted((s for s in spans if s.parent_id == iteration.span_id), key=lambda s: s.start_time_ns)
            assert {c.name for c in children} <= {"sample", "learn", "weight_sync"} and children
            # Inside the iteration, one after another, never overlapping...
            assert children[0].start_time_ns >= iteration.start_time_ns
            assert children[-1].end_time_ns <= iteration.end_time_ns
            for before, after in zip(children, children[1:]):
                assert before.end_time_ns <= after.start_time_ns, (before.name, after.name)
            # ...and the iteration span and each phase's spans last what the row reports for them (to the
            # nanosecond rounding). (other_time_s is the iteration less sample and learn by definition; that
            # the split matches wall time measured apart is tests/trainables/test_phase_timer.py's.)
            assert (iteration.end_time_ns - iteration.start_time_ns) / 1e9 == pytest.approx(row["iteration_time_s"], abs=2e-6)
            for phase in ("sample", "learn"):
                seconds = sum(c.end_time_ns - c.start_time_ns for c in children if c.name == phase) / 1e9
                assert seconds == pytest.approx(row[f"{phase}_time_s"], abs=len(children) * 2e-6), phase
            checked += 1
    assert checked == sum(len(t.rows) for t in sweep.trials)


def test_the_mlflow_ui_shows_a_trials_trace(traced, server, tmp_path):
    """The experiment's Traces tab lists the traces; opening one shows the trial's span tree."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    sweep, traces, experiment_id = traced
    browser = _chromium()
    try:
        browser.get(f"{server}/#/experiments/{experiment_id}/traces")
        body = lambda b: b.find_element(By.TAG_NAME, "body").text  # noqa: E731
        WebDriverWait(browser, 90).until(lambda b: f"{len(traces)} of {len(traces)}" in body(b))
        for button in browser.find_elements(By.XPATH, "//button[normalize-space()='Got it']"):
            button.click()  # a first-visit tip over the list
        # Open the traces one by one (newest first) until a trial's shows.
        for row in browser.find_elements(By.XPATH, "//*[contains(text(), ' ago')]"):
            row.click()
            try:
                WebDriverWait(browser, 20).until(lambda b: "rlsweep.trial_id" in body(b))
                break
            except Exception:  # noqa: BLE001 - the sweep's trace: try the next row
                continue
        shown = body(browser)
        assert any(t.trial_id in shown for t in sweep.trials), shown[-2000:]
        for name in ("trial", "build", "iteration", "sample", "learn", "checkpoint"):
            assert f"\n{name}\n" in shown, name
        screenshot(browser, tmp_path / "mlflow_trace.png")
    finally:
        browser.quit()


@pytest.mark.parametrize(
    "remote, span",
    [({"env_runners.num_env_runners": 1}, "env_runner.sample"), ({"learners.num_learners": 1}, "learner.update")],
    ids=["env-runner", "learner"],
)
def test_spans_of_remote_env_runners_and_learners_join_the_trials_trace(tmp_path, ray_runtime, server, remote, span):
    document = small_ppo(
        "remote", tmp_path / "results", budget={"env_steps": 1000, "trials": 1},
        mlflow={"tracking_uri": server, "experiment": "remote", "export": False}, tracing={"to": "mlflow"},
    )
    document["config"] = {**document["config"], **remote}
    sweep = load(rlsweep.run(rlsweep.load_spec(document), verbose=0).path)
    (trial,) = sweep.trials
    # The trial reads its hyperparameters back from a remote learner too (that once shipped the algorithm).
    assert trial.state == "TERMINATED", trial.error
    assert trial.rows[-1]["hp/training.lr"] == pytest.approx(trial.config["training.lr"])
    client = MlflowClient(tracking_uri=server)
    experiment_id = client.get_experiment_by_name("remote").experiment_id
    deadline, spans = time.monotonic() + 60, []
    while time.monotonic() < deadline:
        traces = client.search_traces(locations=[experiment_id], max_results=100)
        roots = {root.name: (root, found) for trace in traces for root, found in [_root_and_spans(trace)] if root}
        mine = [(r, f) for r, f in (_root_and_spans(t) for t in traces) if r and _attribute(r, "trial_id") == trial.trial_id]
        if mine and any(s.name == span for s in mine[0][1]):
            root, spans = mine[0]
            break
        time.sleep(1)
    remote_spans = [s for s in spans if s.name == span]
    assert remote_spans, f"no {span} span in the trial's trace: {sorted({s.name for s in spans})}"
    (build,) = [s for s in spans if s.name == "build"]
    # From another process than the trial's, under the trial's root span.
    assert all(_attribute(s, "pid") != _attribute(build, "pid") for s in remote_spans)
    assert all(s.parent_id == root.span_id for s in remote_spans)
    assert roots  # the sweep's trace is there too


def _root_and_spans(trace):
    roots = [s for s in trace.data.spans if s.parent_id is None]
    return (roots[0] if roots else None), trace.data.spans


PROBE_SCRIPT = """
import json, os, sys
import rlsweep
spec = rlsweep.load_spec(json.loads(sys.argv[1]))
rlsweep.run(spec, verbose=0)
print(json.dumps({"pid": os.getpid(), "modules": sorted(m for m in sys.modules if m.startswith("opentelemetry.exporter"))[:3]}))
"""


def test_with_tracing_on_the_import_probes_see_opentelemetry(traced):
    """The control for the test below: the same probes, in the traced sweep's trial processes (and its
    driver, this process, which loaded an exporter), see OpenTelemetry, so they can tell."""
    sweep, *_ = traced
    probes = [json.loads(line) for line in (sweep.path.parent.parent / "probe.jsonl").read_text().splitlines()]
    trials = [p for p in probes if p["pid"] != os.getpid()]
    assert trials and all(p["opentelemetry"] for p in trials), probes
    assert any(name.startswith("opentelemetry.exporter") for name in sys.modules)


def test_with_tracing_off_no_process_imports_opentelemetry_nor_a_trial_torchs_compiler(tmp_path):
    """Every trial process imports no OpenTelemetry at all (the env the trial builds records what its
    process imported), and the driver loads no exporter. (Ray Tune itself imports MLflow, and with it
    OpenTelemetry's API and SDK, in every driver that passes callbacks: its usage count of callback
    classes.) Nor does a trial that compiles nothing import torch's compiler (most of a trial's setup;
    rlsweep._compat.torch_without_dynamo), by the time it has trained and closed its env."""
    probe = tmp_path / "probe.jsonl"
    document = small_ppo(
        "probe", tmp_path / "results", budget={"env_steps": 500, "trials": 2},
        env="tests.envs.import_probe:ImportProbe", env_config={"out": str(probe)}, mlflow=None,
    )
    document.pop("search_space", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE_SCRIPT, json.dumps(document)], capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path, start_new_session=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    driver = json.loads(done.stdout.strip().splitlines()[-1])
    # The driver makes the env once before launch (pre-flight); the rest are the trials'.
    trials = [p for p in map(json.loads, probe.read_text().splitlines()) if p["pid"] != driver["pid"]]
    assert trials, "no trial built its env"
    assert driver["modules"] == [] and not any(t["opentelemetry"] for t in trials), (driver, trials)
    closed = [t for t in trials if t["at"] == "closed"]
    # Each trial process closed its env after seeding torch and training with Adam, without torch._dynamo.
    assert {t["pid"] for t in closed} == {t["pid"] for t in trials}, trials
    assert all(t["deterministic"] and t["adam"] for t in closed), closed
    assert not any(t["dynamo"] for t in trials), trials
