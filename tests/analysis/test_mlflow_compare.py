"""What MLflow's run comparison of a sweep's trials is given: each child run's params are the trial's draw
(the searched params, as numbers where they are numbers), every other setting is a tag, the sweep's metric
is each run's first, and the parent says what was searched and what to plot. Real MLflow on SQLite, no Ray;
tests/analysis/test_mlflow_server.py looks at the comparison page itself in Chromium."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from rlsweep.analysis import load
from rlsweep.analysis._mlflow import row_metrics, split_params
from tests.conftest import TINY_SPEC
from tests.experiments import new_experiment, write_trial

#: As a trial records them: every setting it ran with (its draw and seed included), and Tune's config.
SETTINGS = {
    "settings": {"training.num_epochs": 2, "reporting.min_time_s_per_iteration": 0, "training.lr": 0.001,
                 "rl_module.model_config.fcnet_hiddens": [32, 32], "debugging.seed": 7},
    "config": {"training.lr": 0.001, "rl_module.model_config.fcnet_hiddens": [32, 32], "debugging.seed": 7},
}


def test_a_trials_params_are_its_draw_and_its_other_settings_are_kept_apart():
    config = {"training.lr": 0.001, "rl_module.model_config.fcnet_hiddens": [32, 32]}
    draw, rest = split_params(SETTINGS, config)
    assert draw == config
    # Nothing the trial recorded is dropped: its seed and fixed settings are the rest.
    assert rest == {"training.num_epochs": 2, "reporting.min_time_s_per_iteration": 0, "debugging.seed": 7}
    # Several seeds per trial: the list goes with the settings, not the draw.
    _, rest = split_params({**SETTINGS, "seeds": [7, 8]}, config)
    assert rest["seeds"] == [7, 8]
    # A trial that recorded no settings (an old sweep): the draw alone.
    assert split_params(None, config) == (config, {})


def test_the_sweeps_metric_is_a_rows_first_metric_even_when_it_is_an_rllib_key():
    row = {"env_steps": 1000, "episodes": 3, "return_mean": 9.0, "eval_return_mean": 12.0, "rllib/custom": 4.0}
    assert [m.key for m in row_metrics(row, "eval_return_mean")][0] == "eval_return_mean"
    names = [m.key for m in row_metrics(row, "rllib/custom")]
    assert names[0] == "rllib/custom" and len(names) == len(set(names))
    assert "rllib/custom" not in [m.key for m in row_metrics(row)]
    assert [m.key for m in row_metrics({**row, "rllib/custom": float("nan")}, "rllib/custom")][0] != "rllib/custom"


@pytest.fixture
def exported(tmp_path):
    root = new_experiment(tmp_path / "exp", {**TINY_SPEC, "metric": {"name": "return_mean", "mode": "max"}})
    draws = [{"training.lr": 0.001, "rl_module.model_config.fcnet_hiddens": [32, 32]},
             {"training.lr": 0.0003, "rl_module.model_config.fcnet_hiddens": [16]}]
    for i, draw in enumerate(draws):
        recorded = {"settings": {**SETTINGS["settings"], **draw, "debugging.seed": i}, "config": {**draw, "debugging.seed": i}}
        write_trial(root, f"t{i}", [1.0, 2.0], config=draw, settings=recorded, done=True)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = load(root)
    sweep.to_mlflow(tracking_uri=uri, experiment="compare")
    client = MlflowClient(tracking_uri=uri)
    return sweep, uri, client, client.get_experiment_by_name("compare").experiment_id


def test_child_runs_hold_the_draw_as_params_and_the_settings_as_tags(exported):
    sweep, uri, client, experiment_id = exported
    children = client.search_runs([experiment_id], "tags.`rlsweep.kind` = 'trial'")
    assert len(children) == 2
    for child in children:
        trial = next(t for t in sweep.trials if t.trial_id == child.data.tags["rlsweep.trial_id"])
        lr, hiddens = trial.config["training.lr"], trial.config["rl_module.model_config.fcnet_hiddens"]
        # Numbers as plain numbers (MLflow's plots parse them), a list as JSON: a readable category.
        assert child.data.params == {"training.lr": repr(lr), "rl_module.model_config.fcnet_hiddens": str(hiddens)}
        assert child.data.tags["rlsweep.setting.training.num_epochs"] == "2"
        assert child.data.tags["rlsweep.setting.debugging.seed"] == str(trial.settings["config"]["debugging.seed"])
        # Searchable as MLflow searches tags.
        found = client.search_runs([experiment_id], "tags.`rlsweep.setting.reporting.min_time_s_per_iteration` = '0'")
        assert child.info.run_id in {r.info.run_id for r in found}
        # The sweep's metric is the run's first, the one MLflow's comparison colours by.
        assert next(iter(client.get_run(child.info.run_id).data.metrics)) == "return_mean"


def test_the_parent_run_says_what_was_searched_and_what_to_plot(exported):
    _, _, client, experiment_id = exported
    (parent,) = client.search_runs([experiment_id], "tags.`rlsweep.kind` = 'sweep'")
    assert parent.data.tags["rlsweep.searched"] == "training.lr,rl_module.model_config.fcnet_hiddens"
    assert parent.data.tags["rlsweep.metric"] == "return_mean (max)"
    note = parent.data.tags["mlflow.note.content"]
    assert "`training.lr`" in note and "`return_mean`" in note and "Compare" in note
    # The sweep's top-level settings are its params; `critic` says which Q network SAC learns with, so a
    # PPO sweep has none.
    params = parent.data.params
    assert params["algorithm"] == "PPO" and params["budget.trials"] == str(TINY_SPEC["budget"]["trials"])
    assert "critic" not in params and "updates_per_env_step" not in params


def test_a_sac_sweeps_parent_run_names_its_critic(tmp_path):
    spec = {**TINY_SPEC, "algorithm": "SAC", "env": "Pendulum-v1", "critic": "concat", "updates_per_env_step": 1,
            "search_space": {"training.actor_lr": {"loguniform": [1e-4, 1e-3]}}}
    root = new_experiment(tmp_path / "exp", spec)
    write_trial(root, "t0", [1.0, 2.0], config={"training.actor_lr": 3e-4}, done=True)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    load(root).to_mlflow(tracking_uri=uri, experiment="sac")
    client = MlflowClient(tracking_uri=uri)
    (parent,) = client.search_runs([client.get_experiment_by_name("sac").experiment_id], "tags.`rlsweep.kind` = 'sweep'")
    assert parent.data.params["critic"] == "concat" and parent.data.params["algorithm"] == "SAC"
    assert parent.data.params["updates_per_env_step"] == "1.0"


def test_exporting_again_adds_no_tag_or_param(exported):
    sweep, uri, client, experiment_id = exported
    before = {r.info.run_id: (r.data.params, r.data.tags) for r in client.search_runs([experiment_id])}
    sweep.to_mlflow(tracking_uri=uri, experiment="compare")
    assert {r.info.run_id: (r.data.params, r.data.tags) for r in client.search_runs([experiment_id])} == before
