"""The sweep stage's contact with Ray before any trial: joining a cluster that is not there fails in seconds
with the address named (Ray itself retries for minutes)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from rlsweep.analysis._ui import free_port
from tests.conftest import REPO, TINY_SPEC


@pytest.mark.parametrize("address", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}", "nonsense"])
def test_run_with_an_address_where_nothing_answers_exits_2_at_once(tmp_path, address):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({**TINY_SPEC, "storage": str(tmp_path / "results"), "mlflow": None}))
    address = address.format(port=free_port())  # a free port: nothing listens there
    done = subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", "run", str(spec), "--address", address],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert address in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "results").exists()  # nothing was started, nothing written


@pytest.mark.slow
def test_a_metric_key_the_algorithm_does_not_report_ends_the_sweep_as_a_spec_error(tmp_path):
    """It can only be known from the first result (a key one typo from RLlib's own is refused at validate:
    tests/trainables/test_preflight.py); it is the spec's error (exit 2), not a trial failure to retry on every
    trial. Here RLlib's old name, episode_reward_mean."""
    spec = tmp_path / "spec.yaml"
    document = {**TINY_SPEC, "storage": str(tmp_path / "results"), "mlflow": None, "scheduler": "fifo",
                "budget": {"env_steps": 2000, "trials": 4, "max_concurrent": 1}, "failure": {"max_retries": 2},
                "metric": {"name": "rllib/env_runners/episode_reward_mean", "mode": "max"}}
    spec.write_text(yaml.safe_dump(document))
    done = subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", "run", str(spec), "--quiet", "--set", "ray.num_cpus=2"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600, start_new_session=True,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "metric.name: 'rllib/env_runners/episode_reward_mean' is not in PPO's results" in done.stderr
    assert "rllib/env_runners/episode_return_mean" in done.stderr  # the close match
    trials = list((tmp_path / "results" / "tiny").glob("train_*"))
    assert 1 <= len(trials) < 4, "the sweep went on after the first trial found the spec wrong"
    assert not any((t / "error.txt").exists() for t in trials), "a spec error was retried as a trial failure"


def test_a_write_that_finds_the_disk_full_is_one_error_naming_the_folder_and_what_was_kept(tmp_path):
    """The sweep stage's net for a full disk: ENOSPC raised anywhere inside (a chained one too, as Tune wraps
    it) becomes one SweepError that names the experiment folder, the file and what was kept; any other error
    passes through unchanged while the disk has room."""
    import errno

    from rlsweep import sweep
    from rlsweep.errors import SweepError

    root = tmp_path / "results" / "full"
    (root / "train_00000").mkdir(parents=True)
    (root / "train_00000" / "result.json").write_text('{"a": 1}\n{"a": 2}\n')
    with pytest.raises(SweepError) as caught, sweep._one_line_when_full(root):
        try:
            raise OSError(errno.ENOSPC, "No space left on device", str(root / "tuner.pkl"))
        except OSError as exc:
            raise RuntimeError("Tune's wrapper") from exc
    said = str(caught.value)
    assert said.startswith(f"the disk of {root.parent} is full (No space left on device writing {root / 'tuner.pkl'})")
    assert f"Kept: {root} holds 1 trial folder(s) with 2 result row(s) and no Tune experiment state" in said
    assert "run the sweep again" in said
    with pytest.raises(ValueError, match="not a disk"), sweep._one_line_when_full(root):
        raise ValueError("not a disk")


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs (root only)")
@pytest.mark.parametrize("size", ["4k", "300k"], ids=["before the first trial", "while trials write"])
def test_run_on_a_disk_that_fills_up_ends_in_one_line_naming_the_folder_and_what_was_kept(tmp_path, size):
    """A full disk at the sweep's first writes (4k: its spec copy and rlsweep.json fill the disk) and at
    Tune's and the trials' (300k: Tune's state, the trials' rows and checkpoints): exit 1, one ``error:`` line
    naming the folder and what was kept, no traceback (Tune's included)."""
    storage = tmp_path / "full"
    storage.mkdir()
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({**TINY_SPEC, "storage": str(storage), "mlflow": None, "scheduler": "fifo",
                                    "budget": {"env_steps": 1000, "trials": 2}, "failure": {"max_retries": 0}}))
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(storage)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "rlsweep.cli", "run", str(spec), "--progress", "lines", "--set", "ray.num_cpus=2"],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600, start_new_session=True,
        )
        kept = sorted(p.name for p in (storage / "tiny").iterdir()) if (storage / "tiny").is_dir() else []
    finally:
        subprocess.run(["umount", "-l", str(storage)], check=False)
    assert done.returncode == 1, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith(f"error: the disk of {storage} is full (No space left on device"), error
    assert f"Kept: {storage / 'tiny'} holds" in error, error
    assert "rlsweep_spec.yaml" in kept or size == "4k", kept
