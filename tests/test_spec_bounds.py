"""The spec's numeric limits at their edges, pinned where mutation testing (mutmut) found them unchecked: a
document's size limits, non-finite numbers, a training seed's range, and a curriculum schedule's order."""

from __future__ import annotations

import math
import time

import pytest

from rlsweep.errors import SpecError
from rlsweep.spec import MAX_DEPTH, MAX_STRING, MAX_TRAINING_SEED, MAX_VALUES, _check_size, parse_spec
from tests.conftest import small_ppo

FINITE = "an RLlib setting is a finite number (+inf only where RLlib documents it: rl_module.model_config.log_std_clip_param)"


def _refused(document):
    with pytest.raises(SpecError) as caught:
        _check_size(document, "spec.yaml")
    ((path, message),) = [(p.path, p.message) for p in caught.value.problems]
    return path, message


def _nested(levels):
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


def test_a_document_may_nest_max_depth_levels_and_not_one_more():
    _check_size({"a": _nested(MAX_DEPTH - 1)}, "spec.yaml")  # the mapping, then MAX_DEPTH levels of lists
    path, message = _refused({"a": _nested(MAX_DEPTH)})
    assert message == f"nests deeper than {MAX_DEPTH} levels" and path.startswith("a[0][0]")


def test_a_string_and_an_integer_at_the_limit_pass_and_one_past_it_is_named_at_its_path():
    _check_size({"a": ["x" * MAX_STRING, 2**63, -(2**63)]}, "spec.yaml")
    assert _refused({"a": ["ok", "x" * (MAX_STRING + 1)]}) == (
        "a[1]", f"holds a string of {MAX_STRING + 1:,} characters; at most {MAX_STRING:,}")
    assert _refused({"a": {"b": 2**64}}) == ("a.b", "is an integer of 65 bits; a spec's integers fit in 64 bits")
    assert _refused({"x" * (MAX_STRING + 1): 1})[1].startswith(f"holds a string of {MAX_STRING + 1:,}")  # a key too


def test_a_recursive_alias_is_refused_where_it_refers_back():
    loop: list = [1]
    loop.append(loop)
    assert _refused({"a": {"b": loop}}) == ("a.b[1]", "refers to itself (a recursive YAML alias)")


def test_the_value_count_counts_shared_parts_each_time_up_to_the_limit():
    # The document, its key and the list: 3 values besides the list's items.
    _check_size({"a": [0] * (MAX_VALUES - 3)}, "spec.yaml")
    path, message = _refused({"a": [0] * (MAX_VALUES - 2)})
    assert path == "spec.yaml" and message.startswith(f"expands to over {MAX_VALUES:,} values")
    shared = [0] * (MAX_VALUES // 4)
    path, message = _refused({"a": [shared] * 4})  # an alias used 4 times counts 4 times
    assert path in ("a", "spec.yaml") and "expands to over" in message
    _check_size({"a": [shared, shared, shared]}, "spec.yaml")  # 3 uses fit
    assert message == (f"expands to over {MAX_VALUES:,} values (YAML aliases count each time they are used); write "
                       "the values a sweep needs")


def test_a_part_shared_by_two_mappings_is_no_recursion():
    shared = [1, 2]
    _check_size({"a": {"x": shared}, "b": {"y": shared}}, "spec.yaml")


def test_an_alias_bomb_is_refused_without_walking_each_use():
    inner = [0] * 400
    middle = [inner] * 400  # 160,000 values, each list walked once
    start = time.monotonic()
    path, message = _refused({"a": [middle] * 400})  # 64 million values if each use were walked
    assert message.startswith("expands to over") and time.monotonic() - start < 10


def _problems(**changes):
    document = small_ppo("bounds", "/tmp/rlsweep-bounds", budget={"env_steps": 1000, "trials": 1})
    for section, values in changes.items():
        document.setdefault(section, {}).update(values)
    _, problems = parse_spec(document)
    return {p.path: p.message for p in problems}


def test_nan_and_infinities_in_settings_are_named_at_their_path_and_env_config_keeps_infinities():
    found = _problems(
        config={"training.gamma": math.nan, "training.grad_clip": -math.inf,
                "rl_module.model_config.log_std_clip_param": math.inf},
        search_space={"training.y": {"fixed": [1, math.inf]}, "training.z": {"choice": [[1, math.inf], 2]}},
        env_config={"a": [1.0, math.nan, math.inf], "b": {"c": -math.inf}},
    )
    assert found == {
        "config.training.gamma": f"is nan: {FINITE}",
        "config.training.grad_clip": f"is -inf: {FINITE}",
        "search_space.training.y[1]": f"is inf: {FINITE}",
        "search_space.training.z.choice[0][1]": f"is inf: {FINITE}",
        "env_config.a[1]": "is nan, which equals no number (not even itself); give the env a number",
    }
    found = _problems(config={"rl_module.model_config.log_std_clip_param": -math.inf})
    assert found == {"config.rl_module.model_config.log_std_clip_param": f"is -inf: {FINITE}"}


def test_past_ten_non_finite_numbers_the_rest_are_counted():
    found = _problems(config={f"training.x{i}": math.nan for i in range(12)})
    assert len(found) == 11 and found["config"] == "... and 2 more numbers that are not finite"
    found = _problems(config={f"training.x{i}": math.nan for i in range(10)})
    assert len(found) == 10 and "config" not in found


SEED_RULE = ("a training seed is a whole number from 0 to 2**31 - 1 (RLlib seeds numpy with it plus the env runner's "
             "index, and numpy takes seeds below 2**32)")


@pytest.mark.parametrize("seed", [0, MAX_TRAINING_SEED])
def test_a_training_seed_at_either_end_of_its_range_is_kept(seed):
    assert "config.debugging.seed" not in _problems(config={"debugging.seed": seed})


@pytest.mark.parametrize("seed", [-1, MAX_TRAINING_SEED + 1, True, 1.0, "3"])
def test_a_training_seed_past_its_range_or_not_whole_is_refused(seed):
    assert _problems(config={"debugging.seed": seed})["config.debugging.seed"] == f"{SEED_RULE}; got {seed!r}"


def test_a_searched_training_seed_keeps_the_range_in_every_draw():
    key = "search_space.debugging.seed"
    assert key not in _problems(search_space={"debugging.seed": {"randint": [0, MAX_TRAINING_SEED]}})
    assert _problems(search_space={"debugging.seed": {"randint": [-1, 5]}})[key] == (
        f"{SEED_RULE}; its randint domain draws from -1 to 5")
    assert _problems(search_space={"debugging.seed": {"choice": [1, MAX_TRAINING_SEED + 1]}})[key] == (
        f"{SEED_RULE}; its choice domain draws from 1 to {MAX_TRAINING_SEED + 1}")
    assert _problems(search_space={"debugging.seed": {"uniform": [0, 5]}})[key] == (
        f"{SEED_RULE}; search it with randint, choice or grid of whole numbers, got a uniform domain")


def test_seed_ranges_are_low_to_high_and_per_trial_seeds_fit_in_them():
    assert _problems(seeds={"tuning": [5, 5], "per_trial": 1}) == {}
    assert "seeds.tuning" in _problems(seeds={"tuning": [6, 5]})
    assert "is [low, high] with low <= high, got [6, 5]" in _problems(seeds={"tuning": [6, 5]})["seeds.tuning"]
    assert "seeds.per_trial" not in _problems(seeds={"tuning": [0, 2], "per_trial": 3})
    assert _problems(seeds={"tuning": [0, 2], "per_trial": 4})["seeds.per_trial"].startswith(
        "4 distinct seeds per trial do not fit in seeds.tuning [0, 2]")
    assert "seeds.test" in _problems(seeds={"tuning": [0, 10], "test": [10, 20]})
    assert "seeds.test" in _problems(seeds={"tuning": [10, 20], "test": [0, 10]})
    assert "seeds.test" not in _problems(seeds={"tuning": [0, 10], "test": [11, 20]})
    assert "seeds.test" not in _problems(seeds={"tuning": [11, 20], "test": [0, 10]})


def _curriculum(schedule, **space):
    return _problems(curriculum={"schedule": schedule}, search_space=space)


def test_a_written_schedule_starts_at_0_and_rises():
    assert _curriculum([[0, 1], [1, 2]]) == {}
    assert _curriculum([[0, 1], [-1, 2]]) == {
        "curriculum.schedule.1": "starts with env steps, a whole number >= 0; got -1"}
    assert _curriculum([[0, 1], [2.5, 2]]) == {
        "curriculum.schedule.1": "starts with env steps, a whole number >= 0; got 2.5"}
    assert _curriculum([[1, 1], [5, 2]]) == {
        "curriculum.schedule": "must start at 0 env steps (the task the trial starts on), got [[1, 1], [5, 2]]"}
    assert _curriculum([[0, 1], [5, 2], [5, 3]]) == {
        "curriculum.schedule": "env steps must rise from entry to entry, got [0, 5, 5]"}


def test_a_searched_schedule_start_keeps_0_first_and_the_entries_rising_in_every_draw():
    path = "curriculum.schedule.1.0"
    assert _curriculum([[0, 1], [100, 2], [300, 3]], **{path: {"randint": [1, 299]}}) == {}
    found = _curriculum([[0, 1], [100, 2], [300, 3]], **{path: {"randint": [1, 300]}})
    assert found == {f"search_space.{path}": "every draw must keep the schedule's env steps rising in its order, but "
                     "entry 1 starts at 1 to 300 and entry 2 at 300; make the ranges follow one another"}
    found = _curriculum([[0, 1], [100, 2]], **{path: {"randint": [0, 50]}})
    assert found == {f"search_space.{path}": "every draw must keep the schedule's env steps rising in its order, but "
                     "entry 0 starts at 0 and entry 1 at 0 to 50; make the ranges follow one another"}
    assert _curriculum([[0, 1], [100, 2]], **{"curriculum.schedule.0.0": {"choice": [0]}}) == {}
    first = _curriculum([[0, 1], [100, 2]], **{"curriculum.schedule.0.0": {"choice": [0, 5]}})
    assert first["search_space.curriculum.schedule.0.0"].startswith(
        "the schedule starts at 0 env steps (the task a trial starts on) in every draw, but this choice domain "
        "draws from 0 to 5")
    assert _curriculum([[0, 1], [100, 2]], **{path: {"uniform": [1, 50]}}) == {f"search_space.{path}": (
        "entry 1's start is a whole number of env steps; search it with randint, choice or grid of whole numbers, "
        "got a uniform domain")}
    assert _curriculum([[0, 1], [100, 2]], **{"curriculum.schedule.1.1": {"choice": [2, [3]]}}) == {
        "search_space.curriculum.schedule.1.1": "a task is a number or a string, as in a written schedule; got [3]"}
    assert _curriculum([[0, 1], [100, 2]], **{"curriculum.schedule.1.1": {"choice": [2, "hard", 0.5]}}) == {}


def test_a_searched_start_after_an_unsearched_entry_is_checked_and_the_first_entrys_message_is_whole():
    # Entry 1 keeps its written start; entry 2's searched start may fall before it.
    path = "curriculum.schedule.2.0"
    found = _curriculum([[0, 1], [100, 2], [300, 3]], **{path: {"randint": [50, 400]}})
    assert found == {f"search_space.{path}": "every draw must keep the schedule's env steps rising in its order, but "
                     "entry 1 starts at 100 and entry 2 at 50 to 400; make the ranges follow one another"}
    first = _curriculum([[0, 1], [100, 2]], **{"curriculum.schedule.0.0": {"choice": [0, 5]}})
    assert first == {"search_space.curriculum.schedule.0.0": (
        "the schedule starts at 0 env steps (the task a trial starts on) in every draw, but this choice domain "
        "draws from 0 to 5; search a later entry's start instead")}


def test_a_conditional_start_counts_its_written_value_for_the_draws_it_is_inactive_in():
    # Entry 1 is searched in [1000, 2000] only when use_kl_loss is drawn True; otherwise its written start, 3000,
    # holds. Entry 2 draws from [2500, 3500]: beside an inactive entry 1 (3000) it can fall before it.
    kl = {"training.use_kl_loss": {"choice": [True, False]}}
    when = {"when": {"training.use_kl_loss": True}}
    entry2 = {"curriculum.schedule.2.0": {"randint": [2500, 3500]}}
    schedule = [[0, 1], [3000, 2], [4000, 3]]
    found = _curriculum(schedule, **kl, **entry2, **{"curriculum.schedule.1.0": {"randint": [1000, 2000], **when}})
    assert found == {"search_space.curriculum.schedule.2.0": (
        "every draw must keep the schedule's env steps rising in its order, but entry 1 starts at 1000 to 3000 "
        "and entry 2 at 2500 to 3500; make the ranges follow one another")}
    # Always active, entry 1's range is its own, and entry 2's follows it.
    assert _curriculum(schedule, **kl, **entry2, **{"curriculum.schedule.1.0": {"randint": [1000, 2000]}}) == {}
    # A written start below the range widens it downwards too: [500, 2000] before entry 2's [2100, 2900].
    low = _curriculum([[0, 1], [500, 2], [4000, 3]], **kl, **{"curriculum.schedule.2.0": {"randint": [2100, 2900]}},
                      **{"curriculum.schedule.1.0": {"randint": [1000, 2000], **when}})
    assert low == {}
    below = _curriculum([[0, 1], [500, 2], [4000, 3]], **kl, **{"curriculum.schedule.2.0": {"randint": [400, 2900]}},
                        **{"curriculum.schedule.1.0": {"randint": [1000, 2000], **when}})
    assert "entry 1 starts at 500 to 2000 and entry 2 at 400 to 2900" in below["search_space.curriculum.schedule.2.0"]


def test_a_curriculum_without_a_schedule_names_no_task_and_a_schedule_names_one_from_0():
    from rlsweep.spec import CurriculumSpec

    assert CurriculumSpec(fn="tests.envs.tasks:next_task").task_at(5000) is None  # the function decides
    schedule = CurriculumSpec(schedule=[[0, "easy"], [1000, "hard"]])
    assert [schedule.task_at(n) for n in (0, 999, 1000, 10**9)] == ["easy", "easy", "hard", "hard"]


def test_a_curriculum_is_a_function_or_a_schedule_and_the_function_a_module_path():
    either = {"curriculum": "set either fn (module:function) or schedule ([[env_steps, task], ...]), one of them"}
    assert _problems(curriculum={}) == either
    assert _problems(curriculum={"fn": "tests.envs.tasks:x", "schedule": [[0, 1]]}) == either
    assert _problems(curriculum={"fn": "nomodule"}) == {"curriculum.fn": "expects module:function, got 'nomodule'"}


def test_after_a_searched_start_of_the_wrong_kind_the_later_entries_are_still_checked():
    found = _curriculum([[0, 1], [100, 2], [300, 3], [500, 4]], **{"curriculum.schedule.1.0": {"uniform": [1, 50]},
                                                                    "curriculum.schedule.3.0": {"randint": [200, 600]}})
    assert sorted(found) == ["search_space.curriculum.schedule.1.0", "search_space.curriculum.schedule.3.0"]
    assert "entry 2 starts at 300 and entry 3 at 200 to 600" in found["search_space.curriculum.schedule.3.0"]
