"""The interface every search-space compiler implements."""

from __future__ import annotations

import abc
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, ClassVar

from rlsweep.errors import IncompatibleError, Problem
from rlsweep.search_spaces._domains import Domain, LogUniform, Parameter, QLogUniform, SearchSpace, Uniform


class LossyConversionWarning(UserWarning):
    """A domain was changed to one the backend can express, because the user opted in (``lossy: true``)."""


#: Fallbacks a user may opt into: domain -> (a domain the backend can express, what changed).
Fallback = Callable[[Any], tuple[Domain, str]]

DROP_Q: Fallback = lambda d: (  # noqa: E731
    (LogUniform if isinstance(d, QLogUniform) else Uniform)(d.low, d.high),
    f"quantization q={d.q} dropped",
)
NORMAL_AS_UNIFORM: Fallback = lambda d: (  # noqa: E731
    Uniform(d.mean - 3 * d.sd, d.mean + 3 * d.sd),
    f"normal({d.mean}, {d.sd}) searched as uniform over mean ± 3 sd",
)
LOG_AS_LINEAR: Fallback = lambda d: (Uniform(d.low, d.high), "log scale dropped: searched linearly")  # noqa: E731


class SpaceCompiler(abc.ABC):
    """Compiles a :class:`SearchSpace` to one backend's native form, exactly or not at all.

    Subclasses keep a table of handlers, one per domain kind they can express; a kind missing from it is
    an :class:`IncompatibleError` naming the parameter, the backend and what to do instead, unless the
    user opted into a lossy conversion and :attr:`fallbacks` has one for that kind.
    """

    #: The backend's name, and whether it is a searcher or a scheduler, for messages.
    searcher: ClassVar[str]
    role: ClassVar[str] = "searcher"
    #: Whether ``when:`` conditions can be expressed.
    supports_conditions: ClassVar[bool] = False
    #: kind -> what to do instead, quoted in the error.
    hints: ClassVar[Mapping[str, str]] = {}
    fallbacks: ClassVar[Mapping[str, Fallback]] = {}

    @abc.abstractmethod
    def compile(self, space: SearchSpace, *, lossy: bool = False) -> Any:
        """Return the backend's native search space. Raises :class:`IncompatibleError`."""

    def check(self, space: SearchSpace, handlers: Mapping[str, Callable[..., Any]], lossy: bool = False) -> SearchSpace:
        """Raise one error listing every parameter this backend cannot express; with ``lossy``, return
        the space with each such domain replaced by its fallback, warning what changed."""
        problems = []
        parameters = []
        for parameter in space:
            kind = parameter.domain.kind
            if kind not in handlers:
                if lossy and kind in self.fallbacks:
                    domain, change = self.fallbacks[kind](parameter.domain)
                    warnings.warn(
                        f"search_space.{parameter.path}: {self.role} {self.searcher!r} cannot express {kind!r}; {change}",
                        LossyConversionWarning,
                        stacklevel=3,
                    )
                    parameter = replace(parameter, domain=domain)
                else:
                    problems.append(self._unsupported(parameter, parameter.domain))
            if parameter.when and not self.supports_conditions:
                problems.append(
                    Problem(
                        f"search_space.{parameter.path}.when",
                        f"{self.role} {self.searcher!r} cannot express conditions; use searcher 'random', 'optuna', "
                        "'hyperopt' or 'bohb', or drop the condition",
                    )
                )
            parameters.append(parameter)
        if problems:
            raise IncompatibleError(problems)
        return SearchSpace(tuple(parameters))

    def _unsupported(self, parameter: Parameter, domain: Domain) -> Problem:
        hint = self.hints.get(domain.kind, f"use another {self.role} or another domain")
        optin = " (or set searcher.lossy: true to accept a conversion)" if domain.kind in self.fallbacks else ""
        return Problem(
            f"search_space.{parameter.path}",
            f"{self.role} {self.searcher!r} cannot express a {domain.kind!r} domain exactly; {hint}{optin}",
        )


__all__ = ["DROP_Q", "LOG_AS_LINEAR", "NORMAL_AS_UNIFORM", "LossyConversionWarning", "SpaceCompiler"]
