"""The reproducibility record of a confirmed sweep: everything a reader needs to trust its answer and to
rerun it, as ``reproducibility.json`` and a readable ``reproducibility.md`` (in the experiment directory,
and on the sweep's MLflow parent run)."""

from __future__ import annotations

import os
import platform
import shlex
from importlib import metadata
from pathlib import Path
from typing import Any

from rlsweep import store
from rlsweep.analysis._view import SweepView

#: The packages whose versions decide what a sweep computes.
PACKAGES = ("rlsweep", "ray", "torch", "gymnasium", "numpy", "scipy", "optuna", "hyperopt", "bayesian-optimization",
            "hpbandster", "ConfigSpace", "pandas", "mlflow")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def machine() -> dict[str, Any]:
    """CPU model, cores, memory and GPUs of the machine the driver runs on."""
    cpu = platform.processor() or platform.machine()
    memory_gb = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gb = round(int(line.split()[1]) / 1024**2, 1)
    except OSError:  # not Linux
        pass
    gpus: list[str] = []
    try:
        import torch

        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception:  # noqa: BLE001 - no torch, or no CUDA driver: no GPU to name
        gpus = []
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": memory_gb,
        "gpus": gpus or "none",
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def record(sweep: SweepView, confirmation: dict[str, Any]) -> dict[str, Any]:
    """The record of ``sweep`` and its ``confirmation`` (:meth:`Sweep.confirm`'s result)."""
    spec = sweep.spec
    document = dict(spec.document)
    searcher = document.get("searcher") if isinstance(document.get("searcher"), dict) else {"name": document.get("searcher")}
    scheduler = document.get("scheduler") if isinstance(document.get("scheduler"), dict) else {"name": document.get("scheduler")}
    rows = confirmation["configurations"]
    spec_path = store.spec_file(sweep.path)
    return {
        "sweep": {"name": spec.name, "path": str(sweep.path), "sweep_id": sweep.sweep_id},
        "spec": document,
        "search_space": document.get("search_space", {}),
        "searcher": {**(searcher or {}), "name": sweep.searcher},
        "scheduler": {**(scheduler or {}), "name": sweep.scheduler},
        "budget": {
            "env_steps_per_trial": spec.budget.env_steps,
            "trials": spec.budget.trials,
            "seeds_per_trial": spec.seeds.per_trial,
            "env_steps_per_configuration": spec.budget.env_steps * spec.seeds.per_trial,
            # Each trial's seeds are at its env steps (with seeds.adaptive, an added seed caught up), so: x its seeds.
            "env_steps_swept": sum(t.env_steps * (len(t.seeds) or spec.seeds.per_trial) for t in sweep.trials),
            "confirmation_env_steps": spec.budget.env_steps * len(rows) * len(confirmation["test_seeds"]),
        },
        "seeds": {
            "tuning_range": list(spec.seeds.tuning),
            "tuning_used": sorted({s for t in sweep.trials for s in t.seeds}),
            "aggregate": spec.seeds.aggregate,
            "test_range": list(spec.seeds.test),
            "test_used": confirmation["test_seeds"],
        },
        "confirmation": {
            "metric": confirmation["metric"],
            "episodes": confirmation["episodes"],
            "interval": confirmation["interval"],
            "rule": confirmation["rule"],
            "incumbent": rows[0]["trial_id"] if rows else None,
            "ties": confirmation["ties"],
            "configurations": [
                {k: row[k] for k in ("rank", "trial_id", "config", "tuning_value", "iqm", "ci_low", "ci_high", "per_seed", "p_beats", "tie_with_winner")}
                for row in rows
            ],
        },
        "packages": package_versions(),
        "machine": machine(),
        "commands": {
            "sweep": f"rlsweep run {shlex.quote(str(spec_path))}",
            "confirmation": confirmation["command"],
        },
    }


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def markdown(rec: dict[str, Any]) -> str:
    """The record as a page a person reads."""
    conf = rec["confirmation"]
    lines = [
        f"# Reproducibility record: {rec['sweep']['name']}",
        "",
        f"Sweep `{rec['sweep']['sweep_id']}` in `{rec['sweep']['path']}`.",
        "",
        "## Answer",
        "",
        f"Incumbent: **{conf['incumbent']}**. Scored by `{conf['metric']}` at the full budget ({conf['episodes']} greedy "
        f"episodes) on test seeds {rec['seeds']['test_used']}, which no trial trained with. Interval: {conf['interval']}, 95%.",
        "",
        "| rank | trial | IQM | 95% interval | tuning value | per test seed | |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in conf["configurations"]:
        note = "incumbent" if row["trial_id"] == conf["incumbent"] else "tie (interval overlaps)" if row["tie_with_winner"] else "runner-up"
        seeds = ", ".join(f"{s}: {_number(v)}" for s, v in row["per_seed"].items())
        lines.append(
            f"| {row['rank']} | `{row['trial_id']}` | {_number(row['iqm'])} | [{_number(row['ci_low'])}, {_number(row['ci_high'])}] "
            f"| {_number(row['tuning_value'])} | {seeds} | {note} |"
        )
    lines += ["", "Configurations:", ""]
    for row in conf["configurations"]:
        lines.append(f"- `{row['trial_id']}`: " + ", ".join(f"`{k}` = `{v}`" for k, v in row["config"].items()))
        if row["p_beats"]:
            lines.append("  - P(beats): " + ", ".join(f"`{o}` {p:.2f}" for o, p in row["p_beats"].items()))
    budget, seeds = rec["budget"], rec["seeds"]
    lines += [
        "",
        "## How it was found",
        "",
        f"- Searcher: `{rec['searcher']}`",
        f"- Scheduler: `{rec['scheduler']}`",
        f"- Search space: `{rec['search_space']}`",
        f"- Budget: {budget['env_steps_per_trial']} env steps per trial and seed, {budget['trials']} trials, "
        f"{budget['seeds_per_trial']} seed(s) per trial ({seeds['aggregate']}); {budget['env_steps_swept']} env steps "
        f"swept, {budget['confirmation_env_steps']} in the confirmation",
        f"- Tuning seeds: range {seeds['tuning_range']}, used {seeds['tuning_used']}",
        f"- Test seeds: range {seeds['test_range']}, used {seeds['test_used']}",
        "",
        "## To reproduce",
        "",
        "```bash",
        rec["commands"]["sweep"] + "   # reruns the same configs and seeds when searcher.seed is set",
        rec["commands"]["confirmation"] + "   # in the new directory; here it resumes and reprints",
        "```",
        "",
        "## Where it ran",
        "",
        *[f"- {k}: {v}" for k, v in rec["machine"].items()],
        "",
        "Packages: " + ", ".join(f"{k} {v}" for k, v in rec["packages"].items() if v),
        "",
    ]
    return "\n".join(lines)


__all__ = ["machine", "markdown", "package_versions", "record"]
