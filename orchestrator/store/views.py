"""Every view of the results file, defined once here in live code (the derived figures from store/figures, as the
summary's queries use them), and made again wherever a file's views are not the code's.

Each view is stamped with a hash of its definition (a DuckDB comment). Opening a file (store/db.py) checks the
stamps: a view missing, edited by hand or made by another orch is dropped with the others and every view made
again in order; pending migrations run with no view in place, since migrations touch tables only. So a fresh file
and an upgraded one have the same views, and changing a definition here needs no migration.
"""

from __future__ import annotations

import duckdb

from orchestrator.hashing import sha256_text
from orchestrator.store import figures
from orchestrator.store.figures import PAIRED_WITH

# A run's generated tokens and generation time, read the same way for every tool: the speculative tools' end block
# (`decoded N tokens`), else the speculative counter n_predict (server mode: the requests' predicted_n), else the
# completion tool's eval runs; the time is tokens / decode_tps, so it is the very figure decode_tps was made from.
_TOKENS = "coalesce(CAST(m.extra->>'decode_tokens' AS BIGINT), m.n_predict, m.eval_runs)"
_BOUND = figures.bound_tps("r.bandwidth_bytes_per_s", "r.decode_bytes")
_PER_STEP = figures.tokens_per_step("m.n_generated", "m.n_accepted")
# A run served by a llama-server (its counters run over the server's life; its samples are its requests)
_SERVES, _O_SERVES, _R_SERVES = (figures.mode_is(column, "serves") for column in ("mode", "o.mode", "r.mode"))

# Measurements only: no warm-ups, and for a slot re-run (--resume, a lost log's retry) only its newest row.
MEASURED_RUNS = """
    SELECT * FROM runs WHERE NOT coalesce(warmup, false)
    QUALIFY row_number() OVER (PARTITION BY sweep_id, arm, repeat_index ORDER BY id DESC) = 1"""

RUN_SUMMARY = f"""
    SELECT r.id AS run_id, r.sweep_id, s.recipe_path, {figures.RUN_BUILD} AS build_name,
           {figures.RUN_UPSTREAM_COMMIT} AS upstream_commit, r.arm, r.is_baseline,
           r.repeat_index, r.mode, r.status, r.failure_class, m.decode_tps, m.encode_tps, m.acceptance,
           m.n_drafted, m.n_accepted, m.n_predict, m.draft_per_generated, m.mean_accept_len, r.wall_s,
           r.peak_rss_bytes, r.started_at
    FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN builds rb ON rb.id = r.build_id
         LEFT JOIN metrics m ON m.run_id = r.id"""

ARM_SUMMARY = f"""
    SELECT r.sweep_id, s.recipe_path, {figures.RUN_BUILD} AS build_name, {figures.RUN_UPSTREAM_COMMIT} AS upstream_commit,
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
    GROUP BY r.sweep_id, s.recipe_path, {figures.RUN_BUILD}, {figures.RUN_UPSTREAM_COMMIT}, r.arm"""

# The samples speedups pair on: a CLI run is one sample keyed by repeat (prompt_id ''), a server run one sample per
# ok request keyed by repeat and prompt, at the rate its build reported (a request without a positive rate is no
# sample: a one-token reply has no decode step at 0c1e57098).
DECODE_SAMPLES = f"""
    WITH ok AS (
        SELECT r.sweep_id, r.arm, r.is_baseline, r.is_control, r.reference_arm, r.mode, r.id AS run_id,
               r.repeat_index, m.decode_tps
        FROM measured_runs r JOIN metrics m ON m.run_id = r.id
        WHERE r.status = 'ok' AND m.decode_tps > 0
    )
    SELECT sweep_id, arm, is_baseline, is_control, reference_arm, mode, run_id, repeat_index, '' AS prompt_id,
           decode_tps AS tps
    FROM ok WHERE NOT {_SERVES}
    UNION ALL
    SELECT o.sweep_id, o.arm, o.is_baseline, o.is_control, o.reference_arm, o.mode, o.run_id, o.repeat_index,
           q.prompt_id, {figures.REQUEST_RATE}
    FROM ok o JOIN requests q ON q.run_id = o.run_id
    WHERE {_O_SERVES} AND q.status = 'ok' AND q.predicted_ms > 0 AND {figures.REQUEST_RATE} > 0"""


def _speedup_vs(against: str) -> str:
    """Each arm paired with the baseline, or with its reference (its control: like for like), on the same samples."""
    return f"""
    SELECT a.sweep_id, a.arm, count(*) AS pairs,
           {figures.speedup("count(*)", f"avg({figures.LOG_RATIO})")} AS speedup_paired,
           avg(a.tps) / avg(b.tps) AS speedup_of_means
    FROM decode_samples a JOIN decode_samples b ON b.sweep_id = a.sweep_id AND {PAIRED_WITH[against]}
         AND b.repeat_index = a.repeat_index AND b.prompt_id = a.prompt_id
    GROUP BY a.sweep_id, a.arm"""


# The decode bound (bandwidth / bytes read per decode step) and the share of it a run's target passes reached.
RUN_ROOFLINE = f"""
    SELECT r.id AS run_id, r.sweep_id, r.arm, m.decode_tps, r.bandwidth_bytes_per_s, r.bandwidth_label,
           r.decode_bytes, {_BOUND} AS bound_tps,
           {figures.roofline_pct("m.decode_tps", _BOUND, _PER_STEP)} AS roofline_pct,
           {_PER_STEP} AS tokens_per_step
    FROM measured_runs r LEFT JOIN metrics m ON m.run_id = r.id WHERE r.decode_bytes > 0"""

# Per run that drafted: a pass is one target verification (it yields the accepted tokens plus one), so passes =
# generated - accepted; ms_per_pass is the whole step, drafted_per_pass the mean draft length. draft_ms is the time
# spent drafting where the log prints it; NULL in server mode, whose counters run over the server's life.
RUN_DRAFT_COST = f"""
    WITH ok AS (
        SELECT r.id AS run_id, r.sweep_id, r.arm, r.mode, r.reference_arm, {_TOKENS} AS tokens, m.decode_tps,
               m.n_drafted AS drafted, m.n_accepted AS accepted,
               CASE WHEN NOT {_R_SERVES} THEN coalesce(
                   list_sum(CAST(json_extract(m.extra, '$.draft_stats[*].dur_ms[1]') AS DOUBLE[])),
                   CAST(m.extra->>'draft_eval_ms' AS DOUBLE)) END AS draft_ms
        FROM measured_runs r JOIN metrics m ON m.run_id = r.id
        WHERE r.status = 'ok' AND m.n_drafted > 0 AND m.decode_tps > 0
    )
    SELECT run_id, sweep_id, arm, mode, reference_arm, tokens, 1000.0 * tokens / decode_tps AS decode_ms,
           tokens - accepted AS passes, drafted, accepted, draft_ms,
           1000.0 * tokens / decode_tps / (tokens - accepted) AS ms_per_pass,
           drafted / (tokens - accepted) AS drafted_per_pass, draft_ms / drafted AS draft_ms_per_token
    FROM ok WHERE tokens > accepted"""

# GPU energy per generated token, per run with power samples: the mean power of the GPUs the run kept busy over its
# generation window, times the window, per token. A CLI run's window is its last tokens / decode_tps seconds before
# it exited; a server run's, its requests. samples: ticks inside the window; gpus: the busy GPUs (0 with samples:
# the GPUs idled, a CPU build).
RUN_ENERGY = f"""
    WITH ok AS (
        SELECT r.id AS run_id, r.sweep_id, r.arm, r.mode, {_TOKENS} AS tokens, m.decode_tps, r.wall_s
        FROM measured_runs r JOIN metrics m ON m.run_id = r.id
        WHERE r.status = 'ok' AND m.decode_tps > 0
          AND r.id IN (SELECT run_id FROM telemetry WHERE gpu IS NOT NULL AND power_w IS NOT NULL)
    ), win AS (
        SELECT ok.*, CASE WHEN {_SERVES} THEN wall_s ELSE tokens / decode_tps END AS seconds,
               CASE WHEN {_SERVES} THEN (SELECT max(t) FROM telemetry x WHERE x.run_id = ok.run_id)
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
    SELECT win.run_id, win.sweep_id, win.arm, win.mode, win.tokens, win.seconds,
           win.window_end - win.seconds AS window_start, win.window_end,
           coalesce(any_value(sampled.samples), 0) AS samples, coalesce(max(ticks.gpus), 0) AS gpus,
           avg(ticks.watts) AS power_w, avg(ticks.watts) * win.seconds AS joules,
           avg(ticks.watts) * win.seconds / win.tokens AS joules_per_token
    FROM win LEFT JOIN ticks ON ticks.run_id = win.run_id LEFT JOIN sampled ON sampled.run_id = win.run_id
    GROUP BY win.run_id, win.sweep_id, win.arm, win.mode, win.tokens, win.seconds, win.window_end"""

ARM_ENERGY = """
    SELECT sweep_id, arm, count(*) AS runs, count(joules_per_token) AS measured,
           avg(joules_per_token) AS joules_per_token, stddev_samp(joules_per_token) AS joules_per_token_stddev,
           avg(power_w) AS power_w, min(samples) FILTER (WHERE joules_per_token IS NOT NULL) AS min_samples
    FROM run_energy GROUP BY sweep_id, arm"""

RUN_QUALITY = """
    SELECT r.id AS run_id, r.sweep_id, r.arm, r.status, m.decode_tps, m.encode_tps, r.peak_rss_bytes, r.memfit,
           q.*, (q.ppl_ratio - 1) * 100 AS dppl_pct
    FROM measured_runs r JOIN quality q ON q.id = r.quality_id LEFT JOIN metrics m ON m.run_id = r.id"""

# Each view after the views it reads.
VIEWS: tuple[tuple[str, str], ...] = (
    ("measured_runs", MEASURED_RUNS),
    ("run_draft_cost", RUN_DRAFT_COST),
    ("run_energy", RUN_ENERGY),
    ("arm_energy", ARM_ENERGY),
    ("run_quality", RUN_QUALITY),
    ("run_roofline", RUN_ROOFLINE),
    ("run_summary", RUN_SUMMARY),
    ("arm_summary", ARM_SUMMARY),
    ("decode_samples", DECODE_SAMPLES),
    ("speedup_vs_baseline", _speedup_vs("baseline")),
    ("speedup_vs_reference", _speedup_vs("reference")),
)
NAMES = tuple(name for name, _ in VIEWS)


def stamp(select: str) -> str:
    """What a view made from this definition carries as its comment: the definition's hash."""
    return "orch:" + sha256_text(" ".join(select.split()))[:16]


def current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether every view is present and made from the definition here (read-only: it changes nothing)."""
    stamps = dict(
        con.execute(
            "SELECT view_name, comment FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'"
        ).fetchall()
    )
    return all(stamps.get(name) == stamp(select) for name, select in VIEWS)


def drop(con: duckdb.DuckDBPyConnection) -> None:
    """Every view of orch's, readers first (pending migrations then change tables with no view in place)."""
    for name in reversed(NAMES):
        con.execute(f"DROP VIEW IF EXISTS {name}")


def make(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every view made again from the definitions here, unless all are current; the names made. A table or column
    a view reads that was dropped by hand raises duckdb.Error (`orch repair` restores it, then makes the views)."""
    if current(con):
        return []
    con.execute("BEGIN TRANSACTION")  # all or none: a view that cannot be made leaves the file's views as they were
    try:
        drop(con)
        for name, select in VIEWS:
            con.execute(f"CREATE VIEW {name} AS {select}")
            con.execute(f"COMMENT ON VIEW {name} IS '{stamp(select)}'")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return list(NAMES)
