"""Migration 024: the arms a sweep planned, so that a resume continues that sweep and no other selection of it."""

from __future__ import annotations

import duckdb


def m024_sweep_arms(con: duckdb.DuckDBPyConnection) -> None:
    """A sweep's planned arm names (controls and both builds' prefixes of a crossed sweep included), as a JSON list.
    Before, `--resume` of a two-build sweep on one of its builds, or with other `--arms`, mixed arms the sweep never
    interleaved into it; NULL for sweeps stored before this migration (their resume compares what it did before)."""
    con.execute("ALTER TABLE sweeps ADD COLUMN arm_names JSON")
