"""A real MLflow server on 127.0.0.1 (started by ``rlsweep ui``), a real small sweep exported over HTTP
twice, and the MLflow UI opened in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from mlflow import MlflowClient

import rlsweep
from rlsweep.analysis import load
from rlsweep.analysis._plots import PLOTS
from rlsweep.analysis._ui import free_port
from tests.conftest import small_ppo

pytestmark = pytest.mark.slow

EXPERIMENT = "over-http"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, ray_runtime):
    root = tmp_path_factory.mktemp("http")
    spec = rlsweep.load_spec(
        small_ppo(
            "http-sweep",
            root / "results",
            search_space={"training.lr": {"loguniform": [1.0e-4, 3.0e-3]}, "training.gamma": {"uniform": [0.95, 0.99]}},
            scheduler={"name": "asha", "grace_env_steps": 1000, "reduction_factor": 2},
            budget={"env_steps": 2000, "trials": 3},
            checkpoint={"every_env_steps": 1000},
        )
    )
    return load(rlsweep.run(spec, verbose=0).path)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from ui_server(tmp_path_factory)


def ui_server(tmp_path_factory):
    """``rlsweep ui`` on a fresh SQLite store and a free port, yielding its URL; ended by its process group
    at the end."""
    root = tmp_path_factory.mktemp("server")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "rlsweep.cli", "ui", "--tracking-uri", f"sqlite:///{root / 'store.db'}", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        line = ""
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and "MLflow UI" not in line:
            line = process.stdout.readline()
            assert line or process.poll() is None, "rlsweep ui exited before printing its address"
        url = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert url is not None, f"no address in {line!r}"
        assert url.group(0) == f"http://127.0.0.1:{port}"
        yield url.group(0)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


def _runs(client, experiment_id):
    return client.search_runs([experiment_id], max_results=1000)


def test_export_over_http_is_complete_once_after_exporting_twice(sweep, server):
    first_id = sweep.to_mlflow(tracking_uri=server, experiment=EXPERIMENT)
    client = MlflowClient(tracking_uri=server)
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    before = {r.info.run_id for r in _runs(client, experiment_id)}
    assert sweep.to_mlflow(tracking_uri=server, experiment=EXPERIMENT) == first_id
    runs = _runs(client, experiment_id)
    assert {r.info.run_id for r in runs} == before

    parents = [r for r in runs if r.data.tags.get("rlsweep.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("rlsweep.kind") == "trial"]
    assert len(parents) == 1 and parents[0].info.run_id == first_id
    assert sorted(c.data.tags["rlsweep.trial_id"] for c in children) == sorted(t.trial_id for t in sweep.trials)
    parent = parents[0]
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["rlsweep.scheduler"] == "asha" and parent.data.tags["rlsweep.searcher"] == "random"
    assert parent.data.metrics["trials"] == 3

    by_id = {t.trial_id: t for t in sweep.trials}
    for child in children:
        trial = by_id[child.data.tags["rlsweep.trial_id"]]
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert child.info.status == "FINISHED"
        # Its params are its draw; every other setting it ran with is a tag.
        assert set(child.data.params) == set(trial.config)
        assert child.data.tags["rlsweep.setting.reporting.min_sample_timesteps_per_iteration"] == "0"
        for metric in ("return_mean", "learn_time_s", "hp/training.lr"):
            history = client.get_metric_history(child.info.run_id, metric)
            # Once each: the second export added no point.
            assert [m.step for m in history] == [r["env_steps"] for r in trial.rows], metric
        assert client.get_metric_history(child.info.run_id, "hp/training.lr")[0].value == pytest.approx(
            trial.config["training.lr"]
        )

    artifacts = {a.path for a in client.list_artifacts(first_id)}
    assert {"spec.yaml", "best_config.yaml", "plots", "best_checkpoint"} <= artifacts
    assert {Path(a.path).name for a in client.list_artifacts(first_id, "plots")} == set(PLOTS)
    checkpoint_files = {Path(a.path).name for a in client.list_artifacts(first_id, "best_checkpoint")}
    assert "rlsweep_checkpoint.json" in checkpoint_files and "learner_group" in checkpoint_files
    assert parent.data.tags["rlsweep.best_checkpoint"] == str(sweep.best().checkpoint)


def _chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert binary and driver, "Debian's chromium and chromium-driver are needed (scripts/test installs them)"
    options = Options()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1600,1000"):
        options.add_argument(argument)
    options.binary_location = binary
    return webdriver.Chrome(service=Service(driver), options=options)


def screenshot(browser, shot: Path) -> None:
    """Save what the browser shows under the test's output (and in ``RLSWEEP_SCREENSHOT_DIR`` if set)."""
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    for target in filter(None, [os.environ.get("RLSWEEP_SCREENSHOT_DIR")]):
        shutil.copy(shot, Path(target) / shot.name)


def test_the_mlflow_ui_shows_the_sweep_and_its_trials(sweep, server, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    sweep.to_mlflow(tracking_uri=server, experiment=EXPERIMENT)
    experiment_id = MlflowClient(tracking_uri=server).get_experiment_by_name(EXPERIMENT).experiment_id
    browser = _chromium()
    try:
        browser.get(f"{server}/#/experiments/{experiment_id}/runs")
        body = lambda b: b.find_element(By.TAG_NAME, "body").text  # noqa: E731
        WebDriverWait(browser, 90).until(lambda b: sweep.spec.name in body(b))
        # The trials are nested under the sweep's run: expand it.
        expanders = browser.find_elements(By.CSS_SELECTOR, "button[data-component-id*='runnamecellrenderer']")
        assert expanders, "no expander next to the parent run"
        expanders[0].click()
        WebDriverWait(browser, 60).until(lambda b: all(t.trial_id in body(b) for t in sweep.trials))
        screenshot(browser, tmp_path / "mlflow_ui.png")
    finally:
        browser.quit()


def _compare_page(server: str, experiment_id: str, run_ids: list[str]) -> str:
    """MLflow's compare-runs page for ``run_ids``: where the runs table's Compare button leads."""
    query = urllib.parse.urlencode({"runs": json.dumps(run_ids), "experiments": json.dumps([experiment_id])})
    return f"{server}/#/compare-runs?{query}"


def test_mlflow_compares_the_trials_by_the_searched_params_and_the_metric(sweep, server, tmp_path):
    """MLflow's run comparison of the sweep's child runs: the parallel coordinates plot shows the searched
    params against the sweep's metric as they are, and the contour plot plots them against each other."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    sweep.to_mlflow(tracking_uri=server, experiment=EXPERIMENT)
    client = MlflowClient(tracking_uri=server)
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    children = client.search_runs([experiment_id], "tags.`rlsweep.kind` = 'trial'")
    searched, metric = sorted(sweep.spec.search_space.paths), sweep.spec.metric.name
    assert searched == ["training.gamma", "training.lr"]

    browser = _chromium()
    try:
        browser.get(_compare_page(server, experiment_id, [r.info.run_id for r in children]))
        axes = lambda b: [e.text for e in b.find_elements(By.CSS_SELECTOR, ".pcp-plot .axis-title")]  # noqa: E731
        # The plot is drawn as soon as the runs arrive; its axes are the params and metric MLflow pre-selects.
        WebDriverWait(browser, 90).until(lambda b: metric in axes(b))
        assert axes(browser) == [*searched, metric]
        # Each searched param's axis spans the trials' draws as numbers (not categories of strings).
        for path in searched:
            values = [t.config[path] for t in sweep.trials]
            ticks = browser.execute_script(
                "return Array.from(document.querySelectorAll('.pcp-plot .y-axis')).filter("
                "a => a.querySelector('.axis-title').textContent === arguments[0]).map("
                "a => Array.from(a.querySelectorAll('.axis-extent-top, .axis-extent-bottom')).map(t => t.textContent))[0]",
                path,
            )
            assert sorted(float(t) for t in ticks) == pytest.approx([min(values), max(values)], abs=1e-5), (path, ticks)
        shot = tmp_path / "mlflow_compare_parallel.png"
        screenshot(browser, shot)
        print(f"screenshot: {shot}")

        # The contour plot's axes: the first two numeric params by name, so the searched ones; the metric
        # is chosen as Z (MLflow's default Z is the first metric by name).
        browser.find_element(By.XPATH, "//button[@role='tab' and normalize-space()='Contour Plot']").click()
        selector = lambda axis: browser.find_element(By.ID, f"{axis}axis-selector")  # noqa: E731
        WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.ID, "zaxis-selector"))
        assert [selector(a).get_attribute("value") for a in "xy"] == [f"param-{p}" for p in searched]
        selector("z").click()
        options = WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "[role='option']"))
        assert [o.text for o in options if o.text in searched] == searched
        next(o for o in options if o.text == metric).click()
        WebDriverWait(browser, 30).until(lambda b: selector("z").get_attribute("value") == f"metric-{metric}")
        # A contour is drawn: X and Y each have distinct values over the trials.
        WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "[role='tabpanel'] .js-plotly-plot .contour"))
        assert "enough unique data points" not in browser.find_element(By.TAG_NAME, "body").text
        shot = tmp_path / "mlflow_compare_contour.png"
        screenshot(browser, shot)
        print(f"screenshot: {shot}")
    finally:
        browser.quit()


# --- a server that stops answering part-way: paused, or killed and started again ----------------------------


def _export_beside(tmp_path: Path, url: str, trials: int = 2, rows: int = 1000):
    """``rlsweep export`` of a hand-written sweep (rows of 20 metrics, 20 ``log_batch`` calls a trial) to
    ``url`` in a process of its own, its stderr lines read as they come; returns (process, lines, root)."""
    import queue
    import threading

    from tests.analysis.test_mlflow import _large

    root = _large(tmp_path / "exp", trials=trials, rows=rows)
    process = subprocess.Popen(
        [sys.executable, "-m", "rlsweep.cli", "export", str(root), "--tracking-uri", url, "--experiment", "patient"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
    return process, lines, root


def _when_logging(url: str, process: subprocess.Popen, rows: int) -> None:
    """Return once the export has logged some rows of its first trial, not all (polling the server)."""
    client = MlflowClient(tracking_uri=url)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        experiment = client.get_experiment_by_name("patient")
        if experiment is not None:
            counts = [int(r.data.tags.get("rlsweep.rows_exported", 0))
                      for r in client.search_runs([experiment.experiment_id], "tags.`rlsweep.kind` = 'trial'")]
            if any(0 < n < rows for n in counts):
                return
        time.sleep(0.05)
    raise AssertionError(f"the export did not start logging rows (exit {process.poll()})")


def _said(lines, text: str, timeout_s: float = 90) -> list[str]:
    """The export's stderr lines up to the first that holds ``text`` (fails if none does in time)."""
    import queue

    seen, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            seen.append(lines.get(timeout=1))
        except queue.Empty:
            continue
        if text in seen[-1]:
            return seen
    raise AssertionError(f"the export never said {text!r}: {seen}")


def _complete_once(url: str, trials: int, rows: int) -> None:
    client = MlflowClient(tracking_uri=url)
    experiment = client.get_experiment_by_name("patient").experiment_id
    runs = client.search_runs([experiment], max_results=100)
    assert sorted(r.data.tags["rlsweep.kind"] for r in runs) == ["sweep"] + ["trial"] * trials
    assert {r.info.status for r in runs} == {"FINISHED"}
    for run in (r for r in runs if r.data.tags["rlsweep.kind"] == "trial"):
        assert run.data.tags["rlsweep.rows_exported"] == str(rows)
        steps = [m.step for m in client.get_metric_history(run.info.run_id, "return_mean")]
        assert sorted(steps) == [1000 * (i + 1) for i in range(rows)]  # every row once


def test_an_export_rides_out_a_paused_server(tmp_path):
    from rlsweep.analysis._ui import start_server, stop_server

    process, url = start_server(f"sqlite:///{tmp_path / 'server.db'}")
    try:
        export, lines, _ = _export_beside(tmp_path, url)
        _when_logging(url, export, 1000)
        os.killpg(process.pid, signal.SIGSTOP)
        try:
            # A request is out to the stopped server: the export says it waits for an answer.
            _said(lines, "for the MLflow server to answer")
        finally:
            os.killpg(process.pid, signal.SIGCONT)
        assert export.wait(timeout=300) == 0, export.stdout.read()
        _complete_once(url, 2, 1000)
    finally:
        os.killpg(process.pid, signal.SIGCONT)
        stop_server(process)


def test_an_export_rides_out_a_server_killed_and_started_again(tmp_path):
    from rlsweep.analysis._ui import start_server, stop_server

    backend = f"sqlite:///{tmp_path / 'server.db'}"
    process, url = start_server(backend)
    try:
        export, lines, _ = _export_beside(tmp_path, url)
        _when_logging(url, export, 1000)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        said = _said(lines, "does not answer (")
        assert "waiting up to 300 s for it" in said[-1], said
        process, _ = start_server(backend, int(url.rsplit(":", 1)[1]))
        said += _said(lines, "answers again")
        assert export.wait(timeout=300) == 0, said
        assert "Traceback" not in "".join(said)
        # One line of rlsweep's own (not MLflow's "View run ... / View experiment ..." for each run it ended).
        out = export.stdout.read().splitlines()
        assert len(out) == 1 and out[0].startswith("exported 2 trials: parent run ") and "`rlsweep ui " in out[0], out
        _complete_once(url, 2, 1000)
    finally:
        stop_server(process)
