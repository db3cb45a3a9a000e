"""Migration 015: each finished sweep's summary, kept as every output draws it (see sweep_summaries.py)."""

from __future__ import annotations

import duckdb


def m015_sweep_summaries(con: duckdb.DuckDBPyConnection) -> None:
    # No keys: a sweep's rows are replaced by DELETE then INSERT in one transaction, which DuckDB's indexes refuse.
    con.execute("""
        CREATE TABLE sweep_summaries (
            sweep_id INTEGER NOT NULL,
            fingerprint UBIGINT NOT NULL,    -- hash of every stored row the summary reads (sweep_summaries.py)
            code VARCHAR NOT NULL,           -- the orch source and libraries that made it
            arms INTEGER NOT NULL,
            rows_json VARCHAR,               -- the arms as `orch summary --format json` writes them, ",\\n" between
            rows_csv VARCHAR,                -- and as its CSV lines, under csv_header
            csv_header VARCHAR,
            facts VARCHAR,                   -- JSON: what the default table's choice of columns reads
            warnings VARCHAR,                -- the warning lines, "\\n" between
            verdict VARCHAR,
            made_at TIMESTAMP)""")
    con.execute("""
        CREATE TABLE sweep_summary_cells (
            sweep_id INTEGER NOT NULL,
            name VARCHAR NOT NULL,           -- a summary table column (vs:compact: as the default table shows it)
            cells VARCHAR NOT NULL)          -- JSON: each arm's cell as the table shows it""")
