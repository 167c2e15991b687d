"""``rlsweep schema``: the JSON Schema an editor uses to complete and check spec files. Every spec the
project ships or tests with validates against it; an unknown key or a wrong type does not."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import jsonschema
import pytest
import yaml

from tests.conftest import REPO, TINY_SPEC, small_ppo

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    out = subprocess.run([sys.executable, "-m", "rlsweep.cli", "schema"], capture_output=True, text=True, cwd=REPO, check=True)
    schema = json.loads(out.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(validator, document) -> list[str]:
    return sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_validates_against_the_schema(validator, example):
    assert errors(validator, yaml.safe_load(example.read_text())) == []


def test_the_test_specs_validate_against_the_schema(validator, tmp_path):
    from tests.schedulers.test_rules import document as pairing_document

    documents = [TINY_SPEC, small_ppo("s", tmp_path, budget={"env_steps": 1000}), small_ppo("m", tmp_path, mlflow=False, budget={"env_steps": 500})]
    documents += [pairing_document(s, h) for s, h in (("optuna", "asha"), ("bohb", "bohb"), ("random", "pbt"), ("random", "median"))]
    for document in documents:
        assert errors(validator, json.loads(json.dumps(document))) == [], document


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"budgett": {"env_steps": 1}}, ""),  # unknown top-level key
        ({"budget": {"env_steps": 10, "trails": 3}}, "budget"),  # unknown key in a section
        ({"budget": {"env_steps": "lots"}}, "budget.env_steps"),  # wrong type
        ({"budget": {"env_steps": 0}}, "budget.env_steps"),  # out of range
        ({"metric": {"mode": "maximize"}}, "metric.mode"),
        ({"scheduler": {"name": "asha", "grace_period": 3}}, "scheduler"),  # an option ASHA does not have
        ({"searcher": {"name": "optuna", "seed": -1}}, "searcher"),
        ({"search_space": {"training.lr": {"loguniform": [1e-4]}}}, "search_space.training.lr"),
        ({"config": {"lr": 0.1}}, "config"),  # not a method.argument path
    ],
)
def test_a_spec_with_an_unknown_key_or_a_wrong_type_fails_the_schema(validator, change, where):
    document = copy.deepcopy(TINY_SPEC)
    document.update(change)
    found = errors(validator, document)
    assert found and any(e.startswith(where) for e in found), found


def test_the_schema_documents_every_field():
    import rlsweep

    schema = rlsweep.schema()
    assert set(schema["properties"]) >= {"algorithm", "env", "search_space", "searcher", "scheduler", "budget", "metric"}
    budget = schema["$defs"]["BudgetSpec"]["properties"]
    assert budget["trials"]["default"] == 4 and "trials" in budget["trials"]["description"]
    asha = next(v for v in schema["properties"]["scheduler"]["anyOf"] if v.get("properties", {}).get("name") == {"const": "asha"})
    assert asha["properties"]["reduction_factor"]["default"] == 3


def test_a_section_left_empty_is_valid_for_the_schema_as_for_the_parser(validator):
    import rlsweep

    document = copy.deepcopy(TINY_SPEC)
    document.update(checkpoint=None, searcher=None, search_space=None, evaluation=None)
    assert errors(validator, document) == []
    rlsweep.load_spec(document, preflight=False)


def test_every_top_level_default_the_schema_shows_is_a_value_the_spec_takes(validator):
    # An editor inserts the schema's default for a key: it must be what a user could write there, and mean the
    # same as leaving the key out (search_space once showed its internal fields: {"parameters": [], ...}).
    import rlsweep

    schema = rlsweep.schema()
    shown = {key: prop["default"] for key, prop in schema["properties"].items() if "default" in prop}
    assert shown["search_space"] == {}
    base = copy.deepcopy(TINY_SPEC)
    for key, default in shown.items():
        document = {**base, key: copy.deepcopy(default)}
        if key == "search_space":  # the tiny spec searches; an empty space then means one fixed config
            document["searcher"] = "random"
        assert errors(validator, document) == [], key
        rlsweep.load_spec(document, preflight=False)
