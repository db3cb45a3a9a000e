"""The migrations that define the views (and the columns they need): measured runs, summaries, the samples
speedups pair on. Numbered with the rest in migrations.MIGRATIONS; never edit one that has shipped.
"""

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


# How an arm's samples pair: with the sweep's baseline, or with the arm's reference (its control; the baseline for
# rows stored before controls existed). The views below and store/queries.arm_pairs use these same conditions;
# they are part of a shipped migration: change them only together with a new one.
PAIRED_WITH = {
    "baseline": "b.is_baseline",
    "reference": "(CASE WHEN a.reference_arm IS NULL THEN b.is_baseline ELSE b.arm = a.reference_arm END)",
}


def m007_samples_and_controls(con: duckdb.DuckDBPyConnection) -> None:
    """Speedups defined once, like for like: the samples they pair on, control arms and reference arms.

    runs.is_control marks a control arm (recipe/control: the speculative program drafting nothing);
    runs.reference_arm names the arm a run's speedup is against (NULL for rows stored before: the baseline).
    decode_samples: measured ok runs with a speed; a CLI run is one sample keyed by repeat (prompt_id ''), a
    server run one sample per ok request keyed by repeat and prompt, at that request's own rate (before, the
    view paired server runs per repeat only, on pooled speeds, and disagreed with the summary).
    speedup_vs_reference pairs each arm with its reference; speedup_vs_baseline with the baseline (across
    programs where they differ, as its name says).
    """
    con.execute("ALTER TABLE runs ADD COLUMN is_control BOOLEAN DEFAULT false")
    con.execute("ALTER TABLE runs ADD COLUMN reference_arm VARCHAR")
    # The views over runs are made again so that their column lists include the new columns.
    for view in ("speedup_vs_baseline", "run_roofline", "arm_summary", "run_summary", "measured_runs"):
        con.execute(f"DROP VIEW {view}")
    m006_views(con)
    con.execute("DROP VIEW speedup_vs_baseline")
    con.execute("""
        CREATE VIEW decode_samples AS
        WITH ok AS (
            SELECT r.sweep_id, r.arm, r.is_baseline, r.is_control, r.reference_arm, r.mode, r.id AS run_id,
                   r.repeat_index, m.decode_tps
            FROM measured_runs r JOIN metrics m ON m.run_id = r.id
            WHERE r.status = 'ok' AND m.decode_tps > 0
        )
        SELECT sweep_id, arm, is_baseline, is_control, reference_arm, mode, run_id, repeat_index, '' AS prompt_id,
               decode_tps AS tps
        FROM ok WHERE mode IS DISTINCT FROM 'server'
        UNION ALL
        SELECT o.sweep_id, o.arm, o.is_baseline, o.is_control, o.reference_arm, o.mode, o.run_id, o.repeat_index,
               q.prompt_id, q.predicted_n / q.predicted_ms * 1000
        FROM ok o JOIN requests q ON q.run_id = o.run_id
        WHERE o.mode = 'server' AND q.status = 'ok' AND q.predicted_ms > 0""")
    for against in ("baseline", "reference"):
        con.execute(f"""
            CREATE VIEW speedup_vs_{against} AS
            SELECT a.sweep_id, a.arm, count(*) AS pairs, exp(avg(ln(a.tps / b.tps))) AS speedup_paired,
                   avg(a.tps) / avg(b.tps) AS speedup_of_means
            FROM decode_samples a JOIN decode_samples b ON b.sweep_id = a.sweep_id AND {PAIRED_WITH[against]}
                 AND b.repeat_index = a.repeat_index AND b.prompt_id = a.prompt_id
            GROUP BY a.sweep_id, a.arm""")
