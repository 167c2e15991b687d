"""The interface every search-space compiler implements."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from rlsweep.errors import IncompatibleError, Problem
from rlsweep.search_spaces._domains import Domain, Parameter, SearchSpace


class SpaceCompiler(abc.ABC):
    """Compiles a :class:`SearchSpace` to one backend's native form, exactly or not at all.

    Subclasses fill :attr:`handlers`, one entry per domain kind they can express; a kind missing from the
    table is reported as an :class:`IncompatibleError` naming the parameter and the searcher.
    """

    #: The searcher name used in messages.
    searcher: ClassVar[str]
    #: Whether ``when:`` conditions can be expressed.
    supports_conditions: ClassVar[bool] = False

    @abc.abstractmethod
    def compile(self, space: SearchSpace) -> Any:
        """Return the backend's native search space. Raises :class:`IncompatibleError`."""

    def check(self, space: SearchSpace, handlers: Mapping[str, Callable[..., Any]]) -> None:
        """Raise one error listing every parameter this backend cannot express."""
        problems = []
        for parameter in space:
            if parameter.domain.kind not in handlers:
                problems.append(self._unsupported(parameter, parameter.domain))
            if parameter.when and not self.supports_conditions:
                problems.append(
                    Problem(
                        f"search_space.{parameter.path}.when",
                        f"searcher {self.searcher!r} cannot express conditions; use searcher 'optuna', "
                        "or drop the condition",
                    )
                )
        if problems:
            raise IncompatibleError(problems)

    def _unsupported(self, parameter: Parameter, domain: Domain) -> Problem:
        return Problem(
            f"search_space.{parameter.path}",
            f"searcher {self.searcher!r} cannot express a {domain.kind!r} domain exactly; "
            f"use another searcher or another domain",
        )
