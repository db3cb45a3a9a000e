"""Migration 023: a server request's speed in decode_samples is the rate its build reported."""

from __future__ import annotations

import duckdb

from orchestrator.store import figures
from orchestrator.store.figures import PAIRED_WITH

# The request's own rate as its build defines it (predicted_per_second: n / t before 2026, (n - 1) / t at 0c1e57098,
# whose server counts the first token free); n / t only for a row without one.
REQUEST_RATE = "coalesce(q.predicted_per_second, q.predicted_n / q.predicted_ms * 1000)"


def m023_request_rates(con: duckdb.DuckDBPyConnection) -> None:
    """Before, the view computed every request's speed as n / t, one token more than 0c1e57098's server counts
    (6.7% high at 16 tokens). Same columns, in the same order; a request without a positive rate is no sample (a
    one-token reply has no decode step at 0c1e57098). The speedup views that read it are made again after it, as
    m016 made them, so that `orch repair` (views in creation order) makes them in an order that works."""
    for view in ("speedup_vs_baseline", "speedup_vs_reference", "decode_samples"):
        con.execute(f"DROP VIEW {view}")
    con.execute(f"""
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
               q.prompt_id, {REQUEST_RATE}
        FROM ok o JOIN requests q ON q.run_id = o.run_id
        WHERE o.mode = 'server' AND q.status = 'ok' AND q.predicted_ms > 0 AND {REQUEST_RATE} > 0""")
    for against in ("baseline", "reference"):
        con.execute(f"""
            CREATE VIEW speedup_vs_{against} AS
            SELECT a.sweep_id, a.arm, count(*) AS pairs,
                   {figures.speedup("count(*)", f"avg({figures.LOG_RATIO})")} AS speedup_paired,
                   avg(a.tps) / avg(b.tps) AS speedup_of_means
            FROM decode_samples a JOIN decode_samples b ON b.sweep_id = a.sweep_id AND {PAIRED_WITH[against]}
                 AND b.repeat_index = a.repeat_index AND b.prompt_id = a.prompt_id
            GROUP BY a.sweep_id, a.arm""")
