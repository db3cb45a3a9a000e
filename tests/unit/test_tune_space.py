"""orch tune's search spaces: TOML files with ranges and `all` axes, built-in spaces by name, conditional on the
build and the variables, sampled when large; a space variable the recipe does not have is refused."""

import re
from pathlib import Path

import pytest

from orchestrator.errors import InvalidOption, RecipeError
from orchestrator.recipe import matrix
from orchestrator.recipe.plan import load
from orchestrator.tune import space

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "tune.j2"
BASELINE = {"spec": "none"}


def _names(grids: list[dict]) -> list[str]:
    return [name for g in grids for name, _ in matrix.grid_cells(g)]


def test_a_space_file_gives_ranges_per_method_and_all_axes_to_every_grid_and_to_plain_decoding(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text(
        '[all]\nthreads = [1, 2]\n[[grid]]\n_label = "ngram-mod"\nspec = "ngram-mod"\n'
        'ngram_n = {from = 4, to = 12, step = 4}\n[[grid]]\n_label = "p"\nspec = "draft"\n'
        "p_min = {from = 0.0, to = 0.2, step = 0.1}\n"
    )
    found = space.from_file(path, BASELINE)
    names = _names(found.grids)
    assert "off:threads=1" in names and "off:threads=2" in names  # speculation off, at each thread count
    assert "ngram-mod:ngram_n=12,threads=2" in names
    assert "p:p_min=0.1,threads=1" in names  # a float range without float noise (0.1, not 0.30000000000000004)
    assert len(names) == 2 + 3 * 2 + 3 * 2


@pytest.mark.parametrize(
    "text, words",
    [
        ("[[grid]]\nx = {from = 3, to = 1}\n", "not a range"),
        ("grid = []\n", r"no \[\[grid\]\]"),
        ('[[grid]]\nspec = "none"\n[extra]\n', "unknown keys extra"),
        ('sample = 0\n[[grid]]\nspec = "none"\n', "is not a whole number from 1 to 1000"),
        ("[[grid\n", "not valid TOML"),
    ],
)
def test_a_bad_space_file_is_one_line_naming_the_fix(tmp_path, text, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InvalidOption, match=words):
        space.from_file(path, BASELINE)
    with pytest.raises(InvalidOption, match="does not exist"):
        space.from_file(tmp_path / "missing.toml", BASELINE)


def test_builtin_spaces_follow_the_build_and_the_variables():
    cpu = space.from_names(["all"], baseline=BASELINE, backend="cpu", variables={"draft": None})
    labels = {g.get("_label") for g in cpu.grids}
    assert {"ngram-mod", "ngram-simple", "ngram-map-k", "ngram-cache", "off"} <= labels
    assert "draft" not in labels and any("needs `draft`" in n for n in cpu.notes)  # no draft model given
    assert all("threads" in g for g in cpu.grids) and not any("ngl" in g for g in cpu.grids)
    cuda = space.from_names(["ngram-mod", "gpu"], baseline=BASELINE, backend="cuda", variables={})
    assert all(g["ngl"] and g["cache_type"] for g in cuda.grids)
    with_draft = space.from_names(["draft-simple"], baseline=BASELINE, backend="cpu", variables={"draft": "d.gguf"})
    # 96 cells (6 windows x 4 draft_min x 4 p_min) sampled reproducibly, every value of every axis kept
    assert len(_names(with_draft.grids)) <= space.DEFAULT_SAMPLE and "96 candidates sampled" in with_draft.notes[0]
    for axis, values in (
        ("draft_max", {1, 2, 3, 4, 8, 16}),
        ("draft_min", {0, 1, 2, 5}),
        ("p_min", {0.0, 0.5, 0.8, 0.9}),
    ):
        assert {g[axis][0] for g in with_draft.grids} == values, axis
    model = space.from_names(["draft-model"], baseline=BASELINE, backend="cpu", variables={"draft": "d.gguf"})
    (grid,) = model.grids  # the draft's threads from this machine's cores, its KV cache type
    assert (grid["threads_draft"], grid["cache_type_draft"], grid["draft_max"]) == (
        space._cores(),
        ["f16", "q8_0"],
        [2, 4],
    )
    with pytest.raises(InvalidOption, match="no such built-in space"):
        space.from_names(["ngram-moo"], baseline=BASELINE, backend="cpu", variables={})
    with pytest.raises(InvalidOption, match="nothing to race"):
        space.from_names(["gpu"], baseline=BASELINE, backend="cpu", variables={})


def test_a_large_space_is_sampled_reproducibly_and_in_proportion(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text(
        'sample = 30\n[[grid]]\n_label = "a"\nspec = "ngram-mod"\nngram_n = {from = 1, to = 20}\n'
        'draft_max = {from = 1, to = 20}\n[[grid]]\n_label = "b"\nspec = "ngram-cache"\n'
    )
    first = space.from_file(path, BASELINE)
    names = _names(first.grids)
    assert 25 <= len(names) <= 31 and "b" in names  # the one-cell grid keeps its cell
    assert names == _names(space.from_file(path, BASELINE).grids)
    a_cells = [g for g in first.grids if g["_label"] == "a"]
    assert len({g["ngram_n"][0] for g in a_cells}) == 20  # stratified: every value of the axis drawn
    assert any("sampled" in n for n in first.notes)


def test_a_space_variable_the_recipe_does_not_have_is_refused_before_anything_runs():
    builtins = {"bin": "/BIN", "build": {}}
    grids = [{"_label": "m", "spec": "ngram-mod", "ngram_nn": [4, 8]}]
    with pytest.raises(RecipeError, match="ngram_nn is not a variable of .*did you mean ngram_n"):
        load(RECIPE, builtins=builtins, space=grids)
    plan = load(RECIPE, builtins=builtins, space=[{"_label": "m", "spec": "ngram-mod", "ngram_n": [4, 8]}])
    assert [a.name for a in plan.arms] == ["baseline", "m:ngram_n=4", "m:ngram_n=8"]  # the recipe's matrix replaced
    assert "--spec-ngram-mod-n-match" in plan.arms[1].argv


def test_a_draft_given_with_set_brings_the_draft_space_in(tmp_path):
    """`orch tune --space draft-simple --set draft=FILE`: the space sees --set as the recipe does (it was left out
    with "needs `draft` set" although the user had set it)."""
    from types import SimpleNamespace

    from orchestrator.tune import session
    from orchestrator.tune.request import TuneRequest

    cpu = SimpleNamespace(backend="cpu")
    given = TuneRequest(recipe=RECIPE, space="draft-simple", overrides=("draft=d.gguf",))
    grids, _, notes = session._space(given, cpu)
    assert len(_names(grids)) == len(
        _names(
            space.from_names(["draft-simple"], baseline=BASELINE, backend="cpu", variables={"draft": "d.gguf"}).grids
        )
    ) and all("sampled" in n for n in notes)
    vars_file = tmp_path / "v.toml"
    vars_file.write_text('draft = "d.gguf"\n')
    assert len(
        _names(session._space(TuneRequest(recipe=RECIPE, space="draft-simple", vars_file=vars_file), cpu)[0])
    ) == len(_names(grids))
    grids, _, notes = session._space(TuneRequest(recipe=RECIPE, space="draft-simple,ngram-cache"), cpu)
    assert "left out" in notes[0] and _names(grids) == ["ngram-cache"]


def test_the_draft_model_space_renders_the_drafts_threads_and_kv_type():
    spaced = space.from_names(["draft-model"], baseline=BASELINE, backend="cpu", variables={"draft": "d.gguf"})
    plan = load(RECIPE, builtins={"bin": "/BIN", "build": {}}, overrides=("draft=d.gguf",), space=spaced.grids)
    drafting = [a for a in plan.arms if "-md" in a.argv]
    assert len(drafting) == 2 * len(space._cores()) * 2
    for arm in drafting:
        td, kv = arm.argv[arm.argv.index("-td") + 1], arm.argv[arm.argv.index("-ctkd") + 1]
        assert int(td) in space._cores() and kv in ("f16", "q8_0") and arm.argv[arm.argv.index("-ctvd") + 1] == kv


@pytest.mark.parametrize(
    "text, words",
    [
        (
            'sample = 10\n[[grid]]\nspec = "ngram-mod"\n' + "".join(f"a{i} = {list(range(10))}\n" for i in range(9)),
            None,
        ),  # 10^9 cells, sampled by index: never expanded (MemoryError before)
        (
            '[[grid]]\nspec = "ngram-mod"\na = {from = 1, to = 100}\nb = {from = 1, to = 100}\n',
            r"10,000 candidates; a race takes at most 1,000 unsampled: add `sample = N`",
        ),
        (
            'sample = 10\n[[grid]]\nspec = "ngram-mod"\n' + "".join(f"a{i} = {list(range(100))}\n" for i in range(7)),
            r"100,000,000,000,000 candidates; a space may describe at most",
        ),
        (
            'sample = 100000\n[[grid]]\nspec = "ngram-mod"\na = [1, 2]\n',
            r"sample = 100000 is not a whole number from 1",
        ),
        (
            '[[grid]]\nspec = "draft"\ntarget = ["/etc/passwd"]\n',
            r"sets target: a space races settings of one model pair",
        ),
        ('[all]\ndraft = "small.gguf"\n[[grid]]\nspec = "draft"\n', r"sets draft: a space races settings"),
        ('[[grid]]\nspec = "ngram-mod"\nprompt = ["a", "b"]\n', r"sets prompt: a space races settings on one text"),
        (
            '[all]\nn_predict = [16, 256]\n[[grid]]\nspec = "ngram-mod"\n',
            r"sets n_predict: a space races settings on one",
        ),
    ],
)
def test_a_space_is_counted_before_it_is_expanded_and_never_varies_the_models(tmp_path, text, words):
    path = tmp_path / "space.toml"
    path.write_text(text)
    if words is None:
        sampled = space.from_file(path, {"spec": "none"})
        assert sum(space.grid_size(g) for g in sampled.grids) <= 12
        assert sampled.notes[0].startswith("space of 1000000000 candidates sampled to")
        return
    with pytest.raises(InvalidOption, match=words):
        space.from_file(path, {"spec": "none"})


def test_a_tune_resumes_only_with_the_recipe_it_started_with(tmp_path):
    """The recipe is read again on --resume: a changed or removed one is refused in one line, not raced."""
    from orchestrator.errors import TuneResumeError
    from orchestrator.hashing import sha256_text
    from orchestrator.tune.stored_tune import check_recipe

    recipe = tmp_path / "r.j2"
    recipe.write_text("{{ bin }}/llama-completion -m x -p {{ prompt }}\n")
    row = {"id": 3, "recipe_path": str(recipe), "recipe_hash": sha256_text(recipe.read_text())}
    check_recipe(row)  # the same recipe: resumed
    recipe.write_text("{{ bin }}/llama-completion -m y -p {{ prompt }}\n")
    with pytest.raises(TuneResumeError, match=rf"tune 3: its recipe {recipe} changed since the tune started"):
        check_recipe(row)
    recipe.unlink()
    with pytest.raises(TuneResumeError, match=r"is gone since the tune started"):
        check_recipe(row)


def test_make_demos_tune_races_draft_settings_of_the_catalogues_pair_on_a_workload_that_exists():
    """`make demo` ends with `orch tune` on the Qwen pair: its space file loads (draft settings only, a handful:
    the demo has minutes), its vars name the catalogue's two files, its workload is a shipped one."""
    import shlex
    import tomllib

    from orchestrator.models.catalogue import catalogue

    root = RECIPE.parents[1]
    makefile = (root / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    (line,) = [ln.strip() for ln in makefile.splitlines() if ln.strip().startswith("$(ORCH) tune")]
    argv = shlex.split(line)
    option = {k: v for k, v in zip(argv, argv[1:]) if k.startswith("--")}
    found = space.from_file(root / option["--space"], BASELINE)
    cells = [values for g in found.grids for _, values in matrix.grid_cells(g)]
    assert 2 <= len(cells) <= 12 and {c["spec"] for c in cells} == {"draft"}  # plain decoding races anyway
    pair = tomllib.loads((root / option["--vars"]).read_text())
    files = {m.file for m in catalogue().resolve("qwen2.5-coder-pair")}
    assert {pair["target"], pair["draft"]} == files
    assert (root / "recipes" / "workloads" / f"{option['--workload']}.toml").is_file()
    assert option["--budget"].endswith("m")  # bounded in time: the demo's ten minutes


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda r: r["budget"].update(runs=-3), "budget runs -3 is no count of runs"),
        (lambda r: r["budget"].update(runs=10**20), "budget runs 100000000000000000000 is no count"),
        (lambda r: r["budget"].update(seconds=float("nan")), "budget seconds nan is no time"),
        (lambda r: r["rules"].update(alpha=2.0), "alpha 2.0 is not within (0, 0.5]"),
        (lambda r: r["rules"].update(min_runs="3"), "min_runs '3' is no whole number"),
        (lambda r: r["rules"].update(max_runs=1, min_runs=3), "max_runs 1 is below min_runs 3"),
        (lambda r: r["variables"].update(overrides=[["draft_max", 4]]), "are not --set items"),
        (lambda r: r["variables"].update(timeout=float("inf")), "timeout inf is no time limit"),
    ],
)
def test_a_stored_tune_is_checked_as_a_fresh_one_before_it_resumes(edit, said, tmp_path):
    """A tune travels in exports: its stored budget, rule, overrides and time limit are data someone else made, and
    are checked as `orch tune` checks its options (a bad one was a traceback, or raced by a rule nobody chose)."""
    from orchestrator.errors import TuneResumeError
    from orchestrator.tune.stored_tune import stored_request

    row = {
        "id": 7,
        "recipe_path": str(RECIPE),
        "build_name": "b",
        "variables": {"vars_values": {}, "workload_values": {"None": {}}, "overrides": ["draft_max=4"]},
        "budget": {"runs": 40, "seconds": None},
        "rules": {"alpha": 0.05, "min_runs": 3, "max_runs": 10},
        "workloads": [None],
    }
    request, files, _ = stored_request(row, tmp_path / "r.duckdb")
    assert request.budget.runs == 40 and request.overrides == ("draft_max=4",) and files == [None]
    edit(row)
    with pytest.raises(TuneResumeError, match=rf"tune 7: its stored settings do not read \(\w+: .*{re.escape(said)}"):
        stored_request(row, tmp_path / "r.duckdb")
