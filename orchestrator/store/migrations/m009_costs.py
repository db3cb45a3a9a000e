"""Migration 009: what a token costs: a speculative step's measured cost and GPU energy per token."""

from __future__ import annotations

import duckdb

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
