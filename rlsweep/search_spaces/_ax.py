"""Ax: Bayesian optimization (Sobol points, then a BoTorch Gaussian process) through Ax's ``Client`` API,
behind Tune's searcher protocol. (Ray 2.60's ``AxSearch`` drives the ``AxClient`` that Ax 1.x deprecates
and breaks on Ax 1.3's objectives; the ``Client`` is what Ax documents now.)

Integers are Ax integer ranges, log domains ranges with ``log_scale``; a quantized domain is searched as
the integer index k of its multiples (value = k * q, exact; on a log scale for ``qloguniform``); a choice
is an unordered Ax choice over indices, decoded here, so any value (lists, dicts) comes back as the
declared object. A condition is an Ax hierarchical space: the child is a dependent parameter of its
parent's values, so the parent must be one ``choice`` (as for HyperOpt). Ax has no normal prior: it is
refused (``lossy: true`` searches a normal as uniform over mean ± 3 sd).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import pickle
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import Field, StrictInt

from ray.tune.search import Searcher

from rlsweep import _compat
from rlsweep._schema import Section
from rlsweep.errors import IncompatibleError, Problem
from rlsweep.search_spaces._base import (
    IndexedSpace,
    SearcherEntry,
    SearcherOptions,
    SearchRequest,
    SpaceCompiler,
    choice_index,
    normal_as_uniform,
)
from rlsweep.search_spaces._domains import (
    Choice,
    Fixed,
    LogRandInt,
    LogUniform,
    QLogUniform,
    QRandInt,
    QUniform,
    RandInt,
    SearchSpace,
    Uniform,
)
from rlsweep.search_spaces._optuna import startup_trials
from rlsweep.search_spaces._searcher import OwnSearcher

log = logging.getLogger(__name__)


def _range(d: Any, kind: str, *, log: bool = False) -> dict[str, Any]:
    return {"bounds": (d.low, d.high), "parameter_type": kind, "scaling": "log" if log else "linear"}


def _steps(d: Any, *, log: bool = False) -> dict[str, Any]:
    bounds = (int(round(d.low / d.q)), int(round(d.high / d.q)))
    return {"bounds": bounds, "parameter_type": "int", "scaling": "log" if log else "linear"}


def _choice(d: Choice) -> dict[str, Any] | None:
    # A choice of one value is no parameter to Ax (it refuses one): it is decoded as that value.
    if len(d.values) < 2:
        return None
    return {"values": list(range(len(d.values))), "parameter_type": "int", "is_ordered": False}


#: kind -> the keyword arguments of Ax's parameter config (a range, or a choice when it has ``values``).
_HANDLERS: dict[str, Callable[[Any], dict[str, Any] | None]] = {
    Uniform.kind: lambda d: _range(d, "float"),
    LogUniform.kind: lambda d: _range(d, "float", log=True),
    RandInt.kind: lambda d: _range(d, "int"),
    LogRandInt.kind: lambda d: _range(d, "int", log=True),
    QUniform.kind: _steps,
    QRandInt.kind: _steps,
    QLogUniform.kind: lambda d: _steps(d, log=True),
    Choice.kind: _choice,
    Fixed.kind: lambda d: None,
}

#: Ax refuses a float range narrower than this (100 x its EPS of 1.5e-7).
MIN_WIDTH = 1.5e-5


@dataclass(frozen=True)
class AxSpace(IndexedSpace):
    """``native`` maps each parameter Ax searches to its config's keyword arguments (a choice parent's
    ``dependent_parameters`` included)."""

    def searches(self, path: str) -> bool:
        return path in self.native

    def configs(self) -> list[Any]:
        """Ax's parameter configs."""
        from ax.api.configs import ChoiceParameterConfig, RangeParameterConfig

        return [
            (ChoiceParameterConfig if "values" in kwargs else RangeParameterConfig)(name=name, **kwargs)
            for name, kwargs in self.native.items()
        ]


def _too_narrow(space: SearchSpace) -> list[Problem]:
    return [
        Problem(f"search_space.{p.path}", f"searcher 'ax' refuses a range narrower than {MIN_WIDTH:g} (Ax: likely "
                f"numerical errors), got {p.domain.high - p.domain.low:g}; rescale the parameter, or use searcher 'optuna'")
        for p in space
        if isinstance(p.domain, Uniform) and p.domain.high - p.domain.low < MIN_WIDTH
    ]


class AxCompiler(SpaceCompiler):
    searcher = "ax"
    supports_conditions = True
    handlers = _HANDLERS
    hints = {
        "normal": "Ax has no normal prior; use 'uniform' over a range, or searcher 'random' or 'hyperopt'",
        "grid": "use 'choice', or searcher 'grid'",
    }
    fallbacks = {"normal": normal_as_uniform}

    def compile(self, space: SearchSpace, *, lossy: bool = False) -> AxSpace:
        try:
            converted = self.check(space, lossy)
        except IncompatibleError as exc:
            raise IncompatibleError([*_too_narrow(space), *exc.problems]) from None
        space = converted
        problems = _too_narrow(space)
        native = {p.path: kwargs for p in space if (kwargs := _HANDLERS[p.domain.kind](p.domain)) is not None}
        children, refused = self.choice_parents(space)
        problems += refused
        by_path = {p.path: p for p in space}
        for parent, kids in children.items():
            domain = by_path[parent].domain
            for child in kids:
                if parent not in native or child.path not in native:
                    continue  # a one-value parent (the child's activity is fixed) or a fixed child: decoded as declared
                dependents = native[parent].setdefault("dependent_parameters", {})
                for value in child.when[parent]:
                    dependents.setdefault(choice_index(domain, value), []).append(child.path)
        if problems:
            raise IncompatibleError(problems)
        if not native:
            raise IncompatibleError([Problem("search_space", "searcher 'ax' needs at least one searched parameter "
                                             "(a range, or a choice of two or more values); use searcher 'random'")])
        return AxSpace(native, tuple(space))


class AxOptions(SearcherOptions):
    startup_trials: Annotated[StrictInt, Field(ge=1)] | None = None
    """Sobol (quasi-random) trials before the Gaussian process models the results (default: a quarter of
    budget.trials, 2 to 10)"""


#: The name Ax knows the objective by (a metric name such as ``eval/return_mean`` is not a valid Ax
#: objective expression).
OBJECTIVE = "objective"


class AxTuneSearcher(OwnSearcher):
    """Tune's searcher protocol over Ax's ``Client``: points to evaluate are attached as Ax trials (so Ax
    learns from them too), then Ax's own suggestions. A trial that errored or never reported the metric is
    marked failed in the experiment; a NaN or infinite one abandoned."""

    def __init__(self, space: AxSpace, request: SearchRequest) -> None:
        super().__init__(request, space.encode)
        self.space = space
        self.live: dict[str, int] = {}
        #: A finite space's size: Ax suggests each config once, and finding none left takes it a minute.
        self.size = request.space.distinct_configs(10_000)
        self.suggested = 0
        with _quiet():
            from ax.api import Client

            self.client = Client(random_seed=request.seed)
            self.client.configure_experiment(parameters=space.configs())
            self.client.configure_optimization(objective=OBJECTIVE if request.mode == "max" else f"-{OBJECTIVE}")
            self.client.configure_generation_strategy(
                initialization_budget=startup_trials(request.options, request.trials),
                initialization_random_seed=request.seed,
                # Trials run at once: Ax goes on drawing Sobol points while the first ones run, rather than
                # suggesting nothing until they report.
                allow_exceeding_initialization_budget=True,
            )

    def suggest(self, trial_id: str) -> dict | None:
        with _quiet():
            if self.queued:
                native = self.queued.pop(0)
                index = self.client.attach_trial(native)
            else:
                from ax.exceptions.core import SearchSpaceExhausted

                try:
                    if self.size is not None and self.suggested >= self.size:
                        raise SearchSpaceExhausted("every config suggested")
                    drawn = self.client.get_next_trials(max_trials=1)
                except SearchSpaceExhausted:
                    log.warning("searcher 'ax' has suggested every config of the search space; no more trials")
                    return Searcher.FINISHED
                if not drawn:
                    return None
                (index, native), = drawn.items()
        self.live[trial_id] = index
        self.suggested += 1
        return self.space.decode(native)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        index = self.live.pop(trial_id, None)
        if index is None:
            return
        value = (result or {}).get(self.metric)
        with _quiet():
            if error or not isinstance(value, (int, float)):
                self.client.mark_trial_failed(index, failed_reason="errored" if error else f"no {self.metric!r} reported")
            elif not math.isfinite(value):
                self.client.mark_trial_abandoned(index)
            else:
                self.client.complete_trial(index, raw_data={OBJECTIVE: float(value)})

    # Tune pickles the searcher (tuner.pkl) and saves it for resume: the Ax client goes as Ax's own JSON.
    def __getstate__(self) -> dict[str, Any]:
        import os
        import tempfile

        state = dict(self.__dict__)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "ax.json")
            self.client.save_to_json_file(path)
            with open(path) as snapshot:
                state["client"] = snapshot.read()
        # Ax's JSON leaves out the client's seed: without it a resumed sweep's model fits are unseeded.
        state["client_seed"] = _compat.ax_client_seed(self.client)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        import os
        import tempfile

        from ax.api import Client

        state = dict(state)
        with tempfile.TemporaryDirectory() as folder, _quiet():
            path = os.path.join(folder, "ax.json")
            with open(path, "w") as snapshot:
                snapshot.write(state["client"])
            state["client"] = Client.load_from_json_file(path)
        seed = state.pop("client_seed", None)
        if seed is not None:
            _compat.set_ax_client_seed(state["client"], seed)
        self.__dict__.update(state)

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as out:
            pickle.dump(self.__getstate__(), out)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as source:
            self.__setstate__(pickle.load(source))


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Ax logs each trial and its configuration at INFO (each of its loggers with its own level and
    handler); a sweep's output keeps Ax's warnings and errors only."""
    if "ax" not in sys.modules:
        logging.disable(logging.INFO)  # "Ax SQL storage initialized ..." when Ax loads
        try:
            importlib.import_module("ax")
        finally:
            logging.disable(logging.NOTSET)
    loggers = [logging.getLogger(name) for name in list(logging.Logger.manager.loggerDict) if name == "ax" or name.startswith("ax.")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(max(logger.level, logging.WARNING))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


class AxSearcher(SearcherEntry):
    name = "ax"
    doc = "Ax's Bayesian optimization (Sobol, then a BoTorch Gaussian process); conditions on one choice parent"
    model_based = True
    # A dry run's draw costs more the more it drew (2 cores): 200 draws took 6 s with 2 parameters, 1000 took 96 s;
    # 100 took 12 s with 2 and 30 s with 8 parameters beside other engineers' load (load average 8).
    max_samples = 100
    compiler = AxCompiler()
    Options: ClassVar[type[Section]] = AxOptions

    packages = ("ax",)
    install = "pip install 'rlsweep[searchers]'   (or: pip install ax-platform)"

    def check_budget(self, space: SearchSpace, options: Any, budget: Any) -> list[Problem]:
        """Ax suggests each point once: a finite space smaller than the sweep is refused."""
        if self.missing():
            return []  # reported by check
        try:
            self.compiler.compile(space, lossy=bool(getattr(options, "lossy", False)))
        except IncompatibleError:
            return []  # reported by check
        size = space.distinct_configs(budget.trials)
        if size is None or size >= budget.trials:
            return []
        return [Problem("budget.trials", f"searcher 'ax' suggests each config once and this search space holds {size}; "
                        f"lower budget.trials to {size} or less, or use searcher 'optuna' or 'random' (got {budget.trials})")]

    def make(self, request: SearchRequest) -> Any:
        return AxTuneSearcher(self.compiler.compile(request.space, lossy=request.lossy), request)


ENTRIES = (AxSearcher(),)
