"""Migration 008: which orch process owns a running sweep (host, pid, start time)."""

from __future__ import annotations

import duckdb


def m008_sweep_owner(con: duckdb.DuckDBPyConnection) -> None:
    """Which orch runs a sweep (host, pid and that process's start time, so a reused pid is not taken for it), the
    directory its runs write logs to until they are stored, and how many runs it plans from owner_since on (for
    `orch watch`). A `running` sweep whose owner no longer lives is recovered on the next open (store/recovery.py)."""
    for column in (
        "owner_host VARCHAR",
        "owner_pid INTEGER",
        "owner_started DOUBLE",
        "owner_since TIMESTAMP",
        "work_dir VARCHAR",
        "planned_runs INTEGER",
    ):
        con.execute(f"ALTER TABLE sweeps ADD COLUMN {column}")
