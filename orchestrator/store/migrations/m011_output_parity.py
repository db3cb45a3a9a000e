"""Migration 011: output parity for CLI runs as well as server runs, and where texts differ."""

from __future__ import annotations

import duckdb


def m011_output_parity(con: duckdb.DuckDBPyConnection) -> None:
    """Output parity at temperature 0, CLI runs as well as server runs: beside metrics.outputs_differ (m003), how
    many outputs were compared with the baseline's and the first character position where one differs; the
    server requests' generated text, so that position can be found (the hash alone says only whether)."""
    con.execute("ALTER TABLE metrics ADD COLUMN outputs_compared INTEGER")
    con.execute("ALTER TABLE metrics ADD COLUMN first_diff_char INTEGER")
    con.execute("ALTER TABLE requests ADD COLUMN output_text VARCHAR")
