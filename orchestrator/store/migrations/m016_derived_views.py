"""Migration 016: the views of derived figures made again from store/figures' definitions."""

from __future__ import annotations

import duckdb

from orchestrator.store import figures
from orchestrator.store.figures import PAIRED_WITH


def m016_derived_views(con: duckdb.DuckDBPyConnection) -> None:
    """The views that show a derived figure, made again from store/figures, the definitions the summary's query
    (store/arm_queries) uses: the paired speedups (exp of the mean log ratio, as before) and the roofline (its bound
    and share now NULL, not 0 and infinity, where the bandwidth is 0). Their columns are unchanged."""
    for view in ("speedup_vs_baseline", "speedup_vs_reference", "run_roofline"):
        con.execute(f"DROP VIEW {view}")
    for against in ("baseline", "reference"):
        con.execute(f"""
            CREATE VIEW speedup_vs_{against} AS
            SELECT a.sweep_id, a.arm, count(*) AS pairs,
                   {figures.speedup("count(*)", f"avg({figures.LOG_RATIO})")} AS speedup_paired,
                   avg(a.tps) / avg(b.tps) AS speedup_of_means
            FROM decode_samples a JOIN decode_samples b ON b.sweep_id = a.sweep_id AND {PAIRED_WITH[against]}
                 AND b.repeat_index = a.repeat_index AND b.prompt_id = a.prompt_id
            GROUP BY a.sweep_id, a.arm""")
    bound = figures.bound_tps("r.bandwidth_bytes_per_s", "r.decode_bytes")
    con.execute(f"""
        CREATE VIEW run_roofline AS  -- the decode bound: bandwidth / bytes read per decode step
        SELECT r.id AS run_id, r.sweep_id, r.arm, m.decode_tps, r.bandwidth_bytes_per_s, r.bandwidth_label,
               r.decode_bytes, {bound} AS bound_tps, {figures.roofline_pct("m.decode_tps", bound)} AS roofline_pct
        FROM measured_runs r LEFT JOIN metrics m ON m.run_id = r.id WHERE r.decode_bytes > 0""")
