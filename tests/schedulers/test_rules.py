"""Scheduler options in env steps, the rules that keep PBT/PB2/HyperBand/BOHB from being misused,
presets and the defaults a spec gets when it leaves the searcher or scheduler out."""

from __future__ import annotations

import math

import pytest

import rlsweep
from rlsweep.schedulers import PRESETS, SCHEDULERS, TIME_ATTR
from tests.schedulers.test_pairings import document
from tests.test_spec import problems_of


def pbt(**scheduler_options):
    doc = document("random", "pbt")
    doc["scheduler"].update(scheduler_options)
    return doc


def test_pbt_needs_checkpoints_at_least_as_often_as_it_perturbs():
    doc = pbt()
    doc["checkpoint"] = {"every_env_steps": 400}
    message = problems_of(doc, preflight=False)["checkpoint.every_env_steps"]
    assert "perturbation_env_steps=200" in message and "at most 200" in message


def test_pbt_keeps_every_checkpoint_and_refuses_pruning():
    doc = pbt()
    doc["checkpoint"] = {"keep": 5}
    assert "remove checkpoint.keep" in problems_of(doc, preflight=False)["checkpoint.keep"]
    from rlsweep.schedulers import checkpoint_keep

    assert checkpoint_keep(rlsweep.load_spec(pbt(), preflight=False)) is None
    assert checkpoint_keep(rlsweep.load_spec(document("optuna", "asha"), preflight=False)) == 2


def test_pbt_needs_a_mutation_space():
    doc = pbt()
    doc["search_space"] = {"training.lr": 1e-3}
    assert "needs a mutation space" in problems_of(doc, preflight=False)["search_space"]


def test_pbt_refuses_to_mutate_the_network_shape():
    doc = pbt()
    doc["search_space"]["rl_module.model_config.fcnet_hiddens"] = {"choice": [[16], [64]]}
    message = problems_of(doc, preflight=False)["search_space.rl_module.model_config.fcnet_hiddens"]
    assert "network weights" in message and "set it in config" in message


def test_pbt_must_perturb_inside_the_budget_and_checks_its_options():
    problems = problems_of(pbt(perturbation_env_steps=600, quantile_fraction=0.7, perturbation_factors=[1.2]), preflight=False)
    assert "must be <= 0.5" in problems["scheduler.quantile_fraction"]
    doc = pbt(perturbation_env_steps=600)
    assert "no trial is ever perturbed" in problems_of(doc, preflight=False)["scheduler.perturbation_env_steps"]
    doc = pbt(perturbation_factors=[1.2])
    assert "two positive numbers" in problems_of(doc, preflight=False)["scheduler.perturbation_factors"]


def test_pb2_takes_linear_ranges_only():
    doc = document("random", "pb2")
    doc["search_space"] = {"training.lr": {"loguniform": [1e-5, 1e-3]}}
    assert "pb2" in problems_of(doc, preflight=False)["search_space.training.lr"]


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_unknown_options_are_errors_for_every_scheduler(name):
    searcher = {"bohb": "bohb", "pbt": "random", "pb2": "random"}.get(name, "optuna")
    doc = document(searcher, name)
    doc["scheduler"]["grace_period"] = 10  # Ray's name, in iterations: rlsweep takes env steps
    assert "unknown option for scheduler" in problems_of(doc, preflight=False)["scheduler.grace_period"]


@pytest.mark.parametrize("name", ["asha", "hyperband", "bohb"])
def test_max_env_steps_cannot_exceed_the_budget(name):
    doc = document("bohb" if name == "bohb" else "optuna", name)
    doc["scheduler"]["max_env_steps"] = 10_000
    assert "at most budget.env_steps=600" in problems_of(doc, preflight=False)["scheduler.max_env_steps"]


@pytest.mark.parametrize("name", [n for n in SCHEDULERS if n != "fifo"])
def test_every_scheduler_keeps_time_in_lifetime_env_steps(name):
    searcher = {"bohb": "bohb", "pbt": "random", "pb2": "random"}.get(name, "optuna")
    spec = rlsweep.load_spec(document(searcher, name), preflight=False)
    assert SCHEDULERS[name].build(spec)._time_attr == TIME_ATTR == "env_steps"


def test_hyperband_brackets_start_at_the_grace_env_steps():
    doc = document("optuna", "hyperband")
    doc["budget"]["env_steps"] = 100_000
    doc["scheduler"] = {"name": "hyperband", "grace_env_steps": 11_111, "reduction_factor": 3}
    scheduler = SCHEDULERS["hyperband"].build(rlsweep.load_spec(doc, preflight=False))
    # R = max/grace = 9 = 3^2: three brackets, the most aggressive starting 9 trials at 11,111 env steps.
    assert scheduler._s_max_1 == 3
    assert scheduler._get_r0(2) == 11_111 and scheduler._get_n0(2) == 9 and scheduler._get_r0(0) == 100_000
    # Ray's own sizing, from max_t alone: 11 brackets, the first with a 1-env-step rung.
    from ray.tune.schedulers import HyperBandScheduler

    raw = HyperBandScheduler(time_attr="env_steps", max_t=100_000, reduction_factor=3)
    assert raw._s_max_1 == 11 and raw._get_r0(10) == 1


def test_pbt_is_built_with_env_step_interval_and_declared_domains():
    spec = rlsweep.load_spec(pbt(), preflight=False)
    scheduler = SCHEDULERS["pbt"].build(spec)
    assert scheduler._perturbation_interval == 200
    explored = scheduler._custom_explore_fn({"training.lr": 3e-3 * 1.2, "training.clip_param": 0.05})
    assert explored == {"training.lr": 3e-3, "training.clip_param": 0.1}


def test_a_preset_fills_in_a_pairing_and_takes_options_on_top():
    doc = document("random", "fifo")
    del doc["searcher"], doc["scheduler"]
    doc["preset"] = "bohb"
    doc["scheduler"] = {"grace_env_steps": 200}
    spec = rlsweep.load_spec(doc, preflight=False)
    assert (spec.searcher.name, spec.scheduler.name) == ("bohb", "bohb")
    assert spec.scheduler.options == {"grace_env_steps": 200}
    doc["searcher"] = {"name": "optuna"}
    assert "preset 'bohb' uses searcher 'bohb'" in problems_of(doc, preflight=False)["searcher.name"]
    doc = document("random", "fifo")
    doc["preset"] = "fastest"
    assert "unknown preset" in problems_of(doc, preflight=False)["preset"]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_is_a_valid_pairing(preset):
    doc = document("random", "fifo")
    del doc["searcher"], doc["scheduler"]
    doc["preset"] = preset
    doc["search_space"] = {"training.lr": {"uniform": [1e-4, 1e-3]}}
    spec = rlsweep.load_spec(doc, preflight=False)
    assert spec.searcher.name == PRESETS[preset]["searcher"]


@pytest.mark.parametrize(
    ("space", "searcher", "scheduler", "expected"),
    [
        ({"training.lr": {"loguniform": [1e-4, 1e-3]}}, None, None, ("optuna", "asha")),
        ({"training.lr": {"grid": [1e-4, 1e-3]}}, None, None, ("grid", "asha")),
        ({"training.lr": 1e-3}, None, None, ("random", "asha")),
        ({"training.lr": {"loguniform": [1e-4, 1e-3]}}, None, "pbt", ("random", "pbt")),
        ({"training.lr": {"loguniform": [1e-4, 1e-3]}}, None, "bohb", ("bohb", "bohb")),
        ({"training.lr": {"loguniform": [1e-4, 1e-3]}}, "bohb", None, ("bohb", "bohb")),
        ({"training.lr": {"loguniform": [1e-4, 1e-3]}}, "random", None, ("random", "asha")),
    ],
)
def test_defaults_when_the_searcher_or_scheduler_is_left_out(space, searcher, scheduler, expected):
    doc = document("random", "fifo")
    doc["search_space"] = space
    doc["budget"]["trials"] = 2
    del doc["searcher"], doc["scheduler"]
    if searcher:
        doc["searcher"] = {"name": searcher}
    if scheduler:
        doc["scheduler"] = {"name": scheduler}
    spec = rlsweep.load_spec(doc, preflight=False)
    assert (spec.searcher.name, spec.scheduler.name) == expected
    assert not math.isnan(spec.budget.env_steps)


def evaluated(scheduler: dict, every: int = 1000, budget: int = 9000) -> dict:
    doc = document("optuna", scheduler["name"])
    doc["scheduler"] = scheduler
    doc["budget"]["env_steps"] = budget
    doc["evaluation"] = {"episodes": 2, "every_env_steps": every}
    doc["metric"] = {"name": "eval_return_mean", "mode": "max"}
    return doc


@pytest.mark.parametrize(("scheduler", "grace"), [("asha", 3000), ("median", 3000)])
def test_on_an_evaluation_metric_the_first_rung_falls_on_an_evaluation(scheduler, grace):
    # Defaults: ASHA budget/9 = 1000 and median budget/4 = 2250 env steps; evaluations every 1500.
    spec = rlsweep.load_spec(evaluated({"name": scheduler}, every=1500), preflight=False)
    built = SCHEDULERS[scheduler].options(spec.scheduler.options).grace(spec)
    assert built == (1500 if scheduler == "asha" else grace)


def test_a_grace_between_evaluations_of_the_metric_is_an_error():
    message = problems_of(evaluated({"name": "asha", "grace_env_steps": 1500}), preflight=False)["scheduler.grace_env_steps"]
    assert "fresh every 1000 env steps" in message and "use a multiple of 1000" in message
    # On the training return, any grace is fine.
    doc = evaluated({"name": "asha", "grace_env_steps": 1500})
    doc["metric"] = {"name": "return_mean", "mode": "max"}
    assert rlsweep.load_spec(doc, preflight=False).scheduler.options == {"grace_env_steps": 1500}


def test_an_evaluation_metric_evaluated_only_at_the_budget_cannot_drive_a_scheduler():
    message = problems_of(evaluated({"name": "asha"}, every=9000), preflight=False)["evaluation.every_env_steps"]
    assert "no rung can compare trials on it" in message
