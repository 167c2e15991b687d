"""Whether a trial's processes fit the nodes they must run on, said once, at the setting that sized them."""

from __future__ import annotations

from pathlib import Path

import rlsweep
from rlsweep.trainables._preflight import resource_problems
from tests.conftest import small_ppo


def _spec(**config):
    document = small_ppo("nodes", Path("/tmp/unused"), budget={"env_steps": 1000, "trials": 1})
    document["config"].update(config)
    return rlsweep.load_spec(document, preflight=False)


def test_on_one_node_a_learner_too_large_is_said_once_at_its_size():
    # Fewer learners would not help: with none, the trial's own process learns and gets the 3 CPUs itself.
    spec = _spec(**{"learners.num_learners": 1, "learners.num_cpus_per_learner": 3})
    problems, needed = resource_problems(spec, 2.0, 0.0, [(2.0, 0.0)])
    assert needed == 4.0
    assert [p.path for p in problems] == ["config.learners.num_cpus_per_learner"], problems
    assert "one trial needs 4 CPUs (1 for the trial's own process, 3 for 1 learner" in problems[0].message
    assert "Lower learners.num_cpus_per_learner" in problems[0].message


def test_on_one_node_too_many_learners_names_their_count():
    spec = _spec(**{"learners.num_learners": 2})
    problems, needed = resource_problems(spec, 2.0, 0.0, [(2.0, 0.0)])
    assert needed == 3.0
    assert [p.path for p in problems] == ["config.learners.num_learners"], problems
    assert "Lower learners.num_learners (0 learns in the trial's own process)" in problems[0].message


def test_on_one_node_a_trial_process_too_large_names_the_setting_that_sized_it():
    # No remote process at all: the count of env runners or learners is not what to lower.
    for config, setting in (({"learners.num_learners": 0, "learners.num_cpus_per_learner": 3}, "learners.num_cpus_per_learner"),
                            ({"resources.num_cpus_for_main_process": 3}, "resources.num_cpus_for_main_process")):
        problems, needed = resource_problems(_spec(**config), 2.0, 0.0, [(2.0, 0.0)])
        assert needed == 3.0
        assert [p.path for p in problems] == [f"config.{setting}"], problems
        assert f"Lower {setting} (the CPUs of the trial's own process)" in problems[0].message


def test_on_two_nodes_a_trial_process_sized_by_its_learner_setting_names_that_setting():
    # No remote learner: the trial's own process learns and RLlib gives it num_cpus_per_learner CPUs (3),
    # more than either 2-CPU node has, though the cluster has 4.
    spec = _spec(**{"learners.num_learners": 0, "learners.num_cpus_per_learner": 3})
    problems, needed = resource_problems(spec, 4.0, 0.0, [(2.0, 0.0), (2.0, 0.0)])
    assert needed == 3.0
    assert [p.path for p in problems] == ["config.learners.num_cpus_per_learner"], problems
    assert "the trial's own process asks for 3 CPU(s) on one node" in problems[0].message
    assert "Lower learners.num_cpus_per_learner" in problems[0].message


def test_on_two_nodes_a_large_main_process_names_its_own_setting():
    spec = _spec(**{"resources.num_cpus_for_main_process": 3})
    problems, _ = resource_problems(spec, 4.0, 0.0, [(2.0, 0.0), (2.0, 0.0)])
    assert [p.path for p in problems] == ["config.resources.num_cpus_for_main_process"], problems
