"""The memory check's arithmetic, without a Ray runtime: which corner is measured, what each placement-group
bundle reserves, and what the nodes' memory allows. (Measuring a real trial: tests/test_memory_check.py.)"""

from __future__ import annotations

import pytest

import rlsweep
from rlsweep.search_spaces import parse_search_space
from rlsweep.trainables import MemoryReading, hungriest_draw, memory_fit, trial_resources
from tests.conftest import small_ppo


def _space(raw):
    space, problems = parse_search_space(raw)
    assert not problems, problems
    return space


def test_the_hungriest_corner_takes_the_widest_network_the_most_runners_and_the_largest_batch():
    space = _space({
        "training.lr": {"loguniform": [1.0e-4, 1.0e-2]},
        # Listed wide first: the corner is the widest by units, not the last listed.
        "rl_module.model_config.fcnet_hiddens": {"choice": [[256, 256], [64], [128, 128]]},
        "env_runners.num_env_runners": {"randint": [0, 3]},
        "training.train_batch_size_per_learner": {"choice": [4000, 500, 1000]},
        "model.activation": {"choice": ["tanh", "relu"]},
        "training.use_kl_loss": {"choice": [False, True]},
        "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
    })
    draw = hungriest_draw(space)
    assert draw["rl_module.model_config.fcnet_hiddens"] == [256, 256]
    assert draw["env_runners.num_env_runners"] == 3
    assert draw["training.train_batch_size_per_learner"] == 4000
    assert draw["training.lr"] == 1.0e-2
    assert draw["model.activation"] == "tanh"  # no weight: the first listed
    # A feature turned on weighs more than off, and the parameter it conditions is measured at its high end.
    assert draw["training.use_kl_loss"] is True and draw["training.kl_coeff"] == 0.3
    # Where the corner turns its condition off, the conditional parameter is left out.
    space = _space({"training.num_epochs": {"choice": [2, 8]},
                    "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.num_epochs": 2}}})
    assert hungriest_draw(space) == {"training.num_epochs": 8}


H = 1 + MemoryReading.HEADROOM


def _reading(**values):
    return MemoryReading(draw={"env_runners.num_env_runners": 2}, **{"main_mb": 500.0, **values})


def test_a_trial_needs_every_process_and_the_buffer_growth():
    reading = _reading(env_runner_mb=(400.0, 420.0), learner_mb=(300.0,), replay_mb=50.0)
    # As the bundles reserve it: each env runner at the largest one's peak, and each with the headroom.
    assert reading.predicted_mb == pytest.approx(500 + 50 + 2 * 420 + 300)
    assert reading.trial_mb == pytest.approx((500 + 50 + 2 * 420 + 300) * H)
    assert reading.bundle_mb("main") == pytest.approx(550 * H)
    assert reading.bundle_mb("env_runner") == pytest.approx(420 * H)
    assert reading.bundle_mb("learner") == pytest.approx(300 * H)
    assert MemoryReading.from_dict(reading.as_dict()) == reading


def test_concurrency_by_memory_counts_trials_per_node():
    # Two nodes of 1,000 MB hold one 600 MB trial each: 2, not the 3 that 2,000 / 600 would say.
    found, problems = memory_fit(_reading(main_mb=600.0), [1000.0, 1000.0], by_cpus=8, max_concurrent=None)
    assert problems == [] and found.by_memory == 2 and found.allowed == 2
    found, _ = memory_fit(_reading(main_mb=300.0), [1000.0, 1000.0], by_cpus=4, max_concurrent=None)
    assert found.by_memory == 6 and found.allowed == 4  # the CPUs allow fewer
    found, _ = memory_fit(_reading(main_mb=300.0), [1000.0], by_cpus=4, max_concurrent=2)
    assert found.allowed == 2
    lines = "\n".join(found.lines())
    assert "peaks at 300 MB" in lines and "reserves 315 MB (5% headroom)" in lines and "3 trial(s) at once by memory, 4 by CPUs, budget.max_concurrent 2; up to 2 at once" in lines


def test_a_trial_larger_than_every_node_is_refused_naming_the_setting_the_corner_and_the_numbers():
    # Its own process would fit: the env runners are what to lower, in config or in the search space.
    reading = _reading(main_mb=900.0, env_runner_mb=(400.0, 400.0))
    _, problems = memory_fit(reading, [1000.0, 1500.0], by_cpus=4, max_concurrent=None)
    (problem,) = problems
    assert problem.path == "config.env_runners.num_env_runners"
    assert "needs 1,785 MB (measured 1,700" in problem.message and "1,500 MB" in problem.message
    assert "env_runners.num_env_runners=2" in problem.message and "never" in problem.message
    _, problems = memory_fit(reading, [1500.0], 4, None, spec_paths=("env_runners.num_env_runners",))
    assert problems[0].path == "search_space.env_runners.num_env_runners"
    # Its own process alone is too large: the corner (the network, the batch) is what to shrink.
    _, problems = memory_fit(_reading(main_mb=1600.0), [1500.0], 4, None, spec_paths=("training.lr",))
    assert problems[0].path == "search_space"


def test_what_a_node_must_hold_is_the_prediction_plus_5_percent_headroom():
    # Predicted at 980 MB, a trial would fit a 1,000 MB node; it reserves 1,029 MB, which does not.
    found, problems = memory_fit(_reading(main_mb=980.0), [1000.0], by_cpus=4, max_concurrent=None)
    (problem,) = problems
    assert found.by_memory == 0 and problem.path == "config"
    assert "needs 1,029 MB (measured 980" in problem.message and "+ 5% headroom" in problem.message
    # Two trials predicted at 490 MB each would fill a 1,000 MB node; reserving 514.5 MB each, one fits.
    found, problems = memory_fit(_reading(main_mb=490.0), [1000.0], by_cpus=4, max_concurrent=None)
    assert problems == [] and found.by_memory == 1 and found.allowed == 1
    _, problems = memory_fit(_reading(main_mb=490.0), [1000.0], by_cpus=4, max_concurrent=2)
    assert [p.path for p in problems] == ["budget.max_concurrent"]


def test_a_max_concurrent_the_memory_cannot_hold_is_refused_with_what_fits():
    _, problems = memory_fit(_reading(main_mb=400.0), [1000.0], by_cpus=8, max_concurrent=3)
    (problem,) = problems
    assert problem.path == "budget.max_concurrent"
    assert "need 1,260 MB (420 MB each" in problem.message and "room for 2" in problem.message and "to 2 or less" in problem.message
    _, problems = memory_fit(_reading(main_mb=400.0), [1000.0], by_cpus=8, max_concurrent=2)
    assert problems == []


@pytest.mark.parametrize("seeds", [1, 2])
def test_each_bundle_reserves_what_its_process_was_measured_at(tmp_path, seeds):
    spec = rlsweep.load_spec(
        small_ppo("bundles", tmp_path, seeds={"per_trial": seeds}, budget={"env_steps": 1000, "trials": 1},
                  config={"env_runners.num_env_runners": 2, "training.train_batch_size_per_learner": 500}),
        preflight=False,
    )
    reading = MemoryReading(draw={}, main_mb=500.0, env_runner_mb=(400.0, 410.0), replay_mb=20.0)
    bundles = trial_resources(spec, {}, reading).bundles
    mb = [b.get("memory", 0) / 2**20 for b in bundles]
    # The trial's process (its seeds' algorithms, one after the other) once, each seed's 2 env runners.
    assert mb == pytest.approx([520.0 * H, *[410.0 * H, 410.0 * H] * seeds], abs=1e-3)
    assert [b["CPU"] for b in bundles] == [1, *[1, 1] * seeds]
    # Without a reading: RLlib's request as it is, no memory.
    assert all("memory" not in b for b in trial_resources(spec, {}).bundles)


def test_a_remote_learner_bundle_reserves_the_learners_memory(tmp_path):
    spec = rlsweep.load_spec(
        small_ppo("learners", tmp_path, budget={"env_steps": 1000, "trials": 1},
                  config={"learners.num_learners": 1, "training.train_batch_size_per_learner": 500}),
        preflight=False,
    )
    reading = MemoryReading(draw={}, main_mb=500.0, learner_mb=(700.0,))
    bundles = trial_resources(spec, {}, reading).bundles
    assert [b.get("memory", 0) / 2**20 for b in bundles] == pytest.approx([500.0 * H, 700.0 * H], abs=1e-3)


def test_bundles_follow_rllibs_order_env_runners_then_evaluation_runners_then_learners(tmp_path):
    spec = rlsweep.load_spec(
        small_ppo("order", tmp_path, budget={"env_steps": 1000, "trials": 1},
                  config={"env_runners.num_env_runners": 2, "training.train_batch_size_per_learner": 500,
                          "evaluation.evaluation_num_env_runners": 1, "evaluation.evaluation_interval": 1,
                          "learners.num_learners": 1}),
        preflight=False,
    )
    reading = MemoryReading(draw={}, main_mb=500.0, env_runner_mb=(400.0, 410.0, 300.0), learner_mb=(700.0,))
    mb = [b.get("memory", 0) / 2**20 for b in trial_resources(spec, {}, reading).bundles]
    assert mb == pytest.approx([x * H for x in (500.0, 410.0, 410.0, 410.0, 700.0)], abs=1e-3)
