"""Migration 016: the views of derived figures made again from store/figures' definitions."""

from __future__ import annotations

import duckdb


def m016_derived_views(con: duckdb.DuckDBPyConnection) -> None:
    """Views are made from store/views.py (which builds them from store/figures) when a file is opened."""
