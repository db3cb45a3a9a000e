"""Migration 010: sequence acceptance (drafts accepted in full / drafts generated)."""

from __future__ import annotations

import duckdb


def m010_seq_acceptance(con: duckdb.DuckDBPyConnection) -> None:
    """Sequence acceptance (drafts accepted in full / drafts generated; NULL where the counters only bound it),
    its bounds (equal to it where it is exact) and the speculative implementation that drafted (`draft-mtp`,
    `draft-eagle3`, ...): parse/acceptance.py. `orch reparse` fills them for stored runs."""
    for column in ("seq_acceptance", "seq_acceptance_low", "seq_acceptance_high"):
        con.execute(f"ALTER TABLE metrics ADD COLUMN {column} DOUBLE")
    con.execute("ALTER TABLE metrics ADD COLUMN spec_type VARCHAR")
