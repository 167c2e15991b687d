"""Selection rules: parsed once where a user gives them, and scored as their names say."""

from __future__ import annotations

import math

import pytest

from rlsweep.analysis import DEFAULT_RULE, SelectionRule
from rlsweep.errors import UsageError

NAN = math.nan


@pytest.mark.parametrize(
    ("text", "rule"),
    [("last", SelectionRule("last")), ("max", SelectionRule("max")), ("eval", SelectionRule("eval")),
     ("avg-last-1", SelectionRule("avg-last", 1)), ("avg-last-3", SelectionRule("avg-last", 3)),
     ("avg-last-12", SelectionRule("avg-last", 12))],
)
def test_a_rule_is_parsed_into_a_value_and_prints_as_written(text, rule):
    assert SelectionRule.parse(text) == rule
    assert str(rule) == text
    assert SelectionRule.parse(rule) is rule


@pytest.mark.parametrize("text", ["best", "avg-last", "avg-last-0", "avg-last--1", "avg-last-x", "MAX", ""])
def test_an_unknown_rule_is_a_usage_error_naming_the_argument(text):
    with pytest.raises(UsageError) as caught:
        SelectionRule.parse(text)
    message = str(caught.value)
    assert message.startswith("--rule: ") and repr(text) in message
    assert ("must be >= 1" if text == "avg-last-0" else "expected last | max | avg-last-N") in message


def test_the_default_is_the_mean_of_the_last_three():
    assert str(DEFAULT_RULE) == "avg-last-3"


VALUES = [10.0, NAN, 300.0, 20.0, 30.0]


@pytest.mark.parametrize(
    ("rule", "end", "mode", "expected"),
    [
        ("last", 4, "max", 30.0),
        ("last", 1, "max", 10.0),  # a NaN report does not count: the last finite one before it does
        ("max", 4, "max", 300.0),
        ("max", 4, "min", 10.0),
        ("max", 0, "max", 10.0),
        ("avg-last-3", 4, "max", (300 + 20 + 30) / 3),
        ("avg-last-2", 4, "max", 25.0),
        ("avg-last-3", 2, "max", (10 + 300) / 2),  # fewer finite reports than N: their mean
        ("avg-last-9", 4, "min", (10 + 300 + 20 + 30) / 4),
    ],
)
def test_scores(rule, end, mode, expected):
    assert SelectionRule.parse(rule).score(VALUES, end, mode) == pytest.approx(expected)


def test_nothing_finite_scores_nan():
    assert math.isnan(SelectionRule.parse("avg-last-3").score([NAN, NAN], 1, "max"))
    assert math.isnan(SelectionRule.parse("last").score([], -1, "max"))


def test_a_checkpoint_under_max_is_scored_by_its_own_report():
    assert SelectionRule.parse("max").at_checkpoint() == SelectionRule("last")
    assert SelectionRule.parse("avg-last-3").at_checkpoint() == SelectionRule("avg-last", 3)


def test_best_as_json_holds_every_field_a_script_reads():
    # `rlsweep best --json` prints this: each key with its value, the checkpoint as a path string or null.
    from pathlib import Path

    from rlsweep.analysis._rules import Best

    best = Best(trial_id="t1", config={"training.lr": 0.01}, metric="return_mean", mode="max", rule="avg-last-3",
                value=42.5, env_steps=3000, checkpoint=Path("/x/checkpoint_000002"), checkpoint_value=44.0,
                checkpoint_env_steps=2000)
    assert best.to_dict() == {
        "trial_id": "t1", "config": {"training.lr": 0.01}, "metric": "return_mean", "mode": "max", "rule": "avg-last-3",
        "value": 42.5, "env_steps": 3000, "checkpoint": "/x/checkpoint_000002", "checkpoint_value": 44.0,
        "checkpoint_env_steps": 2000, "interval": None, "tuning_value": None,
    }
    assert Best(**{**best.__dict__, "checkpoint": None}).to_dict()["checkpoint"] is None
    held_out = Best(**{**best.__dict__, "rule": "held-out", "interval": (30.0, 50.0), "tuning_value": 60.0}).to_dict()
    assert held_out["interval"] == [30.0, 50.0] and held_out["tuning_value"] == 60.0


#: Characters Python counts as digits that are not 0-9 (superscripts, Arabic-Indic, Devanagari, fullwidth...).
_OTHER_DIGITS = [c for c in map(chr, range(0x80, 0x10000)) if c.isdigit()]


def test_a_rules_count_is_written_in_0_to_9_only():
    # int('٣') is 3: without the ASCII rule, avg-last-٣ read as avg-last-3 though it shows something else.
    from rlsweep.errors import UsageError

    assert SelectionRule.parse("avg-last-12").n == 12
    for digit in _OTHER_DIGITS[:: max(1, len(_OTHER_DIGITS) // 40)]:
        with pytest.raises(UsageError, match="unknown rule"):
            SelectionRule.parse(f"avg-last-{digit}")
