"""Selection rules: how a trial's history is scored to pick the best trial and checkpoint. A rule is
parsed once, where a user gives it (``--rule avg-last-3``), into a :class:`SelectionRule` value."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rlsweep.errors import UsageError

RULE_HELP = (
    "last | max | avg-last-N (mean of the last N reports; default avg-last-3) | eval (the top 3 by avg-last-3, "
    "re-evaluated greedily on fresh seeds) | confirmed (by the IQM `rlsweep confirm` measured on test seeds) | "
    "held-out (the held-out stage's winner, by its IQM on test seeds the search never used; the default where the "
    "stage ran)"
)
_RULE = re.compile(r"^(last|max|eval|confirmed|held-out|avg-last-([0-9]+))$")  # 0-9: \d takes any script's digits


@dataclass(frozen=True)
class SelectionRule:
    """``last`` (final value), ``max`` (best value ever reported; min for mode min), ``avg-last`` with
    ``n`` (mean of the last n reports, robust to a single noisy peak), ``eval`` (the top trials under the
    default rule re-evaluated greedily on fresh seeds), ``confirmed`` (the configurations ``rlsweep confirm``
    retrained on held-out seeds, by their IQM there), ``held-out`` (the held-out stage's entrants, its
    winner first, by their IQM on its test seeds)."""

    kind: Literal["last", "max", "avg-last", "eval", "confirmed", "held-out"]
    n: int = 1

    @classmethod
    def parse(cls, rule: str | SelectionRule) -> SelectionRule:
        """Raises :class:`UsageError` naming ``--rule`` for anything but the forms above."""
        if isinstance(rule, SelectionRule):
            return rule
        match = _RULE.match(str(rule))
        if match is None:
            raise UsageError(f"unknown rule {rule!r}; expected {RULE_HELP}", "--rule")
        if match.group(2) is None:
            return cls(match.group(1))  # type: ignore[arg-type]
        n = int(match.group(2))
        if n < 1:
            raise UsageError(f"N in avg-last-N must be >= 1, got {rule!r}", "--rule")
        return cls("avg-last", n)

    def __str__(self) -> str:
        return f"avg-last-{self.n}" if self.kind == "avg-last" else self.kind

    def score(self, values: Sequence[float], end: int, mode: str) -> float:
        """The rule's score of a history up to and including index ``end`` (NaN where nothing counts)."""
        window = [v for v in values[: end + 1] if not math.isnan(v)]
        if not window:
            return math.nan
        if self.kind == "max":
            return max(window) if mode == "max" else min(window)
        if self.kind == "avg-last":
            tail = window[-self.n :]
            return sum(tail) / len(tail)
        return window[-1]

    def at_checkpoint(self) -> SelectionRule:
        """How a checkpoint is scored under this rule: by the reports up to the one it was saved with.
        Under ``max`` that is its own value (a running maximum would let a later checkpoint inherit an
        earlier peak)."""
        return SelectionRule("last") if self.kind == "max" else self


#: The rule ``best()`` and the CLI use unless told otherwise, and that picks the ``eval`` rule's candidates.
DEFAULT_RULE = SelectionRule("avg-last", 3)
#: The ``eval`` rule re-evaluates this many trials, for this many episodes on each seed.
EVAL_CANDIDATES = 3
EVAL_EPISODES = 10
#: Evaluation env seeds: fixed, so two evaluations compare, and unlikely to be ones a trial trained on.
DEFAULT_EVAL_SEEDS: tuple[int, ...] = (100_003, 100_019, 100_043)


@dataclass(frozen=True)
class Best:
    """The best trial under a rule, and the checkpoint of it that scored best under the same rule."""

    trial_id: str
    config: Mapping[str, Any]
    metric: str
    mode: str
    rule: str
    value: float
    env_steps: int
    checkpoint: Path | None
    checkpoint_value: float | None = None
    checkpoint_env_steps: int | None = None
    trial_path: Path | None = None
    #: Under ``held-out`` and ``confirmed``: the 95% interval of ``value`` (the held-out stage's for its IQM on
    #: new seeds; the confirmation's bootstrap interval), and the value the search saw (its own rule, on its
    #: training seeds: optimistic).
    interval: tuple[float, float] | None = None
    tuning_value: float | None = None

    def _repr_html_(self) -> str:
        """A compact table in Jupyter: the trial, its value under the rule, the checkpoint and the config."""
        from html import escape

        rows = [
            ("trial", self.trial_id),
            (f"{self.metric} ({self.rule}, {self.mode})", f"{self.value:.4g}"),
            *([("95% interval", f"{self.interval[0]:.4g} to {self.interval[1]:.4g}")] if self.interval else []),
            *([("tuning value (the search's, optimistic)", f"{self.tuning_value:.4g}")] if self.tuning_value is not None else []),
            ("env steps", f"{self.env_steps:,}"),
            ("checkpoint", f"{self.checkpoint} ({self.checkpoint_value:.4g} at {self.checkpoint_env_steps:,} env steps)"
             if self.checkpoint is not None and self.checkpoint_value is not None and self.checkpoint_env_steps is not None
             else str(self.checkpoint)),
            *((f"config {k}", repr(v)) for k, v in self.config.items()),
        ]
        body = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:left'>{escape(str(v))}</td></tr>"
                       for k, v in rows)
        return f"<table><caption>best trial</caption>{body}</table>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial_id": self.trial_id,
            "config": dict(self.config),
            "metric": self.metric,
            "mode": self.mode,
            "rule": self.rule,
            "value": self.value,
            "env_steps": self.env_steps,
            "checkpoint": str(self.checkpoint) if self.checkpoint else None,
            "checkpoint_value": self.checkpoint_value,
            "checkpoint_env_steps": self.checkpoint_env_steps,
            "interval": list(self.interval) if self.interval else None,
            "tuning_value": self.tuning_value,
        }
