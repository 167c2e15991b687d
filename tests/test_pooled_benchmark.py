"""benchmarks/pooled.py: what several time_to_solve runs together can say, censored at one cap."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("pooled", REPO / "benchmarks" / "pooled.py")
pooled = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pooled)

SETUP = {"task": "cartpole", "solved_at": 475.0, "trials": 20, "env_steps": 50000, "eval_every": 10000,
         "concurrency": 2, "eval_episodes": 5}


def results_file(tmp_path: Path, name: str, runs: list[tuple[str, int, float, bool]], cap: float = 200.0, **setup) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"commit": "abc", "setup": {**SETUP, "cap_s": cap, **setup},
                                "runs": [{"side": s, "seed": seed, "time_s": t, "solved": ok} for s, seed, t, ok in runs]}))
    return path


def test_runs_are_censored_at_the_smallest_cap(tmp_path):
    long = results_file(tmp_path, "a.json", [("rlsweep", 1, 250.0, True), ("zoo", 1, 40.0, True),
                                              ("rlsweep", 2, 300.0, False), ("zoo", 2, 190.0, True)], cap=300.0)
    short = results_file(tmp_path, "b.json", [("rlsweep", 1, 30.0, True), ("zoo", 1, 200.0, False),
                                               ("rlsweep", 2, 10.0, True)], cap=200.0)  # seed 2: one side only
    files = pooled.load([long, short])
    assert pooled.common_cap(files) == 200.0
    # Solved at 250 s with a 300 s cap is not solved by the 200 s the pool uses; seeds pair within their file,
    # and a seed only one side ran (b.json's seed 2) does not pair.
    assert pooled.pairs(files, "rlsweep", "zoo") == [(200.0, 40.0, False, True), (200.0, 190.0, False, True),
                                                     (30.0, 200.0, True, False)]
    # The boundary: solved at exactly the cap counts as solved.
    assert pooled.censored({"time_s": 200.0, "solved": True}, 200.0) == (200.0, True)
    assert pooled.censored({"time_s": 200.01, "solved": True}, 200.0) == (200.0, False)


def test_a_side_twice_as_fast_on_every_seed_is_exactly_half_and_settles_the_bars(tmp_path):
    zoo = [17.0, 40.0, 66.0, 90.0, 150.0, 31.0]
    runs = [r for seed, t in enumerate(zoo) for r in (("rlsweep", seed, t / 2, True), ("zoo", seed, t, True))]
    files = pooled.load([results_file(tmp_path, "a.json", runs)])
    result = pooled.compare(files, "zoo", bars=(0.5, 0.49, 1.0))
    assert result["ratio_of_medians"] == 0.5
    assert result["ratio_95_interval"] == [0.5, 0.5]  # every resample pairs the seeds, so every ratio is 0.5
    assert result["bars"] == {"0.5": "met", "0.49": "not met", "1": "met"}
    assert result["first_on"] == {"rlsweep": 6, "zoo": 0, "ties": 0}
    assert result["sign_test_p"] == pytest.approx(2 * 0.5 ** 6)
    assert result["solved"] == {"rlsweep": 6, "zoo": 6}


def test_a_spread_of_seeds_leaves_the_bar_unsettled_and_unsolved_pairs_tie(tmp_path):
    runs = [("rlsweep", 0, 20.0, True), ("zoo", 0, 100.0, True), ("rlsweep", 1, 120.0, True), ("zoo", 1, 10.0, True),
            ("rlsweep", 2, 50.0, True), ("zoo", 2, 60.0, True), ("rlsweep", 3, 200.0, False), ("zoo", 3, 200.0, False),
            ("rlsweep", 4, 35.0, True), ("zoo", 4, 200.0, False)]
    result = pooled.compare(pooled.load([results_file(tmp_path, "a.json", runs)]), "zoo", bars=(0.5, 1.0))
    assert result["median_s"] == {"rlsweep": 50.0, "zoo": 100.0}
    assert result["ratio_of_medians"] == 0.5
    low, high = result["ratio_95_interval"]
    assert low < 0.5 < 1.0 < high
    assert result["bars"] == {"0.5": "unsettled", "1": "unsettled"}
    assert result["first_on"] == {"rlsweep": 3, "zoo": 1, "ties": 1}
    # Seeded: the same files give the same interval.
    assert pooled.compare(pooled.load([results_file(tmp_path, "a.json", runs)]), "zoo")["ratio_95_interval"] == [low, high]


def test_launch_to_first_result_compares_where_both_sides_recorded_it(tmp_path):
    runs = [r for seed, (mine, theirs) in enumerate([(9.0, 10.0), (12.0, 13.0), (10.0, 9.0), (11.0, 15.0)])
            for r in (("rlsweep", seed, 30.0, True), ("raw-tune", seed, 60.0, True), ("zoo", seed, 50.0, True))]
    path = results_file(tmp_path, "a.json", runs)
    document = json.loads(path.read_text())
    marks = {(0, "rlsweep"): 9.0, (0, "raw-tune"): 10.0, (1, "rlsweep"): 12.0, (1, "raw-tune"): 13.0,
             (2, "rlsweep"): 10.0, (2, "raw-tune"): 9.0, (3, "rlsweep"): 11.0, (3, "raw-tune"): 15.0}
    for run in document["runs"]:
        if (run["seed"], run["side"]) in marks:
            run["startup"] = {"first_result_s": [marks[run["seed"], run["side"]], 99.0]}  # the first trial's counts
    document["runs"].append({"side": "rlsweep", "seed": 4, "time_s": 5.0, "solved": True, "startup": {"first_result_s": [1.0]}})
    path.write_text(json.dumps(document))
    files = pooled.load([path])
    tune = pooled.compare(files, "raw-tune", bars=(1.0,))["first_result"]
    assert tune["seeds"] == 4  # seed 4 has no hand-written Tune run
    assert tune["median_s"] == {"rlsweep": 10.5, "raw-tune": 11.5}
    assert tune["ratio_of_medians"] == round(10.5 / 11.5, 3)
    low, high = tune["ratio_95_interval"]
    # Between the point and the widest a resample can reach (the smallest over the largest and back).
    assert 9.0 / 15.0 <= low < 10.5 / 11.5 < high <= 12.0 / 9.0
    assert tune["bars"] == {"1": pooled.verdict(low, high, 1.0)}
    assert pooled.compare(files, "zoo")["first_result"] is None  # rl-baselines3-zoo records no trial results


def test_a_bar_is_met_only_under_the_whole_interval():
    assert pooled.verdict(0.3, 0.5, 0.5) == "met"
    assert pooled.verdict(0.3, 0.51, 0.5) == "unsettled"
    assert pooled.verdict(0.5, 0.9, 0.5) == "unsettled"
    assert pooled.verdict(0.51, 0.9, 0.5) == "not met"


def test_files_of_different_work_or_too_few_seeds_are_refused_with_the_file_and_field(tmp_path, capsys):
    a = results_file(tmp_path, "a.json", [("rlsweep", 0, 20.0, True), ("zoo", 0, 30.0, True)])
    b = results_file(tmp_path, "b.json", [("rlsweep", 1, 20.0, True), ("zoo", 1, 30.0, True)], env_steps=100000)
    with pytest.raises(pooled.PoolError, match=r"b\.json: setup\.env_steps is 100000, .*a\.json has 50000"):
        pooled.load([a, b])
    with pytest.raises(pooled.PoolError, match="ran together on 1 seed"):
        pooled.compare(pooled.load([a]), "zoo")
    assert pooled.main([str(a), str(b), "--name", "x", "--out-dir", str(tmp_path / "out")]) == 2
    assert "setup.env_steps" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_command_writes_the_files_it_pooled_and_their_commits(tmp_path, capsys):
    runs = [r for seed in range(4) for r in (("rlsweep", seed, 10.0 + seed, True), ("zoo", seed, 40.0 + seed, True))]
    a = results_file(tmp_path, "a.json", runs)
    assert pooled.main([str(a), "--name", "demo", "--against", "zoo", "--out-dir", str(tmp_path / "out")]) == 0
    assert "rlsweep / zoo: 0.28 over 4 seeds" in capsys.readouterr().out
    (written,) = (tmp_path / "out").glob("pooled-demo-*.json")
    document = json.loads(written.read_text())
    assert document["files"] == [{"file": "a.json", "commit": "abc", "seeds": [0, 1, 2, 3], "condition": None, "note": None}]
    assert [c["against"] for c in document["comparisons"]] == ["zoo"]
