"""`--resume` continues the newest sweep of the same recipe text, build and variables, or stops with what it looked
for and what each sweep of that recipe differs in: never a new sweep."""

from pathlib import Path

import pytest

from orchestrator import store
from orchestrator.build.finished import Build
from orchestrator.errors import NoSuchSweep, NothingToResume, ResumeMismatch
from orchestrator.recipe import plan as recipe
from orchestrator.run.resume import resumable

ROOT = Path(__file__).resolve().parents[2]
RECIPE_A = ROOT / "recipes" / "recipe_a.j2"
BUILTINS = {"bin": "/b/bin", "build": {"commit": "0c1e57098", "backend": "cpu"}}
BUILD = Build.from_record({"id": "0c1e57098-cpu@1", "name": "0c1e57098-cpu", "dir": "/b", "commit": "0c1e57098"})
OLD_BUILD = Build.from_record({"id": "f49e91787-cpu@1", "name": "f49e91787-cpu", "dir": "/o", "commit": "f49e91787"})


def store_sweep(con, plan, build, arms=None) -> int:
    return store.create_sweep(
        con,
        {
            "recipe_path": plan.recipe_path,
            "recipe_hash": plan.recipe_hash,
            "recipe_text": plan.recipe_text,
            "variables": plan.variables,
            "mode": plan.mode,
            "repeat": plan.repeat,
            "build_id": build.id,
            "build_name": build.name,
            "status": "interrupted",
            "arm_names": arms if arms is not None else ARMS,
        },
    )


ARMS = ["baseline", "draft", "control:llama-speculative-simple"]


@pytest.fixture
def con(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    yield con
    con.close()


def test_resume_picks_the_newest_sweep_with_everything_equal(con):
    plan = recipe.load(RECIPE_A, builtins=BUILTINS, overrides=("n_predict=8",))
    first = store_sweep(con, plan, BUILD)
    store_sweep(con, plan, OLD_BUILD)
    second = store_sweep(con, plan, BUILD)
    assert resumable(con, plan, BUILD, "latest", ARMS) == second
    assert resumable(con, plan, BUILD, str(first), ARMS) == first


def test_resume_that_matches_nothing_names_what_it_looked_for_and_how_each_candidate_differs(con, monkeypatch):
    monkeypatch.setenv("ORCH_MODELS", "/models")
    stored = recipe.load(RECIPE_A, builtins=BUILTINS, overrides=("n_predict=8",))
    on_old = store_sweep(con, stored, OLD_BUILD)
    same_build = store_sweep(con, stored, BUILD)
    monkeypatch.setenv("ORCH_MODELS", "/elsewhere")  # another ORCH_MODELS: another `models` variable
    plan = recipe.load(RECIPE_A, builtins=BUILTINS, overrides=("n_predict=8",))
    before = con.execute("SELECT count(*) FROM sweeps").fetchone()[0]
    with pytest.raises(NothingToResume) as exc:
        resumable(con, plan, BUILD, "latest", ARMS)
    message = str(exc.value)
    assert exc.value.exit_code == 32 and "\n" not in message
    assert f"recipe {RECIPE_A} (this text, sha256 {plan.recipe_hash[:12]}) on build 0c1e57098-cpu" in message
    assert 'models="/elsewhere"' in message and "n_predict=8" in message  # the variables it looked for
    assert f'sweep {same_build} differs in models ("/models" there, "/elsewhere" here)' in message
    assert f"sweep {on_old} differs in build (f49e91787-cpu there, 0c1e57098-cpu here); models" in message
    assert message.index(f"sweep {same_build}") < message.index(f"sweep {on_old}")  # newest first
    assert con.execute("SELECT count(*) FROM sweeps").fetchone()[0] == before


def test_resume_with_nothing_of_that_recipe_stored_says_so(con):
    plan = recipe.load(RECIPE_A, builtins=BUILTINS)
    with pytest.raises(NothingToResume, match="no sweep of recipe_a.j2 is stored; start one without --resume"):
        resumable(con, plan, BUILD, "latest", ARMS)


def test_resume_of_a_named_sweep_says_what_differs(con, tmp_path):
    plan = recipe.load(RECIPE_A, builtins=BUILTINS, overrides=("n_predict=8",))
    sweep = store_sweep(con, plan, BUILD)
    edited = tmp_path / "recipe_a.j2"
    edited.write_text(RECIPE_A.read_text() + "\n{# edited #}\n")
    other = recipe.load(edited, builtins=BUILTINS, overrides=("n_predict=16",))
    with pytest.raises(
        ResumeMismatch,
        match=rf"sweep {sweep} cannot be resumed by this run: it differs in recipe "
        r"text \(it ran another text of .*recipe_a.j2\); n_predict \(8 there, "
        r"16 here\)",
    ) as exc:
        resumable(con, other, BUILD, str(sweep), ARMS)
    assert exc.value.exit_code == 21
    with pytest.raises(NoSuchSweep):
        resumable(con, plan, BUILD, "99", ARMS)


def test_resume_continues_the_arms_the_sweep_planned_and_no_other_selection(con):
    """`orch run --build A,B` then `--resume` with one of its builds mixed uncrossed arms into it, and another
    `--arms` extended it with arms never interleaved with the first: both are refused, naming the arms that differ;
    a sweep stored before its arms were (NULL) resumes as before."""
    plan = recipe.load(RECIPE_A, builtins=BUILTINS, overrides=("n_predict=8",))
    crossed = [f"{b}/{a}" for b in ("f49e91787-cpu", "0c1e57098-cpu") for a in ARMS]
    sweep = store_sweep(con, plan, BUILD, crossed)
    with pytest.raises(
        ResumeMismatch,
        match=rf"sweep {sweep} .* differs in arms \(0c1e57098-cpu/baseline, "
        r".* and 2 more there only; baseline, control:llama-speculative-simple, "
        r"draft here only\); resume needs the same recipe text, builds, "
        r"variables and arms",
    ):
        resumable(con, plan, BUILD, str(sweep), ARMS)
    assert resumable(con, plan, BUILD, str(sweep), crossed) == sweep
    chosen = store_sweep(con, plan, BUILD, ["baseline", "draft", "control:llama-speculative-simple"])
    with pytest.raises(ResumeMismatch, match=r"differs in arms \(draft there only\)"):
        resumable(con, plan, BUILD, str(chosen), ["baseline", "control:llama-speculative-simple"])
    old = store_sweep(con, plan, BUILD, [])
    con.execute("UPDATE sweeps SET arm_names = NULL WHERE id = ?", [old])
    assert resumable(con, plan, BUILD, str(old), ["baseline"]) == old
