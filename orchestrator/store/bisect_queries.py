"""Reads for `orch bisect` and `orch history`: bisect rows, their probes, and a metric's samples per run."""

from __future__ import annotations

import json

import duckdb

from orchestrator.store.db import rows_as_dicts

Con = duckdb.DuckDBPyConnection

# What --metric may name: run_summary columns, per ok run (speedup is computed from decode_tps by the caller).
RUN_METRICS = (
    "decode_tps",
    "encode_tps",
    "acceptance",
    "draft_per_generated",
    "mean_accept_len",
    "n_drafted",
    "n_accepted",
)


def bisect_row(con: Con, bisect_id: int) -> dict | None:
    rows = rows_as_dicts(con.execute("SELECT * FROM bisects WHERE id = ?", [bisect_id]))
    return _decoded(rows[0]) if rows else None


def latest_unfinished(con: Con) -> dict | None:
    rows = rows_as_dicts(con.execute("SELECT * FROM bisects WHERE state <> 'done' ORDER BY id DESC LIMIT 1"))
    return _decoded(rows[0]) if rows else None


def _decoded(row: dict) -> dict:
    for k in ("variables", "candidates", "argv", "result"):
        if isinstance(row.get(k), str):
            row[k] = json.loads(row[k])
    return row


def probes(con: Con, bisect_id: int) -> list[dict]:
    return rows_as_dicts(con.execute("SELECT * FROM bisect_probes WHERE bisect_id = ? ORDER BY id", [bisect_id]))


def metric_runs(con: Con, sweep_ids: list[int], arms: list[str], metric: str) -> list[dict]:
    """Measured runs of these sweeps and arms: sweep, arm, repeat, status and the metric (decode_tps too)."""
    if metric not in RUN_METRICS:
        raise ValueError(f"metric {metric!r} is not one of {', '.join(RUN_METRICS)}")
    if not sweep_ids:
        return []
    return rows_as_dicts(
        con.execute(
            f"""
        SELECT r.sweep_id, r.arm, r.repeat_index, r.status, m.{metric} AS value, m.decode_tps
        FROM measured_runs r LEFT JOIN metrics m ON m.run_id = r.id
        WHERE r.sweep_id IN (SELECT unnest(?::INTEGER[])) AND r.arm IN (SELECT unnest(?::VARCHAR[]))
        ORDER BY r.id""",
            [sweep_ids, arms],
        )
    )


def recipe_sweeps(con: Con, recipe: str, builds: list[str] | None) -> list[dict]:
    """Finished sweeps of a recipe (by path or file name), with their build: for `orch history`."""
    where, args = (
        ["(s.recipe_path = ? OR ends_with(s.recipe_path, '/' || ?))", "s.status <> 'running'"],
        [recipe, recipe.lstrip("./").rsplit("/", 1)[-1]],
    )
    if builds:
        where.append(
            "list_has_any([s.build_name, s.upstream_commit], ?::VARCHAR[]) OR "
            "len(list_filter(?::VARCHAR[], b -> starts_with(s.upstream_commit, b))) > 0"
        )
        args += [builds, builds]
    return rows_as_dicts(
        con.execute(
            f"""
        SELECT s.id AS sweep_id, s.build_name, s.upstream_commit, s.recipe_hash, s.started_at
        FROM sweeps s WHERE {" AND ".join(f"({w})" for w in where)} ORDER BY s.id""",
            args,
        )
    )


def reference_arms(con: Con, sweep_ids: list[int], arm: str) -> list[str]:
    """The arm a speedup of `arm` is measured against in these sweeps: its reference arm, else the baseline."""
    rows = con.execute(
        """
        SELECT DISTINCT coalesce(r.reference_arm, b.arm) FROM measured_runs r
        LEFT JOIN measured_runs b ON b.sweep_id = r.sweep_id AND b.is_baseline
        WHERE r.sweep_id IN (SELECT unnest(?::INTEGER[])) AND r.arm = ?""",
        [sweep_ids, arm],
    ).fetchall()
    return [r[0] for r in rows if r[0] and r[0] != arm]
