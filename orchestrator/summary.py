"""Per-arm summaries of stored sweeps, read back from DuckDB."""

from __future__ import annotations

from . import store

ARM_SQL = """
WITH per_arm AS (
    SELECT r.sweep_id, r.arm, bool_or(r.is_baseline) AS is_baseline, min(r.id) AS first_run,
           count(*) AS runs, count(*) FILTER (WHERE r.status = 'ok') AS ok,
           avg(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps,
           avg(m.acceptance) FILTER (WHERE r.status = 'ok') AS acceptance,
           avg(m.draft_per_generated) FILTER (WHERE r.status = 'ok') AS draft_per_gen,
           avg(m.encode_tps) FILTER (WHERE r.status = 'ok') AS prompt_tps,
           string_agg(DISTINCT r.failure_class, ',') AS failures
    FROM runs r LEFT JOIN metrics m ON m.run_id = r.id
    WHERE r.sweep_id IN (SELECT unnest(?::INTEGER[]))
    GROUP BY r.sweep_id, r.arm
)
SELECT a.sweep_id AS sweep, regexp_extract(s.recipe_path, '[^/]+$') AS recipe, s.build_name AS build, a.arm,
       a.ok || '/' || a.runs AS ok, a.decode_tps, a.acceptance, a.draft_per_gen,
       CASE WHEN b.decode_tps > 0 THEN a.decode_tps / b.decode_tps END AS speedup, a.prompt_tps, a.failures
FROM per_arm a
JOIN sweeps s ON s.id = a.sweep_id
LEFT JOIN per_arm b ON b.sweep_id = a.sweep_id AND b.is_baseline
ORDER BY a.sweep_id, a.first_run
"""


def last_sweeps(con, n: int) -> list[int]:
    return [r[0] for r in con.execute("SELECT id FROM sweeps ORDER BY id DESC LIMIT ?", [n]).fetchall()][::-1]


def arm_rows(con, sweep_ids: list[int]) -> list[dict]:
    return store.rows_as_dicts(con.execute(ARM_SQL, [sweep_ids]))
