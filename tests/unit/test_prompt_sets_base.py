"""The built-in prompt sets: "default" (instructions, for chat models) and "base" (openings a base model continues,
the demo's workloads among them)."""

import tomllib
from pathlib import Path

import pytest

from orchestrator.errors import RecipeError
from orchestrator.recipe import prompts

WORKLOADS = Path(__file__).resolve().parents[2] / "recipes" / "workloads"


def test_the_base_set_holds_every_demo_workload_text():
    name, items = prompts.load("base")
    assert name == "base" and len(items) >= 4
    texts = {p.prompt for p in items}
    for workload in WORKLOADS.glob("*.toml"):
        assert tomllib.loads(workload.read_text())["prompt"] in texts, workload.name
    assert prompts.identity(name, items) != prompts.identity(*prompts.load("default"))


def test_an_unknown_set_names_the_built_in_ones():
    with pytest.raises(RecipeError, match="default, base"):
        prompts.load("no-such-set.jsonl")
