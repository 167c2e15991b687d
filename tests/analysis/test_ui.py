"""``rlsweep ui`` as a process: it binds 127.0.0.1 only, and stopping it (SIGTERM, also while its MLflow
server is still starting) leaves no server or worker running and the port free."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlsweep.analysis._ui import free_port
from tests.conftest import REPO


def _children(pid: int) -> set[int]:
    """Every descendant of ``pid`` now (from /proc)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = {int(k) for k in (task / "children").read_text().split()}
            except OSError:
                continue
            todo += list(kids - found)
            found |= kids
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _listeners(port: int) -> set[str]:
    """The local addresses listening on TCP ``port`` (IPv4 and IPv6), from /proc/net."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add("127.0.0.1" if address == "0100007F" else address)
    return found


def _start(tmp_path: Path, port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rlsweep.cli", "ui", "--tracking-uri", f"sqlite:///{tmp_path / 'store.db'}", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _wait_for(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def _sigterm_leaves_nothing(ui: subprocess.Popen, server: set[int], port: int, exit_code: int) -> None:
    ui.send_signal(signal.SIGTERM)
    assert ui.wait(timeout=60) == exit_code
    assert _wait_for(lambda: not any(_alive(p) for p in server), 30), "the MLflow server outlived rlsweep ui"
    assert not _listeners(port)


@pytest.mark.slow
def test_ui_binds_loopback_only_and_sigterm_ends_its_server(tmp_path):
    port = free_port()
    ui = _start(tmp_path, port)
    try:
        line = ""
        while "MLflow UI" not in line:
            line = ui.stdout.readline()
            assert line or ui.poll() is None, "rlsweep ui exited before printing its address"
        assert f"http://127.0.0.1:{port}" in line
        assert _listeners(port) == {"127.0.0.1"}
        server = _children(ui.pid)
        assert server, "no server process under rlsweep ui"
        _sigterm_leaves_nothing(ui, server, port, exit_code=0)
    finally:
        if ui.poll() is None:
            ui.kill()


@pytest.mark.slow
def test_sigterm_while_the_server_starts_leaves_nothing_running(tmp_path):
    port = free_port()
    ui = _start(tmp_path, port)
    try:
        # The server is started but not yet answering: a user gives up on it.
        assert _wait_for(lambda: bool(_children(ui.pid)), 60)
        server = _children(ui.pid)
        assert not _listeners(port)
        _sigterm_leaves_nothing(ui, server, port, exit_code=1)  # interrupted before it could serve
    finally:
        if ui.poll() is None:
            ui.kill()


def test_a_port_out_of_range_is_a_usage_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", "ui", "--tracking-uri", f"sqlite:///{tmp_path / 's.db'}", "--port", "99999"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120,
    )
    assert done.returncode == 2 and "--port" in done.stderr and "Traceback" not in done.stderr
