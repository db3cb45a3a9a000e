"""Migration 026: a global id (`uid`) on tunes and tune_events, so a tune travels with its sweeps in `orch export`
and `orch import` (store/exchange_tables.py). Rows stored before get a uid from what they hold, the same in every
copy of the file: a tune's from its first round's sweep uid (its recipe hash, start and number without one), an
event's from its tune's and its own number; new rows a random one."""

from __future__ import annotations

import duckdb

UID_DEFAULT = "VARCHAR DEFAULT (gen_random_uuid()::VARCHAR)"  # as m014 gave every uid column


def m026_tune_uids(con: duckdb.DuckDBPyConnection) -> None:
    for table in ("tunes", "tune_events"):
        con.execute(f"ALTER TABLE {table} ADD COLUMN uid {UID_DEFAULT}")
    con.execute("""
        UPDATE tunes SET uid = md5('orch-tune/' || coalesce(
            (SELECT s.uid FROM tune_rounds r JOIN sweeps s ON s.id = r.sweep_id WHERE r.tune_id = tunes.id
             ORDER BY r.id LIMIT 1),
            recipe_hash || '/' || coalesce(CAST(started_at AS VARCHAR), '') || '/' || id))""")
    con.execute(
        "UPDATE tune_events SET uid = md5(t.uid || '/event/' || tune_events.id) FROM tunes t "
        "WHERE t.id = tune_events.tune_id"
    )
