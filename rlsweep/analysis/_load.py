"""An experiment directory read back through the store: trials, tables, histories, and the best trial and
checkpoint by a selection rule. Works after the driver exited or crashed, on another machine, and while a
sweep is still writing; needs no Ray runtime."""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rlsweep import store
from rlsweep.analysis._confirm import (
    DEFAULT_SEEDS,
    DEFAULT_TOP,
    ConfirmationPlan,
    confirmation_document,
    no_confirmation,
    plan_confirmation,
    read_confirmation,
    scores_from,
    summarize,
    unusable_confirmation,
)
from rlsweep.analysis._record import markdown as reproducibility_page
from rlsweep.analysis._record import record as reproducibility_record
from rlsweep.analysis._rules import DEFAULT_EVAL_SEEDS, DEFAULT_RULE, EVAL_CANDIDATES, EVAL_EPISODES, Best, SelectionRule
from rlsweep.errors import SpecError, SweepError, UsageError
from rlsweep.metrics import HP_PREFIX, NORMALIZED_METRICS, PER_SEED_PREFIX
from rlsweep.spec import DEFAULT_STORAGE, SweepSpec, parse_spec, parse_yaml
from rlsweep.store import CheckpointRecord, Trial

log = logging.getLogger(__name__)


class Sweep:
    """An experiment directory written by rlsweep. Create with :func:`load`.

    Attributes:
        info: The sweep's info as recorded when it started (id, the searcher and scheduler it ran with).
        damage: What of the sweep could not be read, each naming the file and what is wrong (a trial's
            folder gone, a folder or a FIFO where a file belongs, a confirmation of the wrong shape), each
            also logged as a warning. An answer read without it is incomplete: the CLI exits 1.
    """

    def __init__(
        self, path: Path, spec: SweepSpec, trials: list[Trial], info: Mapping[str, Any], damage: Sequence[str] = ()
    ) -> None:
        self.path = path
        self.spec = spec
        self.trials = trials
        self.info = dict(info)
        self.damage: list[str] = [*damage, *(d for t in trials for d in t.damage)]

    @property
    def sweep_id(self) -> str:
        return str(self.info["sweep_id"])

    @property
    def searcher(self) -> str:
        """The searcher the sweep ran with (the registry's choice where the spec named none)."""
        return str(self.info.get("searcher") or self.spec.searcher.name)

    @property
    def scheduler(self) -> str:
        return str(self.info.get("scheduler") or self.spec.scheduler.name)

    @property
    def experiment_analysis(self) -> Any:
        """Ray Tune's own ``ExperimentAnalysis`` of this directory, with the spec's metric and mode as its
        defaults; rlsweep's normalized names work as ``metric=``.

        Mind Tune's trap: with a checkpoint score attribute set (rlsweep sets the spec's metric),
        ``get_last_checkpoint`` returns the newest of the *kept* checkpoints, which pruning may have made a
        best one rather than the latest. ``get_best_checkpoint`` and :meth:`best` agree (tested).

        Of a finished trial, Tune's saved state keeps the last row and the kept checkpoints' rows without
        RLlib's diagnostics (``rllib/...``) other than the spec's metric and stop keys, so that the driver of
        a large sweep does not hold and save them again for every trial: ``results``, ``best_result`` and
        ``get_best_checkpoint(metric="rllib/...")`` see only those; ``dataframe()``, ``trial_dataframes``
        and :meth:`table` read every row from the trials' ``result.json``.
        """
        from ray.tune import ExperimentAnalysis

        return ExperimentAnalysis(
            str(self.path), default_metric=self.spec.metric.name, default_mode=self.spec.metric.mode
        )

    def has_results(self) -> bool:
        """Whether a trial of the sweep (not a folder Tune's state does not list) has reported."""
        return any(t.row_count for t in self.trials if t.state != store.UNLISTED)

    def held_out(self) -> dict[str, Any] | None:
        """The held-out stage's result (``rlsweep_holdout.json``: the winner chosen on test seeds the search
        never used, its held-out IQM with a 95% interval for 10 new seeds, and its tuning value beside it);
        None where the sweep had no held-out stage or it has not finished. A file that does not read is named
        and makes the answer incomplete."""
        try:
            return store.read_holdout(self.path)
        except SweepError as exc:
            if str(exc) not in self.damage:
                log.warning("%s", exc)
                self.damage.append(str(exc))
            return None

    def unfinished(self) -> list[str]:
        """The trials neither finished nor failed: after the sweep returned, the ones an interruption (Ctrl-C,
        a killed driver) left for ``rlsweep resume`` to continue."""
        return [t.trial_id for t in self.trials
                if t.state not in (store.TERMINATED, store.ERROR, store.MISSING, store.UNREADABLE, store.UNLISTED)]

    def table(self) -> Any:
        """One row per trial: id, state, config columns, training seed (and all its seeds with
        ``seeds.per_trial`` > 1), final and best metric, env steps, error; where a trial's file cannot be read,
        ``unreadable`` names them (their values, a seed or the config, are then unknown, not empty)."""
        import pandas as pd

        metric, mode = self.spec.metric.name, self.spec.metric.mode
        # Where a trial's file cannot be read, its column names them: a seed of None is not one it ran without.
        damaged = any(_damaged_files(t) for t in self.trials)
        records = []
        for trial in self.trials:
            values = [v for v in trial.values(metric) if not math.isnan(v)]
            record: dict[str, Any] = {"trial_id": trial.trial_id, "state": trial.state}
            record.update({f"config/{k}": v for k, v in trial.config.items()})
            record["seed"] = trial.seed
            if self.spec.seeds.per_trial > 1:
                record["seeds"] = trial.seeds
            record[metric] = values[-1] if values else math.nan
            record[f"{metric}_best"] = (max(values) if mode == "max" else min(values)) if values else math.nan
            record["env_steps"] = trial.env_steps
            record["iterations"] = trial.row_count
            record["failures"] = trial.failures
            record["attempts"] = trial.failures + 1 if trial.row_count or trial.state not in (store.PENDING, store.UNLISTED) else 0
            record["ended"] = self._why_ended(trial)
            if damaged:
                record["unreadable"] = ", ".join(_damaged_files(trial)) or None
            record["error"] = trial.error
            records.append(record)
        return pd.DataFrame.from_records(records)

    def _why_ended(self, trial: Trial) -> str | None:
        """Why a trial ended, in a few words (None while it runs or waits)."""
        if trial.state == store.ERROR:
            cause = store.last_error_line(trial.path / store.ERROR_FILE)
            return f"error: {cause}" if cause else "error"
        if trial.state != store.TERMINATED:
            return None
        if trial.diverged:
            return f"diverged at {trial.env_steps} env steps ({trial.diverged})"
        if trial.env_steps >= self.spec.budget.env_steps:
            return "budget"
        # Tune's stop dict: a trial stops once a result's value reaches the threshold.
        if any(isinstance(last := trial.last(k), (int, float)) and last >= v for k, v in self.spec.stop.items()):
            return "stop"
        return "stopped early by the scheduler"

    def plot(self, kind: str = "curves") -> Any:
        """A matplotlib ``Figure``: ``curves`` (the metric against env steps, one line per trial, an x where a
        trial stopped before the budget), ``parallel`` (parameters against the best score, one line per
        finished trial), ``importance`` (fANOVA importance per parameter) or ``confirmation`` (the
        held-out seeds' scores, IQM and 95% interval per configuration). A notebook shows it; save it with
        ``.savefig(path)``."""
        from rlsweep.analysis._plots import figure

        return figure(self, kind)

    def _repr_html_(self) -> str:
        """A compact summary in Jupyter: the sweep, its trials by state, the best so far and the trials'
        table (the config, the final and best metric, env steps)."""
        from html import escape

        states: dict[str, int] = {}
        for trial in self.trials:
            states[trial.state] = states.get(trial.state, 0) + 1
        head = (f"<p><b>{escape(self.spec.name)}</b>: {escape(self.spec.algorithm)} on {escape(self.spec.env)}, searcher "
                f"{escape(self.searcher)}, scheduler {escape(self.scheduler)}; {len(self.trials)} trials "
                f"({', '.join(f'{n} {escape(s.lower())}' for s, n in sorted(states.items()))})</p>")
        table = self.table()
        columns = [c for c in table.columns if c not in ("error", "seeds")]
        table = table[columns].rename(columns=lambda c: c.removeprefix("config/"))
        best = ""
        if self.has_results():
            try:
                chosen = self.best()
                best = (f"<p>best: <b>{escape(chosen.trial_id)}</b>, {escape(chosen.metric)} {chosen.value:.4g} "
                        f"({escape(chosen.rule)})</p>")
            except Exception:  # noqa: BLE001 - a summary must render whatever state the sweep is in
                best = ""
        return head + best + table.to_html(index=False, max_rows=30, float_format=lambda v: f"{v:.4g}")

    def history(self) -> Any:
        """One row per reported iteration of every trial: the normalized metrics, each seed's values
        (``seed/<k>/<name>``, with ``seeds.per_trial`` > 1) and ``hp/...`` values."""
        import pandas as pd

        # Plus the hyperparameters read back from the learner (hp/...): under PBT they change per row.
        hyperparams = sorted({k for t in self.trials for row in t.rows for k in row if k.startswith(HP_PREFIX)})
        per_seed = sorted(
            {k for t in self.trials for row in t.rows for k in row if k.startswith(PER_SEED_PREFIX)},
            key=lambda k: (int(k.split("/")[1]), k),
        )
        columns = ["trial_id", *NORMALIZED_METRICS, *per_seed, *hyperparams]
        records = [
            {"trial_id": t.trial_id, **{k: row.get(k) for k in columns[1:]}} for t in self.trials for row in t.rows
        ]
        return pd.DataFrame.from_records(records, columns=columns)

    def best(self, rule: str | SelectionRule | None = None) -> Best:
        """The best trial under ``rule`` and, of its kept checkpoints, the one that scored best under it.

        Rules: ``last``, ``max``, ``avg-last-N``, ``eval`` (the top 3 trials under ``avg-last-3``
        re-evaluated greedily on fresh seeds, 10 episodes each on 3 seeds; slower), ``confirmed`` (by
        ``rlsweep confirm``'s IQM), ``held-out`` (the held-out stage's winner, its value the IQM on test seeds
        the search never used, with ``interval`` and ``tuning_value`` beside it). The default
        (:meth:`default_rule`): ``held-out`` where the stage finished, else ``avg-last-3``.

        Raises:
            UsageError: an unknown rule.
            SweepError: no trial is a candidate (none reported the metric yet, or each that did is no
                candidate: ended in an error, diverged, not in Tune's state; under ``eval``, none has a
                checkpoint), saying which.
        """
        rule = self.default_rule() if rule is None else rule
        parsed = SelectionRule.parse(rule)
        # By the training metric only the winner's checkpoints are scored (not each of 10,000 trials').
        ranked = self.ranked(parsed) if parsed.kind in ("eval", "confirmed", "held-out") else self._ranked_by_metric(parsed, 1)
        if not ranked:
            raise SweepError(f"{self.path}: {self._why_none_ranked(parsed)}")
        return ranked[0]

    def default_rule(self) -> SelectionRule:
        """``held-out`` where the sweep's held-out stage chose a winner (the answer is the configuration that
        scored best on seeds the search never used, not the luckiest trial), else ``avg-last-3``."""
        stage = self.held_out()
        return SelectionRule("held-out") if stage is not None and stage.get("winner") in {t.trial_id for t in self.trials} else DEFAULT_RULE

    def _why_none_ranked(self, rule: SelectionRule) -> str:
        metric = self.spec.metric.name
        reported = [t for t in self.trials if any(not math.isnan(v) for v in t.values(metric))]
        if not reported:
            return f"no trial has reported {metric!r} yet"
        if rule.kind == "eval" and self.ranked(DEFAULT_RULE):
            return f"no trial that reported {metric!r} has a checkpoint to evaluate (rule eval)"
        causes = {"ended in an error": [t for t in reported if t.state == store.ERROR],
                  "diverged": [t for t in reported if t.state != store.ERROR and t.diverged],
                  f"is {store.UNLISTED} (not in Tune's experiment state)": [t for t in reported if t.state == store.UNLISTED]}
        said = "; ".join(f"{', '.join(t.trial_id for t in trials)} {why}" for why, trials in causes.items() if trials)
        return f"no trial that reported {metric!r} is a candidate for the best: {said}"

    def ranked(self, rule: str | SelectionRule = DEFAULT_RULE, *, top: int | None = None) -> list[Best]:
        """Every trial that reported the metric and did not end in an error, best first under ``rule``, each
        with its best checkpoint; only the first ``top`` where given (by the training metric, only their
        checkpoints are scored). Under ``eval``, only the re-evaluated candidates, by their greedy return
        on fresh seeds."""
        rule = SelectionRule.parse(rule)
        if rule.kind == "eval":
            return self._ranked_by_evaluation()[:top]
        if rule.kind == "confirmed":
            return self._ranked_by_confirmation()[:top]
        if rule.kind == "held-out":
            return self._ranked_by_holdout()[:top]
        return self._ranked_by_metric(rule, top)

    def _ranked_by_metric(self, rule: SelectionRule, top: int | None = None) -> list[Best]:
        """:meth:`ranked` by the training metric; only the first ``top`` with their checkpoints (all: None)."""
        metric, mode = self.spec.metric.name, self.spec.metric.mode
        scored = []
        # A trial that ended in an error (out of retries) or whose config diverged (a NaN loss) is no
        # candidate: a config that blows up is no answer, whatever it scored before. Nor is a folder Tune's
        # state does not list: no trial of this sweep as Tune knows it.
        for trial in (t for t in self.trials if t.state not in (store.ERROR, store.UNLISTED) and not t.diverged):
            values = trial.values(metric)
            score = rule.score(values, len(values) - 1, mode) if values else math.nan
            if not math.isnan(score):
                scored.append((score, trial))
        scored.sort(key=lambda pair: -pair[0] if mode == "max" else pair[0])
        return [self._with_checkpoint(trial, score, rule) for score, trial in scored[:top]]

    def _ranked_by_evaluation(self) -> list[Best]:
        from rlsweep.analysis._evaluate import evaluate_checkpoints

        candidates = [b for b in self.ranked(DEFAULT_RULE) if b.checkpoint is not None][:EVAL_CANDIDATES]
        if not candidates:
            return []
        table = evaluate_checkpoints(self.spec, candidates, episodes=EVAL_EPISODES, seeds=DEFAULT_EVAL_SEEDS)
        by_trial = {b.trial_id: b for b in candidates}
        return [
            replace(
                by_trial[row.trial_id],
                metric="eval_return_mean",
                mode="max",
                rule="eval",
                value=float(row.eval_return_mean),
                checkpoint_value=float(row.eval_return_mean),
            )
            for row in table.itertuples()
        ]

    def _ranked_by_confirmation(self) -> list[Best]:
        """Raises :class:`UsageError` where no confirmation ranks a trial: none ran, or its file (named, with
        what is wrong in it) has none of the sweep's trials with a readable IQM."""
        result = self.confirmation()
        if result is None:
            raise UsageError(no_confirmation(self.path), "--rule")
        by_id = {t.trial_id: t for t in self.trials}
        ranked = [
            replace(
                self._with_checkpoint(by_id[row["trial_id"]], row["iqm"], DEFAULT_RULE),
                metric=str(result["metric"]),
                mode="max",
                rule="confirmed",
                value=float(row["iqm"]),
                interval=(float(row["ci_low"]), float(row["ci_high"])) if row.get("ci_low") is not None and row.get("ci_high") is not None else None,
                tuning_value=float(row["tuning_value"]) if isinstance(row.get("tuning_value"), (int, float)) else None,
            )
            for row in result["configurations"]
            if row["trial_id"] in by_id and row.get("iqm") is not None and not math.isnan(float(row["iqm"]))
        ]
        if not ranked:
            where = str(self.path / store.CONFIRMATION_FILE)
            raise UsageError(unusable_confirmation(self.path, result, set(by_id), [d for d in self.damage if d.startswith(where)]), "--rule")
        return ranked

    def _ranked_by_holdout(self) -> list[Best]:
        """The held-out stage's entrants that are trials of this sweep, its winner first (value: its IQM on
        its test seeds, with the stage's 95% interval for 10 new seeds), then those it dropped, by their IQM
        on the fewer seeds they ran (no interval; a failed run counted at ``holdout.score_range``'s lowest score
        where the stage used it, as the winner's).

        Raises:
            UsageError: no held-out stage finished in the directory.
        """
        stage = self.held_out()
        if stage is None or "winner" not in stage:
            raise UsageError(
                f"{self.path} has no finished held-out stage (a spec's holdout section runs it after the search; "
                f"`rlsweep resume {self.path}` finishes one that was interrupted)", "--rule")
        from rlsweep.seeds import interquartile_mean

        by_id = {t.trial_id: t for t in self.trials}
        metric = str(stage.get("metric", "eval_return_mean"))
        low, high = (float(v) for v in stage["interval"])
        ranked = []
        if stage["winner"] in by_id:
            ranked.append(replace(
                self._with_checkpoint(by_id[stage["winner"]], float(stage["held_out_iqm"]), DEFAULT_RULE),
                metric=metric, mode="max", rule="held-out", value=float(stage["held_out_iqm"]),
                interval=(low, high), tuning_value=float(stage["tuning_value"]),
            ))
        # A failed run counts at a known floor, as in the winner's estimate (and only beside finished ones).
        bounds = stage.get("score_range")
        floor = (float(bounds[0]) if isinstance(bounds, list) and len(bounds) == 2 and isinstance(bounds[0], (int, float))
                 and not stage.get("score_range_ignored") else None)
        others = []
        for entrant in stage.get("candidates") or []:
            trial_id = entrant.get("candidate")
            ran = list((entrant.get("values") or {}).values())
            values = [float(v) for v in ran if v is not None]
            if floor is not None and values:
                values = [floor if v is None else float(v) for v in ran]
            if trial_id == stage["winner"] or trial_id not in by_id or not values:
                continue
            value = interquartile_mean(values)
            others.append(replace(
                self._with_checkpoint(by_id[trial_id], value, DEFAULT_RULE), metric=metric, mode="max", rule="held-out",
                value=value, tuning_value=float(entrant.get("tuning_value", math.nan)),
            ))
        return ranked + sorted(others, key=lambda b: -b.value)

    def confirmation(self) -> dict[str, Any] | None:
        """What ``rlsweep confirm`` measured on held-out seeds (the JSON it printed), or None before it ran
        (or where its file cannot be read). What in the file is of the wrong shape is left out and named
        in a warning and in :attr:`damage`."""
        result, problems = read_confirmation(self.path)
        for problem in problems:
            if problem not in self.damage:
                log.warning("%s", problem)
                self.damage.append(problem)
        return result

    def confirm(
        self,
        top: int = DEFAULT_TOP,
        seeds: int = DEFAULT_SEEDS,
        *,
        rule: str | SelectionRule = DEFAULT_RULE,
        trials: Sequence[str] = (),
        address: str | None = None,
        verbose: int = 1,
        retrain: Callable[..., tuple[Path, int]] | None = None,
    ) -> dict[str, Any]:
        """Retrain the top ``top`` configurations (under ``rule``; or the ``trials`` named) from scratch for the
        full budget on ``seeds`` held-out test seeds (the first of ``seeds.test``, after any the held-out stage chose the winner on), concurrently on the Ray
        runtime or cluster, and score each by the IQM of its final greedy evaluation, with a 95% bootstrap
        interval, each seed's value and the probability of beating each other configuration. The result is
        stored in the directory (``best(rule="confirmed")`` uses it) with the reproducibility record
        (``reproducibility.json`` and ``.md``: spec, strategy, budgets, seeds, the answer with its intervals,
        package versions, machine, the commands that rerun it; the MLflow export attaches both), and returned. Run again with the same
        arguments it resumes; finished runs are not redone.

        Args:
            retrain: What trains the runs (``root, document, plan, *, address, verbose -> (folder, errored)``);
                by default the sweep stage's :func:`rlsweep.sweep.run_confirmation`, which this asks for here,
                when it is called: the analysis reads, the sweep stage trains.

        Raises:
            UsageError: nothing to confirm, ``top`` beyond the finished trials, a named trial that errored, a
                test seed a trial trained with, or a confirmation of other settings already in the directory.
            SweepError: the retraining stopped (Ctrl-C) before every run ended, or no configuration finished on
                two test seeds (the errors are listed); nothing is stored, and the same call continues the runs.
        """
        if retrain is None:
            # The one arrow from the analysis to the sweep stage, taken at call time (tests/test_structure.py).
            from rlsweep.sweep import run_confirmation as retrain
        # Refused before anything runs: a ranking read without a damaged trial may be wrong, and a result
        # that cannot be written would be lost after hours of retraining.
        if damaged := [*self.damage, *store.confirmation_problems(self.path)]:
            raise UsageError(
                f"cannot confirm: {'; '.join(damaged[:3])}{f'; and {len(damaged) - 3} more' if len(damaged) > 3 else ''}. "
                "Nothing was changed; restore or move away what is named, then confirm", "DIR")
        stage = store.read_holdout(self.path)
        spent = [int(s) for s in (stage or {}).get("seeds") or ()]
        plan = plan_confirmation(self, top=top, seeds=seeds, rule=SelectionRule.parse(rule), trials=trials, spent=spent)
        document = confirmation_document(self.info.get("spec") or self.spec.document, plan)
        path, _ = retrain(self.path, document, plan.to_dict(), address=address, verbose=verbose)
        budget = int(document["budget"]["env_steps"])
        bounds = self.spec.holdout.score_range if self.spec.holdout is not None else None
        runs = store.read_trials(path, budget_env_steps=budget)
        if unfinished := _unfinished_runs(runs, plan):
            # Stopped (Ctrl-C) before every run ended: an answer from the seeds that did would be read later as
            # the confirmation; the runs stay, and the same command continues them.
            raise SweepError(
                f"the confirmation stopped before {len(unfinished)} of its {len(plan.candidates) * len(plan.test_seeds)} "
                f"run(s) ended ({', '.join(f'{c} on seed {s}' for c, s in unfinished[:3])}"
                f"{f', and {len(unfinished) - 3} more' if len(unfinished) > 3 else ''}); nothing was stored. Its runs are "
                f"kept in {path}: `{confirm_command(self.path, plan, top=top if not trials else None)}` continues them")
        scores, missing = scores_from(runs, plan, budget, bounds)
        result = summarize(plan, scores, missing=missing)
        if result["winner"] is None:
            lines = "; ".join(f"{c}: {', '.join(m)}" for c, m in missing.items() if m)
            raise SweepError(f"no configuration has a final evaluation on two test seeds ({lines}); the runs are kept "
                             f"in {path}: rerun the same command to continue them")
        result["command"] = confirm_command(self.path, plan, top=top if not trials else None)
        result["created"] = time.time()
        store.write_confirmation(self.path, result)
        rec = reproducibility_record(self, result)
        store.write_reproducibility(self.path, rec, reproducibility_page(rec))
        return result

    def _with_checkpoint(self, trial: Trial, value: float, rule: SelectionRule) -> Best:
        metric, mode = self.spec.metric.name, self.spec.metric.mode
        better = (lambda a, b: a > b) if mode == "max" else (lambda a, b: a < b)
        values = trial.values(metric)
        steps = trial.steps()
        at_checkpoint = rule.at_checkpoint()
        chosen, chosen_value = None, math.nan
        for checkpoint in trial.checkpoints:
            end = max((i for i, s in enumerate(steps) if s <= checkpoint.env_steps), default=-1)
            score = at_checkpoint.score(values, end, mode) if end >= 0 else math.nan
            if math.isnan(score):
                score = float(checkpoint.metrics.get(metric, math.nan))
            if chosen is None or (not math.isnan(score) and (math.isnan(chosen_value) or better(score, chosen_value))):
                chosen, chosen_value = checkpoint, score
        return Best(
            trial_id=trial.trial_id,
            config=dict(trial.config),
            metric=metric,
            mode=mode,
            rule=str(rule),
            value=value,
            env_steps=steps[-1] if steps else 0,
            checkpoint=chosen.path if chosen else None,
            checkpoint_value=None if chosen is None or math.isnan(chosen_value) else chosen_value,
            checkpoint_env_steps=chosen.env_steps if chosen else None,
            trial_path=trial.path,
        )

    def evaluate(
        self,
        top: int = 3,
        *,
        episodes: int = 10,
        seeds: Sequence[int] = DEFAULT_EVAL_SEEDS,
        rule: str | SelectionRule = DEFAULT_RULE,
    ) -> Any:
        """Re-run the best checkpoints of the top ``top`` trials (under ``rule``) greedily on fresh seeds.

        Returns a pandas DataFrame, one row per checkpoint, best evaluated first: ``eval_return_mean``,
        ``eval_return_std`` over all ``episodes x len(seeds)`` episodes, and the mean per seed.
        """
        from rlsweep.analysis._evaluate import evaluate_checkpoints

        return evaluate_checkpoints(self.spec, self.ranked(rule)[:top], episodes=episodes, seeds=seeds)

    def to_mlflow(
        self, tracking_uri: str | None = None, experiment: str | None = None, trial_runs: int | str | None = None
    ) -> str:
        """Log the sweep to MLflow: a parent run with every trial in its ``trials.csv``, and a child run per
        trial, for at most ``trial_runs`` trials (default: the spec's ``mlflow.trial_runs``, 200), the best by
        the metric where there are more ("all": every trial); idempotent. Returns the parent id."""
        from rlsweep.analysis._mlflow import export

        return export(self, tracking_uri=tracking_uri, experiment=experiment, trial_runs=trial_runs)


def _unfinished_runs(runs: Sequence[Trial], plan: ConfirmationPlan) -> list[tuple[str, int]]:
    """The planned (configuration, test seed) runs a confirmation stopped early leaves: still running, pending or
    paused, or never started. A run that ended (finished, failed, or whose files are damaged or gone) is not one:
    rerunning would not change it, and :func:`scores_from` names what is missing of it."""
    waiting = (store.RUNNING, store.PENDING, store.PAUSED)
    seen = {(t.config.get(store.CANDIDATE_KEY), t.config.get(store.TEST_SEED_KEY)): t.state for t in runs}
    return [(c, s) for c in plan.candidates for s in plan.test_seeds if seen.get((c, s), store.PENDING) in waiting]


def confirm_command(path: Path, plan: ConfirmationPlan, *, top: int | None) -> str:
    """The command that reruns (or resumes) this confirmation."""
    chosen = f"--top {top}" if top is not None else " ".join(f"--trial {c}" for c in plan.candidates)
    return f"rlsweep confirm {path} {chosen} --seeds {len(plan.test_seeds)} --rule {plan.rule}"


def load(path: str | Path) -> Sweep:
    """Load an experiment directory written by :func:`rlsweep.run`; or, for a ``str`` that names no file or
    folder, the newest experiment of that sweep name in the default storage (``./rlsweep_results``), as the
    command line does.

    Raises:
        SweepError: the directory is missing or was not written by rlsweep, or a name that names no
            experiment there.
    """
    if isinstance(path, str) and (named := store.experiment_by_name(path, DEFAULT_STORAGE)) is not None:
        path, said = named
        log.info(said)
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        raise SweepError(f"{root}: no such experiment directory")
    info = store.read_sweep_info(root)
    spec, damage = _spec_of(root, info)
    found = store.read_experiment(root, budget_env_steps=spec.budget.env_steps, keys=(spec.metric.name, *spec.stop))
    return Sweep(root, spec, found.trials, info, [*damage, *found.damage])


def _spec_of(root: Path, info: Mapping[str, Any]) -> tuple[SweepSpec, list[str]]:
    """The spec the sweep at ``root`` ran with, and what of the sweep's info could not be read (each named
    in a warning). Results are read with the spec kept in ``rlsweep.json`` (its metric, mode and budget),
    whatever ``rlsweep_spec.yaml`` says now; where that copy is damaged, with the YAML file, which a user
    may have edited since: an answer that says it is incomplete.

    Raises:
        SweepError: neither spec can be read.
    """
    yaml_file = store.spec_file(root)
    try:
        written, unreadable = parse_yaml(store.read_spec_yaml(root), str(yaml_file)), None
    except SweepError as exc:
        written, unreadable = None, exc
    except SpecError as exc:
        written, unreadable = None, SweepError(f"{root}: cannot read the sweep's spec: {exc}")
    kept = store.spec_as_run(info)
    damage = []
    if (problem := store.sweep_info_problem(root, info)) is not None:
        damage.append(problem)
    elif kept is not None:
        spec, problems = parse_spec(kept, ran=True)
        if spec is not None:
            if written is None:
                why = "was removed" if not os.path.lexists(yaml_file) else f"cannot be read ({str(unreadable).removeprefix(f'{root}: ')})"
                log.warning("%s %s; reading the sweep with the spec it ran with, kept in %s", yaml_file, why, store.SWEEP_FILE)
            elif written != kept:
                # Resume refuses the same edit.
                log.warning("%s was edited since the sweep ran; reading the sweep with the spec it ran with, kept in %s",
                            yaml_file, store.SWEEP_FILE)
            return spec, damage
        damage.append(f"{root / store.SWEEP_FILE}: is damaged (the spec kept in it does not read as a spec: "
                      f"{'; '.join(str(p) for p in problems[:3])})")
    if written is None:
        if damage:
            raise SweepError(f"{root}: cannot read the sweep's spec: {damage[0]}; and {unreadable}")
        raise unreadable from None
    spec, problems = parse_spec(written, ran=True)
    if spec is None:
        raise SweepError(f"{yaml_file}: " + "; ".join(str(p) for p in problems))
    for problem in damage:
        log.warning("%s; reading the sweep with %s, which may have been edited since it ran", problem, store.SPEC_FILE)
    return spec, damage


def _damaged_files(trial: Trial) -> list[str]:
    """The files of ``trial`` its damage names, each once, by their path in the trial's folder (damage to the
    folder itself, gone or not Tune's, its state says). Every damage message starts with the path it is about."""
    folder = str(trial.path)
    names = []
    for problem in trial.damage:
        if not problem.startswith(folder + "/"):
            continue
        name = problem[len(folder) + 1 :].split(": ", 1)[0]
        if name not in names:
            names.append(name)
    return names


__all__ = ["CheckpointRecord", "Sweep", "Trial", "load"]
