"""Migration 022: run_summary and arm_summary name each run's own build, not its sweep's."""

from __future__ import annotations

import duckdb

# A run's build (rb: its builds row), else its sweep's (a run stored before runs carried a build, or a build row
# since removed). A crossed sweep (`orch run --build A,B`) holds runs of two builds: the sweep row names only the first.
RUN_BUILD_NAME = "coalesce(rb.name, s.build_name)"
RUN_UPSTREAM_COMMIT = "coalesce(rb.upstream_commit, s.upstream_commit)"


def m022_run_build_views(con: duckdb.DuckDBPyConnection) -> None:
    """Before, both views took build_name and upstream_commit from the sweep, so every arm of a crossed sweep was
    labelled with the first build. Same columns, in the same order; values from the run's builds row."""
    con.execute(f"""
        CREATE OR REPLACE VIEW run_summary AS
        SELECT r.id AS run_id, r.sweep_id, s.recipe_path, {RUN_BUILD_NAME} AS build_name,
               {RUN_UPSTREAM_COMMIT} AS upstream_commit, r.arm, r.is_baseline,
               r.repeat_index, r.mode, r.status, r.failure_class, m.decode_tps, m.encode_tps, m.acceptance,
               m.n_drafted, m.n_accepted, m.n_predict, m.draft_per_generated, m.mean_accept_len, r.wall_s,
               r.peak_rss_bytes, r.started_at
        FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN builds rb ON rb.id = r.build_id
             LEFT JOIN metrics m ON m.run_id = r.id""")
    con.execute(f"""
        CREATE OR REPLACE VIEW arm_summary AS
        SELECT r.sweep_id, s.recipe_path, {RUN_BUILD_NAME} AS build_name, {RUN_UPSTREAM_COMMIT} AS upstream_commit,
               r.arm, bool_or(r.is_baseline) AS is_baseline,
               count(*) AS runs, count(*) FILTER (WHERE r.status = 'ok') AS ok,
               avg(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps,
               stddev_samp(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps_stddev,
               min(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps_min,
               max(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps_max,
               avg(m.acceptance) FILTER (WHERE r.status = 'ok') AS acceptance,
               avg(m.draft_per_generated) FILTER (WHERE r.status = 'ok') AS draft_per_generated,
               avg(m.encode_tps) FILTER (WHERE r.status = 'ok') AS prompt_tps,
               string_agg(DISTINCT r.failure_class, ',') AS failure_classes
        FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN builds rb ON rb.id = r.build_id
             LEFT JOIN metrics m ON m.run_id = r.id
        GROUP BY r.sweep_id, s.recipe_path, {RUN_BUILD_NAME}, {RUN_UPSTREAM_COMMIT}, r.arm""")
