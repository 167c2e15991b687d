"""How many distinct configs a finite space holds: what decides whether a searcher that tries each config
once (Ax) can fill the budget, counted without enumerating a huge product."""

from __future__ import annotations

import itertools

from rlsweep.search_spaces._domains import Choice, Parameter, RandInt, SearchSpace, Uniform


def _brute_force(space: SearchSpace) -> int:
    domains = [p.domain.values if isinstance(p.domain, Choice) else range(p.domain.low, p.domain.high + 1) for p in space.parameters]
    seen = set()
    for combination in itertools.product(*domains):
        config: dict = {}
        for parameter, value in zip(space.parameters, combination):
            if parameter.is_active(config):
                config[parameter.path] = value
        seen.add(repr(sorted(config.items())))
    return len(seen)


CONDITIONAL = SearchSpace((
    Parameter("model.kind", Choice(("mlp", "lstm", "attention"))),
    Parameter("model.lstm_cell_size", RandInt(16, 20), {"model.kind": ("lstm",)}),
    Parameter("model.attention_dim", Choice((32, 64)), {"model.kind": ("attention",)}),
    Parameter("training.num_epochs", RandInt(1, 3)),
))


def test_a_conditional_space_counts_only_the_configs_its_active_parameters_make():
    # mlp: 3 epochs; lstm: 5 cell sizes x 3; attention: 2 dims x 3 -> 3 + 15 + 6.
    assert CONDITIONAL.distinct_configs(100) == _brute_force(CONDITIONAL) == 24
    assert CONDITIONAL.distinct_configs(24) == 24
    assert CONDITIONAL.distinct_configs(23) is None


def test_a_continuous_space_is_not_finite():
    space = SearchSpace((Parameter("training.lr", Uniform(0.0001, 0.001)), Parameter("training.num_epochs", RandInt(1, 3))))
    assert space.distinct_configs(1000) is None


class Counted(Parameter):
    """A parameter that counts how often the count looks at it."""

    looks = 0

    def is_active(self, draws):
        Counted.looks += 1
        return super().is_active(draws)


def test_a_huge_finite_space_is_found_too_large_without_enumerating_it():
    # 200^3 = 8 million configs: the count stops once it passes the limit, having looked at about that many.
    space = SearchSpace(tuple(Counted(f"training.p{i}", RandInt(1, 200)) for i in range(3)))
    Counted.looks = 0
    assert space.distinct_configs(10_000) is None
    assert Counted.looks < 20 * 10_000
    assert SearchSpace(space.parameters[:1]).distinct_configs(10_000) == 200


def test_a_value_listed_twice_is_one_config_and_one_branch():
    space = SearchSpace(tuple(Counted(f"training.p{i}", Choice((1, 1))) for i in range(20)))
    Counted.looks = 0
    assert space.distinct_configs(10) == 1
    assert Counted.looks < 1_000  # not 2^20 branches to find the one config
