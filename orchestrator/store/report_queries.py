"""The reads behind `orch report`: runs, sweeps, model files, outcomes, step costs and energy per arm
(store/queries re-exports them)."""

from __future__ import annotations

import duckdb

from orchestrator.store.db import rows_as_dicts

Con = duckdb.DuckDBPyConnection


def report_runs(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Measured runs of the sweeps (no warm-ups), one row each, for the per-run dots and lines of the report
    (accept_rate_per_pos as stored: JSON text)."""
    return rows_as_dicts(
        con.execute(
            """
        SELECT s.run_id, s.sweep_id, s.build_name, s.arm, s.is_baseline, s.status, s.decode_tps, s.acceptance,
               s.wall_s, m.accept_rate_per_pos
        FROM run_summary s LEFT JOIN metrics m ON m.run_id = s.run_id
        WHERE s.sweep_id IN (SELECT unnest(?::INTEGER[])) ORDER BY s.run_id""",
            [sweep_ids],
        )
    )


def runs_with_telemetry(con: Con, run_ids: list[int]) -> set[int]:
    rows = con.execute(
        "SELECT DISTINCT run_id FROM telemetry WHERE run_id IN (SELECT unnest(?::INTEGER[]))", [run_ids]
    ).fetchall()
    return {r[0] for r in rows}


def telemetry_rows(con: Con, run_id: int) -> list[dict]:
    return rows_as_dicts(con.execute("SELECT * FROM telemetry WHERE run_id = ? ORDER BY t, gpu", [run_id]))


def report_sweeps(con: Con, sweep_ids: list[int]) -> list[dict]:
    """What each sweep ran: recipe, variables, the orch command, timing, and its build's commit and backend."""
    return rows_as_dicts(
        con.execute(
            """
        SELECT s.id AS sweep_id, s.recipe_path, s.recipe_hash, s.variables, s.argv, s.repeat, s.run_order, s.status,
               s.started_at, s.ended_at, s.env, s.build_name, coalesce(b.commit, s.commit) AS commit,
               coalesce(b.upstream_commit, s.upstream_commit) AS upstream_commit, b.backend, b.cuda_archs,
               (SELECT count(*) FROM measured_runs r WHERE r.sweep_id = s.id) AS runs
        FROM sweeps s LEFT JOIN builds b ON b.id = s.build_id
        WHERE s.id IN (SELECT unnest(?::INTEGER[])) ORDER BY s.id""",
            [sweep_ids],
        )
    )


def report_arm_models(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Per sweep and arm, the first measured run's argv and model hashes (an arm stopped before launch has no
    hashes: its argv still names its files)."""
    return rows_as_dicts(
        con.execute(
            """
        SELECT sweep_id, arm, arg_min(executed_argv, id) AS executed_argv, arg_min(rendered_argv, id) AS rendered_argv,
               arg_min(target_sha256, id) AS target_sha256, arg_min(draft_sha256, id) AS draft_sha256
        FROM measured_runs WHERE sweep_id IN (SELECT unnest(?::INTEGER[]))
        GROUP BY sweep_id, arm ORDER BY sweep_id, min(id)""",
            [sweep_ids],
        )
    )


def models_matching(con: Con, shas: list[str], paths: list[str]) -> list[dict]:
    """Stored GGUF facts of the models with these hashes, or last seen at these paths. file_type is the GGUF's
    general.file_type, which llama-quantize writes as asked even where it replaced the type: a quantized copy orch
    made that is not what was asked (replaced, or requantized) is named by its quant label instead."""
    return rows_as_dicts(
        con.execute(
            """
        SELECT m.sha256, m.path, m.size_bytes, m.architecture, m.name, m.parameters,
               coalesce((SELECT any_value(q.label) FROM quants q WHERE q.sha256 = m.sha256 AND q.label <> q.requested),
                        m.file_type) AS file_type
        FROM models m
        WHERE m.sha256 IN (SELECT unnest(?::VARCHAR[])) OR m.path IN (SELECT unnest(?::VARCHAR[]))""",
            [shas, paths],
        )
    )


def arm_outcomes(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Per sweep, arm, status and failure class of the measured runs: how many, and one detail (the first)."""
    return rows_as_dicts(
        con.execute(
            """
        SELECT sweep_id, arm, status, failure_class, count(*) AS runs, arg_min(failure_detail, id) AS detail
        FROM measured_runs WHERE sweep_id IN (SELECT unnest(?::INTEGER[]))
        GROUP BY sweep_id, arm, status, failure_class ORDER BY sweep_id, min(id)""",
            [sweep_ids],
        )
    )


# A counter of the statistics line summed over its implementations (parse/spec.DraftStats), NULL where none has it
_STAT = "list_sum(CAST(json_extract(m.extra, '$.draft_stats[*].{}') AS BIGINT[]))"


def arm_draft_costs(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Per sweep and arm that drafted: view run_draft_cost pooled over its ok runs (draft time only when every
    run's log gave one), with the statistics line's draft calls and the drafts they made (calls that made none:
    thrown away by draft_min or p_min after the draft model ran) and the target's sampling time (its perf block),
    where every run's log gave them. list_contains, not IN (SELECT unnest(...)): DuckDB pushes it into the view, so
    one sweep's summary reads that sweep's logs' figures, not every stored run's (0.007 s against 0.07 s at 49k
    runs)."""
    return rows_as_dicts(
        con.execute(
            f"""
        SELECT sweep_id, arm, count(*) AS runs, sum(decode_ms) AS decode_ms, sum(passes) AS passes,
               sum(drafted) AS drafted, sum(accepted) AS accepted,
               CASE WHEN count(draft_ms) = count(*) THEN sum(draft_ms) END AS draft_ms,
               CASE WHEN count(calls) = count(*) THEN sum(calls) END AS draft_calls,
               CASE WHEN count(made) = count(*) THEN sum(made) END AS drafts_made,
               CASE WHEN count(sampling) = count(*) THEN sum(sampling) END AS sampling_ms
        FROM (SELECT c.*, {_STAT.format("calls_gen")} AS calls, {_STAT.format("gen_drafts")} AS made,
                     CAST(m.extra->>'sampling_ms' AS DOUBLE) AS sampling
              FROM run_draft_cost c JOIN metrics m ON m.run_id = c.run_id
              WHERE list_contains(?::INTEGER[], c.sweep_id))
        GROUP BY sweep_id, arm""",
            [sweep_ids],
        )
    )


def arm_energy(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Per sweep and arm with GPU power samples: joules per generated token over the runs that have one (count,
    mean, sample stdev, and the mean and sample stdev of its logs, which analyze/costs puts its 95% interval on:
    it stays above zero), mean power, fewest samples in a measured window, and runs whose GPUs idled through
    generation (no figure: not this run's energy)."""
    return rows_as_dicts(
        con.execute(
            """
        SELECT sweep_id, arm, count(*) AS runs, count(joules_per_token) AS n, avg(joules_per_token) AS mean,
               stddev_samp(joules_per_token) AS sd, avg(ln(joules_per_token)) AS mean_log,
               stddev_samp(ln(joules_per_token)) AS sd_log, avg(power_w) AS power_w,
               min(samples) FILTER (WHERE joules_per_token IS NOT NULL) AS min_samples,
               count(*) FILTER (WHERE samples > 0 AND gpus = 0) AS gpu_idle_runs
        FROM run_energy
        WHERE sweep_id IN (SELECT unnest($ids::INTEGER[])) AND (joules_per_token > 0 OR joules IS NULL)
        GROUP BY sweep_id, arm""",
            {"ids": sweep_ids},
        )
    )


def run_energy_row(con: Con, run_id: int) -> dict | None:
    rows = rows_as_dicts(con.execute("SELECT * FROM run_energy WHERE run_id = ?", [run_id]))
    return rows[0] if rows else None
