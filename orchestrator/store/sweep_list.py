"""The sweeps a results file holds, one row each, for `orch sweeps`: what ran, on which builds, how far it got."""

from __future__ import annotations

import duckdb

from orchestrator.store.db import rows_as_dicts
from orchestrator.store.queries import PLANNED_RUN

Con = duckdb.DuckDBPyConnection


def sweeps(con: Con, last: int) -> list[dict]:
    """The newest `last` sweeps, oldest first: id, recipe (file name), builds (every build its runs ran on, the
    sweep's own for one without runs), workload, mode, planned and ok runs, status, when it started, and the tune round
    it was (if any)."""
    return rows_as_dicts(
        con.execute(
            f"""
        WITH picked AS (SELECT * FROM sweeps ORDER BY id DESC LIMIT $last),
        counted AS (
            SELECT r.sweep_id, count(*) AS runs, count(*) FILTER (WHERE r.status = 'ok') AS ok,
                   list(DISTINCT b.name ORDER BY b.name) FILTER (WHERE b.name IS NOT NULL) AS builds
            FROM measured_runs r LEFT JOIN builds b ON b.id = r.build_id
            WHERE r.sweep_id IN (SELECT id FROM picked) AND {PLANNED_RUN.format(run="r")}
            GROUP BY r.sweep_id)
        SELECT s.id AS sweep, regexp_extract(s.recipe_path, '[^/]+$') AS recipe,
               array_to_string(coalesce(nullif(c.builds, []), [s.build_name]), ',') AS builds,
               s.variables->>'workload' AS workload, coalesce(s.mode, 'cli') AS mode,
               coalesce(c.runs, 0) AS runs, coalesce(c.ok, 0) AS ok, s.planned_runs AS planned, s.status,
               strftime(s.started_at, '%Y-%m-%d %H:%M') AS started,
               CASE WHEN t.tune_id IS NOT NULL THEN 'tune ' || t.tune_id || ' round ' || t.round END AS part_of
        FROM picked s LEFT JOIN counted c ON c.sweep_id = s.id LEFT JOIN tune_rounds t ON t.sweep_id = s.id
        ORDER BY s.id""",
            {"last": last},
        )
    )
