"""`orch tune`'s tables: one `tunes` row per tune, a `tune_rounds` row per round (its sweep and blocks), and a
`tune_events` row per decision (a candidate infeasible, disqualified, dropped, the winner or the tied set: its event,
its kind and numbers as tune/decisions.py stores them, and its words).

Every run a tune makes is an ordinary stored run of its round's sweep, so summary, compare, report and SQL see
them. Writes here; the tables in migrations/m020_tunes.py (and m021, m025); reads in tune_queries.py.
"""

from __future__ import annotations

import duckdb

from orchestrator.json_text import to_json
from orchestrator.store.times import utcnow

JSON_COLUMNS = ("variables", "space", "workloads", "budget", "rules", "argv")
EVENT_COLUMNS = ("tune_id", "workload", "round", "candidate", "event", "kind", "reason", "speedup", "detail")


def create_tune(con: duckdb.DuckDBPyConnection, row: dict) -> int:
    row = {k: to_json(v) if k in JSON_COLUMNS else v for k, v in row.items()}
    row = {**row, "state": "running", "started_at": utcnow()}
    cols = list(row)
    return con.execute(
        f"INSERT INTO tunes ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) RETURNING id",
        [row[c] for c in cols],
    ).fetchone()[0]


def set_owner(con: duckdb.DuckDBPyConnection, tune_id: int, *, host: str, pid: int, started: float) -> None:
    """The orch process that runs the tune now (a start, or a resume taking it over)."""
    con.execute(
        "UPDATE tunes SET owner_host = ?, owner_pid = ?, owner_started = ? WHERE id = ?", [host, pid, started, tune_id]
    )


def set_tune_state(con: duckdb.DuckDBPyConnection, tune_id: int, state: str, result: dict | None = None) -> None:
    ended = utcnow() if state != "running" else None
    con.execute(
        "UPDATE tunes SET state = ?, result = coalesce(?, result), ended_at = ? WHERE id = ?",
        [state, to_json(result) if result is not None else None, ended, tune_id],
    )


def insert_round(
    con: duckdb.DuckDBPyConnection,
    tune_id: int,
    workload: str,
    number: int,
    sweep_id: int,
    blocks: list[list[str]],
    references: dict[str, str],
) -> None:
    con.execute(
        "INSERT INTO tune_rounds (tune_id, workload, round, sweep_id, blocks, arm_references, recorded_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [tune_id, workload, number, sweep_id, to_json(blocks), to_json(references), utcnow()],
    )


def insert_events(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Decisions as tune/decisions.to_row gives them, with their tune and workload; detail is stored as JSON."""
    for row in rows:
        row = {**row, "detail": to_json(row["detail"]) if row.get("detail") is not None else None}
        con.execute(
            f"INSERT INTO tune_events ({', '.join(EVENT_COLUMNS)}, recorded_at) VALUES "
            f"({', '.join('?' * (len(EVENT_COLUMNS) + 1))})",
            [row.get(c) for c in EVENT_COLUMNS] + [utcnow()],
        )
