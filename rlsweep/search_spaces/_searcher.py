"""Tune searcher pieces the backends share: decoding a wrapped searcher's suggestions, and a searcher of
ours whose saved state is a few attributes. Imported by the backends only (it imports Ray)."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from typing import Any

from ray.tune.search import Searcher

from rlsweep.search_spaces._base import SearchRequest


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
        return self.decode(suggestion) if isinstance(suggestion, Mapping) else suggestion

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


class OwnSearcher(Searcher):
    """A searcher of ours: the points to evaluate first (in its own encoding), then its own draws, each
    decoded to declared values. Its saved state is the attributes named in :attr:`state_fields`."""

    state_fields: tuple[str, ...] = ("queued",)

    def __init__(self, request: SearchRequest, encode: Callable[[Mapping[str, Any]], dict[str, Any]] = dict) -> None:
        super().__init__(metric=request.metric, mode=request.mode)
        self.queued = [encode(point) for point in request.points or []]

    def suggest(self, trial_id: str) -> dict | None:
        return self.accept(trial_id, self.queued.pop(0) if self.queued else self.draw())

    def draw(self) -> dict[str, Any]:
        """The searcher's next own suggestion, in its encoding."""
        raise NotImplementedError

    def accept(self, trial_id: str, native: dict[str, Any]) -> dict[str, Any]:
        """The declared config for a suggestion (and whatever the searcher notes about it)."""
        return native

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as out:
            pickle.dump({name: getattr(self, name) for name in self.state_fields}, out)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as source:
            self.__dict__.update(pickle.load(source))
