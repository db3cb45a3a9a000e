"""What a complete results file holds, the check made when it is opened, and the repair of what was dropped.

The migrations define the tables and store/views.py the views; `reference()` applies both to an empty in-memory
database, so a repair restores exactly what they make (table definitions with their defaults, columns, sequences).
A repair restores objects, not rows: a dropped table comes back empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import duckdb

from orchestrator.store import migrations, views

TABLES = (
    "builds",
    "binaries",
    "models",
    "sweeps",
    "runs",
    "metrics",
    "run_logs",
    "requests",
    "telemetry",
    "tunes",
    "tune_rounds",
    "tune_events",
    "cost_probes",
    "acceptance_probes",
    "arm_predictions",
)
VIEWS = views.NAMES


@dataclass(frozen=True)
class Reference:
    tables: dict[str, str]  # name -> CREATE TABLE
    columns: dict[str, list[tuple[str, str]]]  # table -> [(column, type)] in order
    sequences: dict[str, str]  # name -> the table.column whose ids it gives


@lru_cache(maxsize=1)
def reference() -> Reference:
    con = duckdb.connect(":memory:")
    try:
        migrations.apply(con)
        tables = dict(con.execute("SELECT table_name, sql FROM duckdb_tables() WHERE schema_name = 'main'").fetchall())
        columns: dict[str, list[tuple[str, str]]] = {}
        for table, column, kind in con.execute(
            """
                SELECT table_name, column_name, data_type FROM duckdb_columns()
                WHERE schema_name = 'main' AND table_name IN (SELECT unnest(?::VARCHAR[]))
                ORDER BY table_name, column_index""",
            [list(tables)],
        ).fetchall():
            columns.setdefault(table, []).append((column, kind))
    finally:
        con.close()
    sequences = {"sweep_ids": "sweeps.id", "run_ids": "runs.id"}
    return Reference(tables, columns, sequences)


def missing(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables and views orch made that the file lacks ("table run_logs", "view decode_samples")."""
    tables, present_views = _tables(con), _views(con)
    return [f"table {t}" for t in TABLES if t not in tables] + [f"view {v}" for v in VIEWS if v not in present_views]


def present(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """The tables and views this file holds now (orch's bookkeeping table left out), each sorted: what `orch query`
    names when a query fails."""
    return sorted(_tables(con) - {"_migrations"}), sorted(_views(con))


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()}


def _views(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {
        r[0]
        for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'"
        ).fetchall()
    }


def repair(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Re-create what the migrations made and the file lacks; the names restored. Rows already gone stay gone."""
    ref = reference()
    restored = []
    present_tables = _tables(con)
    have = set(r[0] for r in con.execute("SELECT sequence_name FROM duckdb_sequences()").fetchall())
    for name, column in ref.sequences.items():
        if name not in have:  # numbering resumes after the highest id still stored
            table, col = column.split(".")
            start = 1
            if table in present_tables:
                start = (con.execute(f"SELECT max({col}) FROM {table}").fetchone()[0] or 0) + 1
            con.execute(f"CREATE SEQUENCE {name} START {start}")
            restored.append(f"sequence {name}")
    for table, sql in ref.tables.items():
        if table not in present_tables:
            con.execute(sql)
            restored.append(f"table {table}")
            continue
        present = {
            r[0]
            for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ?", [table]
            ).fetchall()
        }
        for column, kind in ref.columns[table]:
            if column not in present:
                con.execute(f'ALTER TABLE {table} ADD COLUMN "{column}" {kind}')
                restored.append(f"column {table}.{column}")
    present_views = _views(con)
    views.make(con)  # every view made again where one is missing or not made from this orch's definition
    restored += [f"view {name}" for name in VIEWS if name not in present_views]
    return restored
