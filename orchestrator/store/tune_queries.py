"""Reads for `orch tune` and its report: tune rows, their rounds and events, and the runs a race scores."""

from __future__ import annotations

import json

import duckdb

from orchestrator.store.db import rows_as_dicts
from orchestrator.store.queries import PLANNED_RUN
from orchestrator.store.tunes import JSON_COLUMNS

Con = duckdb.DuckDBPyConnection


def tune_row(con: Con, tune_id: int) -> dict | None:
    rows = rows_as_dicts(con.execute("SELECT * FROM tunes WHERE id = ?", [tune_id]))
    return _decoded(rows[0]) if rows else None


def latest_tune(con: Con, unfinished: bool = False) -> dict | None:
    where = "WHERE state <> 'done'" if unfinished else ""
    rows = rows_as_dicts(con.execute(f"SELECT * FROM tunes {where} ORDER BY id DESC LIMIT 1"))
    return _decoded(rows[0]) if rows else None


def _decoded(row: dict) -> dict:
    for k in (*JSON_COLUMNS, "result"):
        if isinstance(row.get(k), str):
            row[k] = json.loads(row[k])
    return row


def rounds(con: Con, tune_id: int) -> list[dict]:
    rows = rows_as_dicts(
        con.execute(
            'SELECT workload, round, sweep_id, blocks, arm_references AS "references" FROM tune_rounds '
            "WHERE tune_id = ? ORDER BY id",
            [tune_id],
        )
    )
    for r in rows:
        for k in ("blocks", "references"):
            r[k] = json.loads(r[k]) if isinstance(r[k], str) else r[k]
    return rows


def events(con: Con, tune_id: int) -> list[dict]:
    """A tune's decisions in the order made; `detail` decoded (tune/decisions.from_row reads a row back). A detail
    that is not JSON stays text: the reader says which row does not read."""
    rows = rows_as_dicts(
        con.execute(
            "SELECT workload, round, candidate, event, kind, reason, speedup, detail "
            "FROM tune_events WHERE tune_id = ? ORDER BY id",
            [tune_id],
        )
    )
    for r in rows:
        if isinstance(r["detail"], str):
            try:
                r["detail"] = json.loads(r["detail"])
            except ValueError:
                pass
    return rows


def race_runs(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Every measured run of these sweeps with what a race reads: speed, drafting, parity, loops, failure; `planned`
    is false for a count-matched reference (an arm's control run again at the tokens it decoded: run/length_match);
    `retries` and `retried_s`: the slot's earlier attempts, which its budget spent too."""
    if not sweep_ids:
        return []
    return rows_as_dicts(
        con.execute(
            f"""
        SELECT r.sweep_id, r.arm, r.repeat_index, r.status, r.failure_class, r.is_baseline, r.is_control,
               r.reference_arm, r.wall_s, m.decode_tps, m.n_drafted, m.n_accepted, m.acceptance,
               m.outputs_compared, m.outputs_differ, m.first_diff_token, m.degenerate_loop,
               {PLANNED_RUN.format(run="r")} AS planned, e.retries, e.retried_s
        FROM measured_runs r LEFT JOIN metrics m ON m.run_id = r.id
        LEFT JOIN LATERAL (  -- the slot's earlier attempts: a run again whose log lost its tail, spent all the same
            SELECT count(*) AS retries, coalesce(sum(x.wall_s), 0) AS retried_s FROM runs x
            WHERE x.sweep_id = r.sweep_id AND x.arm = r.arm AND x.repeat_index = r.repeat_index
              AND NOT coalesce(x.warmup, false) AND x.id < r.id) e ON true
        WHERE r.sweep_id IN (SELECT unnest(?::INTEGER[]))
        ORDER BY r.id""",
            [sweep_ids],
        )
    )
