"""Views as code (store/views.py): a results file an old orch made, upgraded on open, has exactly the views of a fresh
one and summarises its rows the same; a view edited by hand or made by another definition is made again."""

import json
from datetime import datetime

import duckdb

from orchestrator import results, store
from orchestrator.store import exchange, migrations, views

# run_summary as migration 006 made it, before runs named their own build (m022): what an old file holds
OLD_RUN_SUMMARY = """
    CREATE VIEW run_summary AS
    SELECT r.id AS run_id, r.sweep_id, s.build_name, r.arm, m.decode_tps
    FROM runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id"""


def _old_file(path) -> None:
    """A file at migration 006's schema with a sweep of two arms over three repeats, and a view of its time."""
    con = duckdb.connect(str(path))
    migrations.apply(con, only=set(range(1, 7)))
    con.execute(OLD_RUN_SUMMARY)
    when = datetime(2025, 3, 1, 12, 0, 0)
    con.execute(
        "INSERT INTO builds (id, name, commit, upstream_commit, backend, status, dir, started_at) "
        "VALUES ('b1', 'abc1234-cpu', 'abc1234', 'abc1234', 'cpu', 'ok', '/builds/abc1234-cpu', ?)",
        [when],
    )
    con.execute(
        "INSERT INTO sweeps (id, recipe_path, recipe_hash, recipe_text, variables, mode, repeat, build_id, build_name, "
        "commit, upstream_commit, host, argv, status, started_at, ended_at, run_order) VALUES (1, 'r.j2', 'h', 't', "
        "'{}', 'cli', 3, 'b1', 'abc1234-cpu', 'abc1234', 'abc1234', ?, '[]', 'done', ?, ?, 'interleaved')",
        [json.dumps({"hostname": "old-box"}), when, when],
    )
    speeds = {"baseline": (40.0, 41.0, 39.5), "draft": (52.0, 50.5, 53.0)}
    run_id = 0
    for repeat in range(3):
        for arm, tps in speeds.items():
            run_id += 1
            con.execute(
                "INSERT INTO runs (id, sweep_id, build_id, arm, is_baseline, params, repeat_index, mode, status, "
                "wall_s, started_at, warmup) VALUES (?, 1, 'b1', ?, ?, '{}', ?, 'cli', 'ok', 2.0, ?, false)",
                [run_id, arm, arm == "baseline", repeat, when],
            )
            drafting = (60, 45, 0.75) if arm == "draft" else (None, None, None)
            con.execute(
                "INSERT INTO metrics (run_id, n_predict, n_drafted, n_accepted, acceptance, decode_tps) "
                "VALUES (?, 64, ?, ?, ?, ?)",
                [run_id, *drafting, tps[repeat]],
            )
    con.close()


def _views(path) -> list[tuple[str, str]]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' ORDER BY 1"
        ).fetchall()


def _summary(path) -> list[tuple]:
    with results.open(path) as found:
        return [
            (a.arm, a.values["ok"], a.decode_tps, a.acceptance, a.speedup, a.speedup_low, a.speedup_high, a.warnings)
            for a in found.summary()
        ]


def test_an_upgraded_file_has_a_fresh_files_views_and_summary(tmp_path):
    old, fresh = tmp_path / "old.duckdb", tmp_path / "fresh.duckdb"
    _old_file(old)
    with store.opened(old) as con:  # the open upgrades it: migrations on tables, then every view from the code
        assert migrations.pending(con) == 0 and views.current(con)
    with store.opened(fresh) as con:
        exchange.import_source(con, old)  # the same rows, in a file made new
    assert _views(old) == _views(fresh)
    assert [name for name, _ in _views(old)] == sorted(views.NAMES)
    upgraded = _summary(old)
    assert upgraded == _summary(fresh)
    speedup = {row[0]: row[4] for row in upgraded}["draft"]
    assert 1.2 < speedup < 1.35  # the rows the old file held, read through today's views: 52/40, 50.5/41, 53/39.5


def test_a_view_edited_by_hand_or_by_another_definition_is_made_again(tmp_path):
    path = tmp_path / "r.duckdb"
    store.connect(path).close()
    made = _views(path)
    con = duckdb.connect(str(path))
    con.execute("CREATE OR REPLACE VIEW arm_summary AS SELECT 1 AS nothing")
    con.execute("DROP VIEW speedup_vs_reference")
    assert not views.current(con)
    con.close()
    with store.opened(path, read_only=True) as con:  # a read: the file is brought to the code's views first
        assert views.current(con) and con.execute("SELECT count(*) FROM arm_summary").fetchone()[0] == 0
    assert _views(path) == made


def test_migrations_are_frozen_and_touch_tables_only():
    """A shipped migration must do the same thing for ever: it imports no live module of orch's (only another
    migration), makes no view (store/views.py does), and no live module imports one."""
    import ast
    from pathlib import Path

    root = Path(store.__file__).resolve().parents[1]
    for path in sorted((root / "store" / "migrations").glob("m*.py")):
        tree = ast.parse(path.read_text())
        imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
        assert all(m.startswith("orchestrator.store.migrations.") for m in imported if m.startswith("orchestrator")), (
            path
        )
        assert "CREATE VIEW" not in path.read_text().upper().replace("OR REPLACE ", ""), path
    for path in sorted(root.rglob("*.py")):
        if "migrations" not in path.parts:
            assert "store.migrations.m0" not in path.read_text(), path
