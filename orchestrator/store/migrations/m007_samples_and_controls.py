"""Migration 007: the samples speedups pair on, control arms and reference arms."""

from __future__ import annotations

import duckdb

from orchestrator.store.figures import PAIRED_WITH
from orchestrator.store.migrations.m006_views import m006_views


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
