"""Dotted paths: the one flatten/unflatten pair (spec paths, RLlib result keys)."""

from __future__ import annotations

from rlsweep._dotted import flatten, set_in, unflatten


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
