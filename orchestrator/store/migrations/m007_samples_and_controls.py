"""Migration 007: control arms and reference arms (the views speedups pair on are store/views.py's)."""

from __future__ import annotations

import duckdb


def m007_samples_and_controls(con: duckdb.DuckDBPyConnection) -> None:
    """runs.is_control marks a control arm (recipe/control: the speculative program drafting nothing);
    runs.reference_arm names the arm a run's speedup is against (NULL for rows stored before: the baseline)."""
    con.execute("ALTER TABLE runs ADD COLUMN is_control BOOLEAN DEFAULT false")
    con.execute("ALTER TABLE runs ADD COLUMN reference_arm VARCHAR")
