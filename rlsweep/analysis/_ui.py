"""``rlsweep ui``: the MLflow UI for a sweep's store, on 127.0.0.1 only."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from rlsweep.errors import SweepError

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def artifacts_dir(tracking_uri: str) -> Path:
    """Where a server started for a local store keeps uploaded artifacts: beside the store."""
    if tracking_uri.startswith("sqlite:///"):
        return Path(tracking_uri.removeprefix("sqlite:///")).expanduser().resolve().parent / "mlartifacts"
    return Path("mlartifacts").resolve()


def start_server(tracking_uri: str, port: int | None = None, timeout_s: float = 120.0) -> tuple[subprocess.Popen, str]:
    """Start ``mlflow server`` for ``tracking_uri`` bound to 127.0.0.1; returns the process and its URL
    once it answers ``/health``. The caller ends the process."""
    port = port or free_port()
    command = [
        sys.executable, "-m", "mlflow", "server",
        "--host", HOST, "--port", str(port),
        "--backend-store-uri", tracking_uri,
        "--artifacts-destination", str(artifacts_dir(tracking_uri)),
        "--workers", "1",
    ]
    # The server's own process group, so stopping it ends its workers too; MLflow's job runner (huey
    # consumers for GenAI jobs) is not needed to browse a sweep and would outlive a stopped server.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": os.environ.get("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")}
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    url = f"http://{HOST}:{port}"
    try:
        _wait_until_healthy(process, url, timeout_s)
    except BaseException:
        # Not answering, exited, or the caller interrupted (Ctrl-C, SIGTERM): leave nothing running.
        stop_server(process)
        raise
    return process, url


def _wait_until_healthy(process: subprocess.Popen, url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            detail = (process.stderr.read() or "").strip().splitlines()
            raise SweepError(f"mlflow server exited with {process.returncode}: {detail[-1] if detail else 'no output'}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SweepError(f"mlflow server did not answer on {url} within {timeout_s:.0f} s")


def stop_server(process: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """End a server from :func:`start_server` and every process it started."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=timeout_s)
            return
        except subprocess.TimeoutExpired:
            continue


def experiment_url(url: str, tracking_uri: str, experiment: str | None) -> str:
    """The runs page of ``experiment`` (MLflow 3 opens an experiment on its GenAI overview otherwise)."""
    if experiment is None:
        return url
    from mlflow import MlflowClient

    found = MlflowClient(tracking_uri=tracking_uri).get_experiment_by_name(experiment)
    return f"{url}/#/experiments/{found.experiment_id}/runs" if found is not None else url
