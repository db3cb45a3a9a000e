"""Kept sweep summaries: `orch summary` prints exactly what it computes from the runs, whether it read a kept
summary or not; a kept summary is used only while nothing it was made from has changed; reads never write."""

import io
import json

import pytest
from click.testing import CliRunner
from test_exchange import add_sweep
from test_summary_store import matrix_sweep

from orchestrator import json_text, store, tables
from orchestrator.analyze import summaries
from orchestrator.analyze.summaries import kept
from orchestrator.cli import main
from orchestrator.cli import summary as summary_command
from orchestrator.store import quality, sweep_summaries

# Every output of `orch summary` that kept summaries serve, over several sweeps, one, and two
OUTPUTS = [
    [],
    ["--wide"],
    ["--format", "md"],
    ["--format", "md", "--wide"],
    ["--format", "json"],
    ["--format", "csv"],
    ["--columns", "arm,draft_max,speedup,warnings"],
    ["--format", "md", "--columns", "sweep,arm,ngram_n"],
    ["--explain"],
]
PICKS = [["--last", "10"], ["3"], ["1", "4"]]


@pytest.fixture(autouse=True)
def never_slow(monkeypatch):
    """The line a slow summary adds on stderr depends on the machine's load: outputs compared here leave it out
    (test_a_slow_summary_says_how_to_keep_it asks for it)."""
    monkeypatch.setattr(summary_command, "SLOW_S", float("inf"))


def many_sweeps(db) -> list[int]:
    """Sweeps of every shape the summary draws: two hosts, requests, telemetry, a quality row, long parameter
    values, a control, a CUDA build on a GPU machine, and a sweep with no run at all."""
    with store.opened(db) as con:
        first = add_sweep(con, host="box1")
        run = con.execute("SELECT id FROM runs WHERE sweep_id = ? AND arm = 'draft'", [first]).fetchone()[0]
        quality.link_run(
            con,
            run,
            quality.insert_quality(
                con,
                {
                    "model_sha256": "q" * 64,
                    "build_id": "b@1",
                    "text_sha256": "x",
                    "n_ctx": 256,
                    "cache_type_k": "f16",
                    "cache_type_v": "f16",
                    "ppl": 12.5,
                    "ppl_ratio": 1.01,
                    "kld_mean": 0.002,
                    "same_top_p": 97.0,
                },
            ),
        )
        ids = [
            first,
            add_sweep(con, recipe="recipes/b.j2", host="box2", speeds=(12.0, 11.0)),
            matrix_sweep(con),
            matrix_sweep(
                con,
                {"id": "cuda@1", "name": "0c1e57098-cuda", "backend": "cuda"},
                {"gpus": [{"name": "NVIDIA GeForce RTX 3090"}]},
            ),
        ]
        ids.append(
            store.create_sweep(
                con,
                {
                    "recipe_path": "recipes/c.j2",
                    "recipe_hash": "h",
                    "recipe_text": "t",
                    "mode": "cli",
                    "repeat": 1,
                    "build_name": "b",
                    "status": "done",
                },
            )
        )
    return ids


def orch(*args) -> tuple[str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def outputs(db, picks=PICKS, kinds=OUTPUTS) -> dict[str, tuple[str, str]]:
    return {" ".join(pick + out): orch("summary", *pick, *out, "--db", str(db)) for pick in picks for out in kinds}


def changed_outputs(db) -> dict[str, tuple[str, str]]:
    return outputs(db, PICKS[:1], [[], ["--format", "json"]])


def current(db, ids: list[int]) -> set[int]:
    """The sweeps whose kept summary is current, judged by their rows (the stamp: stamped)."""
    with store.opened(db, read_only=True) as con:
        return {h["sweep_id"] for h in sweep_summaries.current_by_rows(con, ids, kept.code_key())}


def stamped(db) -> set[int] | None:
    with store.opened(db, read_only=True) as con:
        found = sweep_summaries.stamped_current(con, kept.code_key())
    return None if found is None else set(found)


def test_summary_cache_print_exactly_what_the_runs_give_and_reading_keeps_nothing(tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    ids = many_sweeps(db)
    computed = outputs(db)
    with store.opened(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM sweep_summaries").fetchone()[0] == 0  # a read wrote nothing
        rows = summaries.rows(con, ids)
    assert orch("repair", "--db", str(db))[0].splitlines()[-1] == f"kept the summaries of {len(ids)} sweeps"
    assert current(db, ids) == set(ids) == stamped(db)  # read by the file's stamp: one hash a table
    assert orch("repair", "--db", str(db))[0].splitlines()[-1] == "every finished sweep's summary is kept"
    with store.opened(db, read_only=True) as con:  # parameters are read once per distinct array: one repeats
        assert con.execute(
            "SELECT count(DISTINCT cells) < count(*) FROM sweep_summary_cells WHERE name = 'params'"
        ).fetchone()[0]
    assert outputs(db) == computed  # every format, byte for byte, stdout and stderr
    monkeypatch.setattr(sweep_summaries, "FEW_SWEEPS", 0)  # the stamp's word, as for thousands of sweeps
    assert outputs(db) == computed
    # ... and what the row formatters make of the rows computed now
    buf = io.BytesIO()
    json_text.write_json(rows, buf)
    assert computed["--last 10 --format json"][0] == buf.getvalue().decode() + "\n"
    assert computed["--last 10 --format csv"][0] == tables.render(rows, "csv") + "\n"
    parsed = json.loads(computed["--last 10 --format json"][0])
    assert len(parsed) == len(rows) and len({tuple(r) for r in parsed}) == 1  # every row has the same keys
    assert {r["ppl"] for r in parsed} == {12.5, None}
    table = computed["--last 10"][0]
    assert "sweep 1: a.j2 on 0c1e57098-cpu, host box1" in table and "host box2" in table


# One statement per table a summary reads, each changing one row of sweep 1 (or what it points at)
CHANGES = {
    "sweeps": "UPDATE sweeps SET recipe_path = 'recipes/z.j2' WHERE id = 1",
    "builds": "UPDATE builds SET backend = 'cuda' WHERE id = 'b@1'",
    "runs": "UPDATE runs SET status = 'failed' WHERE id = (SELECT min(id) FROM runs WHERE sweep_id = 1)",
    "metrics": "UPDATE metrics SET decode_tps = 99 WHERE run_id = (SELECT min(id) FROM runs WHERE sweep_id = 1)",
    "requests": "DELETE FROM requests WHERE run_id = (SELECT min(id) FROM runs WHERE sweep_id = 1) AND seq = 1",
    "telemetry": "UPDATE telemetry SET power_w = 250, gpu = 0 WHERE run_id = (SELECT min(id) FROM runs WHERE "
    "sweep_id = 1)",
    "quality": "UPDATE quality SET ppl = 13.5",
    "a new run": "INSERT INTO runs (id, sweep_id, arm, repeat_index, status) VALUES (999, 1, 'draft', 1, 'ok')",
}


@pytest.mark.parametrize("table", CHANGES)
def test_a_kept_summary_is_not_used_once_a_row_it_was_made_from_changes(tmp_path, table):
    """However the row changed (here a hand-written statement, as `orch query --write` or the duckdb shell
    would run), the summary is computed from the runs again, and prints what they give now."""
    db = tmp_path / "r.duckdb"
    ids = many_sweeps(db)
    orch("repair", "--db", str(db))
    with store.opened(db) as con:
        con.execute(CHANGES[table])
    assert stamped(db) is None  # the file is not as the stamp found it: each sweep's rows are hashed
    # sweep 1 only: sweep 2 shares the build (and so stops being current with a change to it)
    assert current(db, ids) == set(ids) - ({1, 2} if table == "builds" else {1})
    changed = changed_outputs(db)
    with store.opened(db) as con:
        con.execute("DELETE FROM sweep_summaries")
    assert changed_outputs(db) == changed  # what the rows give now, nothing kept


def test_a_kept_summary_made_by_other_code_is_not_used(tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    ids = many_sweeps(db)
    orch("repair", "--db", str(db))
    monkeypatch.setattr(kept, "code_key", lambda: "another orch")
    assert current(db, ids) == set() and stamped(db) is None
    with store.opened(db, read_only=True) as con:
        assert summaries.read(con, ids).computed == len(ids)


def test_a_slow_summary_says_how_to_keep_it(tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    many_sweeps(db)
    monkeypatch.setattr(summary_command, "SLOW_S", -1.0)  # this tiny file computes in milliseconds
    err = orch("summary", "--last", "10", "--db", str(db))[1]
    assert "5 of 5 sweeps summarized from their runs" in err and "`orch repair` keeps them" in err
    orch("repair", "--db", str(db))
    assert "summarized from their runs" not in orch("summary", "--last", "10", "--db", str(db))[1]


def test_import_and_reparse_keep_the_summaries_of_what_they_changed(tmp_path):
    source = tmp_path / "a.duckdb"
    ids = many_sweeps(source)
    target = tmp_path / "b.duckdb"
    orch("import", str(source), "--db", str(target))
    assert current(target, ids) == set(ids)
    assert outputs(target) == outputs(source)  # the same sweeps, numbered alike in an empty file
    assert stamped(target) == set(ids)
    orch("reparse", "--db", str(target))  # their logs give no metrics: the summaries change, and are kept again
    assert current(target, ids) == set(ids) == stamped(target)
    with store.opened(target, read_only=True) as con:
        assert {r["decode_tps"] for r in summaries.rows(con, ids[:2])} == {None}


def test_a_kept_summary_changed_by_hand_is_not_vouched_for_by_the_stamp(tmp_path):
    """The stamp covers the kept summaries too: one whose fingerprint was changed (or that was deleted) since is
    judged by its own rows again."""
    db = tmp_path / "r.duckdb"
    ids = many_sweeps(db)
    orch("repair", "--db", str(db))
    with store.opened(db) as con:
        con.execute("UPDATE sweep_summaries SET fingerprint = fingerprint + 1 WHERE sweep_id = 1")
    assert stamped(db) is None and current(db, ids) == set(ids) - {1}


# Hand changes of kept cells: a column read as one array (arm), the parameters read once per distinct array
HAND_CHANGES = {
    "arm": "UPDATE sweep_summary_cells SET cells = '[\"x\"]' WHERE sweep_id = 1 AND name = 'arm'",
    "params": "DELETE FROM sweep_summary_cells WHERE sweep_id = 1 AND name = 'params'",
}


@pytest.mark.parametrize("name", HAND_CHANGES)
def test_kept_cells_changed_by_hand_stop_the_summary_and_repair_keeps_them_anew(tmp_path, name):
    """A table's cells are read one after another and cut by each sweep's arms: cells that are not one per arm
    (a row deleted or edited by hand) are refused with the fix, never shown against the wrong arms."""
    db = tmp_path / "r.duckdb"
    ids = many_sweeps(db)
    orch("repair", "--db", str(db))
    before = orch("summary", "--last", "10", "--db", str(db))
    with store.opened(db) as con:
        con.execute(HAND_CHANGES[name])
    result = CliRunner().invoke(main, ["summary", "--last", "10", "--db", str(db)])
    assert result.exit_code == 25 and f"'{name}' cells are not one per arm" in result.stderr
    assert "orch repair" in result.stderr
    assert orch("repair", "--db", str(db))[0].splitlines()[-1] == "kept the summary of 1 sweep"
    assert orch("summary", "--last", "10", "--db", str(db)) == before and current(db, ids) == set(ids)
