"""Migration 019: the roofline share counted per target pass, not per token."""

from __future__ import annotations

import duckdb


def m019_roofline_per_step(con: duckdb.DuckDBPyConnection) -> None:
    """run_roofline is made from store/views.py when a file is opened: nothing is left to do here."""
