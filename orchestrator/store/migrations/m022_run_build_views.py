"""Migration 022: run_summary and arm_summary name each run's own build, not its sweep's."""

from __future__ import annotations

import duckdb


def m022_run_build_views(con: duckdb.DuckDBPyConnection) -> None:
    """Both views are made from store/views.py when a file is opened: nothing is left to do here."""
