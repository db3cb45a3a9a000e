"""Matrix expansion: grids, unions of grids, named arms, readable cell names, one baseline."""

import jinja2
import pytest

from orchestrator.errors import RecipeError
from orchestrator.recipe import matrix
from orchestrator.recipe import plan as recipe


def test_design_md_example_grid_with_baseline_overrides():
    cells = matrix.expand({"matrix": {"draft_max": [8, 16, 32]}, "baseline": {"draft": None}})
    assert cells.cells == {
        "baseline": {"draft": None},
        "draft_max=8": {"draft_max": 8},
        "draft_max=16": {"draft_max": 16},
        "draft_max=32": {"draft_max": 32},
    }
    assert cells.baseline == "baseline" and cells.is_baseline("baseline") and not cells.is_baseline("draft_max=8")


def test_grid_product_first_axis_slowest_and_names_in_written_order():
    cells = matrix.expand({"matrix": {"draft_max": [8, 16], "draft_min": [2, 5]}})
    assert list(cells.cells) == [
        "draft_max=8,draft_min=2",
        "draft_max=8,draft_min=5",
        "draft_max=16,draft_min=2",
        "draft_max=16,draft_min=5",
    ]
    assert cells.cells["draft_max=16,draft_min=5"] == {"draft_max": 16, "draft_min": 5}
    assert cells.baseline is None


def test_scalars_are_fixed_and_a_list_of_grids_is_a_union():
    cells = matrix.expand(
        {
            "matrix": [{"draft_min": 2, "draft_max": [16, 32]}, {"draft_min": 48, "draft_max": 64}],
            "baseline": "draft_min=48,draft_max=64",
        }
    )
    assert cells.cells == {
        "draft_min=2,draft_max=16": {"draft_min": 2, "draft_max": 16},
        "draft_min=2,draft_max=32": {"draft_min": 2, "draft_max": 32},
        "draft_min=48,draft_max=64": {"draft_min": 48, "draft_max": 64},
    }
    assert cells.baseline == "draft_min=48,draft_max=64"


SPEC_MATRIX = """{% set meta = {"mode": "cli",
    "defaults": {"spec": "draft", "draft_max": 16, "draft_min": 5, "ngram_n": 24},
    "baseline": {"spec": "none"},
    "matrix": [
        {"_label": "ngram-cache", "spec": "ngram-cache"},
        {"_label": "ngram-mod", "spec": "ngram-mod", "ngram_n": [8, 12, 16, 20, 24, 32],
         "draft_min": 48, "draft_max": 64},
        {"_label": "draft", "spec": "draft", "draft_max": [8, 16, 32]},
        {"_label": "draft-min2", "spec": "draft", "draft_min": 2, "draft_max": [16, 32, 64]},
        {"_label": "draft-min48", "spec": "draft", "draft_min": 48, "draft_max": 64},
    ]} %}
run --spec {{ spec }}
"""


def test_the_spec_matrix_of_issue_5_read_from_a_jinja_literal():
    meta = recipe.read_meta(jinja2.Environment(), SPEC_MATRIX, "spec_matrix.j2")
    cells = matrix.expand(meta, where="spec_matrix.j2")
    assert list(cells.cells) == [
        "baseline",
        "ngram-cache",
        "ngram-mod:ngram_n=8",
        "ngram-mod:ngram_n=12",
        "ngram-mod:ngram_n=16",
        "ngram-mod:ngram_n=20",
        "ngram-mod:ngram_n=24",
        "ngram-mod:ngram_n=32",
        "draft:draft_max=8",
        "draft:draft_max=16",
        "draft:draft_max=32",
        "draft-min2:draft_max=16",
        "draft-min2:draft_max=32",
        "draft-min2:draft_max=64",
        "draft-min48",
    ]
    assert cells.baseline == "baseline" and cells.cells["baseline"] == {"spec": "none"}
    assert cells.cells["ngram-mod:ngram_n=20"] == {"spec": "ngram-mod", "ngram_n": 20, "draft_min": 48, "draft_max": 64}
    assert cells.cells["draft-min48"] == {"spec": "draft", "draft_min": 48, "draft_max": 64}


def test_named_arms_come_first_and_mix_with_a_matrix():
    cells = matrix.expand({"arms": {"baseline": {"draft": None}, "spec": None}, "matrix": {"draft_max": [8]}})
    assert cells.cells == {"baseline": {"draft": None}, "spec": {}, "draft_max=8": {"draft_max": 8}}
    assert cells.baseline == "baseline"  # absent `baseline`: the cell called baseline
    assert matrix.expand({"arms": {"raw": {}}}).baseline is None
    assert matrix.expand({"arms": {"a": {}, "b": {"x": 1}}, "baseline": "b"}).baseline == "b"
    assert matrix.expand({"arms": {"baseline": {}}, "baseline": None}).baseline is None


def test_recipe_without_arms_or_matrix_has_one_default_cell():
    assert matrix.expand({}).cells == {"default": {}}
    assert matrix.expand({"arms": {}}).cells == {"default": {}}
    cells = matrix.expand({"baseline": {"draft": None}})
    assert (list(cells.cells), cells.baseline) == (["baseline", "default"], "baseline")


def test_baseline_overrides_equal_to_a_cell_mark_that_cell():
    cells = matrix.expand({"matrix": {"draft_max": [8, 16]}, "baseline": {"draft_max": 16}})
    assert (list(cells.cells), cells.baseline) == (["draft_max=8", "draft_max=16"], "draft_max=16")


def test_overlapping_grids_run_each_parameter_set_once():
    cells = matrix.expand({"matrix": [{"a": [1, 2], "b": 5}, {"b": 5, "a": [2, 3]}]})
    assert list(cells.cells) == ["a=1,b=5", "a=2,b=5", "b=5,a=3"]


def test_value_formatting_in_names():
    cells = matrix.expand({"matrix": {"p_min": [0.9], "flag": [True, None], "stops": [["a", "b"]]}})
    assert list(cells.cells) == ['p_min=0.9,flag=true,stops=["a","b"]', 'p_min=0.9,flag=none,stops=["a","b"]']
    assert cells.cells['p_min=0.9,flag=true,stops=["a","b"]']["stops"] == ["a", "b"]  # an axis of one list


def test_label_alone_and_with_several_axes():
    cells = matrix.expand(
        {
            "matrix": [
                {"_label": "mod", "n": [8, 16], "spec": "ngram-mod", "m": [1, 2]},
                {"_label": "cache", "spec": "ngram-cache"},
            ]
        }
    )
    assert list(cells.cells) == ["mod:n=8,m=1", "mod:n=8,m=2", "mod:n=16,m=1", "mod:n=16,m=2", "cache"]
    assert "_label" not in cells.cells["cache"]


@pytest.mark.parametrize(
    "meta, message",
    [
        ({"matrix": {"draft_max": []}}, "axis 'draft_max' has no values"),
        ({"matrix": "draft_max=8"}, "`matrix` must be a dict"),
        ({"matrix": [["draft_max", 8]]}, "a matrix grid must be a dict"),
        ({"arms": ["a", "b"]}, "`arms` must be a dict"),
        ({"arms": {"a": 3}}, "arm 'a' must be a dict"),
        ({"matrix": {"_label": "", "x": [1]}}, "_label must be a non-empty string"),
        ({"arms": {"draft_max=8": {"x": 1}}, "matrix": {"draft_max": [8]}}, "two different cells are named"),
        ({"matrix": {"x": [1, 2]}, "baseline": "x=3"}, "baseline 'x=3' is not one of the cells: x=1, x=2"),
        ({"arms": {"baseline": {"x": 1}}, "baseline": {"x": 2}}, "a different cell is already named 'baseline'"),
        ({"arms": {"a": {}}, "baseline": 3}, "baseline must be a cell name or a dict"),
    ],
)
def test_bad_metadata_names_the_problem(meta, message):
    with pytest.raises(RecipeError, match="r.j2: ") as exc:
        matrix.expand(meta, where="r.j2")
    assert message in str(exc.value)


def test_canonical_params_ignore_key_order():
    assert matrix.canonical({"b": 1, "a": None}) == matrix.canonical({"a": None, "b": 1}) == '{"a":null,"b":1}'


def test_a_matrix_is_counted_before_a_cell_is_made():
    """10^9 cells was a MemoryError traceback, 10^6 ran past 120 s at 2.7 GB: refused in one line, counted first."""
    huge = {"matrix": [{"a": list(range(1000)), "b": list(range(1000)), "c": list(range(1000))}, {"d": [1, 2]}]}
    with pytest.raises(
        RecipeError,
        match=r"its matrix makes 1,000,000,002 cells, more than a sweep runs \(at most "
        r"10,000\)",
    ):
        matrix.expand(huge)
    assert len(matrix.expand({"matrix": {"a": list(range(100)), "b": list(range(100))}}).cells) == 10_000
