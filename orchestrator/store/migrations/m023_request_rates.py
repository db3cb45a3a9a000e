"""Migration 023: a server request's speed in decode_samples is the rate its build reported."""

from __future__ import annotations

import duckdb


def m023_request_rates(con: duckdb.DuckDBPyConnection) -> None:
    """decode_samples reads figures.REQUEST_RATE in store/views.py, made when a file is opened: nothing is left here."""
