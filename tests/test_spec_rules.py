"""Spec rules at hostile values: what used to validate and then fail every trial (or crash validate) is refused at
its path: training seeds numpy refuses, a storage folder that cannot be made, NaN and infinite settings, a
tracking URI or OTLP endpoint no client can use, numbers past a float's range, chains of conditions, counts
that make a run endless, and searched values that break a rule a written value keeps."""

from __future__ import annotations

import copy
import math
import time
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlsweep import cli, load_spec
from rlsweep.errors import SpecError
from rlsweep.search_spaces._domains import MAX_CONDITION_DEPTH
from rlsweep.spec import MAX_TRAINING_SEED
from tests.conftest import TINY_SPEC

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _spec(**changes: Any) -> dict[str, Any]:
    document = copy.deepcopy(TINY_SPEC)
    document.update(changes)
    return document


def _problems(document: dict[str, Any], overrides: tuple[str, ...] = ()) -> dict[str, str] | None:
    """The problems of ``document`` (path -> message), None if it is valid; anything but a SpecError fails."""
    try:
        load_spec(document, overrides, preflight=False)
    except SpecError as exc:
        found: dict[str, str] = {}
        for problem in exc.problems:
            found[problem.path] = f"{found[problem.path]} | {problem.message}" if problem.path in found else problem.message
        return found
    return None


def _chain(depth: int) -> dict[str, Any]:
    """``depth`` parameters, each active when the one before it is 1, children written first."""
    space = {"training.p0": {"choice": [1, 2]}}
    for i in range(1, depth):
        space[f"training.p{i}"] = {"choice": [1, 2], "when": {f"training.p{i - 1}": 1}}
    return dict(reversed(list(space.items())))


REFUSED: dict[str, tuple[dict[str, Any], tuple[str, ...], str, str]] = {
    # name: (changes, --set overrides, path, what the message says)
    "a tuning seed of 2**32": ({"seeds": {"tuning": [0, 2**32]}}, (), "seeds.tuning.1", f"<= {MAX_TRAINING_SEED}"),
    "a negative test seed": ({"seeds": {"test": [-5, 3]}}, (), "seeds.test.0", ">= 0"),
    "debugging.seed of 2**40 in config": ({"config": {"debugging.seed": 2**40}}, (), "config.debugging.seed", "1099511627776"),
    "a negative debugging.seed": ({"config": {"debugging.seed": -1}}, (), "config.debugging.seed", "got -1"),
    "a searched debugging.seed reaching 2**33": (
        {"search_space": {"debugging.seed": {"randint": [0, 2**33]}}}, (), "search_space.debugging.seed", "draws from 0 to 8589934592"),
    "a searched debugging.seed as a float": (
        {"search_space": {"debugging.seed": {"uniform": [0, 10]}}}, (), "search_space.debugging.seed", "whole numbers"),
    "storage /dev/null": ({"storage": "/dev/null"}, (), "storage", "is a character device, not a folder"),
    "storage under a file": ({"storage": "/etc/hostname/sweeps"}, (), "storage", "'/etc/hostname' above it is a file"),
    "storage under /proc": ({"storage": "/proc/sweeps"}, (), "storage", "kernel's proc filesystem"),
    "storage under /sys": ({"storage": "/sys/sweeps"}, (), "storage", "kernel's sysfs filesystem"),
    "storage in a missing user's home": ({"storage": "~no_such_user_here/sweeps"}, (), "storage", "not a path this machine can resolve"),
    "gamma nan": ({"config": {"training.gamma": math.nan}}, (), "config.training.gamma", "is nan"),
    "an infinity deep in a config value": (
        {"config": {"rl_module.model_config": {"fcnet_hiddens": [8], "head": {"x": -math.inf}}}}, (),
        "config.rl_module.model_config.head.x", "is -inf"),
    "a NaN fixed value in search_space": ({"search_space": {"training.gamma": math.nan}}, (), "search_space.training.gamma", "is nan"),
    "a NaN inside a choice's list": (
        {"search_space": {"training.gamma": {"choice": [[0.9, math.nan]]}}}, (), "search_space.training.gamma.choice[0][1]", "is nan"),
    "NaN in env_config": ({"env_config": {"goal": [1.0, math.nan]}}, (), "env_config.goal[1]", "is nan"),
    "a garbage tracking URI": ({"mlflow": {"tracking_uri": "garbage://::::"}}, (), "mlflow.tracking_uri", "no tracking store"),
    "an http tracking URI without a host": ({"mlflow": {"tracking_uri": "http://:5000"}}, (), "mlflow.tracking_uri", "names no host"),
    "a tracking URI with two drivers": ({"mlflow": {"tracking_uri": "mysql+a+b://h/db"}}, (), "mlflow.tracking_uri", "no tracking store"),
    "an OTLP endpoint with a broken IPv6 host": ({"tracing": {"otlp_endpoint": "http://[::1"}}, (), "tracing.otlp_endpoint", "Invalid IPv6 URL"),
    "an OTLP endpoint with port 99999": ({"tracing": {"otlp_endpoint": "http://127.0.0.1:99999"}}, (), "tracing.otlp_endpoint", "Port out of range"),
    "an OTLP endpoint over grpc": ({"tracing": {"otlp_endpoint": "grpc://127.0.0.1:4317"}}, (), "tracing.otlp_endpoint", "http(s) URL"),
    "a search bound of 1e309": (
        {"search_space": {"training.lr": {"uniform": ["1e309", 1.0]}}}, (), "search_space.training.lr", "past a float's range"),
    "--set gamma=1e999": ({}, ("config.training.gamma=1e999",), "config.training.gamma", "past a float's range"),
    "--set gamma=1.0e+999": ({}, ("config.training.gamma=1.0e+999",), "config.training.gamma", "is inf"),
    "--set a 5,000-digit integer": ({}, ("budget.env_steps=" + "9" * 5000,), "--set budget.env_steps", "cannot hold as a number"),
    "--set an integer of 70 bits": ({}, (f"config.training.lr={2**70}",), "config.training.lr", "fit in 64 bits"),
    "1,500 parameters chained by when": ({"search_space": _chain(1500)}, (), f"search_space.training.p{MAX_CONDITION_DEPTH}.when",
                                         f"at most {MAX_CONDITION_DEPTH}"),
    "evaluation.episodes of 2**63 - 1": ({"evaluation": {"episodes": 2**63 - 1}}, (), "evaluation.episodes", "<= 10000"),
    "evaluation every 10**15 env steps": ({"evaluation": {"every_env_steps": 10**15}}, (), "evaluation.every_env_steps", "<= 1000000000000"),
    "checkpoint.keep of 10**9": ({"checkpoint": {"keep": 10**9}}, (), "checkpoint.keep", "<= 10000"),
    "seeds.per_trial of 10**6": ({"seeds": {"per_trial": 10**6, "tuning": [0, 10**7], "test": [10**7 + 1, 10**7 + 2]}}, (),
                                 "seeds.per_trial", "<= 100"),
    "failure.max_retries of 2**62": ({"failure": {"max_retries": 2**62}}, (), "failure.max_retries", "<= 100"),
    "a searched first start of a schedule": (
        {"curriculum": {"schedule": [[0, 1], [1000, 2]]}, "search_space": {"curriculum.schedule.0.0": {"randint": [0, 3000]}}}, (),
        "search_space.curriculum.schedule.0.0", "starts at 0 env steps"),
    "a searched start that can pass the next entry's": (
        {"curriculum": {"schedule": [[0, 1], [1000, 2], [2000, 3]]}, "search_space": {"curriculum.schedule.1.0": {"choice": [500, 3000]}}},
        (), "search_space.curriculum.schedule.1.0", "entry 1 starts at 500 to 3000 and entry 2 at 2000"),
    "a searched start as a float": (
        {"curriculum": {"schedule": [[0, 1], [1000, 2]]}, "search_space": {"curriculum.schedule.1.0": {"uniform": [500, 900]}}}, (),
        "search_space.curriculum.schedule.1.0", "whole number of env steps"),
    "a searched task that is a list": (
        {"curriculum": {"schedule": [[0, 1], [1000, 2]]}, "search_space": {"curriculum.schedule.1.1": {"choice": [2, [3]]}}}, (),
        "search_space.curriculum.schedule.1.1", "a task is a number or a string"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_used_to_pass_validate_and_fail_every_trial_is_refused_at_its_path(name):
    changes, overrides, path, says = REFUSED[name]
    start = time.monotonic()
    problems = _problems(_spec(**changes), overrides)
    assert time.monotonic() - start < 5
    assert problems is not None, f"{name} was accepted"
    assert path in problems, problems
    assert says in problems[path], problems[path]


@pytest.mark.parametrize("name", ["storage /dev/null", "gamma nan", "a garbage tracking URI", "an OTLP endpoint with a broken IPv6 host",
                                  "a search bound of 1e309", "1,500 parameters chained by when", "evaluation.episodes of 2**63 - 1",
                                  "a searched first start of a schedule", "a searched debugging.seed reaching 2**33"])
def test_rlsweep_validate_exits_2_naming_the_path_without_a_traceback(tmp_path, capsys, name):
    changes, _, path, says = REFUSED[name]
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(_spec(**changes)))
    assert cli.main(["validate", str(spec_file), "--no-memory-check"]) == 2
    err = capsys.readouterr().err
    assert path in err and says in err and "Traceback" not in err, err[-2000:]


def test_validate_and_sample_refuse_a_set_past_a_floats_range_and_a_long_chain(tmp_path, capsys):
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(_spec()))
    assert cli.main(["validate", str(spec_file), "--no-memory-check", "--set", "config.training.gamma=1e999"]) == 2
    err = capsys.readouterr().err
    assert "config.training.gamma" in err and "Traceback" not in err
    spec_file.write_text(yaml.safe_dump(_spec(search_space=_chain(1500), searcher={"name": "random", "seed": 0}, scheduler="fifo")))
    assert cli.main(["sample", str(spec_file), "-n", "2"]) == 2
    err = capsys.readouterr().err
    assert f"at most {MAX_CONDITION_DEPTH}" in err and "Traceback" not in err and "RecursionError" not in err


ACCEPTED = {
    "the largest training seeds": {"seeds": {"tuning": [0, 9], "test": [MAX_TRAINING_SEED - 9, MAX_TRAINING_SEED]}},
    "debugging.seed searched in range": {"search_space": {"debugging.seed": {"choice": [0, MAX_TRAINING_SEED]}}},
    "log_std_clip_param of +inf (RLlib's 'no clamping')": {"config": {"rl_module.model_config.log_std_clip_param": math.inf}},
    "an infinity in env_config (an env's unbounded limit)": {"env_config": {"limit": math.inf}},
    "a storage folder that does not exist yet": {"storage": "/tmp/rlsweep-spec-rules/not/yet/made"},
    "a tracking URI with a database driver": {"mlflow": {"tracking_uri": "postgresql+psycopg2://user@db.example/mlflow"}},
    "a tracking URI that is a plain path": {"mlflow": {"tracking_uri": "./mlruns"}},
    "an OTLP endpoint on IPv6 loopback": {"tracing": {"otlp_endpoint": "http://[::1]:4318"}},
    "a chain of conditions at the limit": {"search_space": _chain(MAX_CONDITION_DEPTH)},
    "searched schedule starts between their neighbours": {
        "curriculum": {"schedule": [[0, 1], [1000, 2], [5000, 3]]},
        "search_space": {"curriculum.schedule.1.0": {"randint": [500, 4000]}, "curriculum.schedule.2.0": {"choice": [4001, 9000]}}},
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_what_can_run_still_validates(name):
    changes = ACCEPTED[name]
    if "tracing" in changes:
        pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    assert _problems(_spec(**changes)) is None
    assert not (tmp := __import__("pathlib").Path("/tmp/rlsweep-spec-rules")).exists(), f"validate created {tmp}"


# --- properties: whatever load_spec accepts keeps the rule, and it never raises anything but SpecError ----


@PROPERTY
@given(low=st.integers(min_value=-(2**64), max_value=2**64), high=st.integers(min_value=-(2**64), max_value=2**64),
       fixed=st.integers(min_value=-(2**64), max_value=2**64) | st.none() | st.floats() | st.booleans())
def test_any_training_seed_is_accepted_only_within_numpys_range(low, high, fixed):
    for document in (
        _spec(seeds={"tuning": [low, high], "test": [2**31 - 1, 2**31 - 1]}),
        _spec(config={**TINY_SPEC["config"], "debugging.seed": fixed}),
        _spec(search_space={"debugging.seed": {"randint": [low, high]}}),
    ):
        if _problems(document) is None:
            spec = load_spec(document, preflight=False)
            seeds = list(spec.seeds.tuning) + [spec.config.get("debugging.seed") or 0]  # null: RLlib's "no seed"
            seeds += [b for p in spec.search_space if p.path == "debugging.seed" for b in (p.domain.low, p.domain.high)]
            assert all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**31 for s in seeds), seeds


_numbers = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([math.nan, math.inf, -math.inf, "1e309", "-1e400", "1e-3"])


@PROPERTY
@given(value=_numbers, nested=st.booleans(), where=st.sampled_from(["config", "search_space", "bound"]))
def test_any_float_in_config_or_a_bound_is_accepted_only_when_finite(value, nested, where):
    setting = {"inner": [value]} if nested else value
    if where == "config":
        document = _spec(config={**TINY_SPEC["config"], "training.gamma": setting})
    elif where == "search_space":
        document = _spec(search_space={"training.gamma": setting})
    else:
        document = _spec(search_space={"training.gamma": {"uniform": [value, 2.0e308]}})
    if _problems(document) is None:
        assert isinstance(value, float) and math.isfinite(value)


@PROPERTY
@given(st.integers(min_value=1, max_value=2000))
def test_a_chain_of_conditions_of_any_depth_validates_or_is_refused_with_the_limit(depth):
    problems = _problems(_spec(search_space=_chain(depth), searcher={"name": "random", "seed": 0}, scheduler="fifo"))
    if depth <= MAX_CONDITION_DEPTH:
        assert problems is None
    else:
        assert problems is not None and any(f"at most {MAX_CONDITION_DEPTH}" in m for m in problems.values())


_starts = st.integers(min_value=-10, max_value=6000)
_start_domains = st.one_of(
    st.tuples(_starts, _starts).map(lambda b: {"randint": list(b)}),
    st.lists(_starts, min_size=1, max_size=4).map(lambda v: {"choice": v}),
    st.tuples(st.floats(0, 6000), st.floats(0, 6000)).map(lambda b: {"uniform": list(b)}),
    _starts,
)


@PROPERTY
@given(st.dictionaries(st.integers(min_value=0, max_value=2), _start_domains, min_size=1, max_size=3), st.randoms(use_true_random=False))
def test_every_draw_of_an_accepted_searched_schedule_starts_at_0_and_rises(domains, rng):
    schedule = [[0, 1], [1000, 2], [2000, 3]]
    document = _spec(curriculum={"schedule": schedule}, search_space={f"curriculum.schedule.{i}.0": d for i, d in domains.items()})
    if _problems(document) is not None:
        return
    spec = load_spec(document, preflight=False)
    for _ in range(20):  # draws at random, and each domain's ends
        steps = [start for start, _ in schedule]
        for parameter in spec.search_space:
            entry = int(parameter.path.split(".")[2])
            domain = parameter.domain
            values = getattr(domain, "values", None) or ((domain.value,) if hasattr(domain, "value") else (domain.low, domain.high))
            steps[entry] = rng.choice(values)
        assert steps[0] == 0 and all(b > a for a, b in zip(steps, steps[1:])), (domains, steps)


def test_a_sweep_that_ran_elsewhere_or_under_older_rules_still_reads(tmp_path, capsys):
    # Launching checks whether a spec can run here (its storage folder on this machine, its numbers); a
    # sweep copied from a cluster, or made before a rule was added, is read back all the same.
    from tests.experiments import new_experiment, write_trial

    document = {**copy.deepcopy(TINY_SPEC), "storage": "/proc/cluster-scratch/results"}
    document["config"]["training.vf_clip_param"] = math.inf
    root = new_experiment(tmp_path / "exp", document)
    write_trial(root, "aaa", [10, 20], config={"training.lr": 0.001})
    assert cli.main(["status", str(root), "--json"]) == 0, capsys.readouterr().err
    assert cli.main(["best", str(root), "--rule", "last", "--json"]) == 0, capsys.readouterr().err
    with pytest.raises(SpecError, match="storage"):  # launching it here is refused
        load_spec(document, preflight=False)


def test_storage_on_an_automounted_share_is_the_share_not_autofs(tmp_path, monkeypatch):
    # An autofs direct map: the autofs entry and the NFS share mounted over it have the same mount point,
    # the share listed after; a folder there is on the share.
    from pathlib import Path

    from rlsweep import _host

    table = (f"30 1 0:5 / / rw - ext4 /dev/root rw\n"
             f"40 30 0:50 / {tmp_path} rw - autofs systemd-1 rw\n"
             f"41 40 0:51 / {tmp_path} rw - nfs4 server:/share rw\n")
    real_read_text = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: table if str(self) == "/proc/self/mountinfo" else real_read_text(self, *a, **k))
    assert _host._filesystem_of(tmp_path) == "nfs4"
    assert _host.folder_problem(str(tmp_path / "results")) is None
