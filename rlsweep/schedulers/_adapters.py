"""Small Tune adapters: searchers decoding suggestions to declared types, bayesian-optimization 3.x,
random search with conditions; HyperBand brackets in env steps. Each does one thing and keeps Tune's
searcher or scheduler protocol."""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Mapping
from typing import Any

from ray.tune.schedulers import HyperBandScheduler
from ray.tune.schedulers.hb_bohb import HyperBandForBOHB
from ray.tune.search import Searcher
from ray.tune.search.hyperopt import HyperOptSearch

from rlsweep.search_spaces import Parameter
from rlsweep.search_spaces._bayesopt import BayesOptSpace
from rlsweep.search_spaces._tune import compile_domain


class DecodingSearcher(Searcher):
    """Wraps a searcher whose suggestions are in its backend's encoding (labels, indices, nested
    branches, numpy scalars) and hands Tune the flat config with the declared Python types."""

    def __init__(self, searcher: Searcher, decode: Callable[[Mapping[str, Any]], dict[str, Any]]) -> None:
        self.searcher = searcher
        self.decode = decode
        super().__init__(metric=searcher.metric, mode=searcher.mode)

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    def suggest(self, trial_id: str) -> dict | None:
        suggestion = self.searcher.suggest(trial_id)
        if not isinstance(suggestion, Mapping):
            return suggestion
        return self.decode(suggestion)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        self.searcher.on_trial_complete(trial_id, result=result, error=error)

    # HyperBandForBOHB tells the searcher which trials it paused, so BOHB does not wait for their results.
    def on_pause(self, trial_id: str) -> None:
        self.searcher.on_pause(trial_id)

    def on_unpause(self, trial_id: str) -> None:
        self.searcher.on_unpause(trial_id)

    def save(self, checkpoint_path: str) -> None:
        self.searcher.save(checkpoint_path)

    def restore(self, checkpoint_path: str) -> None:
        self.searcher.restore(checkpoint_path)

    # Tune saves each wrapper in a searcher chain through get_state/set_state and the innermost searcher
    # through save/restore. Decoding is stateless: the wrapper contributes nothing of its own.
    def get_state(self) -> dict:
        return {}

    def set_state(self, state: dict) -> None:
        return None


class EncodedPointsHyperOptSearch(HyperOptSearch):
    """Ray's HyperOptSearch, given ``points_to_evaluate`` already in HyperOpt's own encoding.

    Ray's conversion of points (values to category indices) walks nested dict values into the space and
    hangs or fails on nested ``hp.choice`` branches; rlsweep encodes points itself
    (:meth:`rlsweep.search_spaces.HyperOptSpace.encode`), so the conversion is skipped.
    """

    def _convert_categories_to_indices(self, config: dict) -> None:
        return None


class _PickledSearcher(Searcher):
    """A searcher of ours whose state is the attributes named in :attr:`state_fields`."""

    state_fields: tuple[str, ...] = ()

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as out:
            pickle.dump({name: getattr(self, name) for name in self.state_fields}, out)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as source:
            self.__dict__.update(pickle.load(source))


class BayesOptSearcher(_PickledSearcher):
    """bayesian-optimization 3.x through its suggest/register API (Ray 2.60's BayesOptSearch wants <2).

    Works in the compiled coordinates (log domains in log space); minimization registers the negated
    metric. A trial that errored or never reported the metric teaches the model nothing.
    """

    state_fields = ("optimizer", "queued", "live")

    def __init__(
        self,
        space: BayesOptSpace,
        *,
        metric: str,
        mode: str,
        seed: int | None = None,
        points_to_evaluate: list[dict[str, Any]] | None = None,
    ) -> None:
        from bayes_opt import BayesianOptimization

        super().__init__(metric=metric, mode=mode)
        self.space = space
        self.optimizer = BayesianOptimization(
            f=None, pbounds=dict(space.pbounds), random_state=seed, verbose=0, allow_duplicate_points=True
        )
        self.queued = [space.encode(point) for point in points_to_evaluate or []]
        self.live: dict[str, dict[str, float]] = {}

    def suggest(self, trial_id: str) -> dict | None:
        coordinates = self.queued.pop(0) if self.queued else {k: float(v) for k, v in self.optimizer.suggest().items()}
        self.live[trial_id] = coordinates
        return self.space.decode(coordinates)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        coordinates = self.live.pop(trial_id, None)
        if coordinates is None or error or not result:
            return
        value = result.get(self.metric)
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            return
        self.optimizer.register(params=coordinates, target=float(value) if self.mode == "max" else -float(value))


class ConditionalRandomSearcher(_PickledSearcher):
    """Independent random draws, each from Tune's own sampler for its domain, where a parameter is drawn
    only when its conditions hold, so inactive parameters are absent from the trial's config."""

    state_fields = ("rng", "queued")

    def __init__(
        self,
        parameters: tuple[Parameter, ...],
        *,
        metric: str,
        mode: str,
        seed: int | None = None,
        points_to_evaluate: list[dict[str, Any]] | None = None,
    ) -> None:
        import numpy as np

        super().__init__(metric=metric, mode=mode)
        self.parameters = parameters
        self.domains = {p.path: compile_domain(p.domain) for p in parameters}
        self.rng = np.random.default_rng(seed)
        self.queued = [dict(point) for point in points_to_evaluate or []]

    def suggest(self, trial_id: str) -> dict | None:
        if self.queued:
            return self.queued.pop(0)
        from ray.tune.search.sample import Domain

        draws: dict[str, Any] = {}
        for parameter in self.parameters:
            if parameter.is_active(draws):
                domain = self.domains[parameter.path]
                value = domain.sample(random_state=self.rng) if isinstance(domain, Domain) else domain
                draws[parameter.path] = value.item() if hasattr(value, "item") else value
        return draws

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        return None


class _EnvStepBrackets:
    """HyperBand's brackets in env steps, for Ray's synchronous HyperBand schedulers.

    Ray sizes the brackets from ``max_t`` alone, as if the smallest useful budget were 1 time unit: in
    env steps that is log_eta(100000) ~ 10 brackets, the first planning thousands of trials that each get
    a handful of env steps. Here they are counted from ``max_t / grace`` (HyperBand's R = max budget /
    min budget), so the most aggressive bracket's first rung is ``grace`` env steps.

    A trial that reached ``max_t`` is stopped, not paused: Ray pauses it until the rest of its bracket
    catches up, and when the last of them finishes first, the sweep ends with that trial left PAUSED.
    """

    _time_attr: str
    _max_t_attr: int

    def _size_brackets(self, grace: int, eta: float) -> None:
        self._s_max_1 = int(round(math.log(self._max_t_attr / grace) / math.log(eta))) + 1

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        from ray.tune.schedulers import TrialScheduler

        decision = super().on_trial_result(tune_controller, trial, result)  # type: ignore[misc]
        if decision == TrialScheduler.PAUSE and result.get(self._time_attr, 0) >= self._max_t_attr:
            return TrialScheduler.STOP
        return decision


def env_step_hyperband(bohb: bool, *, grace: int, **kwargs: Any) -> Any:
    """``HyperBandScheduler`` (or ``HyperBandForBOHB``) with brackets sized from ``grace`` env steps."""
    scheduler = (_EnvStepBOHB if bohb else _EnvStepHyperBand)(**kwargs)
    scheduler._size_brackets(grace, kwargs["reduction_factor"])
    return scheduler



class _EnvStepHyperBand(_EnvStepBrackets, HyperBandScheduler):
    pass


class _EnvStepBOHB(_EnvStepBrackets, HyperBandForBOHB):
    pass
