"""Migration 021: which orch process runs a tune (host, pid, start time), so `orch tune --resume` never races it."""

from __future__ import annotations

import duckdb


def m021_tune_owner(con: duckdb.DuckDBPyConnection) -> None:
    """A tune stored `running` is either running now or was killed (SIGKILL, power loss): its owner tells which.
    A resume takes a tune over only from an owner that no longer lives (the pid's start time guards against a
    reused pid); NULL for tunes stored before this migration."""
    for column in ("owner_host VARCHAR", "owner_pid INTEGER", "owner_started DOUBLE"):
        con.execute(f"ALTER TABLE tunes ADD COLUMN {column}")
