"""Memory readings kept between commands: the same trial, versions and machine is measured once; anything
that shapes a trial's memory measures again. (The real measurement reused by ``rlsweep run`` after
``rlsweep validate`` is tests/test_memory_check.py's.)"""

from __future__ import annotations

import copy
import datetime as dt
import json

import pytest

from rlsweep import load_spec
from rlsweep.trainables import MemoryReading, hungriest_draw
from rlsweep.trainables._readings import MAX_AGE_S, cache_dir, cached_reading, remember_reading
from tests.conftest import TINY_SPEC

READING = MemoryReading(draw={"training.lr": 0.003}, main_mb=480.0, env_runner_mb=(410.0,), env_steps=2000, seconds=6.0)


@pytest.fixture(autouse=True)
def readings(tmp_path, monkeypatch):
    monkeypatch.setenv("RLSWEEP_CACHE_DIR", str(tmp_path / "readings"))


def _spec(**changes):
    document = copy.deepcopy(TINY_SPEC)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = document
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return load_spec(document, preflight=False)


def _kept(spec):
    return cached_reading(spec, hungriest_draw(spec.search_space))


def test_a_reading_is_reused_for_the_same_trial_and_says_when_it_was_measured():
    spec = _spec()
    assert _kept(spec) is None
    remember_reading(spec, hungriest_draw(spec.search_space), READING)
    kept = _kept(_spec())
    assert kept is not None and kept.reused_from.startswith(dt.date.today().isoformat())
    assert (kept.main_mb, kept.env_runner_mb, kept.trial_mb) == (480.0, (410.0,), READING.trial_mb)
    # What does not change a trial's memory does not measure again.
    same = _spec(name="other", budget__trials=50, budget__max_concurrent=1, searcher={"name": "random"},
                 metric={"name": "episode_len_mean", "mode": "max"}, storage="/elsewhere")
    assert _kept(same) is not None


@pytest.mark.parametrize(
    "change",
    [
        {"config__training.minibatch_size": 500},
        {"config__env_runners.num_env_runners": 1},
        {"env": "Acrobot-v1"},
        {"budget__env_steps": 8000},  # an off-policy trial's replay buffer grows with it
        {"search_space__rl_module.model_config.fcnet_hiddens": {"choice": [[16], [256, 256]]}},
        {"seeds__per_trial": 2},
        {"ray__address": "auto"},  # a cluster's nodes, not this machine
    ],
    ids=lambda c: next(iter(c)),
)
def test_anything_that_shapes_a_trials_memory_measures_again(change):
    spec = _spec()
    remember_reading(spec, hungriest_draw(spec.search_space), READING)
    assert _kept(_spec(**change)) is None


def test_an_edited_env_module_measures_again(tmp_path, monkeypatch):
    module = tmp_path / "my_env_mod.py"
    module.write_text("from tests.envs.corridor import Corridor as Env\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = _spec(env="my_env_mod:Env")
    remember_reading(spec, hungriest_draw(spec.search_space), READING)
    assert _kept(spec) is not None
    module.write_text("from tests.envs.corridor import Corridor as Env\nBALLAST = bytearray(10**9)\n")
    assert _kept(spec) is None


def test_an_old_or_damaged_reading_is_measured_again(tmp_path):
    spec = _spec()
    draw = hungriest_draw(spec.search_space)
    remember_reading(spec, draw, READING)
    now = dt.datetime.now().timestamp()
    assert cached_reading(spec, draw, now=now + MAX_AGE_S - 60) is not None
    assert cached_reading(spec, draw, now=now + MAX_AGE_S + 60) is None
    (kept,) = cache_dir().glob("*.json")
    for damage in ("", "[]", '{"reading": {}}', json.dumps({"measured_at": "soon", "reading": READING.as_dict()})):
        kept.write_text(damage)
        assert cached_reading(spec, draw) is None


def test_a_cache_that_cannot_be_written_is_no_error(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("RLSWEEP_CACHE_DIR", str(tmp_path / "file" / "readings"))
    spec = _spec()
    remember_reading(spec, hungriest_draw(spec.search_space), READING)
    assert _kept(spec) is None
