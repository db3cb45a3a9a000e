"""Migration 006: the first views over measurements (no warm-ups; a slot re-run, its newest row)."""

from __future__ import annotations

import duckdb


def m006_views(con: duckdb.DuckDBPyConnection) -> None:
    """Views are made from store/views.py when a file is opened, not by migrations: nothing is left to do here."""
