"""Migration 014: a global id (`uid`) on every row that travels, and each sweep's host (see store/global_ids.py)."""

from __future__ import annotations

import duckdb

from orchestrator.store.global_ids import UID_DEFAULT, backfill, make_views


def m014_global_ids(con: duckdb.DuckDBPyConnection) -> None:
    for table in ("sweeps", "runs", "requests", "telemetry"):
        con.execute(f"ALTER TABLE {table} ADD COLUMN uid {UID_DEFAULT}")
    for column in ("host_name", "host_id", "host_gpus"):
        con.execute(f"ALTER TABLE sweeps ADD COLUMN {column} VARCHAR")
    # measured_runs is `SELECT *` over runs: the views are made again, in their order, so it has runs.uid in
    # every file alike (a view's columns are fixed when it is made).
    views = con.execute(
        "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' ORDER BY view_oid"
    ).fetchall()
    for name, _ in reversed(views):
        con.execute(f"DROP VIEW {name}")
    make_views(con, views)
    backfill(con)
