"""What a sweep shows while it runs: its totals, the best so far and each running trial, live on a
terminal (checked under a pseudo-terminal), plain lines at a bounded rate elsewhere, and none of Ray's and
Tune's boxes and hints."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

from rlsweep.progress import Display, SweepState
from tests.conftest import REPO, small_ppo


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_state_counts_env_steps_against_what_the_sweep_will_run_and_keeps_the_best():
    clock = Clock()
    state = SweepState("return_mean", "max", budget=1000, trials=3, clock=clock)
    clock.now += 10
    state.result("a", {"env_steps": 500, "return_mean": 20.0, "env_steps_per_s": 50.0}, {"training.lr": 0.001})
    state.result("b", {"env_steps": 250, "return_mean": 30.0}, {"training.lr": 0.003})
    assert (state.done, state.planned) == (750, 3000)
    # 750 env steps in 10 s: 2,250 left take 30 s.
    assert state.eta_s() == pytest.approx(30.0)
    assert state.best == (30.0, "b") and "trial b: training.lr=0.003" in state.best_text()
    # b is stopped by the scheduler at 250: the sweep will never run its other 750 env steps.
    state.ended("b")
    assert state.planned == 2250 and state.counts() == {"running": 1, "finished": 0, "stopped": 1, "errored": 0}
    state.result("a", {"env_steps": 1000, "return_mean": 10.0})
    state.ended("a")
    state.ended("c", error=True)
    assert state.counts() == {"running": 0, "finished": 1, "stopped": 1, "errored": 1}
    assert state.best == (30.0, "b")  # a lower later value does not replace the best
    summary = state.summary()
    assert "env steps 1,250 / 1,250 (100%)" in summary and "1 finished, 1 stopped, 1 errored of 3" in summary


def test_the_held_out_stage_shows_the_leading_entrants_iqm_beside_its_tuning_value_never_one_lucky_run():
    state = SweepState("eval_return_mean", "max", budget=1000, trials=5, tuning_values={"t1": 90.0, "t2": 80.0})
    state.entrant_of.update({"r1": "t1", "r2": "t2", "r3": "t1", "r4": "t1", "r5": "t2"})
    assert state.best_text() == "held-out eval_return_mean: no run finished yet"
    # t2's one run was the luckiest; t1 goes on to more seeds, as the race's survivor does.
    for run, value in (("r1", 10.0), ("r2", 500.0), ("r3", 30.0), ("r4", 20.0)):
        state.result(run, {"env_steps": 1000, "eval_return_mean": value})
        state.ended(run)
    state.result("r5", {"env_steps": 500, "eval_return_mean": 999.0})  # still running: not counted
    assert state.best_text() == ("held-out eval_return_mean so far: 20 (IQM over 3 test seed(s), trial t1; "
                                 "tuning value 90, the search's own: optimistic)")
    assert "held-out eval_return_mean so far: 20" in state.summary()


def test_the_held_out_view_counts_a_failed_run_at_a_known_floor_as_the_stages_answer_does():
    def view(score_range, last=-90.0):
        state = SweepState("eval_return_mean", "max", budget=1000, trials=4, tuning_values={"t1": -80.0},
                           score_range=score_range)
        state.entrant_of.update({"r1": "t1", "r2": "t1", "r3": "t1", "r4": "t1"})
        for run, value in (("r1", -100.0), ("r2", last), ("r3", -120.0)):
            state.result(run, {"env_steps": 1000, "eval_return_mean": value})
            state.ended(run)
        state.result("r4", {"env_steps": 300, "eval_return_mean": -60.0})
        state.ended("r4", error=True)  # failed a third of the way in
        return state.held_out_scores()["t1"]

    # No range: the failed run is left out, as the answer leaves it out.
    assert sorted(view(None)) == [-120.0, -100.0, -90.0]
    # A range: it counts as the lowest score.
    assert sorted(view((-500.0, 0.0))) == [-500.0, -120.0, -100.0, -90.0]
    # A range a finished run broke does not hold for this task: left out again.
    assert sorted(view((-500.0, -95.0))) == [-120.0, -100.0, -90.0]
    # An infinite value is a failed run, as the stage counts it: at the floor, and it does not break the range.
    assert sorted(view((-500.0, 0.0), last=float("-inf"))) == [-500.0, -500.0, -120.0, -100.0]
    assert sorted(view(None, last=float("inf"))) == [-120.0, -100.0]


def test_plain_lines_come_at_most_once_per_interval_and_once_more_at_the_end():
    clock = Clock()
    state = SweepState("return_mean", "max", budget=1000, trials=2, clock=clock)
    out = io.StringIO()
    display = Display(state, "lines", out, interval_s=10.0)
    for step in range(1, 101):  # 100 results over 50 s
        clock.now += 0.5
        state.result("a", {"env_steps": 10 * step, "return_mean": float(step)})
        display.update()
    display.close()
    lines = out.getvalue().splitlines()
    assert 5 <= len(lines) <= 7, lines
    assert lines[-1].startswith("env steps 1,000 / 2,000 (50%)") and "best return_mean 100" in lines[-1]


def _spec_file(tmp_path, trials=2, env_steps=1500):
    document = small_ppo("progress", tmp_path / "results", budget={"env_steps": env_steps, "trials": trials})
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


NOISE = ("Configuration for experiment", "View detailed results here", "tensorboard --logdir",
         "Token authentication is enabled", "All-NaN slice encountered", "Trial status:")


@pytest.mark.slow
def test_a_sweep_on_a_terminal_shows_its_total_the_best_so_far_and_each_running_trial(tmp_path):
    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(
        sys.executable, ["-m", "rlsweep.cli", "run", str(_spec_file(tmp_path)), "--set", "ray.num_cpus=2"],
        cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "160", "TERM": "xterm-256color"},
        encoding="utf-8", timeout=600, dimensions=(50, 160),
    )
    child.expect(pexpect.EOF)
    child.close()
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before)
    assert child.exitstatus == 0, screen[-3000:]
    # The live view: the sweep's total (2 trials x 1,500 env steps), trial counts, the best so far, and a
    # row per running trial with its env steps out of the budget.
    assert re.search(r"env steps .*/ 3,000", screen), screen[-3000:]
    assert re.search(r"trials: \d running, \d finished, \d stopped, \d errored, of 2", screen)
    assert re.search(r"best return_mean -?[\d.]+ \(trial \w+: training\.lr=", screen)
    assert re.search(r"\w+_\d{5}\s+[\d,]+ / 1,500\s+[\d.]+\s+[\d,]+", screen), screen[-3000:]
    assert "2 finished" in screen
    for noise in NOISE:
        assert noise not in screen, noise


@pytest.mark.slow
def test_without_a_terminal_the_progress_is_plain_lines_without_ray_or_tune_noise(tmp_path):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", "run", str(_spec_file(tmp_path, trials=3, env_steps=3000)), "--set", "ray.num_cpus=2"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=900,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    for noise in NOISE:
        assert noise not in output, noise
    summaries = [line for line in done.stdout.splitlines() if line.startswith("env steps ")]
    ended = [line for line in done.stdout.splitlines() if re.match(r"\[\w+\] (finished|stopped) at", line)]
    # At most one summary per 10 s (plus the last), however many results came in; a line per ended trial.
    assert 1 <= len(summaries) <= elapsed / 10 + 2, summaries
    assert summaries[-1].startswith("env steps 9,000 / 9,000 (100%)"), summaries[-1]
    assert len(ended) == 3


def test_results_mode_says_every_result_and_lines_mode_only_a_bounded_summary():
    from types import SimpleNamespace

    import rlsweep
    from rlsweep.progress import tune_callback
    from tests.conftest import TINY_SPEC

    spec = rlsweep.load_spec(TINY_SPEC, preflight=False)
    outputs = {}
    for mode in ("results", "lines"):
        out = io.StringIO()
        callback = tune_callback(spec, mode, stream=out)
        callback.setup()
        trial = SimpleNamespace(trial_id="t1", config={"training.lr": 0.001}, path="/x")
        for steps in (1000, 2000, 3000):
            callback.on_trial_result(0, [], trial, {"env_steps": steps, "return_mean": steps / 100, "iteration_time_s": 0.5})
        callback.on_trial_complete(0, [], trial)
        callback.on_experiment_end([])
        outputs[mode] = out.getvalue().splitlines()
    results = [line for line in outputs["results"] if line.startswith("[t1] env_steps")]
    assert [line.split()[2] for line in results] == ["1000/4000", "2000/4000", "3000/4000"]
    assert not any(line.startswith("[t1] env_steps") for line in outputs["lines"])
    # Lines mode: the first summary, the trial's end, the last summary (all within one 10 s interval).
    assert len(outputs["lines"]) == 3 and outputs["lines"][1] == "[t1] stopped at 3,000 env steps: return_mean 30"


def test_a_resumed_sweep_counts_the_trials_it_restored_and_its_eta_only_the_steps_run_since():
    from types import SimpleNamespace

    import rlsweep
    from rlsweep.progress import tune_callback
    from tests.conftest import TINY_SPEC

    spec = rlsweep.load_spec(TINY_SPEC, preflight=False)  # budget 4000 env steps, 3 trials
    out = io.StringIO()
    callback = tune_callback(spec, "lines", stream=out)
    callback.setup()
    clock = Clock()
    callback.state.clock, callback.state.started = clock, clock.now
    restored = [
        SimpleNamespace(trial_id="done", status="TERMINATED", config={"training.lr": 0.003},
                        last_result={"env_steps": 4000, "return_mean": 50.0}),
        SimpleNamespace(trial_id="half", status="PENDING", config={"training.lr": 0.001},
                        last_result={"env_steps": 2000, "return_mean": 20.0}),
        # Failed before its first result: it will run none of its budget.
        SimpleNamespace(trial_id="broke", status="ERROR", config={"training.lr": 0.01}, last_result={}),
    ]
    callback.on_step_begin(0, restored)
    callback.on_step_begin(1, restored)  # counted once
    state = callback.state
    assert state.counts() == {"running": 1, "finished": 1, "stopped": 0, "errored": 1}
    assert (state.done, state.planned) == (6000, 8000)
    assert "trial done: training.lr=0.003" in state.best_text()
    assert state.eta_s() is None  # nothing run since the resume
    # The unfinished trial goes on from its checkpoint at 1,000 env steps, before its last result (2,000).
    clock.now += 5
    state.result("half", {"env_steps": 1500, "return_mean": 15.0})
    clock.now += 5
    state.result("half", {"env_steps": 3000, "return_mean": 30.0})
    # 1,500 env steps counted in 10 s since the resume (the climb from 1,500 to 3,000): the 1,000 left
    # take 6.7 s. Counting from the restored total would give no ETA at all until the trial passed 2,000.
    assert state.eta_s() == pytest.approx(1000 / 150)


def test_an_unknown_progress_mode_is_refused_before_the_sweep_starts(tmp_path):
    import rlsweep
    from rlsweep.errors import UsageError

    spec = rlsweep.load_spec(small_ppo("bad-progress", tmp_path / "results", budget={"env_steps": 1000, "trials": 1}), preflight=False)
    with pytest.raises(UsageError, match=r"progress must be one of bar, lines, results, none, got 'bars'"):
        rlsweep.run(spec, progress="bars")
    assert not (tmp_path / "results").exists()


def test_the_live_view_reads_the_state_while_results_come_in_on_another_thread():
    """rich draws the live view on its own thread while Tune's thread adds results. Here a result comes in
    exactly while the view walks the trial table (forced: the view pauses inside its walk until the result
    is in, at most 0.5 s). Under the state's lock the result waits for the view to finish; without it the
    view's walk breaks (dictionary changed size during iteration) and the refresh thread dies."""
    import threading

    from rlsweep.progress import TrialState

    state = SweepState("return_mean", "max", budget=1000, trials=10)
    display = Display(state, "none", io.StringIO())
    display._view()  # rich imported before the race
    in_walk, result_in = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    class PausingTrial(TrialState):
        def __getattribute__(self, name):
            if name == "state" and threading.current_thread() is drawer and not in_walk.is_set():
                in_walk.set()
                result_in.wait(0.5)
            return super().__getattribute__(name)

    def draw():
        try:
            display._view()
        except Exception as error:  # noqa: BLE001 -- what rich's refresh thread would die of
            errors.append(error)

    state.result("t0", {"env_steps": 10, "return_mean": 1.0})
    state.by_trial["t0"] = PausingTrial(env_steps=10, value=1.0)
    drawer = threading.Thread(target=draw)
    drawer.start()
    assert in_walk.wait(10), "the view never walked the trial table"
    state.result("t1", {"env_steps": 20, "return_mean": 2.0})
    result_in.set()
    drawer.join(10)
    assert errors == []
    assert set(state.by_trial) == {"t0", "t1"} and state.best == (2.0, "t1")  # the result was kept
