"""What a user sees of a trial that failed, was retried or diverged: one line each (its cause and error file,
no traceback), why each trial ended in ``rlsweep status``, and a diverged config never offered as the best.
The sweep itself is tests/test_reliability.py's (real RLlib); these read hand-written folders and drive the
progress callback as Tune calls it."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlsweep import cli, store
from rlsweep.metrics import DIVERGED
from tests.conftest import TINY_SPEC
from tests.experiments import new_experiment, write_trial

TRACEBACK = """Failure # 1 (occurred at 2026-11-25_10-00-00)
ray::ImplicitFunc.train() (pid=1, ip=127.0.0.1)
  File "/x/_loop.py", line 10, in run
    raise ValueError("flaky env raised on purpose")
ValueError: flaky env raised on purpose
"""


@pytest.fixture
def callback():
    from rlsweep import load_spec
    from rlsweep.progress import tune_callback

    out = io.StringIO()
    progress = tune_callback(load_spec(dict(TINY_SPEC), preflight=False), "none", stream=out)
    progress.setup()
    yield progress, out
    progress.on_experiment_end(trials=[])


def _failed_trial(tmp_path: Path, failures: int, max_failures: int) -> SimpleNamespace:
    (tmp_path / store.ERROR_FILE).write_text(TRACEBACK)
    return SimpleNamespace(trial_id="t1", config={}, path=str(tmp_path), last_result={}, max_failures=max_failures,
                           run_metadata=SimpleNamespace(num_failures=failures))


def test_a_retried_and_then_failed_trial_is_one_line_each_with_its_cause(tmp_path, callback):
    progress, out = callback
    trial = _failed_trial(tmp_path, failures=1, max_failures=2)
    progress.on_trial_recover(iteration=1, trials=[trial], trial=trial)
    trial.run_metadata.num_failures = 3
    progress.on_trial_error(iteration=2, trials=[trial], trial=trial)
    error_file = f"{tmp_path}/{store.ERROR_FILE}"
    assert out.getvalue().splitlines() == [
        f"[t1] failed (ValueError: flaky env raised on purpose); retrying from its latest checkpoint, attempt 2 of 3; see {error_file}",
        f"[t1] FAILED (ValueError: flaky env raised on purpose); see {error_file}",
    ]


def test_a_diverged_trial_is_one_line_even_with_no_progress(tmp_path, callback):
    progress, out = callback
    trial = SimpleNamespace(trial_id="t2", config={}, path=str(tmp_path),
                            last_result={"env_steps": 3000, DIVERGED: "default_policy/total_loss=inf"})
    progress.on_trial_result(iteration=1, trials=[trial], trial=trial, result=trial.last_result)
    progress.on_trial_complete(iteration=1, trials=[trial], trial=trial)
    assert out.getvalue().splitlines() == ["[t2] diverged at 3,000 env steps (default_policy/total_loss=inf)"]


def test_tunes_error_line_with_the_traceback_is_left_out_while_the_view_says_it(callback):
    from rlsweep.progress import TUNE_CONTROLLER

    progress, _ = callback
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    logger = logging.getLogger(TUNE_CONTROLLER)
    handler = Keep()
    logger.addHandler(handler)
    try:
        logger.error("Trial task failed for trial t1", exc_info=ValueError("boom"))
        logger.error("Could not re-use actor for trial t1")  # Tune's other errors still print
        progress.on_experiment_end(trials=[])
        logger.error("Trial task failed for trial t9")  # after the sweep, Tune's logging is as it was
    finally:
        logger.removeHandler(handler)
    assert seen == ["Could not re-use actor for trial t1", "Trial task failed for trial t9"]


def _sweep(root: Path) -> Path:
    new_experiment(root)
    write_trial(root, "aaa", [10, 20, 30, 40], config={"training.lr": 0.01})
    write_trial(root, "bbb", [50, 90], config={"training.lr": 1.0})  # the best scores, then diverges
    rows = (next(root.glob("train_bbb_*")) / store.RESULT_FILE)
    with rows.open("a") as out:
        out.write(json.dumps({"trial_id": "bbb", "env_steps": 3000, "return_mean": 95, DIVERGED: "default_policy/total_loss=inf"}) + "\n")
    write_trial(root, "ccc", [5, 6], config={"training.lr": 0.001}, done=True)  # stopped early
    state = {"trial_data": [[json.dumps({"trial_id": t, "status": "TERMINATED"}), json.dumps({"num_failures": 0})]
                            for t in ("aaa", "bbb", "ccc")]}
    (root / "experiment_state-2026-01-01_00-00-00.json").write_text(json.dumps(state))
    return root


def test_status_says_why_each_trial_ended_and_best_passes_over_a_diverged_config(tmp_path, capsys):
    root = _sweep(tmp_path / "exp")
    assert cli.main(["status", str(root), "--json"]) == 0
    rows = {r["trial_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert {t: (r["attempts"], r["ended"]) for t, r in rows.items()} == {
        "aaa": (1, "budget"),
        "bbb": (1, "diverged at 3000 env steps (default_policy/total_loss=inf)"),
        "ccc": (1, "stopped early by the scheduler"),
    }
    assert cli.main(["best", str(root), "--rule", "max", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trial_id"] == "aaa"


def test_a_run_whose_every_trial_diverged_says_so_not_that_none_reported(tmp_path, capsys):
    import rlsweep
    from rlsweep.api import _finish
    from tests.conftest import TINY_SPEC

    root = new_experiment(tmp_path / "exp", {**TINY_SPEC, "mlflow": None})
    write_trial(root, "bbb", [50, 90], config={"training.lr": 1.0})
    with (next(root.glob("train_bbb_*")) / store.RESULT_FILE).open("a") as out:
        out.write(json.dumps({"trial_id": "bbb", "env_steps": 3000, "return_mean": 95, DIVERGED: "default_policy/total_loss=inf"}) + "\n")
    result = _finish(rlsweep.load_spec({**TINY_SPEC, "mlflow": None}, preflight=False), root, 0)
    assert result.best is None
    assert result.no_best == "no trial that reported 'return_mean' is a candidate for the best: bbb diverged"
    assert cli._report(result, None) == cli.EXIT_ERROR
    assert capsys.readouterr().err.startswith("no answer: no trial that reported 'return_mean' is a candidate for the best: bbb diverged")


def test_optuna_is_told_a_diverged_trial_as_pruned_and_each_step_once(recwarn):
    import optuna

    from rlsweep.search_spaces._optuna_search import TrialAwareOptunaSearch

    searcher = TrialAwareOptunaSearch(space={"lr": optuna.distributions.FloatDistribution(1e-5, 1.0, log=True)},
                                      metric="return_mean", mode="max", seed=0)
    for trial_id in ("ok", "nan"):
        searcher.suggest(trial_id)
        searcher.on_trial_result(trial_id, {"return_mean": 10.0, "training_iteration": 1})
        searcher.on_trial_result(trial_id, {"return_mean": 20.0, "training_iteration": 2})
        # Restored from its checkpoint at iteration 1 (a retry): iteration 2 comes again.
        searcher.on_trial_result(trial_id, {"return_mean": 25.0, "training_iteration": 2})
    searcher.on_trial_complete("ok", {"return_mean": 30.0, "training_iteration": 3})
    searcher.on_trial_result("nan", {"return_mean": 99.0, "training_iteration": 3, DIVERGED: "p/total_loss=nan"})
    searcher.on_trial_complete("nan", {"return_mean": 99.0, "training_iteration": 3, DIVERGED: "p/total_loss=nan"})
    done = {t.number: t for t in searcher._ot_study.get_trials()}
    assert (done[0].state, done[0].value, done[0].intermediate_values) == (optuna.trial.TrialState.COMPLETE, 30.0, {1: 10.0, 2: 20.0})
    assert (done[1].state, done[1].value, done[1].intermediate_values) == (optuna.trial.TrialState.PRUNED, 20.0, {1: 10.0, 2: 20.0})
    assert [str(w.message) for w in recwarn if "already reported" in str(w.message)] == []


def test_without_tunes_state_a_diverged_trial_reads_as_ended_not_running(tmp_path):
    # Tune's experiment state is written now and then; read before it lists the trial, the diverged row
    # itself says the trial ended (else resume would take it for unfinished).
    from rlsweep.analysis import load

    root = _sweep(tmp_path / "exp")
    next(root.glob("experiment_state-*")).unlink()
    sweep = load(root)
    assert {t.trial_id: t.state for t in sweep.trials}["bbb"] == store.TERMINATED
    assert "bbb" not in sweep.unfinished()


def test_a_held_out_seed_that_diverged_is_missing_not_scored():
    from rlsweep.analysis._confirm import ConfirmationPlan, scores_from

    def trial(seed, rows):
        return store.Trial(trial_id=f"t{seed}", path=Path("/x"), config={store.CANDIDATE_KEY: "aaa", store.TEST_SEED_KEY: seed},
                           rows=tuple(rows), state=store.TERMINATED)

    evaluated = {"env_steps": 2000, "eval_return_mean": 80.0}
    diverged = {"env_steps": 4000, DIVERGED: "p/total_loss=nan"}  # its last row reaches the budget
    plan = ConfirmationPlan(candidates=("aaa",), configs={"aaa": {}}, tuning_values={"aaa": 1.0}, tuning_seeds={"aaa": [0]},
                            test_seeds=(1, 2), rule="last", metric="return_mean", episodes=5)
    scores, missing = scores_from([trial(1, [evaluated, {**evaluated, "env_steps": 4000}]), trial(2, [evaluated, diverged])], plan, 4000)
    assert scores == {"aaa": {1: 80.0}}
    assert missing == {"aaa": ["seed 2: diverged at 4000 env steps (p/total_loss=nan)"]}
