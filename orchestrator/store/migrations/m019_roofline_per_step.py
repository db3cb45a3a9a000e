"""Migration 019: the roofline share counted per target pass, not per token."""

from __future__ import annotations

import duckdb

from orchestrator.store import figures


def m019_roofline_per_step(con: duckdb.DuckDBPyConnection) -> None:
    """run_roofline made again from store/figures: roofline_pct is now the run's target passes per second over the
    bound (a pass reads the weights once, however many drafted tokens it accepts), and tokens_per_step says how
    many tokens a pass yielded. Before, a speculative run's tok/s was set against a per-token bound and passed
    100% by its acceptance (an n-gram arm read 156%), which hid a bound measured too low."""
    con.execute("DROP VIEW run_roofline")
    bound = figures.bound_tps("r.bandwidth_bytes_per_s", "r.decode_bytes")
    per_step = figures.tokens_per_step("m.n_generated", "m.n_accepted")
    con.execute(f"""
        CREATE VIEW run_roofline AS  -- the decode bound: bandwidth / bytes read per decode step
        SELECT r.id AS run_id, r.sweep_id, r.arm, m.decode_tps, r.bandwidth_bytes_per_s, r.bandwidth_label,
               r.decode_bytes, {bound} AS bound_tps,
               {figures.roofline_pct("m.decode_tps", bound, per_step)} AS roofline_pct,
               {per_step} AS tokens_per_step
        FROM measured_runs r LEFT JOIN metrics m ON m.run_id = r.id WHERE r.decode_bytes > 0""")
