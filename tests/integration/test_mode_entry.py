"""A new mode is one entry in the mode table (parse/modes.py): a fake mode added as one Mode, its tool a plain
program on this machine, goes through the recipe loader, `orch run`'s runner (prepare, the sweep, the runs stored,
read by its reader) and `orch reparse` with nothing else changed. In-process: the table is patched here."""

from integration.conftest import COMMIT
from orchestrator import store
from orchestrator.parse import METRIC_KEYS, ParsedLog, modes
from orchestrator.run import recipe_run
from orchestrator.run.recipe_run import RecipeRequest, RunOptions
from orchestrator.store.reparse import reparse_all


def read_words(stdout: str, stderr: str) -> ParsedLog:
    """The new mode's reader: its tool prints `tps=<number>`."""
    return ParsedLog(metrics={**dict.fromkeys(METRIC_KEYS), "decode_tps": float(stdout.split("=")[1])})


def test_a_fake_mode_added_as_one_entry_is_planned_run_stored_and_read_again(
    real_build, cache_env, tmp_path, monkeypatch
):
    for key in ("ORCH_BUILDS_DIR", "ORCH_CACHE"):
        monkeypatch.setenv(key, cache_env[key])
    monkeypatch.setitem(
        modes.MODES,
        "words",
        modes.Mode(
            "words",
            "a tool printing `tps=N`",
            read_words,
            exit_first=True,
            controls=False,
            on_ray=True,
            variables={"speed": 12.5},
        ),
    )
    recipe = tmp_path / "words.j2"
    recipe.write_text(
        '{% set meta = {"mode": "words", "repeat": 2, "arms": {"slow": {}, "fast": {"speed": 20.0}},'
        ' "baseline": {"speed": 12.5}} %}\n/usr/bin/printf tps={{ speed }}\n'
    )
    db = tmp_path / "results.duckdb"
    prepared = recipe_run.prepare_recipe(RecipeRequest(recipe=recipe, build_ref=COMMIT, db=db))
    assert prepared.plan.mode == "words" and prepared.plan.variables["speed"] == 12.5  # the mode's own variable
    result = recipe_run.run_prepared(prepared, RunOptions(timeout=30, orch_argv=["orch", "run", str(recipe)]))
    assert (result.status, result.failed) == ("done", 0)
    with store.Database(db).read() as con:
        stored = con.execute(
            "SELECT r.arm, r.mode, r.status, m.decode_tps FROM measured_runs r JOIN metrics m "
            "ON m.run_id = r.id ORDER BY r.id"
        ).fetchall()
    assert sorted({(a, mode, s, tps) for a, mode, s, tps in stored}) == [
        ("baseline", "words", "ok", 12.5),
        ("fast", "words", "ok", 20.0),
        ("slow", "words", "ok", 12.5),
    ]
    assert len(stored) == 6  # no control, no count-matched reference: the entry says neither
    with store.Database(db).write() as con:
        con.execute("UPDATE metrics SET decode_tps = NULL")  # as an older reader left them
        again = reparse_all(con)
        assert again.changed == 6
        assert con.execute("SELECT count(*) FROM metrics WHERE decode_tps > 0").fetchone() == (6,)
