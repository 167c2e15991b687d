"""Every searcher x scheduler pairing against the pairing rules of docs/guides/schedulers.md: the allowed ones validate and run a
real tiny RLlib sweep, the forbidden ones fail validation with a message that says how to fix the spec;
and ASHA, the median rule and HyperBand really stop (or pause) a trial that trails."""

from __future__ import annotations

import copy
import itertools
import math

import pytest

import rlsweep
from rlsweep import SpecError
from rlsweep.analysis import load
from rlsweep.schedulers import SCHEDULERS, SEARCHERS
from tests.conftest import TINY_SPEC, small_ppo

# docs/guides/schedulers.md, pairing rules, written out as a matrix (rows: searcher; columns: scheduler).
#   ok  allowed
#   B   "scheduler `bohb` needs searcher `bohb`"
#   b   "searcher `bohb` needs scheduler `bohb`"
#   P   "`pbt`/`pb2` run only with searcher `random`"
# A cell may break two rules (bohb beside pbt): both must be reported.
MATRIX = """
            fifo   asha   hyperband  median  pbt    pb2    bohb
random      ok     ok     ok         ok      ok     ok     B
grid        ok     ok     ok         ok      P      P      B
optuna      ok     ok     ok         ok      P      P      B
hyperopt    ok     ok     ok         ok      P      P      B
bohb        b      b      b          b       b+P    b+P    ok
bayesopt    ok     ok     ok         ok      P      P      B
nevergrad   ok     ok     ok         ok      P      P      B
ax          ok     ok     ok         ok      P      P      B
"""

#: What each rule's error must say (the rule, then how to fix it is checked separately: "use ...").
REASONS = {
    "B": "scheduler 'bohb' runs only with searcher 'bohb'",
    "b": "searcher 'bohb' runs only with scheduler 'bohb'",
    "P": "runs only with searcher 'random'",
}


def _parse(matrix: str) -> dict[tuple[str, str], tuple[str, ...]]:
    header, *rows = [line.split() for line in matrix.strip().splitlines()]
    table = {}
    for searcher, *cells in rows:
        assert len(cells) == len(header), searcher
        for scheduler, cell in zip(header, cells):
            table[searcher, scheduler] = () if cell == "ok" else tuple(cell.split("+"))
    return table


PAIRINGS = _parse(MATRIX)
ALLOWED = sorted(pair for pair, rules in PAIRINGS.items() if not rules)
FORBIDDEN = sorted(pair for pair, rules in PAIRINGS.items() if rules)


def reasons(searcher: str, scheduler: str) -> list[str]:
    """The text each broken rule's error must contain, for one cell of :data:`MATRIX`."""
    texts = {**REASONS, "P": f"scheduler {scheduler!r} {REASONS['P']}"}
    return [texts[rule] for rule in PAIRINGS[searcher, scheduler]]


CONDITIONAL_SPACE = {
    "training.lr": {"loguniform": [1.0e-4, 3.0e-3]},
    "rl_module.model_config.fcnet_hiddens": {"choice": [[16], [32, 32]]},
    "training.use_kl_loss": {"choice": [True, False]},
    "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
}

#: A space each searcher (and PBT/PB2, which mutate it) can express exactly.
SPACES = {
    "grid": {"training.lr": {"grid": [1.0e-3, 3.0e-3]}},
    "bayesopt": {"training.lr": {"loguniform": [1.0e-4, 3.0e-3]}, "training.gamma": {"uniform": [0.95, 0.99]}},
    "nevergrad": {"training.lr": {"loguniform": [1.0e-4, 3.0e-3]}, "rl_module.model_config.fcnet_hiddens": {"choice": [[16], [32, 32]]},
                  "training.clip_param": {"quniform": [0.1, 0.3, 0.1]}},
    "pbt": {"training.lr": {"loguniform": [1.0e-4, 3.0e-3]}, "training.clip_param": {"uniform": [0.1, 0.3]}},
    "pb2": {"training.lr": {"uniform": [1.0e-4, 3.0e-3]}, "training.gamma": {"uniform": [0.95, 0.99]}},
}

#: Scheduler options that make each scheduler act within a 600-env-step trial of 200-step iterations.
SCHEDULER_OPTIONS = {
    "fifo": {},
    "asha": {"grace_env_steps": 200, "reduction_factor": 2},
    "hyperband": {"grace_env_steps": 200},
    "bohb": {"grace_env_steps": 200},
    "median": {"grace_env_steps": 200, "min_samples_required": 2},
    "pbt": {"perturbation_env_steps": 200, "quantile_fraction": 0.5},
    "pb2": {"perturbation_env_steps": 200, "quantile_fraction": 0.5},
}

BATCH = 200


def document(searcher: str, scheduler: str, tmp_path=None) -> dict:
    doc = copy.deepcopy(TINY_SPEC)
    doc.update(
        config={"training.train_batch_size": BATCH, "training.minibatch_size": 100, "training.num_epochs": 1,
                "env_runners.num_envs_per_env_runner": 1},  # exact env-step counts (conftest.TINY_SPEC)
        search_space=copy.deepcopy(SPACES.get(searcher) or SPACES.get(scheduler) or CONDITIONAL_SPACE),
        searcher={"name": searcher, "seed": 3},
        scheduler={"name": scheduler, **SCHEDULER_OPTIONS[scheduler]},
        budget={"env_steps": 3 * BATCH, "trials": 2},
        checkpoint={},
        mlflow=None,
    )
    if tmp_path is not None:
        doc["storage"] = str(tmp_path)
    return doc


def test_the_matrix_names_every_searcher_and_scheduler_pair():
    # A searcher or scheduler added without a row or column here (or removed) fails this test.
    assert set(PAIRINGS) == set(itertools.product(SEARCHERS, SCHEDULERS))
    # The documented rules, spot-checked against the parsed table (guards the parser, not the code).
    assert PAIRINGS["bohb", "bohb"] == () and PAIRINGS["random", "pbt"] == () and PAIRINGS["random", "pb2"] == ()
    assert PAIRINGS["bohb", "pbt"] == ("b", "P") and PAIRINGS["optuna", "bohb"] == ("B",)


@pytest.mark.parametrize(("searcher", "scheduler"), FORBIDDEN)
def test_forbidden_pairing_fails_validation_saying_how_to_fix_it(searcher, scheduler):
    with pytest.raises(SpecError) as caught:
        rlsweep.load_spec(document(searcher, scheduler), preflight=False)
    messages = [str(p) for p in caught.value.problems]
    for reason in reasons(searcher, scheduler):
        assert any(reason in m and "use " in m for m in messages), (reason, messages)
    # Nothing else is wrong with the document: every problem is a pairing problem.
    assert all(" runs only with " in m for m in messages), messages


@pytest.mark.parametrize(("searcher", "scheduler"), ALLOWED)
def test_allowed_pairing_validates(searcher, scheduler):
    spec = rlsweep.load_spec(document(searcher, scheduler), preflight=False)
    assert (spec.searcher.name, spec.scheduler.name) == (searcher, scheduler)


#: The allowed pairings run as real sweeps: every searcher under HyperBand, which both pauses a trial at a rung
#: (and resumes it from its checkpoint) and stops one, so each searcher sees the two ways a scheduler ends or
#: holds a trial it suggested; every other scheduler under one searcher (BOHB under its own; PBT under random,
#: its only one, run by tests/schedulers/test_pbt_and_bohb.py with the same checks). A searcher
#: and a scheduler meet only through Tune's Searcher and TrialScheduler calls, and each of those calls is made
#: by these sweeps; the rest of the 31 allowed cells repeated a pairing of the same calls (each still validates
#: above). FIFO and ASHA with Optuna also run in most other test modules (conftest.TINY_SPEC), the median rule
#: with grid in test_a_trailing_trial_is_stopped_at_the_first_decision_point.
RUN = sorted(
    [(searcher, "hyperband") for searcher in SEARCHERS if searcher != "bohb"]
    + [("nevergrad", "fifo"), ("hyperopt", "asha"), ("ax", "median"), ("bayesopt", "median"), ("random", "pb2"),
       ("bohb", "bohb")]
)
RUN_ELSEWHERE = [("random", "pbt")]  # tests/schedulers/test_pbt_and_bohb.py


def test_the_pairings_run_for_real_cover_every_searcher_and_scheduler():
    assert set(RUN + RUN_ELSEWHERE) <= set(ALLOWED)
    assert {searcher for searcher, _ in RUN + RUN_ELSEWHERE} == set(SEARCHERS)
    assert {scheduler for _, scheduler in RUN + RUN_ELSEWHERE} == set(SCHEDULERS)


def check_pairing_sweep(spec, result) -> object:
    """What every sweep of an allowed pairing must show; returns the loaded sweep."""
    scheduler = spec.scheduler.name
    sweep = load(result.path)
    assert result.errored_trials == 0, [t.error for t in sweep.trials]
    assert len(sweep.trials) == spec.budget.trials
    for trial in sweep.trials:
        assert trial.state == "TERMINATED"
        for parameter in spec.search_space:
            if parameter.is_active(trial.config):
                assert parameter.domain.contains(trial.config[parameter.path]), (parameter.path, trial.config)
            else:
                assert parameter.path not in trial.config
        steps = [row["env_steps"] for row in trial.rows]
        assert all(s % BATCH == 0 for s in steps) and steps[-1] <= spec.budget.env_steps, steps
        if scheduler not in ("pbt", "pb2"):
            # The scheduler's clock is the lifetime env-step count: it only grows, never rerun after a pause
            # (Tune can leave out the result at which it paused a trial, so a gap of whole batches is
            # possible). Under PBT a trial that exploits continues from the copied trial's count.
            assert all(b > a for a, b in zip(steps, steps[1:])), steps
        # What the learner holds is reported beside the result, and it is the config the trial runs.
        for row in trial.rows:
            assert math.isclose(row["hp/training.lr"], row["config"]["training.lr"], rel_tol=1e-6), row["config"]
    if scheduler in ("fifo", "pbt", "pb2"):
        assert all(t.rows[-1]["env_steps"] == spec.budget.env_steps for t in sweep.trials)
    return sweep


@pytest.mark.slow
@pytest.mark.parametrize(("searcher", "scheduler"), RUN)
def test_allowed_pairing_runs_a_real_sweep(ray_runtime, tmp_path, searcher, scheduler):
    spec = rlsweep.load_spec(document(searcher, scheduler, tmp_path))
    check_pairing_sweep(spec, rlsweep.run(spec, verbose=0))


# --- The early-stopping schedulers act ---------------------------------------------------------------
#
# Trials on tests.envs.constant:ConstantReward: every episode returns 10 * reward whatever the policy, so
# which trial trails is known before the sweep starts. The grid searcher creates trials in the order its
# values are listed.

GOOD, BAD = {"reward": 1.0, "length": 10}, {"reward": 0.0, "length": 10}
STEP = 200


def _acting_document(tmp_path, scheduler: dict, rewards: list[dict], **sections) -> dict:
    return small_ppo(
        f"acts-{scheduler['name']}",
        tmp_path / "results",
        batch=STEP,
        minibatch=100,
        epochs=1,
        env="tests.envs.constant:ConstantReward",
        search_space={"environment.env_config": {"grid": rewards}},
        searcher="grid",
        scheduler=scheduler,
        **sections,
    )


def _final_steps(sweep) -> dict[float, list[int]]:
    by_reward: dict[float, list[int]] = {}
    for trial in sweep.trials:
        by_reward.setdefault(trial.config["environment.env_config"]["reward"], []).append(trial.rows[-1]["env_steps"])
    return by_reward


@pytest.mark.slow
@pytest.mark.parametrize(
    "scheduler",
    [
        # Rungs at 200 and 400 env steps. One trial at a time (max_concurrent 1), the better one first: it is
        # first at every rung, so it continues; the worse one reaches the 200 rung second, below the
        # cutoff (the top 1/2 of the one recorded value), and must stop there.
        {"name": "asha", "grace_env_steps": STEP, "reduction_factor": 2},
        # From 200 env steps on, a trial whose best result is below the median of the other trials' running
        # means at that point is stopped; one other trial is enough (min_samples_required 1). The better
        # trial has run to the budget when the worse one reaches 200.
        {"name": "median", "grace_env_steps": STEP, "min_samples_required": 1, "hard_stop": True},
    ],
    ids=lambda s: s["name"],
)
def test_a_trailing_trial_is_stopped_at_the_first_decision_point(ray_runtime, tmp_path, scheduler):
    budget = 3 * STEP
    spec = rlsweep.load_spec(
        _acting_document(tmp_path, scheduler, [GOOD, BAD], budget={"env_steps": budget, "trials": 2, "max_concurrent": 1})
    )
    result = rlsweep.run(spec, verbose=0)
    sweep = load(result.path)
    assert result.errored_trials == 0, [t.error for t in sweep.trials]
    for trial in sweep.trials:
        expected = 10.0 * trial.config["environment.env_config"]["reward"]
        assert trial.values("return_mean") == [expected] * len(trial.rows)
        assert trial.state == "TERMINATED"
    # The better trial ran its budget; the worse one was stopped at the grace period, before its budget.
    assert _final_steps(sweep) == {1.0: [budget], 0.0: [STEP]}


@pytest.mark.slow
def test_hyperband_pauses_at_a_rung_resumes_the_better_trial_and_stops_the_worse(ray_runtime, tmp_path):
    # max 400, grace 200, reduction factor 2: two brackets. Ray fills the least aggressive one first (2
    # trials, each run to 400 without a rung), then the aggressive one: 2 trials, a rung at 200 keeping 1.
    # Each trial takes both CPUs (resources.num_cpus_for_main_process 2), so trials run one at a time, in
    # the order they were created: the 3rd trial (good) reaches the rung first and must be PAUSED while the
    # 4th (bad) catches up; then the 4th is stopped at 200 and the 3rd resumes from its checkpoint at 200.
    budget = 2 * STEP
    spec = rlsweep.load_spec(
        _acting_document(
            tmp_path,
            {"name": "hyperband", "grace_env_steps": STEP, "reduction_factor": 2},
            [GOOD, GOOD, GOOD, BAD],
            config={
                "training.train_batch_size_per_learner": STEP,
                "training.minibatch_size": 100,
                "training.num_epochs": 1,
                "env_runners.num_envs_per_env_runner": 1,
                "resources.num_cpus_for_main_process": 2,
            },
            budget={"env_steps": budget, "trials": 4, "max_concurrent": 4},
        )
    )
    result = rlsweep.run(spec, verbose=0)
    sweep = load(result.path)
    assert result.errored_trials == 0, [t.error for t in sweep.trials]
    assert all(t.state == "TERMINATED" for t in sweep.trials)
    assert _final_steps(sweep) == {1.0: [budget] * 3, 0.0: [STEP]}
    # A trial that was paused and resumed: a new actor (Tune restarts its count of iterations since the
    # restore) whose first result continues from the rung's checkpoint instead of starting over.
    resumed = [
        t
        for t in sweep.trials
        if [(r["env_steps"], r["iterations_since_restore"]) for r in t.raw_rows] == [(STEP, 1), (budget, 1)]
    ]
    assert len(resumed) == 1, [[(r["env_steps"], r["iterations_since_restore"]) for r in t.raw_rows] for t in sweep.trials]
    others = [t for t in sweep.trials if t is not resumed[0]]
    assert all(t.raw_rows[-1]["iterations_since_restore"] == len(t.raw_rows) for t in others)
