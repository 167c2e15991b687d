"""Dotted paths: the one flatten/unflatten pair (spec paths, RLlib result keys)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsweep._dotted import INDEX_RULE, flatten, list_index, set_in, set_in_lists, unflatten


def test_flatten_joins_keys_and_keeps_empty_mappings_as_leaves():
    assert flatten({"a": {"b": 1, "c": {"d": [2]}}, "e": {}, "f": None}) == {"a.b": 1, "a.c.d": [2], "e": {}, "f": None}


def test_flatten_with_a_separator_a_filter_and_skipped_top_level_keys():
    result = {"config": {"x": 1}, "learners": {"p": {"loss": 0.5, "name": "n"}}, "n": 3, "done": True}
    keep = lambda v: v if isinstance(v, (int, float)) and not isinstance(v, bool) else None  # noqa: E731
    assert flatten(result, "/", keep=keep, skip=frozenset({"config"})) == {"learners/p/loss": 0.5, "n": 3}


def test_unflatten_groups_paths_and_is_flattens_inverse():
    flat = {"training.lr": 1e-3, "training.gamma": 0.9, "rl_module.model_config.fcnet_hiddens": [64]}
    nested = unflatten(flat)
    assert nested == {"training": {"lr": 1e-3, "gamma": 0.9}, "rl_module": {"model_config": {"fcnet_hiddens": [64]}}}
    assert flatten(nested) == flat
    assert unflatten({"a/b": 1}, "/") == {"a": {"b": 1}}


def test_set_in_makes_parents_and_replaces_a_value_standing_where_a_mapping_must():
    document = {"budget": 3, "keep": {"x": 1}}
    set_in(document, ["budget", "trials"], 4)
    set_in(document, ["keep", "y"], 2)
    set_in(document, ["new", "deep", "leaf"], True)
    assert document == {"budget": {"trials": 4}, "keep": {"x": 1, "y": 2}, "new": {"deep": {"leaf": True}}}


def test_unflatten_leaves_the_callers_mappings_alone():
    # config: {rl_module.model_config: {fcnet_hiddens: [32]}} beside a searched rl_module.model_config.x
    given = {"fcnet_hiddens": [32]}
    nested = unflatten({"rl_module.model_config": given, "rl_module.model_config.fcnet_activation": "relu"})
    assert nested == {"rl_module": {"model_config": {"fcnet_hiddens": [32], "fcnet_activation": "relu"}}}
    assert given == {"fcnet_hiddens": [32]}


# --- list indices: the one reader of a path segment that indexes a list --------------------------------

#: Every character Python's str.isdigit() takes that is not 0-9: superscripts, other scripts' digits, circled digits.
UNICODE_DIGITS = [chr(c) for c in range(0x110000) if chr(c).isdigit() and not chr(c).isascii()]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=25) | st.from_regex(r"\A[0-9]{1,25}\Z") | st.builds(str, st.integers(-5, 10**20)))
def test_a_segment_is_a_list_index_only_in_its_one_ascii_form(segment):
    index = list_index(segment)
    if index is not None:  # 0-9 only, no sign, no leading zero: the index written back is the segment
        assert segment.isascii() and str(index) == segment
    elif segment.isascii() and segment.isdigit() and len(segment) <= 18:
        assert segment.startswith("0") and segment != "0"  # 007 is refused: entry 7 has one name


@given(st.integers(min_value=0, max_value=10**18 - 1))
def test_every_whole_number_written_plainly_is_its_own_index(n):
    assert list_index(str(n)) == n


@given(st.sampled_from(UNICODE_DIGITS), st.from_regex(r"\A[0-9]{0,3}\Z"), st.from_regex(r"\A[0-9]{0,3}\Z"))
def test_no_unicode_digit_makes_a_list_index(digit, before, after):
    # '²'.isdigit() is True and int('²') fails; int('٣') is 3: neither may index a list
    assert list_index(before + digit + after) is None


def test_set_in_lists_indexes_a_list_on_the_way_and_names_the_path_of_a_bad_index():
    document = {"curriculum": {"schedule": [[0, 100], [20000, 200]]}, "budget": 3}
    set_in_lists(document, ["curriculum", "schedule", "1", "0"], 30000)
    set_in_lists(document, ["budget", "trials"], 4)  # a value where a mapping must be is replaced, as set_in does
    assert document == {"curriculum": {"schedule": [[0, 100], [30000, 200]]}, "budget": {"trials": 4}}
    for segment in ("²", "٣", "01", "-1", "x"):
        with pytest.raises(ValueError) as caught:
            set_in_lists(document, ["curriculum", "schedule", segment, "1"], 5)
        assert str(caught.value) == (f"curriculum.schedule is a list, so the segment after it is an entry's index; "
                                     f"{INDEX_RULE}, got {segment!r}")
    with pytest.raises(ValueError) as caught:
        set_in_lists(document, ["curriculum", "schedule", "2", "1"], 5)
    assert str(caught.value) == "curriculum.schedule is a list with entries 0 to 1, so it has no entry 2"
    assert document["curriculum"]["schedule"] == [[0, 100], [30000, 200]]  # nothing changed by a refusal
