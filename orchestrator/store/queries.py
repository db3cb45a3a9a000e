"""Every read of the results file: one function per question, plain rows out, nothing written.

Reads that would be slow at scale group in SQL (one row per arm or per test, samples as lists), so
summarising 100k stored runs moves a few thousand rows into Python, not 100k.
"""

from __future__ import annotations

import gzip
import json

import duckdb

from orchestrator.parse import METRIC_KEYS as METRIC_COLUMNS
from orchestrator.store import schema
from orchestrator.store.db import rows_as_dicts
from orchestrator.store.view_migrations import PAIRED_WITH

Con = duckdb.DuckDBPyConnection
TABLES, VIEWS = schema.TABLES, schema.VIEWS


# --- builds -------------------------------------------------------------------------------------------------------

def build_recorded(con: Con, build_id: str) -> bool:
    return con.execute("SELECT 1 FROM builds WHERE id = ?", [build_id]).fetchone() is not None


def build_names_matching(con: Con, ref: str) -> list[str]:
    """Complete stored builds whose commit or upstream commit starts with ref, or whose name is ref."""
    rows = con.execute("SELECT DISTINCT name FROM builds WHERE status = 'ok' AND (starts_with(commit, ?) "
                       "OR starts_with(upstream_commit, ?) OR name = ?) ORDER BY name",
                       [ref.lower(), ref.lower(), ref]).fetchall()
    return [r[0] for r in rows]


def build_names_with_commit(con: Con, sha: str) -> list[str]:
    rows = con.execute("SELECT DISTINCT name FROM builds WHERE status = 'ok' AND (commit = ? OR upstream_commit = ?) "
                       "ORDER BY name", [sha, sha]).fetchall()
    return [r[0] for r in rows]


# --- sweeps and resume --------------------------------------------------------------------------------------------

def last_sweeps(con: Con, n: int) -> list[int]:
    return [r[0] for r in con.execute("SELECT id FROM sweeps ORDER BY id DESC LIMIT ?", [n]).fetchall()][::-1]


def existing_sweeps(con: Con, sweep_ids: list[int]) -> set[int]:
    return {r[0] for r in con.execute("SELECT id FROM sweeps WHERE id IN (SELECT unnest(?::INTEGER[]))",
                                      [sweep_ids]).fetchall()}


def watched_sweep(con: Con, sweep_id: int | None) -> int | None:
    """The sweep `orch watch` follows: the one named, else the newest running one, else the newest."""
    if sweep_id is not None:
        return sweep_id if existing_sweeps(con, [sweep_id]) else None
    row = con.execute("SELECT id FROM sweeps ORDER BY status = 'running' DESC, id DESC LIMIT 1").fetchone()
    return row[0] if row else None


def sweep_progress(con: Con, sweep_id: int) -> dict:
    """A sweep's state for `orch watch`: status, recipe, build, planned runs and, since its owner (re)started it,
    how many ended and how; the run in flight."""
    return rows_as_dicts(con.execute("""
        SELECT s.id, s.status, s.recipe_path, s.build_name, s.planned_runs, s.owner_since, s.started_at, s.ended_at,
               count(r.id) FILTER (WHERE r.status <> 'running') AS ended,
               count(r.id) FILTER (WHERE r.status = 'ok') AS ok,
               count(r.id) FILTER (WHERE r.status IN ('failed', 'timeout')) AS failed,
               count(r.id) FILTER (WHERE r.status = 'skipped') AS skipped,
               arg_max(r.arm, r.id) FILTER (WHERE r.status = 'running') AS running_arm
        FROM sweeps s LEFT JOIN runs r ON r.sweep_id = s.id AND r.started_at >= coalesce(s.owner_since, s.started_at)
        WHERE s.id = ? GROUP BY ALL""", [sweep_id]))[0]


def recent_failures(con: Con, sweep_id: int, n: int) -> list[dict]:
    return rows_as_dicts(con.execute("""
        SELECT id AS run, arm, status, failure_class, failure_detail FROM runs
        WHERE sweep_id = ? AND status IN ('failed', 'timeout') ORDER BY id DESC LIMIT ?""", [sweep_id, n]))


def sweep_keys(con: Con) -> list[dict]:
    """What resume matches on, newest sweep first: recipe hash, build id and variables (JSON text), with the recipe
    path and build name that name a candidate."""
    return rows_as_dicts(con.execute("SELECT id, recipe_path, recipe_hash, build_id, build_name, variables FROM sweeps "
                                     "ORDER BY id DESC"))


def sweep_repeat(con: Con, sweep_id: int) -> int | None:
    row = con.execute("SELECT repeat FROM sweeps WHERE id = ?", [sweep_id]).fetchone()
    return row[0] if row else None


def sweep_env(con: Con, sweep_id: int) -> dict | None:
    row = con.execute("SELECT env FROM sweeps WHERE id = ?", [sweep_id]).fetchone()
    return json.loads(row[0]) if row and row[0] else None


def done_slots(con: Con, sweep_id: int) -> dict[tuple[str, int], str]:
    """Measured (arm, repeat) slots already stored ok or skipped (the build cannot run those anyway): status."""
    rows = con.execute("SELECT arm, repeat_index, max(status) FROM runs WHERE sweep_id = ? "
                       "AND NOT coalesce(warmup, false) AND status IN ('ok', 'skipped') GROUP BY ALL",
                       [sweep_id]).fetchall()
    return {(arm, rep): status for arm, rep, status in rows}


# --- runs, one at a time ------------------------------------------------------------------------------------------

RECENT_RUNS_SQL = f"""
SELECT * FROM (
    SELECT r.id AS run_id, r.sweep_id, r.arm, r.is_baseline, r.repeat_index, r.warmup, r.mode, r.status,
           r.failure_class, r.failure_detail, s.build_name, s.upstream_commit, s.recipe_path, r.wall_s,
           r.peak_rss_bytes, r.cpu_s, m.draft_per_generated, {", ".join(f"m.{c}" for c in METRIC_COLUMNS)}
    FROM runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id
    ORDER BY r.id DESC LIMIT ?) ORDER BY run_id
"""


def recent_runs(con: Con, last: int) -> list[dict]:
    """The newest `last` runs, oldest first, with every canonical metric."""
    rows = rows_as_dicts(con.execute(RECENT_RUNS_SQL, [last]))
    for row in rows:
        if isinstance(row.get("accept_rate_per_pos"), str):
            row["accept_rate_per_pos"] = json.loads(row["accept_rate_per_pos"])
    return rows


def run_row(con: Con, run_id: int) -> dict | None:
    rows = rows_as_dicts(con.execute("SELECT * FROM runs WHERE id = ?", [run_id]))
    return rows[0] if rows else None


def metrics_row(con: Con, run_id: int) -> dict | None:
    rows = rows_as_dicts(con.execute("SELECT * FROM metrics WHERE run_id = ?", [run_id]))
    return rows[0] if rows else None


def read_logs(con: Con, run_id: int) -> dict[str, str]:
    rows = con.execute("SELECT stream, gz FROM run_logs WHERE run_id = ?", [run_id]).fetchall()
    return {stream: gzip.decompress(gz).decode(errors="replace") for stream, gz in rows}


def request_rows(con: Con, run_id: int) -> list[dict]:
    return rows_as_dicts(con.execute("SELECT * FROM requests WHERE run_id = ? ORDER BY seq", [run_id]))


def runs_to_reparse(con: Con) -> list[dict]:
    """Runs with stored logs and a metrics row: what `orch reparse` can derive again."""
    return rows_as_dicts(con.execute("""
        SELECT r.id, r.mode, r.wall_s, r.sweep_id, m.extra
        FROM runs r JOIN metrics m ON m.run_id = r.id
        WHERE r.id IN (SELECT run_id FROM run_logs) ORDER BY r.id"""))


# Each measured ok run of a sweep's other arms, paired with the measured ok run of the same repeat that greedy
# output must match: the baseline's where the two share the target file, else its reference arm's (its control:
# same target and program, drafting nothing) where that does; an arm of another target has nothing to match.
_PARITY_PAIRS = """
    SELECT r.id AS run_id, r.arm, r.mode, r.params, r.executed_argv AS argv,
           rb.id AS ref_run, rb.params AS ref_params, rb.executed_argv AS ref_argv
    FROM measured_runs r
    JOIN measured_runs rb ON rb.sweep_id = r.sweep_id AND rb.repeat_index = r.repeat_index AND rb.status = 'ok'
         AND (rb.is_baseline OR rb.arm = r.reference_arm) AND rb.mode IS NOT DISTINCT FROM r.mode
         AND rb.target_sha256 IS NOT DISTINCT FROM r.target_sha256
    WHERE r.sweep_id = ? AND r.status = 'ok' AND NOT r.is_baseline
    QUALIFY row_number() OVER (PARTITION BY r.id ORDER BY rb.is_baseline DESC) = 1"""


def output_differences(con: Con, sweep_id: int) -> list[dict]:
    """Server runs at temperature 0 (paired as _PARITY_PAIRS): outputs compared with the paired run's for the same
    prompt, how many differ, and the differing pairs' texts [arm's, reference's] where stored (NULL before m011)."""
    return rows_as_dicts(con.execute(f"""
        WITH pairs AS ({_PARITY_PAIRS})
        SELECT p.run_id, p.arm, count(*) AS compared,
               count(*) FILTER (WHERE q.output_sha256 <> b.output_sha256) AS differing,
               list([q.output_text, b.output_text]) FILTER (WHERE q.output_sha256 <> b.output_sha256) AS differing_texts
        FROM pairs p
        JOIN requests q ON q.run_id = p.run_id AND q.status = 'ok'
        JOIN requests b ON b.run_id = p.ref_run AND b.prompt_id = q.prompt_id AND b.status = 'ok'
        WHERE p.mode = 'server'
          AND CAST(p.params->>'temperature' AS DOUBLE) = 0 AND CAST(p.ref_params->>'temperature' AS DOUBLE) = 0
        GROUP BY p.run_id, p.arm ORDER BY p.run_id""", [sweep_id]))


def cli_output_pairs(con: Con, sweep_id: int) -> list[dict]:
    """CLI runs with metrics paired as _PARITY_PAIRS, with both argvs (the caller decides whether both sampled
    greedily and reads the texts from their stdout)."""
    return rows_as_dicts(con.execute(f"""
        WITH pairs AS ({_PARITY_PAIRS})
        SELECT run_id, arm, argv, ref_run, ref_argv FROM pairs
        WHERE mode IS DISTINCT FROM 'server' AND run_id IN (SELECT run_id FROM metrics) ORDER BY run_id""",
                                     [sweep_id]))


def sweep_ids_with_runs(con: Con) -> list[int]:
    return [r[0] for r in con.execute("SELECT DISTINCT sweep_id FROM runs ORDER BY 1").fetchall()]


# --- per-arm summaries --------------------------------------------------------------------------------------------

def _log_interval(n: str, mean: str, sd: str, side: str) -> str:
    """SQL for one end of a 95% interval of a positive quantity from its n logs: exp(mean -/+ t * sd / sqrt(n)),
    NULL below two values. $t975 is the t quantile by degrees of freedom (stats.T975_BY_DF), 1-based."""
    sign = "-" if side == "low" else "+"
    return (f"CASE WHEN {n} >= 2 AND {sd} IS NOT NULL "
            f"THEN exp({mean} {sign} $t975[least({n} - 1, len($t975))] * {sd} / sqrt({n})) END")


# One row per (sweep, arm) over measured runs, every number computed here in one pass (100k stored runs
# summarise in well under a second): counts, decode tok/s moments and the 95% interval on logs, means, the
# speedup paired with the arm's reference and with the baseline (exp of the mean log ratio, interval likewise),
# and the values a warning rule reads (runs from 4, server per-request rates from 4), NULL elsewhere. The first
# run (lowest id) names the arm's constant columns, joined once per arm rather than carried through the grouping.
_OK = "status = 'ok'"
ARM_SUMMARY_SQL = f"""
WITH picked AS (
    SELECT r.id, r.sweep_id, r.arm, r.status, r.failure_class, r.is_baseline, r.is_control, r.reference_arm,
           r.mode, r.repeat_index, r.bandwidth_bytes_per_s / nullif(r.decode_bytes, 0) AS bound_tps,
           m.decode_tps, m.acceptance, m.draft_per_generated, m.encode_tps, m.n_drafted, m.n_accepted,
           m.mean_accept_len, m.seq_acceptance, m.seq_acceptance_low, m.seq_acceptance_high,
           m.outputs_differ, m.outputs_compared, m.first_diff_char
    FROM measured_runs r LEFT JOIN metrics m ON m.run_id = r.id
    WHERE r.sweep_id IN (SELECT unnest($ids::INTEGER[]))),
arms AS (
    SELECT sweep_id, arm, min(id) AS first_run, count(*) AS runs, count(*) FILTER ({_OK}) AS ok,
           count(decode_tps) FILTER ({_OK} AND NOT isnan(decode_tps)) AS n,
           avg(decode_tps) FILTER ({_OK} AND NOT isnan(decode_tps)) AS mean_tps,
           stddev_samp(decode_tps) FILTER ({_OK} AND NOT isnan(decode_tps)) AS sd_tps,
           -- on logs, for an interval that respects the scale (a speed is never below zero)
           count(decode_tps) FILTER ({_OK} AND decode_tps > 0) AS n_log,
           avg(ln(decode_tps)) FILTER ({_OK} AND decode_tps > 0) AS mean_log,
           stddev_samp(ln(decode_tps)) FILTER ({_OK} AND decode_tps > 0) AS sd_log,
           avg(acceptance) FILTER ({_OK}) AS acceptance, avg(draft_per_generated) FILTER ({_OK}) AS draft_per_gen,
           avg(mean_accept_len) FILTER ({_OK}) AS mean_accept_len,
           -- only where every ok run with acceptance figures has it exact: a mean of some runs would mislead
           CASE WHEN count(seq_acceptance) FILTER ({_OK}) = count(mean_accept_len) FILTER ({_OK})
                THEN avg(seq_acceptance) FILTER ({_OK}) END AS seq_acceptance,
           -- the means of the runs' bounds bound the mean of their true values
           CASE WHEN count(seq_acceptance_low) FILTER ({_OK}) = count(mean_accept_len) FILTER ({_OK})
                THEN avg(seq_acceptance_low) FILTER ({_OK}) END AS seq_acceptance_low,
           CASE WHEN count(seq_acceptance_high) FILTER ({_OK}) = count(mean_accept_len) FILTER ({_OK})
                THEN avg(seq_acceptance_high) FILTER ({_OK}) END AS seq_acceptance_high,
           avg(encode_tps) FILTER ({_OK}) AS prompt_tps, avg(bound_tps) FILTER ({_OK}) AS bound_tps,
           string_agg(DISTINCT failure_class, ',' ORDER BY failure_class) AS failures,
           count(*) FILTER (status IN ('failed', 'timeout')) AS failed,
           count(*) FILTER (status = 'skipped') AS skipped,
           coalesce(sum(n_drafted) FILTER ({_OK}), 0) AS drafted,
           coalesce(sum(n_accepted) FILTER ({_OK}), 0) AS accepted,
           -- ok runs of a speculative arm that drafted nothing (baselines and plain tools print no counter: NULL)
           count(*) FILTER ({_OK} AND NOT coalesce(is_baseline, false) AND NOT coalesce(is_control, false)
                            AND n_drafted = 0) AS idle,
           -- output parity at temperature 0 (store/parity.py): outputs compared and differing, first difference
           sum(outputs_compared) FILTER ({_OK}) AS outputs_compared,
           sum(outputs_differ) FILTER ({_OK}) AS outputs_differ,
           min(first_diff_char) FILTER ({_OK}) AS first_diff_char
    FROM picked GROUP BY sweep_id, arm),
run_values AS (  -- the runs' speeds, only for arms where a rule reads them (bimodality from 4, outliers from 5)
    SELECT p.sweep_id, p.arm, list(p.decode_tps ORDER BY p.id) AS ok_decode_tps
    FROM picked p SEMI JOIN arms a ON a.sweep_id = p.sweep_id AND a.arm = p.arm AND a.n >= 4
    WHERE p.{_OK} GROUP BY p.sweep_id, p.arm),
samples AS (  -- view decode_samples over the picked runs (read through the view, measured_runs is ranked twice)
    SELECT sweep_id, arm, is_baseline, reference_arm, mode, repeat_index, '' AS prompt_id, decode_tps AS tps
    FROM picked WHERE {_OK} AND decode_tps > 0 AND mode IS DISTINCT FROM 'server'
    UNION ALL
    SELECT o.sweep_id, o.arm, o.is_baseline, o.reference_arm, o.mode, o.repeat_index, q.prompt_id,
           q.predicted_n / q.predicted_ms * 1000
    FROM picked o JOIN requests q ON q.run_id = o.id
    WHERE o.{_OK} AND o.decode_tps > 0 AND o.mode = 'server' AND q.status = 'ok' AND q.predicted_ms > 0),
paired AS (
    SELECT a.sweep_id, a.arm,
           count(*) FILTER ({PAIRED_WITH["reference"]}) AS n_ref,
           avg(ln(a.tps / b.tps)) FILTER ({PAIRED_WITH["reference"]}) AS mean_ref,
           stddev_samp(ln(a.tps / b.tps)) FILTER ({PAIRED_WITH["reference"]}) AS sd_ref,
           count(*) FILTER ({PAIRED_WITH["baseline"]}) AS n_base,
           avg(ln(a.tps / b.tps)) FILTER ({PAIRED_WITH["baseline"]}) AS mean_base,
           stddev_samp(ln(a.tps / b.tps)) FILTER ({PAIRED_WITH["baseline"]}) AS sd_base
    FROM samples a JOIN samples b ON b.sweep_id = a.sweep_id
         AND ({PAIRED_WITH["reference"]} OR {PAIRED_WITH["baseline"]})
         AND b.repeat_index = a.repeat_index AND b.prompt_id = a.prompt_id
    WHERE NOT a.is_baseline
    GROUP BY a.sweep_id, a.arm),
sweep_facts AS (  -- once per sweep, not per arm (its environment is JSON text)
    SELECT s.id AS sweep_id, regexp_extract(s.recipe_path, '[^/]+$') AS recipe, s.build_name AS build,
           -- a GPU decoded: a CUDA build, on a machine whose stored environment lists a GPU (or has none stored)
           coalesce(b.backend = 'cuda' AND coalesce(json_array_length(s.env->'gpus'), 1) > 0, false) AS used_gpu
    FROM sweeps s LEFT JOIN builds b ON b.id = s.build_id WHERE s.id IN (SELECT unnest($ids::INTEGER[]))),
rates AS (  -- server arms' per-request speeds: the spread the bimodality rule reads (from 4 values)
    SELECT sweep_id, arm, list(tps) AS request_rates FROM samples WHERE mode = 'server'
    GROUP BY sweep_id, arm HAVING count(*) >= 4)
SELECT a.sweep_id AS sweep, s.recipe, s.build, a.arm,
       coalesce(f.is_baseline, false) AS is_baseline, coalesce(f.is_control, false) AS is_control,
       f.reference_arm, f.params, f.target_sha256, a.runs, a.ok AS ok_runs, a.n, a.mean_tps AS decode_tps,
       {_log_interval("a.n_log", "a.mean_log", "a.sd_log", "low")} AS ci_low,
       {_log_interval("a.n_log", "a.mean_log", "a.sd_log", "high")} AS ci_high,
       a.sd_tps AS stdev, a.sd_tps / nullif(a.mean_tps, 0) AS cv,
       a.acceptance, a.draft_per_gen, a.mean_accept_len, a.seq_acceptance,
       a.seq_acceptance_low, a.seq_acceptance_high, a.drafted, a.accepted, a.idle,
       CASE WHEN p.n_ref > 0 THEN exp(p.mean_ref) END AS speedup,
       {_log_interval("p.n_ref", "p.mean_ref", "p.sd_ref", "low")} AS speedup_low,
       {_log_interval("p.n_ref", "p.mean_ref", "p.sd_ref", "high")} AS speedup_high,
       CASE WHEN p.n_base > 0 THEN exp(p.mean_base) END AS speedup_vs_baseline,
       a.prompt_tps, a.bound_tps, f.bandwidth_label AS bound_label, a.failed, a.skipped, a.failures,
       v.ok_decode_tps, q.request_rates, s.used_gpu, a.outputs_compared, a.outputs_differ, a.first_diff_char
FROM arms a JOIN runs f ON f.id = a.first_run JOIN sweep_facts s ON s.sweep_id = a.sweep_id
     LEFT JOIN paired p ON p.sweep_id = a.sweep_id AND p.arm = a.arm
     LEFT JOIN run_values v ON v.sweep_id = a.sweep_id AND v.arm = a.arm
     LEFT JOIN rates q ON q.sweep_id = a.sweep_id AND q.arm = a.arm
ORDER BY a.sweep_id, a.first_run
"""


def arm_summaries(con: Con, sweep_ids: list[int], t975: list[float]) -> list[dict]:
    """Per (sweep, arm), in sweep order and arms in the order they first ran: constant columns, counts, decode
    tok/s mean, stdev and 95% interval, means, paired speedups with intervals, and the values warnings read
    (ok_decode_tps, request_rates). Named as analyze/summary's rows name them.
    t975: the 97.5% t quantile for 1, 2, ... degrees of freedom, the last entry standing for every larger df."""
    return rows_as_dicts(con.execute(ARM_SUMMARY_SQL, {"ids": sweep_ids, "t975": t975}))


# --- two builds side by side --------------------------------------------------------------------------------------

def compare_groups(con: Con, build_name: str, *, recipe: str | None, sweep_ids: list[int] | None) -> list[dict]:
    """A build's measured runs grouped by the columns that make "the same test" (params as stored text).

    Per group: the first run's arm and recipe file name, run counts by outcome, and the ok runs' decode tok/s as a
    list.
    """
    where, args = ["s.build_name = ?", "r.status <> 'running'"], [build_name]
    if recipe:
        where.append("(s.recipe_path = ? OR ends_with(s.recipe_path, '/' || ?))")
        args += [recipe, recipe.lstrip("./")]
    if sweep_ids:
        where.append("r.sweep_id IN (SELECT unnest(?::INTEGER[]))")
        args.append(sweep_ids)
    return rows_as_dicts(con.execute(f"""
        SELECT s.recipe_hash, r.params, r.target_sha256, r.draft_sha256, coalesce(r.prompt_set, '') AS prompt_set,
               r.mode, arg_min(r.arm, r.id) AS arm, arg_min(regexp_extract(s.recipe_path, '[^/]+$'), r.id) AS recipe,
               min(r.id) AS first_run, count(*) AS runs,
               count(*) FILTER (WHERE r.status IN ('failed', 'timeout')) AS failed,
               count(*) FILTER (WHERE r.status = 'skipped') AS skipped,
               coalesce(list(m.decode_tps ORDER BY r.id)
                   FILTER (WHERE r.status = 'ok' AND m.decode_tps IS NOT NULL), []) AS samples
        FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id
        WHERE {" AND ".join(where)}
        GROUP BY s.recipe_hash, r.params, r.target_sha256, r.draft_sha256, coalesce(r.prompt_set, ''), r.mode
        ORDER BY first_run""", args))


# --- reports ------------------------------------------------------------------------------------------------------

def report_runs(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Measured runs of the sweeps (no warm-ups), one row each, for the per-run dots and lines of the report
    (accept_rate_per_pos as stored: JSON text)."""
    return rows_as_dicts(con.execute("""
        SELECT s.run_id, s.sweep_id, s.build_name, s.arm, s.is_baseline, s.status, s.decode_tps, s.acceptance,
               s.wall_s, m.accept_rate_per_pos
        FROM run_summary s LEFT JOIN metrics m ON m.run_id = s.run_id
        WHERE s.sweep_id IN (SELECT unnest(?::INTEGER[])) ORDER BY s.run_id""", [sweep_ids]))


def runs_with_telemetry(con: Con, run_ids: list[int]) -> set[int]:
    rows = con.execute("SELECT DISTINCT run_id FROM telemetry WHERE run_id IN (SELECT unnest(?::INTEGER[]))",
                       [run_ids]).fetchall()
    return {r[0] for r in rows}


def telemetry_rows(con: Con, run_id: int) -> list[dict]:
    return rows_as_dicts(con.execute("SELECT * FROM telemetry WHERE run_id = ? ORDER BY t, gpu", [run_id]))


def report_sweeps(con: Con, sweep_ids: list[int]) -> list[dict]:
    """What each sweep ran: recipe, variables, the orch command, timing, and its build's commit and backend."""
    return rows_as_dicts(con.execute("""
        SELECT s.id AS sweep_id, s.recipe_path, s.recipe_hash, s.variables, s.argv, s.repeat, s.run_order, s.status,
               s.started_at, s.ended_at, s.env, s.build_name, coalesce(b.commit, s.commit) AS commit,
               coalesce(b.upstream_commit, s.upstream_commit) AS upstream_commit, b.backend, b.cuda_archs,
               (SELECT count(*) FROM measured_runs r WHERE r.sweep_id = s.id) AS runs
        FROM sweeps s LEFT JOIN builds b ON b.id = s.build_id
        WHERE s.id IN (SELECT unnest(?::INTEGER[])) ORDER BY s.id""", [sweep_ids]))


def report_arm_models(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Per sweep and arm, the first measured run's argv and model hashes (an arm stopped before launch has no
    hashes: its argv still names its files)."""
    return rows_as_dicts(con.execute("""
        SELECT sweep_id, arm, arg_min(executed_argv, id) AS executed_argv, arg_min(rendered_argv, id) AS rendered_argv,
               arg_min(target_sha256, id) AS target_sha256, arg_min(draft_sha256, id) AS draft_sha256
        FROM measured_runs WHERE sweep_id IN (SELECT unnest(?::INTEGER[]))
        GROUP BY sweep_id, arm ORDER BY sweep_id, min(id)""", [sweep_ids]))


def models_matching(con: Con, shas: list[str], paths: list[str]) -> list[dict]:
    """Stored GGUF facts of the models with these hashes, or last seen at these paths."""
    return rows_as_dicts(con.execute("""
        SELECT sha256, path, size_bytes, architecture, name, parameters, file_type FROM models
        WHERE sha256 IN (SELECT unnest(?::VARCHAR[])) OR path IN (SELECT unnest(?::VARCHAR[]))""", [shas, paths]))


def arm_outcomes(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Per sweep, arm, status and failure class of the measured runs: how many, and one detail (the first)."""
    return rows_as_dicts(con.execute("""
        SELECT sweep_id, arm, status, failure_class, count(*) AS runs, arg_min(failure_detail, id) AS detail
        FROM measured_runs WHERE sweep_id IN (SELECT unnest(?::INTEGER[]))
        GROUP BY sweep_id, arm, status, failure_class ORDER BY sweep_id, min(id)""", [sweep_ids]))


def arm_draft_costs(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Per sweep and arm that drafted: view run_draft_cost pooled over its ok runs (draft time only when every
    run's log gave one). list_contains, not IN (SELECT unnest(...)): DuckDB pushes it into the view, so one sweep's
    summary reads that sweep's logs' figures, not every stored run's (0.007 s against 0.07 s at 49k runs)."""
    return rows_as_dicts(con.execute("""
        SELECT sweep_id, arm, count(*) AS runs, sum(decode_ms) AS decode_ms, sum(passes) AS passes,
               sum(drafted) AS drafted, sum(accepted) AS accepted,
               CASE WHEN count(draft_ms) = count(*) THEN sum(draft_ms) END AS draft_ms
        FROM run_draft_cost WHERE list_contains(?::INTEGER[], sweep_id) GROUP BY sweep_id, arm""", [sweep_ids]))


def arm_energy(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Per sweep and arm with GPU power samples: joules per generated token over the runs that have one (count,
    mean, sample stdev, and the same on logs for an interval that stays above zero), mean power, fewest samples
    in a measured window, and runs whose GPUs idled through generation (no figure: not this run's energy)."""
    return rows_as_dicts(con.execute("""
        SELECT sweep_id, arm, count(*) AS runs, count(joules_per_token) AS n, avg(joules_per_token) AS mean,
               stddev_samp(joules_per_token) AS sd, avg(ln(joules_per_token)) AS mean_log,
               stddev_samp(ln(joules_per_token)) AS sd_log, avg(power_w) AS power_w,
               min(samples) FILTER (WHERE joules_per_token IS NOT NULL) AS min_samples,
               count(*) FILTER (WHERE samples > 0 AND gpus = 0) AS gpu_idle_runs
        FROM run_energy WHERE sweep_id IN (SELECT unnest(?::INTEGER[])) AND (joules_per_token > 0 OR joules IS NULL)
        GROUP BY sweep_id, arm""", [sweep_ids]))


def run_energy_row(con: Con, run_id: int) -> dict | None:
    rows = rows_as_dicts(con.execute("SELECT * FROM run_energy WHERE run_id = ?", [run_id]))
    return rows[0] if rows else None


# --- ad hoc SQL ---------------------------------------------------------------------------------------------------

def run_sql(con: Con, sql: str) -> tuple[list[str], list[dict]]:
    """(column names, rows) of any statement; raises duckdb.Error for the caller to explain."""
    cursor = con.execute(sql)
    columns = [d[0] for d in cursor.description or []]
    return columns, rows_as_dicts(cursor) if columns else []


# --- stored logs --------------------------------------------------------------------------------------------------

def stored_logs(con: Con, run_id: int) -> dict[str, bytes]:
    """A run's raw logs by stream name (stdout, stderr, server_tail), exactly as captured, in stream order."""
    rows = con.execute("SELECT stream, gz FROM run_logs WHERE run_id = ? ORDER BY stream", [run_id]).fetchall()
    return {stream: gzip.decompress(gz) for stream, gz in rows}
