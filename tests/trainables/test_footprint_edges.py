"""The memory check's pure arithmetic, pinned where mutation testing (mutmut) found it unchecked: the corner a
choice of mixed values picks, the replay buffer's growth, the shortened off-policy measurement, the
messages' wording, and the edges of what fits."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import pytest

from rlsweep.errors import IncompatibleError
from rlsweep.search_spaces import Choice, Fixed, Normal, Parameter, SearchSpace, Uniform
from rlsweep.trainables import MemoryReading
from rlsweep.trainables import _footprint as fp

MB = 2**20


def test_a_choices_weight_counts_magnitudes_units_and_mapping_values():
    assert fp._size(True) == 1.0 and fp._size(False) == 0.0
    assert fp._size(-3) == 3.0 and fp._size(2.5) == 2.5
    assert fp._size([64, 64]) == 128.0 and fp._size((1, -2)) == 3.0
    assert fp._size({"a": 3, "b": [1, 2]}) == 6.0
    assert fp._size("tanh") == 0.0 and fp._size(None) == 0.0


def test_the_corner_takes_a_fixed_value_a_normals_mean_a_ranges_high_and_the_heaviest_choice():
    space = SearchSpace((
        Parameter("training.gamma", Fixed(0.9)),
        Parameter("training.lr", Normal(0.01, 0.5)),
        Parameter("training.entropy_coeff", Uniform(0.0, 0.2)),
        Parameter("model.sizes", Choice(({"a": 1, "b": 1}, {"a": 5}, {"a": 2, "b": 3}))),
        Parameter("model.tie", Choice(([2, 2], [4], [1, 3]))),  # equal weights: the first listed
        Parameter("model.sign", Choice((-8, 5))),  # by magnitude
    ))
    assert fp.hungriest_draw(space) == {
        "training.gamma": 0.9, "training.lr": 0.01, "training.entropy_coeff": 0.2,
        "model.sizes": {"a": 5}, "model.tie": [2, 2], "model.sign": -8,
    }


class _Buffer:
    def __init__(self, steps, size, capacity=None):
        self.steps, self.state, self.capacity = steps, {"x": b"x" * size}, capacity

    def get_num_timesteps(self):
        return self.steps

    def get_state(self):
        return self.state


def test_the_buffer_is_sized_by_its_stored_steps_and_pickled_state():
    assert fp._buffer_bytes(SimpleNamespace()) is None
    assert fp._buffer_bytes(SimpleNamespace(local_replay_buffer=None)) is None
    assert fp._buffer_bytes(SimpleNamespace(local_replay_buffer=object())) is None
    buffer = _Buffer(7, 1000)
    steps, size = fp._buffer_bytes(SimpleNamespace(local_replay_buffer=buffer))
    assert steps == 7 and size == len(pickle.dumps(buffer.state, protocol=pickle.HIGHEST_PROTOCOL))


def _growth(before, steps, size, capacity, budget):
    algo = SimpleNamespace(local_replay_buffer=_Buffer(steps, size, capacity))
    before_bytes = None if before is None else (before[0], len(pickle.dumps(_Buffer(*before).state, protocol=pickle.HIGHEST_PROTOCOL)))
    return fp._replay_growth_mb(algo, before_bytes, budget)


def test_the_replay_buffer_grows_by_its_bytes_per_step_up_to_its_capacity_or_the_budget():
    # 100 steps took 100 * 1,024 bytes more: 1,024 bytes a step, for the 1,000,000 - 200 steps still to store.
    assert _growth((100, 0), 200, 100 * 1024, None, 1_000_000) == pytest.approx(1024 * (1_000_000 - 200) / MB, rel=1e-3)
    # The capacity caps it below the budget; the budget caps it below the capacity.
    assert _growth((100, 0), 200, 100 * 1024, 10_200, 1_000_000) == pytest.approx(1024 * 10_000 / MB, rel=1e-3)
    assert _growth((100, 0), 200, 100 * 1024, 10**9, 5_200) == pytest.approx(1024 * 5_000 / MB, rel=1e-3)
    # Full already, no steps added, a shrinking state, no earlier reading: nothing more.
    assert _growth((100, 0), 200, 100 * 1024, 150, 1_000_000) == 0.0
    assert _growth((200, 0), 200, 100 * 1024, None, 1_000_000) == 0.0
    assert _growth((100, 5000), 200, 10, None, 1_000_000) == 0.0
    assert _growth(None, 200, 100 * 1024, None, 1_000_000) == 0.0
    assert fp._replay_growth_mb(SimpleNamespace(), (1, 1), 1000) == 0.0
    # A buffer that says nothing of its capacity fills up to the budget.
    bare = SimpleNamespace(get_num_timesteps=lambda: 200, get_state=lambda: {"x": b"x" * 100 * 1024})
    before = (100, len(pickle.dumps({"x": b""}, protocol=pickle.HIGHEST_PROTOCOL)))
    assert fp._replay_growth_mb(SimpleNamespace(local_replay_buffer=bare), before, 5_200) == pytest.approx(1024 * 5_000 / MB, rel=1e-3)


def test_an_off_policy_config_learns_after_few_steps_and_an_on_policy_one_is_left_alone():
    config = SimpleNamespace(num_steps_sampled_before_learning_starts=1000, min_sample_timesteps_per_iteration=1)
    assert fp._shortened(config) is config
    assert config.num_steps_sampled_before_learning_starts == fp.OFF_POLICY_MEASURED_STEPS == 50
    assert config.min_sample_timesteps_per_iteration == 50
    config = SimpleNamespace(num_steps_sampled_before_learning_starts=10, min_sample_timesteps_per_iteration=1)
    assert fp._shortened(config).num_steps_sampled_before_learning_starts == 10
    on_policy = SimpleNamespace(num_steps_sampled_before_learning_starts=None, min_sample_timesteps_per_iteration=7)
    assert fp._shortened(on_policy).min_sample_timesteps_per_iteration == 7
    assert fp._shortened(SimpleNamespace(lr=0.1)) == SimpleNamespace(lr=0.1)  # a config without the setting at all


def test_a_refusal_names_the_path_and_the_first_line_of_the_cause():
    error = fp._refused("ray.memory_check", "too slow")
    assert isinstance(error, IncompatibleError)
    assert [(p.path, p.message) for p in error.problems] == [("ray.memory_check", "too slow")]
    assert fp._first_line(ValueError("  first\nsecond  ")) == "ValueError: first"
    assert fp._first_line(RuntimeError("")) == "RuntimeError"
    assert fp._describe({}) == "the spec's config"
    assert fp._describe({"a.b": 1, "c.d": "x"}) == "a.b=1, c.d='x'"


def _reading(**values):
    return MemoryReading(draw={"env_runners.num_env_runners": 2}, **{"main_mb": 500.0, **values})


def test_what_fits_is_the_fewest_of_memory_cpus_and_max_concurrent_never_below_0():
    fit = fp.MemoryFit(_reading(), (1000.0,), by_memory=3, by_cpus=5, max_concurrent=None)
    assert fit.allowed == 3
    assert fp.MemoryFit(_reading(), (1000.0,), 3, 5, 0).allowed == 3  # 0: no cap
    assert fp.MemoryFit(_reading(), (1000.0,), 9, 5, 4).allowed == 4
    assert fp.MemoryFit(_reading(), (1000.0,), -1, 5, None).allowed == 0


def test_the_fit_lines_say_nodes_estimates_and_reuse():
    one = fp.MemoryFit(_reading(), (2048.0,), 3, 4, None).lines()
    assert one[1] == ("memory: Ray has 2.0 GB for trials on 1 node (the largest 2.0 GB): 3 trial(s) at once by memory, "
                      "4 by CPUs; up to 3 at once")
    two = fp.MemoryFit(_reading(env_steps=1234, seconds=7.4), (1024.0, 2048.0), 3, 4, 2).lines()
    assert "on 2 nodes (the largest 2.0 GB)" in two[1] and ", budget.max_concurrent 2;" in two[1]
    assert "over 2 iterations, 1,234 env steps, in 7 s)" in two[0] and "reused" not in two[0]
    reused = fp.MemoryFit(_reading(reused_from="2026-01-01 10:00"), (1024.0,), 1, 1, None).lines()[0]
    assert "at 2026-01-01 10:00; reused: same spec, versions and machine)" in reused
    estimated = fp.MemoryFit(_reading(estimated=True), (4096.0,), 3, 4, None).lines()
    assert len(estimated) == 2 and "needs at most 500 MB by its settings" in estimated[0]
    assert "not measured" in estimated[0] and estimated[0].endswith("it reserves 525 MB")
    assert estimated[1] == ("memory: Ray has 4.0 GB for trials on 1 node (the largest 4.0 GB): 3 trial(s) at once by memory, "
                            "4 by CPUs; up to 3 at once")
    capped = fp.MemoryFit(_reading(estimated=True), (4096.0,), 3, 4, 2).lines()[1]
    assert capped.endswith("4 by CPUs, budget.max_concurrent 2; up to 2 at once")
    # GB are 1,024 MB; no node at all is 0 GB.
    big = fp.MemoryFit(_reading(), (1024.0 * 100,), 3, 4, None).lines()[1]
    assert "Ray has 100.0 GB for trials on 1 node (the largest 100.0 GB)" in big
    assert "Ray has 0.0 GB for trials on 0 nodes (the largest 0.0 GB)" in fp.MemoryFit(_reading(), (), 0, 4, None).lines()[1]


def test_trials_fit_per_node_and_far_below_asks_twice_the_need_for_every_trial_at_once():
    assert fp.trials_that_fit(400.0, [1000.0, 799.0, 800.0]) == 2 + 1 + 2
    reading = _reading(main_mb=100.0)  # reserves 105 MB: twice is 210 MB
    assert fp.far_below(reading, [420.0], by_cpus=2, max_concurrent=None)
    assert not fp.far_below(reading, [419.0], by_cpus=2, max_concurrent=None)
    assert fp.far_below(reading, [419.0], by_cpus=2, max_concurrent=1)  # the cap is what runs at once
    assert fp.far_below(reading, [419.0], by_cpus=1, max_concurrent=3)  # the CPUs run fewer than the cap
    assert not fp.far_below(reading, [419.0], by_cpus=3, max_concurrent=2)
    assert fp.far_below(reading, [210.0], by_cpus=0, max_concurrent=None)  # at least one trial
    assert not fp.far_below(reading, [209.0], by_cpus=0, max_concurrent=None)
    assert not fp.far_below(reading, [], by_cpus=1, max_concurrent=None)


def test_the_setting_to_lower_is_the_larger_remote_share_runners_on_a_tie():
    runners = _reading(main_mb=100.0, env_runner_mb=(300.0,), learner_mb=(200.0,))
    assert fp.heaviest_setting(runners, 1000.0) == "config.env_runners.num_env_runners"
    learners = _reading(main_mb=100.0, env_runner_mb=(200.0,), learner_mb=(300.0,))
    assert fp.heaviest_setting(learners, 1000.0) == "config.learners.num_learners"
    assert fp.heaviest_setting(learners, 1000.0, ("learners.num_learners",)) == "search_space.learners.num_learners"
    tie = _reading(main_mb=100.0, env_runner_mb=(300.0,), learner_mb=(300.0,))
    assert fp.heaviest_setting(tie, 1000.0) == "config.env_runners.num_env_runners"
    # Its own process just fits (105 MB): the remote share; just does not: the corner.
    assert fp.heaviest_setting(runners, 105.0) == "config.env_runners.num_env_runners"
    assert fp.heaviest_setting(runners, 104.9) == "config"
    assert fp.heaviest_setting(_reading(main_mb=100.0), 1000.0, ("training.lr",)) == "search_space"
    # Any remote share at all, however small, is the setting to lower.
    tiny = _reading(main_mb=100.0, env_runner_mb=(0.5,))
    assert fp.heaviest_setting(tiny, 1000.0) == "config.env_runners.num_env_runners"


def test_a_trial_that_exactly_fits_is_placed_and_a_zero_reading_leaves_the_cpus_to_decide():
    reading = _reading(main_mb=1000.0)  # reserves 1,050 MB
    fit, problems = fp.memory_fit(reading, [1050.0], by_cpus=4, max_concurrent=1)
    assert problems == [] and fit.by_memory == 1 and fit.node_mb == (1050.0,) and fit.max_concurrent == 1
    fit, problems = fp.memory_fit(_reading(main_mb=0.0), [10.0], by_cpus=3, max_concurrent=None)
    assert problems == [] and fit.by_memory == 3
    fit, _ = fp.memory_fit(_reading(main_mb=0.5), [10.0], by_cpus=3, max_concurrent=None)  # under 1 MB still counts
    assert fit.by_memory == 19
    _, problems = fp.memory_fit(reading, [1000.0], by_cpus=4, max_concurrent=None)
    assert problems[0].message.endswith("Narrow the network, lower env_runners.num_env_runners or the batch sizes at "
                                        "that corner, or join nodes with more memory")
    _, problems = fp.memory_fit(reading, [], by_cpus=4, max_concurrent=None)
    assert "largest Ray node has 0 MB" in problems[0].message
    _, problems = fp.memory_fit(_reading(main_mb=400.0), [1000.0, 500.0], by_cpus=8, max_concurrent=4)
    assert "Ray has 1,500 MB for trials on 2 node(s), room for 3" in problems[0].message
