"""The mode table (parse/modes.py): every mode a recipe may name has its reader there, and a new mode is one entry
plus its reader: the recipe loader accepts it and `orch reparse` reads its runs with it."""

import re
from pathlib import Path

import pytest

from orchestrator import store
from orchestrator.errors import RecipeError
from orchestrator.parse import METRIC_KEYS, ParsedLog, modes
from orchestrator.recipe import plan
from orchestrator.store.reparse import reparse_all


def test_the_four_modes_and_what_their_table_says():
    assert list(modes.MODES) == ["cli", "server", "quality", "bench"]
    assert modes.mode_of(None) is modes.MODES["cli"]  # runs stored before modes existed
    assert modes.MODES["server"].parse is None  # read from its requests, not from its logs alone
    assert not modes.MODES["quality"].on_ray and modes.MODES["bench"].exit_first
    assert {m.name for m in modes.MODES.values() if m.controls} == {"cli", "quality"}
    assert modes.names_where("serves") == ["server"] and modes.names_where("crosses_builds") == ["cli", "bench"]
    assert modes.names_where("fits_depth") == ["quality", "bench"] and modes.names_where("races") == ["cli"]
    assert set(modes.MODES["quality"].variables) == {"quality_base", "quality_text", "quality_ctx"}


def test_the_server_modes_default_prompt_set_is_orchs_own():
    from orchestrator.recipe import prompts

    assert modes.REQUEST_OPTIONS["prompt_set"] == prompts.DEFAULT


MODE_NAME = re.compile(r"""(==|!=|\bin\b|=|\bFROM)\s*\(?\s*["'](cli|server|quality|bench)["']|MODES\[["']""")


def test_no_stage_names_a_mode_outside_the_table():
    """What differs between modes is read from their entry (modes.py); a comparison with a mode's name elsewhere is a
    behaviour the table does not hold. Shipped migrations keep the SQL they had."""
    root = Path(modes.__file__).resolve().parents[1]
    found = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for path in sorted(root.rglob("*.py"))
        if path.name != "modes.py" and "migrations" not in path.parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if MODE_NAME.search(line) and "mode" in line.lower()
    ]
    assert found == []


def read_words(stdout: str, stderr: str) -> ParsedLog:
    """The new mode's reader: a tool that prints `tps <number>`."""
    return ParsedLog(metrics={**dict.fromkeys(METRIC_KEYS), "decode_tps": float(stdout.split()[1])})


def test_a_new_mode_is_one_entry_plus_its_reader(tmp_path, monkeypatch):
    monkeypatch.setitem(
        modes.MODES,
        "words",
        modes.Mode("words", "a tool printing `tps N`", read_words, exit_first=True, controls=False, on_ray=True),
    )
    recipe = tmp_path / "words.j2"
    recipe.write_text('{% set meta = {"mode": "words", "arms": {"one": {}}} %}\n/usr/bin/printf "tps 12.5"\n')
    loaded = plan.load(recipe, builtins={"bin": "/nonexistent", "models": str(tmp_path)})
    assert loaded.mode == "words" and [a.name for a in loaded.arms] == ["one"]
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(
        con, {"recipe_path": str(recipe), "recipe_hash": "h", "recipe_text": "t", "status": "done"}
    )
    run = store.insert_run(
        con, {"sweep_id": sweep, "arm": "one", "is_baseline": True, "repeat_index": 0, "mode": "words", "status": "ok"}
    )
    store.save_logs(con, run, {"stdout": b"tps 12.5", "stderr": b""})
    store.save_metrics(con, run, ParsedLog(metrics=dict.fromkeys(METRIC_KEYS)))  # as an older reader left it
    result = reparse_all(con)
    assert (result.runs, result.changed, dict(result.fields)) == (1, 1, {"decode_tps": 1})
    assert con.execute("SELECT decode_tps FROM metrics WHERE run_id = ?", [run]).fetchone() == (12.5,)


def test_an_unknown_mode_names_the_table(tmp_path):
    recipe = tmp_path / "x.j2"
    recipe.write_text('{% set meta = {"mode": "nope", "arms": {"one": {}}} %}\n/usr/bin/true\n')
    with pytest.raises(RecipeError, match="mode 'nope' is not one of cli, server, quality, bench"):
        plan.load(recipe, builtins={"bin": "/nonexistent", "models": str(tmp_path)})
