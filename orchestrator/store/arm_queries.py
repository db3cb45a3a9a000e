"""The per-arm summary read: every number `orch summary` shows for an arm, computed in one SQL pass over the
sweeps asked for (store/queries re-exports it; analyze/summaries/compute.py names the rows and applies the rules)."""

from __future__ import annotations

import duckdb

from orchestrator.store.db import rows_as_dicts
from orchestrator.store.figures import (
    LOG_RATIO,
    PAIRED_WITH,
    REQUEST_RATE,
    bound_tps,
    mode_is,
    roofline_pct,
    speedup,
    tokens_per_step,
)

Con = duckdb.DuckDBPyConnection


# One row per (sweep, arm) over measured runs, every number gathered here in one pass (0.6 s of CPU over 129k
# stored runs, most of it on DuckDB's threads): counts, decode tok/s moments (also of its logs), means, the speedup
# paired with the arm's reference (with the moments of its log ratios) and with the baseline, the roofline share
# (store/figures defines them), and the values a warning rule reads (runs from 4, server per-request rates from 4),
# NULL elsewhere. No interval is computed here: analyze/summaries/compute puts them on the moments with analyze/stats, the one
# definition `orch compare` and `orch tune` use too. The first run (lowest id) names the arm's constant columns,
# joined once per arm rather than carried through the grouping.
_OK = "status = 'ok'"
ARM_SUMMARY_SQL = f"""
WITH picked AS (
    SELECT r.id, r.sweep_id, r.arm, r.status, r.failure_class, r.is_baseline, r.is_control, r.reference_arm,
           r.mode, r.repeat_index, {bound_tps("r.bandwidth_bytes_per_s", "r.decode_bytes")} AS bound_tps,
           m.decode_tps, m.acceptance, m.draft_per_generated, m.encode_tps, m.n_drafted, m.n_accepted,
           m.mean_accept_len, m.accept_rate_per_pos, m.seq_acceptance, m.seq_acceptance_low, m.seq_acceptance_high,
           m.outputs_differ, m.outputs_compared, m.first_diff_char, m.first_diff_token, m.first_diff_margin,
           m.first_diff_top_two, m.n_generated, m.loop_share, m.degenerate_loop,
           -- what the host's other processes used during the run (machine/host_load), kept with its telemetry
           TRY_CAST(json_extract_string(r.telemetry, '$.others_cpu_pct') AS DOUBLE) AS others_cpu_pct,
           json_extract_string(r.telemetry, '$.busiest_other') AS busiest_other
    FROM measured_runs r LEFT JOIN metrics m ON m.run_id = r.id
    WHERE r.sweep_id IN (SELECT unnest($ids::INTEGER[]))),
-- each arm's first attempt: its place in the tables (an attempt retried later, under load, keeps it)
attempts AS (
    SELECT sweep_id, arm, min(id) AS first_attempt FROM runs
    WHERE sweep_id IN (SELECT unnest($ids::INTEGER[])) AND NOT coalesce(warmup, false) GROUP BY sweep_id, arm),
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
           -- sums of counts as BIGINT, not the HUGEINT that sum gives (slower to read into Python; none comes near)
           coalesce(sum(n_drafted) FILTER ({_OK}), 0)::BIGINT AS drafted,
           coalesce(sum(n_accepted) FILTER ({_OK}), 0)::BIGINT AS accepted,
           -- the tokens one target pass yielded, over the runs that count both (the roofline is per pass)
           {
    tokens_per_step(
        f"sum(n_generated) FILTER ({_OK} AND n_accepted IS NOT NULL)",
        f"sum(n_accepted) FILTER ({_OK} AND n_generated IS NOT NULL)",
    )
} AS tokens_per_step,
           -- ok runs of a speculative arm that drafted nothing (baselines and plain tools print no counter: NULL)
           count(*) FILTER ({_OK} AND NOT coalesce(is_baseline, false) AND NOT coalesce(is_control, false)
                            AND n_drafted = 0) AS idle,
           -- output parity at temperature 0 (store/parity.py): outputs compared and differing, first difference
           sum(outputs_compared) FILTER ({_OK})::BIGINT AS outputs_compared,
           sum(outputs_differ) FILTER ({_OK})::BIGINT AS outputs_differ,
           min(first_diff_char) FILTER ({_OK}) AS first_diff_char,
           -- the token position of the same (earliest) difference, not the smallest of another run's
           arg_min(first_diff_token, first_diff_char) FILTER ({_OK}) AS first_diff_token,
           -- and the target's top two there (run/near_tie.py): how far apart, and whether they are the texts'
           arg_min(first_diff_margin, first_diff_char) FILTER ({_OK}) AS first_diff_margin,
           arg_min(first_diff_top_two, first_diff_char) FILTER ({_OK}) AS first_diff_top_two,
           -- generated tokens, and runs whose generated text loops (store/loops.py)
           min(n_generated) FILTER ({_OK}) AS generated_min, max(n_generated) FILTER ({_OK}) AS generated_max,
           count(*) FILTER ({_OK} AND degenerate_loop) AS looped, max(loop_share) FILTER ({_OK}) AS loop_share,
           -- the busiest run's share of the machine that other programs took, and who took most of it
           max(others_cpu_pct) FILTER ({_OK}) AS others_cpu_pct,
           arg_max(busiest_other, others_cpu_pct) FILTER ({_OK}) AS busiest_other
    FROM picked GROUP BY sweep_id, arm),
run_values AS (  -- the runs' speeds in the order they ran, only for arms where a rule reads them (a slow first run
    -- from 3, bimodality from 4, outliers from 5)
    SELECT p.sweep_id, p.arm, list(p.decode_tps ORDER BY p.id) AS ok_decode_tps
    FROM picked p SEMI JOIN arms a ON a.sweep_id = p.sweep_id AND a.arm = p.arm AND a.n >= 3
    WHERE p.{_OK} GROUP BY p.sweep_id, p.arm),
samples AS (  -- view decode_samples over the picked runs (read through the view, measured_runs is ranked twice)
    SELECT sweep_id, arm, is_baseline, reference_arm, mode, repeat_index, '' AS prompt_id, decode_tps AS tps,
           n_generated
    FROM picked WHERE {_OK} AND decode_tps > 0 AND NOT {mode_is("mode", "serves")}
    UNION ALL
    SELECT o.sweep_id, o.arm, o.is_baseline, o.reference_arm, o.mode, o.repeat_index, q.prompt_id,
           {REQUEST_RATE}, q.predicted_n
    FROM picked o JOIN requests q ON q.run_id = o.id
    WHERE o.{_OK} AND o.decode_tps > 0 AND {mode_is("o.mode", "serves")} AND q.status = 'ok' AND q.predicted_ms > 0
          AND {REQUEST_RATE} > 0),
paired AS (
    SELECT a.sweep_id, a.arm,
           count(*) FILTER ({PAIRED_WITH["reference"]}) AS n_ref,
           avg({LOG_RATIO}) FILTER ({PAIRED_WITH["reference"]}) AS mean_ref,
           stddev_samp({LOG_RATIO}) FILTER ({PAIRED_WITH["reference"]}) AS sd_ref,
           count(*) FILTER ({PAIRED_WITH["baseline"]}) AS n_base,
           avg({LOG_RATIO}) FILTER ({PAIRED_WITH["baseline"]}) AS mean_base,
           stddev_samp({LOG_RATIO}) FILTER ({PAIRED_WITH["baseline"]}) AS sd_base,
           -- pairs with the reference over other counts of generated tokens (by more than one)
           count(*) FILTER ({PAIRED_WITH["reference"]} AND abs(a.n_generated - b.n_generated) > 1) AS unequal_pairs,
           min(a.n_generated) FILTER ({PAIRED_WITH["reference"]} AND abs(a.n_generated - b.n_generated) > 1)
               AS unequal_min, max(a.n_generated) FILTER ({PAIRED_WITH["reference"]}
               AND abs(a.n_generated - b.n_generated) > 1) AS unequal_max,
           min(b.n_generated) FILTER ({PAIRED_WITH["reference"]} AND abs(a.n_generated - b.n_generated) > 1)
               AS unequal_ref_min, max(b.n_generated) FILTER ({PAIRED_WITH["reference"]}
               AND abs(a.n_generated - b.n_generated) > 1) AS unequal_ref_max
    FROM samples a JOIN samples b ON b.sweep_id = a.sweep_id
         AND ({PAIRED_WITH["reference"]} OR {PAIRED_WITH["baseline"]})
         AND b.repeat_index = a.repeat_index AND b.prompt_id = a.prompt_id
    WHERE NOT a.is_baseline
    GROUP BY a.sweep_id, a.arm),
sweep_facts AS (  -- once per sweep, not per arm (its environment is JSON text)
    SELECT s.id AS sweep_id, regexp_extract(s.recipe_path, '[^/]+$') AS recipe, s.build_name AS build,
           s.host_name AS host, s.host_id, s.host_gpus AS gpu, b.backend,
           coalesce(json_array_length(s.env->'gpus'), 1) > 0 AS gpu_listed  -- or none stored
    FROM sweeps s LEFT JOIN builds b ON b.id = s.build_id WHERE s.id IN (SELECT unnest($ids::INTEGER[]))),
positions AS (  -- per arm: the mean over its ok runs of each draft position's acceptance rate, in position order
    -- (per arm over its runs' lists: unnesting every run's rates into rows to group them costs twice the time).
    -- A run's list ends at the furthest position any of its drafts was accepted at: past it the run accepted
    -- nothing, so it counts as 0 there (a mean over only the runs that reached a position would overstate it)
    SELECT sweep_id, arm,
           CASE WHEN n > 0 THEN [list_sum([coalesce(r[i], 0) FOR r IN rs]) / len(rs) FOR i IN range(1, n + 1)] END
           AS accept_rate_per_pos
    FROM (SELECT sweep_id, arm, list(r) AS rs, max(len(r)) AS n
          FROM (SELECT sweep_id, arm, CAST(accept_rate_per_pos AS DOUBLE[]) AS r FROM picked
                WHERE {_OK} AND accept_rate_per_pos IS NOT NULL)
          WHERE r IS NOT NULL GROUP BY sweep_id, arm)),
rates AS (  -- server arms' per-request speeds: the spread the bimodality rule reads (from 4 values)
    SELECT sweep_id, arm, list(tps) AS request_rates FROM samples WHERE {mode_is("mode", "serves")}
    GROUP BY sweep_id, arm HAVING count(*) >= 4)
SELECT a.sweep_id AS sweep, s.recipe, coalesce(fb.name, s.build) AS build, s.host, s.host_id, s.gpu, a.arm,
       coalesce(f.is_baseline, false) AS is_baseline, coalesce(f.is_control, false) AS is_control,
       f.reference_arm, f.params, f.target_sha256, f.draft_sha256, a.runs, a.ok AS ok_runs, a.n, a.mean_tps AS decode_tps,
       -- the 95% intervals, filled in by analyze/summaries/compute from the moments at the end (here: their place in JSON, CSV)
       NULL::DOUBLE AS ci_low, NULL::DOUBLE AS ci_high,
       a.sd_tps AS stdev, a.sd_tps / nullif(a.mean_tps, 0) AS cv,
       a.acceptance, a.draft_per_gen, a.mean_accept_len, ps.accept_rate_per_pos, a.seq_acceptance,
       a.seq_acceptance_low, a.seq_acceptance_high, a.drafted, a.accepted, a.idle,
       {speedup("p.n_ref", "p.mean_ref")} AS speedup,
       NULL::DOUBLE AS speedup_low, NULL::DOUBLE AS speedup_high,
       {speedup("p.n_base", "p.mean_base")} AS speedup_vs_baseline,
       a.prompt_tps, a.bound_tps,
       {roofline_pct("nullif(a.mean_tps, 0)", "a.bound_tps", "a.tokens_per_step")} AS roofline_pct,
       f.bandwidth_label AS bound_label, a.tokens_per_step, a.failed, a.skipped, a.failures,
       v.ok_decode_tps, q.request_rates,
       -- a GPU decoded: the arm's build is a CUDA build, on a machine whose stored environment lists a GPU
       coalesce(coalesce(fb.backend, s.backend) = 'cuda' AND s.gpu_listed, false) AS used_gpu, a.outputs_compared,
       a.outputs_differ, a.first_diff_char, a.first_diff_token, a.first_diff_margin, a.first_diff_top_two,
       a.generated_min, a.generated_max, a.looped, a.loop_share, a.others_cpu_pct, a.busiest_other,
       p.n_ref AS ref_pairs,
       coalesce(p.unequal_pairs, 0) AS unequal_pairs, p.unequal_min, p.unequal_max, p.unequal_ref_min,
       p.unequal_ref_max,
       -- the moments the intervals come from: decode tok/s's logs, and the log ratios paired with the reference
       -- (their count: ref_pairs)
       a.n_log AS log_n, a.mean_log AS log_mean, a.sd_log AS log_sd, p.mean_ref AS ref_mean_log,
       p.sd_ref AS ref_sd_log
FROM arms a JOIN runs f ON f.id = a.first_run JOIN sweep_facts s ON s.sweep_id = a.sweep_id
     LEFT JOIN builds fb ON fb.id = f.build_id  -- the arm's own build (a crossed sweep holds two)
     LEFT JOIN paired p ON p.sweep_id = a.sweep_id AND p.arm = a.arm
     LEFT JOIN run_values v ON v.sweep_id = a.sweep_id AND v.arm = a.arm
     LEFT JOIN rates q ON q.sweep_id = a.sweep_id AND q.arm = a.arm
     LEFT JOIN positions ps ON ps.sweep_id = a.sweep_id AND ps.arm = a.arm
     JOIN attempts t ON t.sweep_id = a.sweep_id AND t.arm = a.arm  -- every measured run is an attempt
ORDER BY a.sweep_id, t.first_attempt
"""


def arm_summaries(con: Con, sweep_ids: list[int]) -> list[dict]:
    """Per (sweep, arm), in sweep order and arms in the order they were first tried (a retry keeps its arm's place):
    constant columns, counts, decode tok/s mean and stdev, means, paired speedups, the moments their 95% intervals
    come from (log_n, log_mean, log_sd; ref_pairs, ref_mean_log, ref_sd_log) and the values warnings read
    (ok_decode_tps, request_rates).
    Named as analyze/summaries/compute's rows name them; it fills ci_low, ci_high, speedup_low and speedup_high."""
    return rows_as_dicts(con.execute(ARM_SUMMARY_SQL, {"ids": sweep_ids}))
