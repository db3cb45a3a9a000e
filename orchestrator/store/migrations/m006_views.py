"""Migration 006: views over measurements only (no warm-ups; a slot re-run by --resume, its newest row)."""

from __future__ import annotations

import duckdb


def m006_views(con: duckdb.DuckDBPyConnection) -> None:
    """Views over measurements only: no warm-ups, and for a slot re-run by --resume only its newest row."""
    con.execute("""
        CREATE VIEW measured_runs AS
        SELECT * FROM runs WHERE NOT coalesce(warmup, false)
        QUALIFY row_number() OVER (PARTITION BY sweep_id, arm, repeat_index ORDER BY id DESC) = 1""")
    con.execute("""
        CREATE VIEW run_summary AS
        SELECT r.id AS run_id, r.sweep_id, s.recipe_path, s.build_name, s.upstream_commit, r.arm, r.is_baseline,
               r.repeat_index, r.mode, r.status, r.failure_class, m.decode_tps, m.encode_tps, m.acceptance,
               m.n_drafted, m.n_accepted, m.n_predict, m.draft_per_generated, m.mean_accept_len, r.wall_s,
               r.peak_rss_bytes, r.started_at
        FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id""")
    con.execute("""
        CREATE VIEW arm_summary AS
        SELECT r.sweep_id, s.recipe_path, s.build_name, s.upstream_commit, r.arm, bool_or(r.is_baseline) AS is_baseline,
               count(*) AS runs, count(*) FILTER (WHERE r.status = 'ok') AS ok,
               avg(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps,
               stddev_samp(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps_stddev,
               min(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps_min,
               max(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps_max,
               avg(m.acceptance) FILTER (WHERE r.status = 'ok') AS acceptance,
               avg(m.draft_per_generated) FILTER (WHERE r.status = 'ok') AS draft_per_generated,
               avg(m.encode_tps) FILTER (WHERE r.status = 'ok') AS prompt_tps,
               string_agg(DISTINCT r.failure_class, ',') AS failure_classes
        FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id
        GROUP BY r.sweep_id, s.recipe_path, s.build_name, s.upstream_commit, r.arm""")
    con.execute("""
        CREATE VIEW speedup_vs_baseline AS
        WITH ok AS (
            SELECT r.sweep_id, r.arm, r.is_baseline, r.repeat_index, m.decode_tps
            FROM measured_runs r JOIN metrics m ON m.run_id = r.id
            WHERE r.status = 'ok' AND m.decode_tps > 0
        )
        SELECT a.sweep_id, a.arm, count(*) AS pairs, exp(avg(ln(a.decode_tps / b.decode_tps))) AS speedup_paired,
               avg(a.decode_tps) / avg(b.decode_tps) AS speedup_of_means
        FROM ok a JOIN ok b ON b.sweep_id = a.sweep_id AND b.is_baseline AND b.repeat_index = a.repeat_index
        GROUP BY a.sweep_id, a.arm""")
    con.execute("""
        CREATE VIEW run_roofline AS  -- the decode bound: bandwidth / bytes read per decode step
        SELECT r.id AS run_id, r.sweep_id, r.arm, m.decode_tps, r.bandwidth_bytes_per_s, r.bandwidth_label,
               r.decode_bytes, r.bandwidth_bytes_per_s / r.decode_bytes AS bound_tps,
               100 * m.decode_tps / (r.bandwidth_bytes_per_s / r.decode_bytes) AS roofline_pct
        FROM measured_runs r LEFT JOIN metrics m ON m.run_id = r.id WHERE r.decode_bytes > 0""")
