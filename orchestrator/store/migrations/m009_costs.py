"""Migration 009: what a token costs, a speculative step's measured cost and GPU energy per token, as views."""

from __future__ import annotations

import duckdb


def m009_costs(con: duckdb.DuckDBPyConnection) -> None:
    """The views it made (run_draft_cost, run_energy, arm_energy) are made from store/views.py when a file is opened."""
