"""Re-evaluating checkpoints on fresh env seeds, in the driver's process (no Ray runtime needed)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rlsweep._envs import make_env
from rlsweep.analysis._rules import Best
from rlsweep.errors import SweepError
from rlsweep.policy import Policy, load_policy, policy_ids

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

#: An episode that has not ended after this many steps is cut off (an env without a time limit).
MAX_EPISODE_STEPS = 100_000


def _single_agent_episode(env: Any, policy: Policy, seed: int | None) -> float:
    obs, _ = env.reset(seed=seed)
    total = 0.0
    for _ in range(MAX_EPISODE_STEPS):
        obs, reward, terminated, truncated, _ = env.step(policy.act(obs))
        total += float(reward)
        if terminated or truncated:
            break
    return total


def _multi_agent_episode(env: Any, policies: Mapping[Any, Policy], seed: int | None) -> float:
    """The return summed over all agents, as RLlib's ``episode_return_mean`` counts it."""
    obs, _ = env.reset(seed=seed)
    total = 0.0
    finished: set[Any] = set()
    for _ in range(MAX_EPISODE_STEPS):
        # An agent that is done acts no more (RLlib's convention), even if the env still returns its obs.
        actions = {agent: policies[agent].act(o, agent_id=agent) for agent, o in obs.items() if agent not in finished}
        obs, rewards, terminated, truncated, _ = env.step(actions)
        total += sum(float(r) for r in rewards.values())
        finished |= {a for a in (*terminated, *truncated) if a != "__all__" and (terminated.get(a) or truncated.get(a))}
        if terminated.get("__all__") or truncated.get("__all__"):
            break
    return total


def evaluate_checkpoint(spec: SweepSpec, best: Best, *, episodes: int, seeds: Sequence[int]) -> dict[str, Any]:
    """Greedy returns of one checkpoint: ``episodes`` episodes per seed, each seed in a fresh env."""
    if best.checkpoint is None:
        raise SweepError(f"trial {best.trial_id} kept no checkpoint to evaluate")
    setup = spec.policy_setup(best.config)
    if setup is None:
        policy = load_policy(best.checkpoint)
        loaded: dict[str, Policy] = {}
    else:
        loaded = {pid: load_policy(best.checkpoint, pid) for pid in policy_ids(best.checkpoint)}
    per_seed = {}
    returns: list[float] = []
    for seed in seeds:
        env = make_env(spec.env, spec.env_config)
        try:
            seed_returns = []
            for episode in range(episodes):
                # Seeded once, then the env's own generator runs on: episodes differ, runs repeat.
                first_seed = seed if episode == 0 else None
                if setup is None:
                    seed_returns.append(_single_agent_episode(env, policy, first_seed))
                else:
                    agents = getattr(env, "possible_agents", None) or getattr(env, "agents", [])
                    by_agent = {a: loaded[setup.policy_for(a)] for a in agents}
                    seed_returns.append(_multi_agent_episode(env, by_agent, first_seed))
        finally:
            env.close()
        per_seed[seed] = statistics.fmean(seed_returns)
        returns += seed_returns
    return {
        "trial_id": best.trial_id,
        "checkpoint": str(best.checkpoint),
        "checkpoint_env_steps": best.checkpoint_env_steps,
        f"train_{best.metric}": best.checkpoint_value,
        "eval_return_mean": statistics.fmean(returns),
        "eval_return_std": statistics.pstdev(returns) if len(returns) > 1 else 0.0,
        "eval_return_min": min(returns),
        "eval_return_max": max(returns),
        "episodes": len(returns),
        **{f"seed_{seed}": value for seed, value in per_seed.items()},
    }


def evaluate_checkpoints(spec: SweepSpec, ranked: Sequence[Best], *, episodes: int, seeds: Sequence[int]) -> Any:
    import pandas as pd

    if episodes < 1:
        raise SweepError(f"episodes must be >= 1, got {episodes}")
    if not seeds:
        raise SweepError("give at least one seed")
    rows = [evaluate_checkpoint(spec, best, episodes=episodes, seeds=seeds) for best in ranked if best.checkpoint]
    table = pd.DataFrame.from_records(rows)
    if not table.empty:
        table = table.sort_values("eval_return_mean", ascending=False, kind="stable", key=lambda c: c.fillna(-math.inf))
    return table.reset_index(drop=True)
