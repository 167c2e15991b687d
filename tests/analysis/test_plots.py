"""The plots a sweep saves show something, and show every trial: each PNG is decoded and its pixels
counted, on an experiment directory written by hand (as Tune lays one out), so which trials must appear
is known."""

from __future__ import annotations


import numpy as np
import pytest

from rlsweep.analysis import load
from rlsweep.analysis._plots import save_plots
from tests.experiments import new_experiment, write_trial

#: Five trials: lr, hidden layers, returns per 1000 env steps (the last one stopped early, at 2000).
TRIALS = {
    "aaaa": (1.0e-4, [16], [10, 40, 70, 100]),
    "bbbb": (3.0e-4, [32, 32], [15, 60, 110, 200]),
    "cccc": (1.0e-3, [16], [5, 100, 200, 300]),
    "dddd": (2.0e-3, [32, 32], [50, 150, 250, 400]),
    "eeee": (3.0e-3, [16], [0, -5]),
}


@pytest.fixture
def experiment(tmp_path):
    root = new_experiment(tmp_path / "exp", sweep_id="plots")
    for trial_id, (lr, hiddens, returns) in TRIALS.items():
        config = {"training.lr": lr, "rl_module.model_config.fcnet_hiddens": hiddens}
        # eeee ended (a scheduler's stop) at 2,000 of the 4,000 env steps.
        write_trial(root, trial_id, returns, config=config, config_in_rows=True, done=trial_id == "eeee")
    return root


def _pixels(path):
    from matplotlib import image

    rgb = image.imread(str(path))[..., :3].astype(float)
    assert rgb.ndim == 3 and rgb.shape[0] > 100 and rgb.shape[1] > 100
    return rgb


def _hue_clusters(rgb, min_pixels: int = 30) -> list[tuple[float, float]]:
    """The separate hues the image is drawn in: saturated pixels binned by hue (5 degree bins), runs of
    bins holding at least ``min_pixels`` merged, around the circle. Greys, black text and white are left
    out, and so are the few mixed pixels where two lines cross."""
    from matplotlib.colors import rgb_to_hsv

    hsv = rgb_to_hsv(np.clip(rgb, 0, 1))
    coloured = (hsv[..., 1] > 0.2) & (hsv[..., 2] > 0.2)
    counts, edges = np.histogram(hsv[..., 0][coloured] * 360, bins=72, range=(0, 360))
    strong = counts >= min_pixels
    clusters: list[list[int]] = []
    for i in range(len(counts)):
        if strong[i]:
            if clusters and clusters[-1][-1] == i - 1:
                clusters[-1].append(i)
            else:
                clusters.append([i])
    if len(clusters) > 1 and clusters[0][0] == 0 and clusters[-1][-1] == len(counts) - 1:
        clusters[0] = clusters.pop() + clusters[0]
    return [(edges[c[0]], edges[c[-1] + 1]) for c in clusters]


def _not_blank(rgb):
    grey = rgb.mean(axis=2)
    assert grey.std() > 0.05, "the image is (nearly) one flat colour"
    assert (grey < 0.5).mean() > 0.001, "nothing dark is drawn (no text, no axes)"
    assert len(np.unique((rgb * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 20


@pytest.fixture
def plots(experiment, tmp_path):
    paths = save_plots(load(experiment), tmp_path / "plots")
    return {p.name: p for p in paths}


def test_learning_curves_draw_one_coloured_line_per_trial(plots):
    rgb = _pixels(plots["learning_curves.png"])
    _not_blank(rgb)
    # Matplotlib's colour cycle gives each trial's line its own hue (blue, orange, green, red, purple).
    hues = _hue_clusters(rgb)
    assert len(hues) == len(TRIALS), hues


def test_parallel_coordinates_draw_one_line_per_trial_coloured_by_its_score(plots):
    rgb = _pixels(plots["parallel_coordinates.png"])
    _not_blank(rgb)
    # Best returns 100, 200, 300, 400 and 0, scaled to [0, 1] (0.25, 0.5, 0.75, 1, 0) and coloured with
    # viridis: five hues (blue, teal, green, yellow, purple), one per trial.
    hues = _hue_clusters(rgb)
    assert len(hues) == len(TRIALS), hues
    # The best trial's line is viridis' top (yellow, hue ~54 degrees); the worst one's its bottom (purple).
    assert any(lo <= 54 <= hi for lo, hi in hues) and any(lo <= 287 <= hi for lo, hi in hues), hues


def test_parameter_importance_draws_bars(plots):
    rgb = _pixels(plots["param_importance.png"])
    _not_blank(rgb)
    # Two searched parameters that varied over five finished trials: one bar each, in the default blue.
    hues = _hue_clusters(rgb, min_pixels=200)
    assert len(hues) == 1 and hues[0][0] <= 205 <= hues[0][1], hues


def test_a_sweep_whose_trials_all_scored_the_same_still_gets_its_plots(tmp_path):
    # fANOVA cannot rank parameters when the score never varies; the export must not fail on it.
    from rlsweep.analysis._plots import param_importance

    root = new_experiment(tmp_path / "exp")
    for i in range(4):
        write_trial(root, f"t{i}", [10.0, 10.0], config={"training.lr": 0.001 * (i + 1)})
    sweep = load(root)
    assert param_importance(sweep) == {}
    saved = save_plots(sweep, tmp_path / "plots")
    assert all(p.stat().st_size > 0 for p in saved)


# --- the figures themselves, by content ------------------------------------------------------------


def _labelled_lines(axes):
    return {line.get_label(): line for line in axes.get_lines()}


def test_learning_curves_have_a_line_per_trial_against_env_steps_and_mark_the_trial_stopped_early(experiment):
    figure = load(experiment).plot("curves")
    (axes,) = figure.axes
    lines = _labelled_lines(axes)
    assert set(TRIALS) <= set(lines)
    for trial_id, (_, _, returns) in TRIALS.items():
        assert list(lines[trial_id].get_ydata()) == returns
        assert list(lines[trial_id].get_xdata()) == [1000 * (i + 1) for i in range(len(returns))]
    # Only eeee stopped before the budget (at 2000 env steps): one x, where its line ends, in its colour.
    stops = [line for label, line in lines.items() if label.startswith("_stopped")]
    assert [s.get_label() for s in stops] == ["_stopped eeee"]
    assert stops[0].get_marker() == "x" and list(stops[0].get_xdata()) == [2000] and list(stops[0].get_ydata()) == [-5]
    assert stops[0].get_color() == lines["eeee"].get_color()
    assert axes.get_xlabel() == "env steps" and axes.get_ylabel() == "return_mean"


@pytest.mark.parametrize("mode", ["max", "min"])
def test_the_curves_of_a_sweep_of_many_trials_are_their_spread_and_the_best_trials_lines(tmp_path, mode):
    """Above MANY_CURVES trials a line each would take seconds per thousand to draw and hide each other: the
    trials' spread at each env step (bands of the middle 50% and 80%, a median line) and the best MANY_BEST
    trials under the metric's mode (by the mean of their last 3 results, the default rule) as lines, each
    stopped one ending in an x; the title counts the trials and the stops (a trial still running is none)."""
    import numpy as np
    from matplotlib.collections import PolyCollection

    from rlsweep.analysis._plots import MANY_BEST, MANY_CURVES
    from tests.conftest import TINY_SPEC

    spec = {**TINY_SPEC, "metric": {**TINY_SPEC.get("metric", {"name": "return_mean"}), "mode": mode}}
    root = new_experiment(tmp_path / "exp", spec, sweep_id="many")
    count = MANY_CURVES + 1
    returns = {f"{i:05d}": [i, i + 1] if i % 3 == 0 else [i, i + 1, i + 2, i + 3] for i in range(count)}
    for i, (trial_id, values) in enumerate(returns.items()):
        # Every third one ends at 2,000 of the 4,000 env steps: half of them stopped there, half still running.
        write_trial(root, trial_id, values, config={"training.lr": 1e-3}, done=i % 6 == 0)
    sweep = load(root)
    (axes,) = sweep.plot("curves").axes
    lines = _labelled_lines(axes)
    ranked = sorted(returns, key=lambda t: -np.mean(returns[t][-3:]) if mode == "max" else np.mean(returns[t][-3:]))
    assert [label for label in lines if label != "median" and not label.startswith("_")] == ranked[:MANY_BEST]
    for trial_id in ranked[:MANY_BEST]:
        assert list(lines[trial_id].get_ydata()) == returns[trial_id]
    stops = sorted(label.removeprefix("_stopped ") for label in lines if label.startswith("_stopped"))
    states = {t.trial_id: t.state for t in sweep.trials}
    assert stops == sorted(t for t in ranked[:MANY_BEST] if len(returns[t]) == 2 and states[t] == "TERMINATED") and stops
    # The median of the trials training at each step: at 2,000 every trial (i + 1), at 4,000 the ones that ran
    # to the budget (i + 3); between results a trial's curve is interpolated.
    median = dict(zip(lines["median"].get_xdata().tolist(), lines["median"].get_ydata().tolist()))
    assert median[2000.0] == np.median([i + 1 for i in range(count)])
    assert median[4000.0] == np.median([i + 3 for i in range(count) if i % 3])
    assert median[2500.0] == np.median([i + 1.5 for i in range(count) if i % 3])
    assert len([c for c in axes.collections if isinstance(c, PolyCollection)]) == 2
    assert f"of {count:,} trials ({len(range(0, count, 6))} stopped before the budget)" in axes.get_title()


def test_the_spread_of_many_curves_counts_trials_that_report_rarely_and_leaves_out_points_few_trials_reach():
    """A trial whose results fall between the spread's points still counts (its last result in a span is its
    value at the span's end); a point fewer than MIN_SPREAD trials reach is a gap, not a band of one trial."""
    from matplotlib.figure import Figure

    from rlsweep.analysis._plots import MIN_SPREAD, SPREAD_POINTS, _many_curves

    axes = Figure().subplots()
    budget = SPREAD_POINTS * 1000  # a point every 1,000 env steps
    # Two results each, at 4,100 and 4,900 env steps (between the points at 4,000 and 5,000); one trial with
    # one result there and one at the budget.
    curves = [(f"t{i}", [4100, 4900], [float(i), 10.0 + i]) for i in range(MIN_SPREAD)]
    curves.append(("long", [4100, budget], [9.0, 50.0]))
    _many_curves(axes, curves, budget, "max")
    median = dict(zip(axes.get_lines()[0].get_xdata().tolist(), axes.get_lines()[0].get_ydata().tolist()))
    assert median[5000.0] == 11.5  # the median of 10..14 and 9: each trial's last result in the span up to 5,000
    assert all(value != value for x, value in median.items() if x != 5000.0)  # NaN: one trial or none there


def test_parallel_coordinates_have_a_line_per_trial_coloured_by_its_best_score(experiment):
    import matplotlib

    figure = load(experiment).plot("parallel")
    (axes,) = figure.axes
    lines = _labelled_lines(axes)
    assert set(lines) == set(TRIALS)
    viridis = matplotlib.colormaps["viridis"]
    # dddd scored best (400), eeee worst (0): the top and the bottom of the colour map.
    assert tuple(lines["dddd"].get_color()) == viridis(1.0) and tuple(lines["eeee"].get_color()) == viridis(0.0)
    # Axes: lr, the hidden layers, then the score; each line ends at its scaled score.
    assert [t.get_text() for t in axes.get_xticklabels()][-1] == "return_mean_best"
    assert lines["dddd"].get_ydata()[-1] == 1.0 and lines["eeee"].get_ydata()[-1] == 0.0


@pytest.mark.parametrize("mode", ["max", "min"])
def test_the_parallel_plot_of_many_trials_is_one_collection_the_best_on_top_in_yellow(tmp_path, mode):
    """Above MANY_CURVES trials, a line and a label each took seconds a thousand (12 s of an export at 10,000):
    one collection holds a line per trial, coloured from the worst score to the best under the metric's mode,
    the best drawn last."""
    import matplotlib
    from matplotlib.collections import LineCollection

    from rlsweep.analysis._plots import MANY_CURVES
    from tests.conftest import TINY_SPEC

    spec = {**TINY_SPEC, "metric": {**TINY_SPEC.get("metric", {"name": "return_mean"}), "mode": mode}}
    root = new_experiment(tmp_path / "exp", spec, sweep_id="many")
    count = MANY_CURVES + 1
    for index in range(count):
        write_trial(root, f"{index:05d}", [index, index + 1], config={"training.lr": 1e-4 * (1 + index)})
    (axes,) = load(root).plot("parallel").axes
    (lines,) = [c for c in axes.collections if isinstance(c, LineCollection)]
    segments = lines.get_segments()
    assert len(segments) == count and axes.get_lines() == []
    viridis = matplotlib.colormaps["viridis"]
    # The last trial scored highest (count), the first lowest (1): its lr is the largest, so it ends at 1 on the
    # lr axis; each line ends at its scaled score.
    best, worst = (segments[-1], segments[0])
    assert best[:, 1].tolist() == ([1.0, 1.0] if mode == "max" else [0.0, 0.0])
    assert worst[:, 1].tolist() == ([0.0, 0.0] if mode == "max" else [1.0, 1.0])
    assert tuple(lines.get_colors()[-1]) == pytest.approx(viridis(1.0)[:3] + (0.5,))
    assert tuple(lines.get_colors()[0]) == pytest.approx(viridis(0.0)[:3] + (0.5,))


def test_importance_has_a_bar_per_parameter_that_varied(experiment):
    figure = load(experiment).plot("importance")
    (axes,) = figure.axes
    names = [t.get_text() for t in axes.get_yticklabels()]
    assert sorted(names) == ["rl_module.model_config.fcnet_hiddens", "training.lr"]
    widths = [bar.get_width() for bar in axes.patches]
    assert len(widths) == 2 and sum(widths) == pytest.approx(1.0)


def test_the_confirmation_figure_shows_each_seed_and_the_interval():
    from rlsweep.analysis._confirm import summarize
    from rlsweep.analysis._plots import confirmation_figure
    from tests.analysis.test_confirm import plan_of

    # Skewed scores: each interval is lopsided around its IQM, so a bar drawn symmetric or flipped shows.
    seeds = (1000, 1001, 1002, 1003, 1004)
    scores = {"a": dict(zip(seeds, [10.0, 12.0, 11.0, 30.0, 10.5])), "b": dict(zip(seeds, [5.0, 9.0, 7.0, 6.0, 20.0]))}
    result = summarize(plan_of("a", "b", seeds=seeds), scores, missing={})  # what the confirmation file holds
    (axes,) = confirmation_figure(result).axes
    dots = [c for c in axes.collections if c.get_offsets().shape[1] == 2 and len(c.get_offsets()) == 5]
    assert len(dots) == 2
    assert sorted(float(y) for y in dots[0].get_offsets()[:, 1]) == sorted(scores["a"].values())
    assert [t.get_text() for t in axes.get_xticklabels()] == ["a", "b"]
    # Each configuration's bar: at its IQM, from its ci_low to its ci_high; the winner's in red.
    bars = axes.containers
    assert len(bars) == 2
    for x, (row, bar) in enumerate(zip(result["configurations"], bars)):
        marker, _, (vertical,) = bar.lines
        assert marker.get_xydata().tolist() == [[x, pytest.approx(row["iqm"])]]
        (segment,) = vertical.get_segments()
        assert segment.tolist() == [[x, pytest.approx(row["ci_low"])], [x, pytest.approx(row["ci_high"])]]
        assert row["ci_high"] - row["iqm"] > 2 * (row["iqm"] - row["ci_low"])  # lopsided indeed
    assert bars[0].lines[0].get_color() == "tab:red" and result["winner"] == "a"


def test_an_unknown_kind_and_an_unconfirmed_sweep_are_refused_saying_what_to_do(experiment):
    from rlsweep.errors import UsageError

    with pytest.raises(UsageError, match="expected one of curves, parallel, importance, confirmation"):
        load(experiment).plot("pie")
    with pytest.raises(UsageError, match="rlsweep confirm"):
        load(experiment).plot("confirmation")


@pytest.mark.parametrize("kind", ["curves", "parallel", "importance"])
def test_a_sweep_without_a_result_is_refused_saying_so(tmp_path, kind, capsys):
    from rlsweep.cli import main
    from rlsweep.errors import UsageError

    root = new_experiment(tmp_path / "exp", sweep_id="empty")
    with pytest.raises(UsageError, match="has no trial result yet: nothing to plot"):
        load(root).plot(kind)
    assert main(["plot", str(root), "--kind", kind, "-o", str(tmp_path / "x.png")]) != 0
    assert "nothing to plot" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_rlsweep_plot_writes_the_figure_to_the_file_named(experiment, tmp_path):
    from rlsweep.cli import main

    out = tmp_path / "curves.png"
    assert main(["plot", str(experiment), "--kind", "curves", "-o", str(out)]) == 0
    rgb = _pixels(out)
    _not_blank(rgb)
    assert len(_hue_clusters(rgb)) == len(TRIALS)


def test_sweep_and_best_render_as_html_tables_in_a_notebook(experiment):
    sweep = load(experiment)
    page = sweep._repr_html_()
    assert page.count("<table") == 1 and all(trial_id in page for trial_id in TRIALS)
    assert "5 trials" in page and "best: <b>" in page
    best = sweep.best()
    card = best._repr_html_()
    assert best.trial_id in card and "training.lr" in card and "<table>" in card


def test_the_spread_of_many_curves_reads_a_pbt_trial_that_went_back_in_env_steps_in_env_step_order():
    """A PBT trial that took another's checkpoint can report fewer env steps than before; its curve enters the
    spread in env-step order, not as a line that doubles back."""
    from matplotlib.figure import Figure

    from rlsweep.analysis._plots import MIN_SPREAD, _many_curves

    axes = Figure().subplots()
    # Results at 1,000, then 3,000, then (restored from a checkpoint) 2,000 and 4,000 env steps.
    best = _many_curves(axes, [("pbt", [1000, 3000, 2000, 4000], [0.0, 100.0, 10.0, 30.0])] * MIN_SPREAD, 4000, "max")
    median = dict(zip(axes.get_lines()[0].get_xdata().tolist(), axes.get_lines()[0].get_ydata().tolist()))
    assert [median[x] for x in (1500.0, 2000.0, 2500.0, 3000.0, 3500.0)] == [5.0, 10.0, 55.0, 100.0, 65.0]
    assert [name for name, _, _ in best] == ["pbt"] * MIN_SPREAD
