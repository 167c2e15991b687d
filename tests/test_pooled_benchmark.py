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
    short = results_file(tmp_path, "b.json", [("rlsweep", 3, 30.0, True), ("zoo", 3, 200.0, False),
                                               ("rlsweep", 4, 10.0, True),  # seed 4: one side only
                                               ("rlsweep", 5, 106.4, False), ("zoo", 5, 60.0, True)], cap=200.0)
    files = pooled.load([long, short])
    assert pooled.common_cap(files) == 200.0
    # Solved at 250 s with a 300 s cap is not solved by the 200 s the pool uses; a sweep that ran out of trials
    # unsolved at 106.4 s counts as the cap too; a seed only one side ran does not pair.
    assert pooled.pairs(files, "rlsweep", "zoo") == [(200.0, 40.0, False, True), (200.0, 190.0, False, True),
                                                     (30.0, 200.0, True, False), (200.0, 60.0, False, True)]
    # The boundary: solved at exactly the cap counts as solved.
    assert pooled.censored({"time_s": 200.0, "solved": True}, 200.0) == (200.0, True)
    assert pooled.censored({"time_s": 200.01, "solved": True}, 200.0) == (200.0, False)


def test_a_side_twice_as_fast_on_every_seed_is_exactly_half_and_settles_the_bars(tmp_path):
    zoo = [17.0, 40.0, 66.0, 90.0, 150.0, 31.0]
    runs = [r for seed, t in enumerate(zoo) for r in (("rlsweep", seed, t / 2, True), ("zoo", seed, t, True))]
    files = pooled.load([results_file(tmp_path, "a.json", runs)])
    result = pooled.compare(files, "zoo", bars=(0.5, 0.51, 0.49, 1.0))
    assert result["ratio_of_medians"] == 0.5
    assert result["ratio_95_interval"] == [0.5, 0.5]  # every resample pairs the seeds, so every ratio is 0.5
    # An interval that reaches the bar does not meet it.
    assert result["bars"] == {"0.5": "unsettled", "0.51": "met", "0.49": "not met", "1": "met"}
    assert result["first_on"] == {"rlsweep": 6, "zoo": 0, "ties": 0}
    assert result["sign_test_p"] == pytest.approx(2 * 0.5 ** 6)
    assert result["solved"] == {"rlsweep": 6, "zoo": 6}


def test_a_spread_of_seeds_leaves_the_bar_unsettled_and_unsolved_pairs_tie(tmp_path):
    runs = [("rlsweep", 0, 20.0, True), ("zoo", 0, 100.0, True), ("rlsweep", 1, 120.0, True), ("zoo", 1, 10.0, True),
            ("rlsweep", 2, 50.0, True), ("zoo", 2, 60.0, True), ("rlsweep", 3, 200.0, False), ("zoo", 3, 200.0, False),
            ("rlsweep", 4, 35.0, True), ("zoo", 4, 200.0, False)]
    result = pooled.compare(pooled.load([results_file(tmp_path, "a.json", runs)]), "zoo", bars=(0.5, 1.0))
    assert result["median_s"] == {"rlsweep": 50.0, "zoo": 100.0}
    assert result["solved"] == {"rlsweep": 4, "zoo": 3}
    assert result["ratio_of_medians"] == 0.5
    low, high = result["ratio_95_interval"]
    assert low < 0.5 < 1.0 < high
    assert result["bars"] == {"0.5": "unsettled", "1": "unsettled"}
    assert result["first_on"] == {"rlsweep": 3, "zoo": 1, "ties": 1}
    assert result["sign_test_p"] == pytest.approx(0.625)  # 3 of 4 decided seeds: the tie is left out
    # Seeded: the same files give the same interval.
    assert pooled.compare(pooled.load([results_file(tmp_path, "a.json", runs)]), "zoo")["ratio_95_interval"] == [low, high]


def test_every_run_at_the_cap_shows_nothing(tmp_path):
    runs = [r for seed in range(5) for r in (("rlsweep", seed, 240.0, False), ("zoo", seed, 250.0, False))]
    result = pooled.compare(pooled.load([results_file(tmp_path, "a.json", runs, cap=240.0)]), "zoo", bars=(1.0,))
    assert result["ratio_95_interval"] == [1.0, 1.0]
    assert result["bars"] == {"1": "unsettled"}  # two medians at the cap are not "no later"
    assert result["first_on"] == {"rlsweep": 0, "zoo": 0, "ties": 5} and result["sign_test_p"] == 1.0
    # One side at the cap throughout, the other spread: the interval is still resampled.
    spread = [r for seed, t in enumerate([40.0, 90.0, 240.0, 300.0, 60.0])
              for r in (("rlsweep", seed, 240.0, False), ("zoo", seed, t, t < 240))]
    low, high = pooled.compare(pooled.load([results_file(tmp_path, "b.json", spread, cap=240.0)]), "zoo")["ratio_95_interval"]
    assert low < 240.0 / 90.0 < high


def test_launch_to_first_result_compares_where_both_sides_recorded_it(tmp_path):
    firsts = [(9.0, 10.0), (12.0, 13.0), (10.0, 9.0), (11.0, 15.0), (10.0, 12.0)]
    runs = [r for seed in range(len(firsts)) for r in (("rlsweep", seed, 30.0, True), ("raw-tune", seed, 60.0, True),
                                                        ("zoo", seed, 50.0, True))]
    path = results_file(tmp_path, "a.json", runs)
    document = json.loads(path.read_text())
    for run in document["runs"]:
        if run["side"] != "zoo":
            mark = firsts[run["seed"]][run["side"] == "raw-tune"]
            run["startup"] = {"first_result_s": [mark, 99.0]}  # the later trials' first results follow
    document["runs"].append({"side": "rlsweep", "seed": 5, "time_s": 5.0, "solved": True, "startup": {"first_result_s": [1.0]}})
    path.write_text(json.dumps(document))
    files = pooled.load([path])
    tune = pooled.compare(files, "raw-tune", bars=(0.55, 1.0, 1.4))["first_result"]
    assert tune["seeds"] == 5  # seed 5 has no hand-written Tune run
    assert tune["median_s"] == {"rlsweep": 10.0, "raw-tune": 12.0}
    assert tune["ratio_of_medians"] == round(10.0 / 12.0, 4)
    low, high = tune["ratio_95_interval"]
    # Between the point and the widest a resample can reach (the smallest over the largest and back).
    assert 9.0 / 15.0 <= low < 10.0 / 12.0 < high <= 12.0 / 9.0
    assert tune["bars"]["0.55"] == "not met" and tune["bars"]["1.4"] == "met"
    assert pooled.compare(files, "zoo")["first_result"] is None  # rl-baselines3-zoo records no trial results


def test_a_bar_is_met_only_under_the_whole_interval():
    assert pooled.verdict(0.3, 0.4999, 0.5) == "met"
    assert pooled.verdict(0.3, 0.5, 0.5) == "unsettled"
    assert pooled.verdict(0.5, 0.9, 0.5) == "unsettled"
    assert pooled.verdict(0.5001, 0.9, 0.5) == "not met"


def test_files_that_cannot_pool_are_refused_with_the_file_and_the_reason(tmp_path, capsys):
    five = [r for seed in range(5) for r in (("rlsweep", seed, 20.0, True), ("zoo", seed, 30.0, True))]
    a = results_file(tmp_path, "a.json", five)
    b = results_file(tmp_path, "b.json", [("rlsweep", 9, 20.0, True), ("zoo", 9, 30.0, True)], env_steps=100000)
    with pytest.raises(pooled.PoolError, match=r"b\.json: setup\.env_steps is 100000, .*a\.json has 50000"):
        pooled.load([a, b])
    with pytest.raises(pooled.PoolError, match=r"a\.json: seed 0 is also in .*a\.json; a seed pools once"):
        pooled.load([a, a])
    again = results_file(tmp_path, "c.json", [("rlsweep", 4, 20.0, True), ("zoo", 4, 30.0, True)])
    with pytest.raises(pooled.PoolError, match=r"c\.json: seed 4 is also in .*a\.json"):
        pooled.load([a, again])
    cut = tmp_path / "f.json"
    cut.write_text(json.dumps({"setup": SETUP, "runs": [{"side": "rlsweep", "seed": 1, "time_s": 20.0}]}))
    with pytest.raises(pooled.PoolError, match=r"f\.json: a run without seed, side, solved, time_s"):
        pooled.load([cut])
    twice = results_file(tmp_path, "d.json", [("rlsweep", 1, 20.0, True), ("rlsweep", 1, 25.0, True)])
    with pytest.raises(pooled.PoolError, match=r"d\.json: side 'rlsweep' ran seed 1 twice"):
        pooled.load([twice])
    with pytest.raises(pooled.PoolError, match="ran together on 4 seed.*needs 5 or more"):
        pooled.compare(pooled.load([results_file(tmp_path, "e.json", five[:8])]), "zoo")
    with pytest.raises(pooled.PoolError, match="rlsweep and raw-tune ran together on 0 seed"):
        pooled.compare(pooled.load([a]), "raw-tune")
    assert pooled.main([str(a), str(b), "--name", "x", "--out-dir", str(tmp_path / "out")]) == 2
    assert "setup.env_steps" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_command_writes_the_files_it_pooled_and_their_commits(tmp_path, capsys):
    runs = [r for seed in range(5) for r in (("rlsweep", seed, 10.0 + seed, True), ("zoo", seed, 40.0 + seed, True))]
    a = results_file(tmp_path, "a.json", runs)
    assert pooled.main([str(a), "--name", "demo", "--against", "zoo", "--out-dir", str(tmp_path / "out")]) == 0
    assert "rlsweep / zoo: 0.29 over 5 seeds" in capsys.readouterr().out
    (written,) = (tmp_path / "out").glob("pooled-demo-*.json")
    document = json.loads(written.read_text())
    assert document["files"] == [{"file": "a.json", "commit": "abc", "seeds": [0, 1, 2, 3, 4], "condition": None, "note": None}]
    assert [c["against"] for c in document["comparisons"]] == ["zoo"]
