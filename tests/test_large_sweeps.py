"""What validate says of a sweep of thousands of trials: which searchers keep up (benchmarks/suggest_latency.py);
and what the driver of such a sweep gives back (benchmarks/scale.py --replay)."""

from __future__ import annotations

import copy

import pytest
import yaml

from rlsweep.cli import main
from tests.conftest import TINY_SPEC


def _validate_says(tmp_path, capsys, prefix: str, **changes) -> list[str]:
    """The lines starting with ``prefix`` that `rlsweep validate` prints for TINY_SPEC with ``changes``."""
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({**copy.deepcopy(TINY_SPEC), "scheduler": "fifo", **changes}))
    assert main(["validate", str(path), "--no-memory-check"]) == 0
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith(prefix)]


@pytest.mark.parametrize(("searcher", "trials", "said"), [
    ("optuna", 5_000, "searcher: optuna's tpe sampler takes longer per suggestion as trials accumulate"),
    ({"name": "optuna", "sampler": "qmc"}, 10_000, None),
    ("random", 10_000, None),
    ("hyperopt", 6_000, "searcher: hyperopt takes longer per suggestion"),
    ("nevergrad", 6_000, "searcher: nevergrad holds every trial in the driver's memory"),
    ("optuna", 4_999, None),
])
def test_validate_names_a_searcher_that_keeps_up_where_a_large_sweeps_would_not(tmp_path, capsys, searcher, trials, said):
    lines = _validate_says(tmp_path, capsys, "searcher:", searcher=searcher, budget={"env_steps": 1000, "trials": trials})
    if said is None:
        assert lines == []
    else:
        assert len(lines) == 1 and lines[0].startswith(said), lines
        assert lines[0].endswith(f"for {trials:,} trials, searcher random, or optuna with sampler: qmc, keep each suggestion under 5 ms")


@pytest.mark.parametrize(("checkpoint", "trials", "said"), [
    # The defaults: 10 checkpoints a trial, keep 2 -> a forced save of Tune's state every 2 of any trial's.
    ({}, 1_000, "checkpoint: each trial checkpoints about 10 time(s) and Ray Tune saves its whole experiment state "
                "(every trial's entry) each time a trial has made checkpoint.keep (2) more: about 5,000 saves over 1,000 "
                "trials, each longer as trials accumulate (one a trial took the driver from 108 to 527 ms of CPU a trial "
                "over 1,000 trials); checkpoint.every_env_steps: 1000 (one checkpoint, at the budget) or "
                "checkpoint.keep: 11 avoids them"),
    ({}, 999, None),
    ({"every_env_steps": 1000}, 10_000, None),  # one checkpoint a trial, fewer than keep
    ({"keep": 11}, 10_000, None),
    ({"every_env_steps": 500, "keep": 1}, 2_000, "checkpoint: each trial checkpoints about 2 time(s)"),
    ({"every_env_steps": 500}, 2_000, "checkpoint: each trial checkpoints about 2 time(s)"),  # as many as it keeps
    ({"keep": 10}, 2_000, "checkpoint: each trial checkpoints about 10 time(s)"),
])
def test_validate_says_what_tunes_forced_state_saves_cost_a_large_sweep_and_what_to_set(tmp_path, capsys, checkpoint, trials, said):
    lines = _validate_says(tmp_path, capsys, "checkpoint:", searcher="random", checkpoint=checkpoint,
                           budget={"env_steps": 1000, "trials": trials})
    if said is None:
        assert lines == []
    else:
        assert len(lines) == 1 and lines[0].startswith(said), lines


def test_status_of_hundreds_of_trials_shows_the_best_and_the_unfinished_and_says_how_to_see_the_rest(tmp_path, capsys):
    """Tune's own progress table stops at 20 rows; a status of thousands of lines scrolls the answer away."""
    import json

    from rlsweep.cli import STATUS_BEST, STATUS_ROWS
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    count = STATUS_ROWS + 50
    for index in range(count):
        # Trial 7 is the best; every 40th has one row and no final one (it still runs).
        returns = [index % 97, 1000.0 if index == 7 else index % 97]
        write_trial(root, f"{index:05d}_00000", returns[:1] if index % 40 == 0 else returns,
                    config={"training.lr": 1e-3}, done=index % 40 != 0)
    assert main(["status", str(root)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line[:11].strip().endswith("_00000")]
    running = [f"{i:05d}_00000" for i in range(0, count, 40)]
    # The best first, by their best value, then the trials still running; a line says what is left out.
    assert [r[0] for r in rows[:3]] == ["00007_00000", "00096_00000", "00193_00000"]
    assert [r[0] for r in rows[STATUS_BEST:]] == running and all(r[1] == "RUNNING" for r in rows[STATUS_BEST:])
    assert all(r[1] == "TERMINATED" for r in rows[:STATUS_BEST])
    assert f"{count} trials {count - len(running)} TERMINATED, {len(running)} RUNNING" in out
    assert f"... and {count - len(rows):,} more trial(s) not shown: `rlsweep status --json` lists every trial" in out
    assert "best trial:  00007_00000" in out
    assert main(["status", str(root), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == count


def _resident_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_the_sweeps_driver_hands_back_the_heap_memory_it_freed_and_a_resumed_sweep_finds_the_callback():
    import subprocess
    import sys

    from rlsweep import runtime
    from rlsweep import load_spec
    from rlsweep.sweep import _logger_callbacks

    if not sys.platform.startswith("linux") or runtime._malloc_trim() is None:
        pytest.skip("the C library has no malloc_trim")
    (callback,) = [c for c in _logger_callbacks(load_spec(copy.deepcopy(TINY_SPEC))) if type(c).__name__ == "ReturnFreedMemory"]
    # As an experiment-state save leaves the heap: 64 MB built in pieces and freed, one piece still held above them.
    pieces = [bytearray(64 * 1024) for _ in range(1024)]
    held = pieces[-1]
    del pieces
    callback.every_s, callback.last = 3600.0, float("-inf")
    callback.on_step_end(iteration=1, trials=[])  # due: the first step after the period
    callback.on_step_end(iteration=2, trials=[])  # not due again for an hour
    before = _resident_mb()
    pieces = [bytearray(64 * 1024) for _ in range(1024)]
    held = pieces[-1]
    del pieces
    kept = _resident_mb()
    callback.on_step_end(iteration=3, trials=[])
    assert _resident_mb() > kept - 16, "handed back before its period was up"
    callback.last = float("-inf")
    callback.on_step_end(iteration=4, trials=[])
    assert kept - before > 48 and _resident_mb() < kept - 48, (before, kept, _resident_mb())
    # A resumed sweep's callback, pickled on a machine whose clock read more (it had been up longer).
    pieces = [bytearray(64 * 1024) for _ in range(1024)]
    held = pieces[-1]
    del pieces
    kept = _resident_mb()
    callback.last = 1e12
    callback.on_step_end(iteration=5, trials=[])
    assert _resident_mb() < kept - 48, "a clock reading from another boot stopped it"
    assert len(held) == 64 * 1024
    # rlsweep resume unpickles the sweep's callbacks in a process that has not made the class yet.
    done = subprocess.run([sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
                          input=__import__("pickle").dumps(callback), capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
