"""Migration 020: the tables of `orch tune` (see tunes.py for what they hold)."""

from __future__ import annotations

import duckdb


def m020_tunes(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE SEQUENCE tune_ids START 1")
    con.execute("""
        CREATE TABLE tunes (
            id INTEGER PRIMARY KEY DEFAULT nextval('tune_ids'),
            recipe_path VARCHAR NOT NULL,
            recipe_hash VARCHAR NOT NULL,
            build_name VARCHAR NOT NULL,
            variables JSON,                  -- --vars/--set/--arms as given: a resume must ask the same
            space JSON,                      -- the grids raced (NULL: the recipe's own arms and matrix)
            space_source VARCHAR,            -- the --space file or built-in names; NULL: the recipe's
            workloads JSON NOT NULL,         -- the workload files, one race each, in order
            budget JSON NOT NULL,            -- {"runs": N, "seconds": S}: the most it may spend per workload
            rules JSON NOT NULL,             -- alpha, tie margin, group size, runs per candidate: the racing rule
            state VARCHAR NOT NULL,          -- running, interrupted, failed, done
            result JSON,                     -- per workload: the answer once done
            argv JSON,
            started_at TIMESTAMP,
            ended_at TIMESTAMP
        )""")
    con.execute("CREATE SEQUENCE tune_round_ids START 1")
    con.execute("""
        CREATE TABLE tune_rounds (
            id INTEGER PRIMARY KEY DEFAULT nextval('tune_round_ids'),
            tune_id INTEGER NOT NULL,
            workload VARCHAR NOT NULL,
            round INTEGER NOT NULL,          -- 1, 2, ...: survivors run once more (the most promising if the budget is short)
            sweep_id INTEGER NOT NULL,       -- the round's runs: an ordinary stored sweep
            blocks JSON NOT NULL,            -- the candidates of each block (one repeat, with the baseline)
            arm_references JSON NOT NULL,    -- each arm's reference in the plan (its control, or the baseline)
            recorded_at TIMESTAMP
        )""")
    con.execute("CREATE SEQUENCE tune_event_ids START 1")
    con.execute("""
        CREATE TABLE tune_events (
            id INTEGER PRIMARY KEY DEFAULT nextval('tune_event_ids'),
            tune_id INTEGER NOT NULL,
            workload VARCHAR NOT NULL,
            round INTEGER NOT NULL,          -- 0: before the race (infeasible at this build or machine)
            candidate VARCHAR NOT NULL,
            event VARCHAR NOT NULL,          -- infeasible, disqualified, dropped, winner, tied, refused
            reason VARCHAR,
            speedup DOUBLE,                  -- its speedup against the baseline when the event was decided
            recorded_at TIMESTAMP
        )""")
