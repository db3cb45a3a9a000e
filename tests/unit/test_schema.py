"""The whole schema, pinned: every table and view with its columns, and an old database migrating intact.

A change to the schema is a new migration plus a new snapshot: regenerate it with
    ORCH_WRITE_SCHEMA_SNAPSHOT=1 .venv/bin/pytest tests/unit/test_schema.py
and read the diff: a column that disappears from a view is a query some user's script runs.
"""

import os
from pathlib import Path

from orchestrator import store
from orchestrator.store import migrations, queries, times

SNAPSHOT = Path(__file__).resolve().parents[1] / "fixtures" / "schema.txt"


def schema_text(con) -> str:
    kinds = dict(
        con.execute(
            "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'main'"
        ).fetchall()
    )
    lines = []
    for table in sorted(kinds):
        cols = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'main' "
            "AND table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
        kind = "view" if kinds[table] == "VIEW" else "table"
        lines.append(f"{kind} {table}: " + ", ".join(f"{c} {t}" for c, t in cols))
    return "\n".join(lines) + "\n"


def test_schema_snapshot_of_every_table_and_view(tmp_path):
    with store.opened(tmp_path / "r.duckdb") as con:
        text = schema_text(con)
    if os.environ.get("ORCH_WRITE_SCHEMA_SNAPSHOT"):
        SNAPSHOT.write_text(text)
    assert text == SNAPSHOT.read_text(), "schema changed: add a migration and regenerate tests/fixtures/schema.txt"
    named = {line.split()[1].rstrip(":") for line in text.splitlines()}
    assert set(queries.TABLES) | set(queries.VIEWS) <= named  # what `orch query` lists on an error exists


def test_a_database_from_the_first_migration_upgrades_with_its_rows(tmp_path):
    import duckdb

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)")
    for number, migration in enumerate(migrations.MIGRATIONS[:2], start=1):
        migration(con)
        con.execute("INSERT INTO _migrations VALUES (?, ?, ?)", [number, migration.__name__, times.utcnow()])
        if number == 1:  # a build as the first release stored it
            con.execute(
                "INSERT INTO builds (id, name, commit, upstream_commit, backend, status, dir) VALUES "
                "('b@1', 'b', 'c0ffee', 'c0ffee', 'cpu', 'ok', '/b')"
            )
            con.execute(
                "INSERT INTO binaries VALUES ('b@1', 'llama-cli', '/b/bin/llama-cli', 'ab', 'v', 1, 'c0ffee', '-m')"
            )
    # ...and a sweep with two runs, stored before warm-ups, requests, telemetry and the views existed.
    con.execute(
        "INSERT INTO sweeps (recipe_path, recipe_hash, recipe_text, build_name, status) "
        "VALUES ('recipes/a.j2', 'h', 't', 'b', 'done')"
    )
    for arm, base, tps in (("baseline", True, 10.0), ("draft", False, 15.0)):
        run_id = con.execute(
            "INSERT INTO runs (sweep_id, arm, is_baseline, repeat_index, status) "
            "VALUES (1, ?, ?, 0, 'ok') RETURNING id",
            [arm, base],
        ).fetchone()[0]
        con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, ?)", [run_id, tps])
    con.close()

    with store.opened(path) as con:  # every later migration applies on open
        applied = [r[0] for r in con.execute("SELECT name FROM _migrations ORDER BY id").fetchall()]
        assert applied == [m.__name__ for m in migrations.MIGRATIONS]
        assert con.execute("SELECT name, status FROM builds").fetchall() == [("b", "ok")]
        assert con.execute("SELECT name FROM binaries").fetchall() == [("llama-cli",)]
        assert con.execute("SELECT arm, decode_tps FROM run_summary ORDER BY run_id").fetchall() == [
            ("baseline", 10.0),
            ("draft", 15.0),
        ]  # old rows count as measurements (warmup defaults to false)
        assert con.execute("SELECT speedup_paired FROM speedup_vs_baseline WHERE arm = 'draft'").fetchone()[0] == 1.5
        assert schema_text(con) == SNAPSHOT.read_text()
