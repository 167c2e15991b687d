"""rl-baselines3-zoo's hyperparameter optimization as one side of the time-to-solve benchmark.

rl-zoo3 (Stable-Baselines3, Optuna, no Ray) lives in its own virtual environment, never in rlsweep's:
:func:`ensure_venv` makes it once from ``benchmarks/zoo-requirements.txt``. :func:`run_zoo` launches

    python -m rl_zoo3.train --algo ALGO --env ENV -optimize --n-trials N --n-jobs J \\
        --sampler tpe --pruner median -n T --n-evaluations T//E --eval-episodes K --seed S \\
        -f WORKDIR/logs --optimization-log-path WORKDIR/trials

the way rl-zoo3's docs run a search ("python train.py --algo ppo --env MountainCar-v0 -n 50000 -optimize
--n-trials 1000 --n-jobs 2 --sampler tpe --pruner median"): its own search space
(``rl_zoo3/hyperparams_opt.py``), its own TPE sampler and median pruner (both with
``--n-startup-trials`` 10), the env's other settings from its ``hyperparams/ALGO.yml`` (CartPole-v1's PPO:
``n_envs: 8``), every other flag at its default. Notes on those flags, read in rl_zoo3 2.9.2's source:

- ``-n T`` is each trial's budget (``model.learn(T)``), not split across trials; ``--n-trials N`` with
  ``--n-jobs J`` is N trials in all, J at a time as threads of one process (Optuna's ``n_jobs``).
- While optimizing, ``--eval-freq`` is ignored: a trial is evaluated every ``T // n_evaluations`` env
  steps (``// n_envs`` calls of its vec env), so the interval E is passed as ``--n-evaluations T // E``.
  The default would be one evaluation per 100k steps.
- Evaluations are deterministic (``deterministic_eval`` is False only for Atari and MiniGrid) over
  ``--eval-episodes`` episodes (default 5) on ``--n-eval-envs`` (default 1) env.
- Both the TPE sampler and the median pruner start after ``--n-startup-trials`` (10) trials: until then
  trials are drawn at random (TPE's startup) and none is pruned. PPO trials are not seeded
  (``seed=None``); ``--seed`` seeds the sampler and the envs.
- A PPO trial runs whole rollouts (``n_steps * n_envs``, up to 4096 * 8 in rl-zoo3's space), so it can
  pass ``-n`` and keeps being evaluated there (an evaluation at 60k steps in a 50k budget); those count.
- ``--num-threads`` is left at its default (-1: torch's own, one thread per core), so J trial threads
  share one GIL and each asks torch for all cores.

``--optimization-log-path`` is the one flag added: it is rl-zoo3's own switch for SB3's ``EvalCallback``
log, so each trial's evaluations land in ``trials/trial_<n>/evaluations.npz`` as they happen (written
right after the evaluation's episodes, before anything else that step; the callback also saves the
trial's best model there, a few ms). That file is the signal: it holds every evaluation's env-step count
and per-episode returns, and its mtime is when the evaluation ended. The console says nothing per
evaluation (a trial's SB3 ``verbose`` is 0 unless ``--verbose 2``, which also turns on training logs),
and Optuna logs a trial only when it ends.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REQUIREMENTS = Path(__file__).with_name("zoo-requirements.txt")
DEFAULT_VENV = Path(__file__).with_name(".zoo-venv")
_TRIAL_END = re.compile(r"Trial (\d+) (finished|pruned|failed)")


def ensure_venv(path: Path = DEFAULT_VENV) -> Path:
    """Create (once) a venv at ``path`` with the pinned rl-zoo3 stack and return its python.

    Reinstalls only when ``zoo-requirements.txt`` changed since (its hash is kept in the venv).
    """
    path = Path(path)
    python = path / "bin" / "python"
    marker = path / ".zoo-requirements.sha256"
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if python.exists() and marker.exists() and marker.read_text().strip() == digest:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", str(REQUIREMENTS)],
        check=True,
    )
    marker.write_text(digest + "\n")
    return python


def zoo_command(
    python: Path,
    *,
    algo: str,
    env: str,
    seed: int,
    trials: int,
    jobs: int,
    env_steps: int,
    eval_every: int,
    eval_episodes: int,
    workdir: Path,
) -> list[str]:
    """The command line :func:`run_zoo` launches (see the module's doc for each flag)."""
    if eval_every <= 0 or env_steps % eval_every:
        raise ValueError(f"env_steps ({env_steps}) must be a multiple of eval_every ({eval_every})")
    return [
        str(python), "-m", "rl_zoo3.train",
        "--algo", algo, "--env", env,
        "-optimize",
        "--n-trials", str(trials), "--n-jobs", str(jobs),
        "--sampler", "tpe", "--pruner", "median",
        "-n", str(env_steps),
        "--n-evaluations", str(env_steps // eval_every),
        "--eval-episodes", str(eval_episodes),
        "--seed", str(seed),
        "-f", str(workdir / "logs"),
        "--optimization-log-path", str(workdir / "trials"),
    ]  # fmt: skip


class _EvalLog:
    """Reads the trials' ``evaluations.npz`` as they grow; stamps each new evaluation with the file's mtime."""

    def __init__(self, root: Path, t0_wall: float) -> None:
        self.root, self.t0_wall = root, t0_wall
        self.seen: dict[int, int] = {}  # trial number -> evaluations read
        self.mtimes: dict[int, int] = {}
        self.started: dict[int, float] = {}  # trial number -> seconds when its folder appeared
        self.evaluations: list[dict[str, Any]] = []

    def poll(self, now_s: float) -> list[dict[str, Any]]:
        import numpy as np  # numpy is in rlsweep's environment too; nothing else from the zoo is imported

        new: list[dict[str, Any]] = []
        if not self.root.is_dir():
            return new
        for folder in self.root.iterdir():
            if not folder.name.startswith("trial_"):
                continue
            trial = int(folder.name[len("trial_") :])
            self.started.setdefault(trial, now_s)
            npz = folder / "evaluations.npz"
            try:
                before = npz.stat().st_mtime_ns
                if self.mtimes.get(trial) == before:
                    continue
                with np.load(npz) as data:
                    timesteps = [int(x) for x in data["timesteps"]]
                    results = [[float(r) for r in row] for row in data["results"]]
                if npz.stat().st_mtime_ns != before:  # rewritten while read: next poll
                    continue
            except Exception:  # absent yet, or caught mid-write (a partial zip): next poll
                continue
            self.mtimes[trial] = before
            for i in range(self.seen.get(trial, 0), len(timesteps)):
                new.append(
                    {
                        "trial": trial,
                        "index": i,
                        "timesteps": timesteps[i],
                        "mean": sum(results[i]) / len(results[i]),
                        "returns": results[i],
                        "time_s": before / 1e9 - self.t0_wall,
                        "seen_s": now_s,
                    }
                )
            self.seen[trial] = len(timesteps)
        new.sort(key=lambda e: (e["time_s"], e["trial"]))
        self.evaluations.extend(new)
        return new

    def env_steps_at(self, t: float) -> int:
        """Sum over trials of the env steps at each one's last evaluation ended by ``t``."""
        last: dict[int, int] = {}
        for e in self.evaluations:
            if e["time_s"] <= t:
                last[e["trial"]] = max(last.get(e["trial"], 0), e["timesteps"])
        return sum(last.values())


def _stop(proc: subprocess.Popen) -> None:
    """End the run's whole process group (it was started in a session of its own)."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            pass


def run_zoo(
    python: Path,
    *,
    algo: str,
    env: str,
    seed: int,
    trials: int,
    jobs: int,
    env_steps: int,
    eval_every: int,
    eval_episodes: int,
    solved_at: float,
    cap_s: float,
    workdir: Path,
    poll_s: float = 0.1,
) -> dict[str, Any]:
    """Run rl-zoo3's search until its first evaluation with mean return >= ``solved_at``, or ``cap_s``.

    Returns ``solved``; ``time_s``, seconds from launching the process to the end of that evaluation
    (the ``cap_s``, or the process's end, when unsolved); ``env_steps``, the env steps all trials had
    sampled by then as far as their evaluations show (each trial's steps at its last evaluation ended by
    then, summed: exact for the solving trial and for pruned ones, which stop at an evaluation; a trial
    still running adds what it sampled since its last evaluation, less than ``eval_every``, and one that
    ran its whole budget adds the rest of its last rollout, neither counted); ``first_eval_s``, the
    first evaluation of any trial (None if none); ``evaluations``, every evaluation read (trial, its
    index, env steps, mean, per-episode returns, ``time_s`` from the file's mtime and ``seen_s`` when
    this poller read it); and the command, return code, trials started and ended, and log paths.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    trials_dir = workdir / "trials"
    if trials_dir.exists() and any(trials_dir.iterdir()):
        raise ValueError(f"{trials_dir} holds an earlier run's trials: give run_zoo a fresh workdir")
    cmd = zoo_command(
        python, algo=algo, env=env, seed=seed, trials=trials, jobs=jobs, env_steps=env_steps,
        eval_every=eval_every, eval_episodes=eval_episodes, workdir=workdir,
    )  # fmt: skip
    stdout_path, stderr_path = workdir / "zoo.stdout", workdir / "zoo.stderr"
    environ = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        t0_wall, t0 = time.time(), time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=workdir, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=environ, start_new_session=True
        )
    log = _EvalLog(trials_dir, t0_wall)
    solved_eval: dict[str, Any] | None = None
    try:
        while True:
            now = time.perf_counter() - t0
            exited = proc.poll() is not None
            for e in log.poll(now):
                if solved_eval is None and e["mean"] >= solved_at and e["time_s"] <= cap_s:
                    solved_eval = e
            if solved_eval is not None or exited or now >= cap_s:
                break
            time.sleep(poll_s)
    finally:
        _stop(proc)
    end_s = time.perf_counter() - t0
    log.poll(end_s)  # what was written before the stop, for the record

    if solved_eval is not None:
        time_s = solved_eval["time_s"]
    else:
        time_s = min(end_s, cap_s)
    in_time = [e for e in log.evaluations if e["time_s"] <= time_s]
    ended = {}
    for m in _TRIAL_END.finditer(stderr_path.read_text(errors="replace")):
        ended[int(m.group(1))] = m.group(2)
    return {
        "solved": solved_eval is not None,
        "time_s": time_s,
        "env_steps": log.env_steps_at(time_s) if in_time else 0,
        "first_eval_s": min((e["time_s"] for e in log.evaluations), default=None),
        "evaluations": log.evaluations,
        "solved_by": solved_eval,
        "trials_started": len(log.started),
        "trials_ended": ended,
        "returncode": proc.returncode,
        "stopped_at_s": end_s,
        "cmd": cmd,
        "stdout": str(stdout_path),
        "stderr": str(stderr_path),
    }


def main() -> None:
    import argparse
    import json

    p = argparse.ArgumentParser(description="One rl-zoo3 search, timed to its first solved evaluation.")
    p.add_argument("--algo", default="ppo")
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--env-steps", type=int, default=50_000)
    p.add_argument("--eval-every", type=int, default=10_000)
    p.add_argument("--eval-episodes", type=int, default=5)
    p.add_argument("--solved-at", type=float, default=475.0)
    p.add_argument("--cap-s", type=float, default=600.0)
    p.add_argument("--workdir", type=Path, required=True)
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    a = p.parse_args()
    result = run_zoo(
        ensure_venv(a.venv), algo=a.algo, env=a.env, seed=a.seed, trials=a.trials, jobs=a.jobs,
        env_steps=a.env_steps, eval_every=a.eval_every, eval_episodes=a.eval_episodes,
        solved_at=a.solved_at, cap_s=a.cap_s, workdir=a.workdir,
    )  # fmt: skip
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
