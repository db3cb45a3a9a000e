"""Migration 013: the tables of `orch bisect` (see bisects.py for what they hold)."""

from __future__ import annotations

import duckdb


def m013_bisects(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE SEQUENCE bisect_ids START 1")
    con.execute("""
        CREATE TABLE bisects (
            id INTEGER PRIMARY KEY DEFAULT nextval('bisect_ids'),
            recipe_path VARCHAR NOT NULL,
            recipe_hash VARCHAR NOT NULL,
            variables JSON,                  -- --vars/--set as given: a resume must ask the same
            arm VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            threshold DOUBLE NOT NULL,
            repeat INTEGER NOT NULL,
            max_repeat INTEGER NOT NULL,     -- an unclear probe gets more repeats up to this
            good VARCHAR NOT NULL,
            bad VARCHAR NOT NULL,
            candidates JSON NOT NULL,        -- the ordered commits searched, good end first
            candidate_source VARCHAR,        -- first-parent history, release order, or --commits
            state VARCHAR NOT NULL,          -- running, interrupted, failed, done
            result JSON,                     -- the answer once done
            argv JSON,
            started_at TIMESTAMP,
            ended_at TIMESTAMP
        )""")
    con.execute("CREATE SEQUENCE bisect_probe_ids START 1")
    con.execute("""
        CREATE TABLE bisect_probes (
            id INTEGER PRIMARY KEY DEFAULT nextval('bisect_probe_ids'),
            bisect_id INTEGER NOT NULL,
            commit VARCHAR NOT NULL,         -- the candidate as listed
            upstream_commit VARCHAR,
            build_name VARCHAR,
            sweep_id INTEGER,                -- NULL: no sweep (the build failed)
            state VARCHAR NOT NULL,          -- measured, build_failed, runs_failed, interrupted
            detail VARCHAR,
            build_s DOUBLE,                  -- wall seconds to get the build (cached: about 0)
            measure_s DOUBLE,                -- wall seconds of the sweep
            recorded_at TIMESTAMP
        )""")
