"""`rlsweep run` starts Ray while the pre-flight checks the spec (both take seconds and the sweep needs both),
yet a spec's problems still come first and complete, and a refused spec starts nothing where its shape or
strategy is wrong. Fast: the `beside` callable stands in for Ray's start (the CLI's own is tested in the
slow tier, tests/test_cli.py)."""

from __future__ import annotations

import copy
import threading

import pytest

from rlsweep.errors import SpecError, UsageError
from rlsweep.validate import load_spec
from tests.conftest import TINY_SPEC


def _spec(**changes):
    document = copy.deepcopy(TINY_SPEC)
    document.update(changes)
    return document


def test_the_start_runs_beside_the_preflight_and_gets_the_checked_spec():
    seen = []

    def start(spec):
        seen.append((spec.name, threading.current_thread() is threading.main_thread(),
                     any(t.name.startswith("rlsweep-preflight") for t in threading.enumerate())))

    spec = load_spec(_spec(), beside=start)
    assert spec.name == "tiny"
    # Once, in the main thread (Ray sets signal handlers there), while the pre-flight's thread runs.
    assert seen == [("tiny", True, True)]


def test_a_spec_refused_by_its_shape_starts_nothing():
    started = []
    with pytest.raises(SpecError) as refused:
        load_spec(_spec(budget={"env_steps": -1, "trials": 3}), beside=started.append)
    assert started == [] and "budget.env_steps" in str(refused.value)


def test_the_preflight_finds_the_same_problems_with_or_without_the_start_beside():
    document = _spec(env="NoSuchEnv-v9", config={**TINY_SPEC["config"], "training.num_epochs": "many"})
    with pytest.raises(SpecError) as alone:
        load_spec(document)
    with pytest.raises(SpecError) as beside:
        load_spec(document, beside=lambda spec: None)
    assert [p.path for p in beside.value.problems] == [p.path for p in alone.value.problems]
    assert any(p.path == "env" for p in beside.value.problems)


def test_the_specs_problems_come_before_the_starts_own_error():
    def unreachable(spec):
        raise UsageError("nothing answers at 10.0.0.1:6379", "--address / ray.address")

    with pytest.raises(SpecError) as refused:
        load_spec(_spec(env="NoSuchEnv-v9"), beside=unreachable)
    assert refused.value.problems[0].path == "env"
    # A valid spec: the start's error is the one raised.
    with pytest.raises(UsageError, match="nothing answers"):
        load_spec(_spec(), beside=unreachable)
