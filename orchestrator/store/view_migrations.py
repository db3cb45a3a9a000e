"""The migrations that define the views (and the columns they need): measured runs, summaries, the samples
speedups pair on. Numbered with the rest in migrations.MIGRATIONS; never edit one that has shipped.
"""

from __future__ import annotations

import duckdb

from orchestrator.store import figures


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
# they are part of shipped migrations: change them only together with a new one.
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


# A run's generated tokens and generation time, read the same way for every tool: the speculative tools' end block
# (`decoded N tokens`), else the speculative counter n_predict (server mode: the requests' predicted_n), else the
# completion tool's eval runs; the time is tokens / decode_tps, so it is the very figure decode_tps was made from.
_TOKENS = "coalesce(CAST(m.extra->>'decode_tokens' AS BIGINT), m.n_predict, m.eval_runs)"


def m009_costs(con: duckdb.DuckDBPyConnection) -> None:
    """What a token costs: the measured cost of a speculative step (run_draft_cost) and GPU energy per generated
    token (run_energy, arm_energy). Both over measured ok runs only.

    run_draft_cost, per run that drafted: a pass is one target verification (it yields the accepted tokens plus
    one), so passes = generated - accepted; ms_per_pass is the whole step (drafting, verifying, sampling) and
    drafted_per_pass the mean draft length. draft_ms is the time spent drafting where the log prints it (the
    statistics' generate duration, or the draft context's eval time in older builds); NULL in server mode, whose
    counters run over the server's life, not the run's.

    run_energy, per run with GPU power samples: mean power of the GPUs the run kept busy (utilisation above 0 in
    the window; their draw summed per tick) over its generation window, times the window's length, per generated
    token. The window of a CLI run is its last tokens / decode_tps seconds before it exited (load and prompt
    processing come first and are left out); of a server run, the requests (wall_s) up to its last sample, prompt
    processing of the requests included, as serving costs it. joules are NULL when no sample fell in the window
    (samples 0) or no GPU was busy in it (gpus 0: a CPU build on a machine with a GPU).
    """
    con.execute(f"""
        CREATE VIEW run_draft_cost AS
        WITH ok AS (
            SELECT r.id AS run_id, r.sweep_id, r.arm, r.mode, r.reference_arm, {_TOKENS} AS tokens, m.decode_tps,
                   m.n_drafted AS drafted, m.n_accepted AS accepted,
                   CASE WHEN r.mode IS DISTINCT FROM 'server' THEN coalesce(
                       list_sum(CAST(json_extract(m.extra, '$.draft_stats[*].dur_ms[1]') AS DOUBLE[])),
                       CAST(m.extra->>'draft_eval_ms' AS DOUBLE)) END AS draft_ms
            FROM measured_runs r JOIN metrics m ON m.run_id = r.id
            WHERE r.status = 'ok' AND m.n_drafted > 0 AND m.decode_tps > 0
        )
        SELECT run_id, sweep_id, arm, mode, reference_arm, tokens, 1000.0 * tokens / decode_tps AS decode_ms,
               tokens - accepted AS passes, drafted, accepted, draft_ms,
               1000.0 * tokens / decode_tps / (tokens - accepted) AS ms_per_pass,
               drafted / (tokens - accepted) AS drafted_per_pass, draft_ms / drafted AS draft_ms_per_token
        FROM ok WHERE tokens > accepted""")
    con.execute(f"""
        CREATE VIEW run_energy AS
        WITH ok AS (
            SELECT r.id AS run_id, r.sweep_id, r.arm, r.mode, {_TOKENS} AS tokens, m.decode_tps, r.wall_s
            FROM measured_runs r JOIN metrics m ON m.run_id = r.id
            WHERE r.status = 'ok' AND m.decode_tps > 0
              AND r.id IN (SELECT run_id FROM telemetry WHERE gpu IS NOT NULL AND power_w IS NOT NULL)
        ), win AS (
            SELECT ok.*, CASE WHEN mode = 'server' THEN wall_s ELSE tokens / decode_tps END AS seconds,
                   CASE WHEN mode = 'server' THEN (SELECT max(t) FROM telemetry x WHERE x.run_id = ok.run_id)
                        ELSE wall_s END AS window_end
            FROM ok WHERE tokens > 0
        ), inside AS (
            SELECT x.run_id, x.t, x.gpu, x.power_w, x.util_pct
            FROM win JOIN telemetry x ON x.run_id = win.run_id AND x.gpu IS NOT NULL
             AND x.t BETWEEN win.window_end - win.seconds AND win.window_end
        ), busy AS (
            SELECT run_id, gpu FROM inside GROUP BY run_id, gpu HAVING max(util_pct) > 0
        ), ticks AS (
            SELECT i.run_id, i.t, sum(i.power_w) AS watts, count(*) AS gpus
            FROM inside i JOIN busy b ON b.run_id = i.run_id AND b.gpu = i.gpu
            WHERE i.power_w IS NOT NULL GROUP BY i.run_id, i.t
        ), sampled AS (
            SELECT run_id, count(DISTINCT t) AS samples FROM inside GROUP BY run_id
        )
        -- samples: ticks inside the window; gpus: the busy GPUs (0 with samples: the GPUs idled, a CPU build)
        SELECT win.run_id, win.sweep_id, win.arm, win.mode, win.tokens, win.seconds,
               win.window_end - win.seconds AS window_start, win.window_end,
               coalesce(any_value(sampled.samples), 0) AS samples, coalesce(max(ticks.gpus), 0) AS gpus,
               avg(ticks.watts) AS power_w, avg(ticks.watts) * win.seconds AS joules,
               avg(ticks.watts) * win.seconds / win.tokens AS joules_per_token
        FROM win LEFT JOIN ticks ON ticks.run_id = win.run_id LEFT JOIN sampled ON sampled.run_id = win.run_id
        GROUP BY win.run_id, win.sweep_id, win.arm, win.mode, win.tokens, win.seconds, win.window_end""")
    con.execute("""
        CREATE VIEW arm_energy AS
        SELECT sweep_id, arm, count(*) AS runs, count(joules_per_token) AS measured,
               avg(joules_per_token) AS joules_per_token, stddev_samp(joules_per_token) AS joules_per_token_stddev,
               avg(power_w) AS power_w, min(samples) FILTER (WHERE joules_per_token IS NOT NULL) AS min_samples
        FROM run_energy GROUP BY sweep_id, arm""")


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
