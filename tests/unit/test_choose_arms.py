"""--arms: globs on arm names choose the arms; the baseline always comes along; a pattern matching nothing is an error
naming the recipe's arms."""

from pathlib import Path

import pytest

from orchestrator.errors import InvalidOption
from orchestrator.recipe.plan import choose_arms, load

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = {"bin": "/b/bin", "build": {"commit": "0c1e57098", "backend": "cpu"}}


def plan():
    return load(
        ROOT / "recipes" / "spec_methods.j2", builtins=BUILTINS, vars_file=ROOT / "recipes" / "tiny_methods.toml"
    )


def test_globs_choose_arms_and_the_baseline_comes_along():
    chosen = choose_arms(plan(), ("mtp:*", "eagle3"))
    assert [a.name for a in chosen.arms] == [
        "baseline",
        "mtp:draft_max=1",
        "mtp:draft_max=2",
        "mtp:draft_max=3",
        "mtp:draft_max=4",
        "eagle3",
    ]
    assert choose_arms(plan(), ()).arms == plan().arms  # no --arms: every arm


def test_a_pattern_that_matches_nothing_names_the_arms():
    with pytest.raises(InvalidOption) as caught:
        choose_arms(plan(), ("ngram*", "mtp-*"))
    assert str(caught.value).startswith("--arms mtp-* matches no arm of ")
    assert "its arms: baseline, draft-simple, ngram-mod, mtp:draft_max=1" in str(caught.value)
