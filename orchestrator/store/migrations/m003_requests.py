"""Migration 003: Server mode's per-request rows."""

from __future__ import annotations

import duckdb


def m003_requests(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE TABLE requests (
            run_id INTEGER NOT NULL,
            seq INTEGER NOT NULL,            -- order sent within the run
            prompt_id VARCHAR,
            category VARCHAR,
            client INTEGER,                  -- client thread (concurrency > 1)
            status VARCHAR,                  -- ok, error
            http_status INTEGER,
            error VARCHAR,
            cache_n INTEGER,
            prompt_n INTEGER,
            prompt_ms DOUBLE,
            predicted_n INTEGER,
            predicted_ms DOUBLE,
            predicted_per_second DOUBLE,
            draft_n INTEGER,                 -- absent from the server's answer when nothing was drafted: 0
            draft_n_accepted INTEGER,
            timings JSON,                    -- the whole timings object as the server sent it
            ttft_ms DOUBLE,                  -- send to first streamed token
            wall_ms DOUBLE,
            output_sha256 VARCHAR,
            output_chars INTEGER,
            started_at TIMESTAMP,
            PRIMARY KEY (run_id, seq)
        )""")
    # Server arms at temperature 0: how many outputs differ from the baseline arm's for the same prompts.
    con.execute("ALTER TABLE metrics ADD COLUMN outputs_differ INTEGER")
    con.execute("ALTER TABLE runs ADD COLUMN prompt_set VARCHAR")
