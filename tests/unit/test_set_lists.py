"""Lists in --set (recipe/set_lists.py): `draft_max=8,16` is two sweeps' values; a prompt with a comma, a TOML
array and a single value stay what they were; combinations are bounded."""

import pytest

from orchestrator.errors import RecipeError
from orchestrator.recipe import plan, set_lists


def test_comma_lists_of_numbers_booleans_and_bare_words_expand_and_other_text_does_not():
    assert set_lists.listed("8,16") == [8, 16] and set_lists.listed("0.5,0.9") == [0.5, 0.9]
    assert set_lists.listed("true,false") == [True, False] and set_lists.listed("f16,q8_0") == ["f16", "q8_0"]
    for single in ("8", "Hello, world", '["a", "b"]', "a,", ",b", "x y,z", '"1,2"'):
        assert set_lists.listed(single) is None, single


def test_every_combination_in_the_order_given_each_a_valid_set_item():
    each = set_lists.combinations(("draft_max=8,16", "prompt=Hi, there", "cache_type=f16,q8_0"))
    assert each == [
        ("draft_max=8", "prompt=Hi, there", 'cache_type="f16"'),
        ("draft_max=8", "prompt=Hi, there", 'cache_type="q8_0"'),
        ("draft_max=16", "prompt=Hi, there", 'cache_type="f16"'),
        ("draft_max=16", "prompt=Hi, there", 'cache_type="q8_0"'),
    ]
    assert [plan.parse_set(c) for c in each][3] == {"draft_max": 16, "prompt": "Hi, there", "cache_type": "q8_0"}
    assert set_lists.combinations(("a=1",)) == [("a=1",)] and set_lists.combinations(()) == [()]


def test_too_many_combinations_and_lists_where_one_value_is_taken_are_refused():
    with pytest.raises(RecipeError, match="make 81 sweeps; at most 64"):
        set_lists.combinations(("a=1,2,3", "b=1,2,3", "c=1,2,3", "d=1,2,3"))
    with pytest.raises(RecipeError, match="`orch tune` takes one value per variable"):
        set_lists.refuse_lists(("n_predict=64", "draft_max=8,16"), "orch tune", "race values with --space")
