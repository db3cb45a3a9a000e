"""`orch bisect`'s tables: one `bisects` row per search, one `bisect_probes` row per attempt at a commit.

A probe that measured is a stored sweep (sweep_id); one that could not build or whose runs all failed has none,
only its state and why. A commit measured again for more repeats gets a second probe row: its samples are the
union of its sweeps' runs. Writes here; the tables in migrations/m013_bisects.py; reads in bisect_queries.py.
"""

from __future__ import annotations

import duckdb

from orchestrator.json_text import to_json
from orchestrator.store.times import utcnow

PROBE_COLUMNS = (
    "bisect_id",
    "commit",
    "upstream_commit",
    "build_name",
    "sweep_id",
    "state",
    "detail",
    "build_s",
    "measure_s",
)


def create_bisect(con: duckdb.DuckDBPyConnection, row: dict) -> int:
    row = {k: to_json(v) if k in ("variables", "candidates", "argv") else v for k, v in row.items()}
    row = {**row, "state": "running", "started_at": utcnow()}
    cols = list(row)
    return con.execute(
        f"INSERT INTO bisects ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) RETURNING id",
        [row[c] for c in cols],
    ).fetchone()[0]


def set_bisect_state(con: duckdb.DuckDBPyConnection, bisect_id: int, state: str, result: dict | None = None) -> None:
    ended = utcnow() if state != "running" else None
    con.execute(
        "UPDATE bisects SET state = ?, result = coalesce(?, result), ended_at = ? WHERE id = ?",
        [state, to_json(result) if result is not None else None, ended, bisect_id],
    )


def insert_probe(con: duckdb.DuckDBPyConnection, row: dict) -> int:
    values = [row.get(c) for c in PROBE_COLUMNS] + [utcnow()]
    return con.execute(
        f"INSERT INTO bisect_probes ({', '.join(PROBE_COLUMNS)}, recorded_at) VALUES "
        f"({', '.join('?' * (len(PROBE_COLUMNS) + 1))}) RETURNING id",
        values,
    ).fetchone()[0]
