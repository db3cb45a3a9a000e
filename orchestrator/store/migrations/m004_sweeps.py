"""Migration 004: Sweep columns added after the first release."""

from __future__ import annotations

import duckdb


def m004_sweeps(con: duckdb.DuckDBPyConnection) -> None:
    # Warm-up runs are stored (nothing is dropped) but never count as measurements.
    con.execute("ALTER TABLE runs ADD COLUMN warmup BOOLEAN DEFAULT false")
    con.execute("ALTER TABLE sweeps ADD COLUMN run_order VARCHAR")
