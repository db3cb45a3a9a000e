"""Every read of the results file: one function per question, plain rows out, nothing written. The per-arm
summary (arm_queries) and the report's reads (report_queries) live beside it and are re-exported here; the reads of
`orch compare` (compare_queries) and `orch tune` (tune_queries) live beside it and build on its SQL pieces.

Reads that would be slow at scale group in SQL (one row per arm or per test, samples as lists), so
summarising 100k stored runs moves a few thousand rows into Python, not 100k.
"""

from __future__ import annotations

import json

import duckdb

from orchestrator.parse import METRIC_KEYS as METRIC_COLUMNS
from orchestrator.store import schema
from orchestrator.store.arm_queries import ARM_SUMMARY_SQL, arm_summaries  # noqa: F401 (the one entry point)
from orchestrator.store.db import rows_as_dicts
from orchestrator.store.figures import RUN_BUILD, RUN_UPSTREAM_COMMIT, mode_is
from orchestrator.store.probes import predictions_of as arm_predictions  # noqa: F401 (the one entry point)
from orchestrator.store.report_queries import (  # noqa: F401 (the one entry point)
    arm_draft_costs,
    arm_energy,
    arm_outcomes,
    models_matching,
    report_arm_models,
    report_runs,
    report_sweeps,
    run_energy_row,
    runs_with_telemetry,
    telemetry_rows,
)

Con = duckdb.DuckDBPyConnection
TABLES, VIEWS = schema.TABLES, schema.VIEWS


# --- builds -------------------------------------------------------------------------------------------------------


def build_recorded(con: Con, build_id: str) -> bool:
    return con.execute("SELECT 1 FROM builds WHERE id = ?", [build_id]).fetchone() is not None


def stored_builds(con: Con) -> list[dict]:
    """Complete stored builds: what a build reference is matched against (build/reference.py)."""
    return rows_as_dicts(
        con.execute("SELECT DISTINCT name, commit, upstream_commit FROM builds WHERE status = 'ok' ORDER BY name")
    )


# --- sweeps and resume --------------------------------------------------------------------------------------------


def last_sweeps(con: Con, n: int) -> list[int]:
    return [r[0] for r in con.execute("SELECT id FROM sweeps ORDER BY id DESC LIMIT ?", [n]).fetchall()][::-1]


def existing_sweeps(con: Con, sweep_ids: list[int]) -> set[int]:
    return {
        r[0]
        for r in con.execute("SELECT id FROM sweeps WHERE id IN (SELECT unnest(?::INTEGER[]))", [sweep_ids]).fetchall()
    }


def watched_sweep(con: Con, sweep_id: int | None) -> int | None:
    """The sweep `orch watch` follows: the one named, else the newest running one, else the newest."""
    if sweep_id is not None:
        return sweep_id if existing_sweeps(con, [sweep_id]) else None
    row = con.execute("SELECT id FROM sweeps ORDER BY status = 'running' DESC, id DESC LIMIT 1").fetchone()
    return row[0] if row else None


# A run the sweep planned: not a reference run again at an arm's count of tokens (run/length_match.py: its params
# name the arm in `length_of`), a yardstick of one pair rather than a test of its own. Slots and compare count these.
PLANNED_RUN = "{run}.params->>'length_of' IS NULL"


def sweep_progress(con: Con, sweep_id: int) -> dict:
    """A sweep's state for `orch watch`: status, recipe, build, planned runs and, since its owner (re)started it,
    how many of its slots ended and how (a slot run again after its log lost its last lines counts once, as its
    newest run); the run in flight."""
    return rows_as_dicts(
        con.execute(
            f"""
        WITH slots AS (
            SELECT r.* FROM runs r JOIN sweeps s ON s.id = r.sweep_id
            WHERE r.sweep_id = $id AND r.started_at >= coalesce(s.owner_since, s.started_at)
              AND {PLANNED_RUN.format(run="r")}
            QUALIFY row_number() OVER (PARTITION BY r.arm, r.repeat_index, coalesce(r.warmup, false)
                                       ORDER BY r.id DESC) = 1)
        SELECT s.id, s.status, s.recipe_path, s.build_name, s.planned_runs, s.owner_since, s.started_at, s.ended_at,
               count(r.id) FILTER (WHERE r.status <> 'running') AS ended,
               count(r.id) FILTER (WHERE r.status = 'ok') AS ok,
               count(r.id) FILTER (WHERE r.status IN ('failed', 'timeout')) AS failed,
               count(r.id) FILTER (WHERE r.status = 'skipped') AS skipped,
               arg_max(r.arm, r.id) FILTER (WHERE r.status = 'running') AS running_arm
        FROM sweeps s LEFT JOIN slots r ON r.sweep_id = s.id
        WHERE s.id = $id GROUP BY ALL""",
            {"id": sweep_id},
        )
    )[0]


def recent_failures(con: Con, sweep_id: int, n: int) -> list[dict]:
    return rows_as_dicts(
        con.execute(
            """
        SELECT id AS run, arm, status, failure_class, failure_detail FROM runs
        WHERE sweep_id = ? AND status IN ('failed', 'timeout') ORDER BY id DESC LIMIT ?""",
            [sweep_id, n],
        )
    )


def sweep_keys(con: Con) -> list[dict]:
    """What resume matches on, newest sweep first: recipe hash, build id, variables and planned arms (JSON text),
    with the recipe path and build name that name a candidate."""
    return rows_as_dicts(
        con.execute(
            "SELECT id, recipe_path, recipe_hash, build_id, build_name, variables, arm_names "
            "FROM sweeps ORDER BY id DESC"
        )
    )


def sweep_repeat(con: Con, sweep_id: int) -> int | None:
    row = con.execute("SELECT repeat FROM sweeps WHERE id = ?", [sweep_id]).fetchone()
    return row[0] if row else None


def sweep_env(con: Con, sweep_id: int) -> dict | None:
    row = con.execute("SELECT env FROM sweeps WHERE id = ?", [sweep_id]).fetchone()
    return json.loads(row[0]) if row and row[0] else None


def done_slots(con: Con, sweep_id: int) -> dict[tuple[str, int], str]:
    """Measured (arm, repeat) slots already stored ok or skipped (the build cannot run those anyway): status."""
    rows = con.execute(
        "SELECT arm, repeat_index, max(status) FROM runs WHERE sweep_id = ? "
        "AND NOT coalesce(warmup, false) AND status IN ('ok', 'skipped') GROUP BY ALL",
        [sweep_id],
    ).fetchall()
    return {(arm, rep): status for arm, rep, status in rows}


# --- runs, one at a time ------------------------------------------------------------------------------------------


RECENT_RUNS_SQL = f"""
SELECT * FROM (
    SELECT r.id AS run_id, r.sweep_id, r.arm, r.is_baseline, r.repeat_index, r.warmup, r.mode, r.status,
           r.failure_class, r.failure_detail, {RUN_BUILD} AS build_name,
           {RUN_UPSTREAM_COMMIT} AS upstream_commit, s.recipe_path, r.wall_s,
           r.peak_rss_bytes, r.cpu_s, m.draft_per_generated, {", ".join(f"m.{c}" for c in METRIC_COLUMNS)}
    FROM runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN builds rb ON rb.id = r.build_id
         LEFT JOIN metrics m ON m.run_id = r.id
    ORDER BY r.id DESC LIMIT ?) ORDER BY run_id
"""


def recent_runs(con: Con, last: int) -> list[dict]:
    """The newest `last` runs, oldest first, with every canonical metric."""
    rows = rows_as_dicts(con.execute(RECENT_RUNS_SQL, [last]))
    for row in rows:
        if isinstance(row.get("accept_rate_per_pos"), str):
            row["accept_rate_per_pos"] = json.loads(row["accept_rate_per_pos"])
    return rows


def run_row(con: Con, run_id: int, *, decode_json: bool = False) -> dict | None:
    rows = rows_as_dicts(con.execute("SELECT * FROM runs WHERE id = ?", [run_id]), decode_json=decode_json)
    return rows[0] if rows else None


def metrics_row(con: Con, run_id: int, *, decode_json: bool = False) -> dict | None:
    rows = rows_as_dicts(con.execute("SELECT * FROM metrics WHERE run_id = ?", [run_id]), decode_json=decode_json)
    return rows[0] if rows else None


def request_rows(con: Con, run_id: int) -> list[dict]:
    return rows_as_dicts(con.execute("SELECT * FROM requests WHERE run_id = ? ORDER BY seq", [run_id]))


def runs_to_reparse(con: Con) -> list[dict]:
    """Runs with stored logs and a metrics row: what `orch reparse` can derive again."""
    return rows_as_dicts(
        con.execute("""
        SELECT r.id, r.mode, r.wall_s, r.sweep_id, m.extra
        FROM runs r JOIN metrics m ON m.run_id = r.id
        WHERE r.id IN (SELECT run_id FROM run_logs) ORDER BY r.id""")
    )


# Each measured ok run of a sweep's other arms, paired with the measured ok run of the same repeat that greedy
# output must match: the baseline's where the two share the target file, else its reference arm's (its control:
# same target and program, drafting nothing) where that does; an arm of another target has nothing to match.
# Whose text a run's must equal at temperature 0: its control's (the same program and target, drafting nothing), else
# the baseline's where the baseline runs the same program and target; another program's greedy text differs by
# itself (llama-completion's from llama-speculative-simple's), so it is never the yardstick. A control, and a run
# that drafted nothing, are not compared: no speculation of theirs could have changed a text.
_PROGRAM = "regexp_extract(json_extract_string({run}.executed_argv, '$[0]'), '[^/]+$')"
_PARITY_PAIRS = f"""
    SELECT r.id AS run_id, r.arm, r.mode, r.params, r.executed_argv AS argv,
           rb.id AS ref_run, rb.params AS ref_params, rb.executed_argv AS ref_argv
    FROM measured_runs r
    JOIN measured_runs rb ON rb.sweep_id = r.sweep_id AND rb.repeat_index = r.repeat_index AND rb.status = 'ok'
         AND (rb.is_baseline OR rb.arm = r.reference_arm) AND rb.mode IS NOT DISTINCT FROM r.mode
         AND rb.target_sha256 IS NOT DISTINCT FROM r.target_sha256
         AND {_PROGRAM.format(run="rb")} = {_PROGRAM.format(run="r")}
    LEFT JOIN metrics m ON m.run_id = r.id
    WHERE r.sweep_id = ? AND r.status = 'ok' AND NOT r.is_baseline AND NOT coalesce(r.is_control, false)
      AND m.n_drafted IS DISTINCT FROM 0
    QUALIFY row_number() OVER (PARTITION BY r.id ORDER BY rb.arm = r.reference_arm DESC) = 1"""


def output_differences(con: Con, sweep_id: int) -> list[dict]:
    """Server runs at temperature 0 (paired as _PARITY_PAIRS): outputs compared with the paired run's for the same
    prompt, how many differ, the differing pairs' texts [arm's, reference's] where stored (NULL before m011), and
    both runs' argvs (which tokenizer reads the texts)."""
    return rows_as_dicts(
        con.execute(
            f"""
        WITH pairs AS ({_PARITY_PAIRS})
        SELECT p.run_id, p.arm, p.argv, p.ref_argv, count(*) AS compared,
               count(*) FILTER (WHERE q.output_sha256 <> b.output_sha256) AS differing,
               list([q.output_text, b.output_text]) FILTER (WHERE q.output_sha256 <> b.output_sha256) AS differing_texts
        FROM pairs p
        JOIN requests q ON q.run_id = p.run_id AND q.status = 'ok'
        JOIN requests b ON b.run_id = p.ref_run AND b.prompt_id = q.prompt_id AND b.status = 'ok'
        WHERE {mode_is("p.mode", "serves")}
          AND CAST(p.params->>'temperature' AS DOUBLE) = 0 AND CAST(p.ref_params->>'temperature' AS DOUBLE) = 0
        GROUP BY p.run_id, p.arm, p.argv, p.ref_argv ORDER BY p.run_id""",
            [sweep_id],
        )
    )


def cli_output_pairs(con: Con, sweep_id: int) -> list[dict]:
    """CLI runs with metrics paired as _PARITY_PAIRS, with both argvs (the caller decides whether both sampled
    greedily and reads the texts from their stdout)."""
    return rows_as_dicts(
        con.execute(
            f"""
        WITH pairs AS ({_PARITY_PAIRS})
        SELECT run_id, arm, argv, ref_run, ref_argv FROM pairs
        WHERE NOT {mode_is("mode", "serves")} AND run_id IN (SELECT run_id FROM metrics) ORDER BY run_id""",
            [sweep_id],
        )
    )


def runs_for_loops(con: Con, sweep_id: int) -> list[dict]:
    """The sweep's ok measured runs with a metrics row: argv, mode, and a server run's stored request outputs."""
    return rows_as_dicts(
        con.execute(
            """
        SELECT r.id AS run_id, r.mode, r.executed_argv AS argv,
               (SELECT list(q.output_text ORDER BY q.seq) FROM requests q
                WHERE q.run_id = r.id AND q.status = 'ok') AS outputs
        FROM measured_runs r SEMI JOIN metrics m ON m.run_id = r.id
        WHERE r.sweep_id = ? AND r.status = 'ok' ORDER BY r.id""",
            [sweep_id],
        )
    )


def sweep_ids_with_runs(con: Con) -> list[int]:
    return [r[0] for r in con.execute("SELECT DISTINCT sweep_id FROM runs ORDER BY 1").fetchall()]


# --- ad hoc SQL ---------------------------------------------------------------------------------------------------


def run_sql(con: Con, sql: str) -> tuple[list[str], list[dict]]:
    """(column names, rows) of any statement; raises duckdb.Error for the caller to explain."""
    cursor = con.execute(sql)
    columns = [d[0] for d in cursor.description or []]
    return columns, rows_as_dicts(cursor) if columns else []


# --- stored logs --------------------------------------------------------------------------------------------------


def sweep_ids_by_uid(con: Con, uids: list[str]) -> dict[str, int]:
    """The local ids of sweeps named by global id (those stored)."""
    return dict(con.execute("SELECT uid, id FROM sweeps WHERE uid IN (SELECT unnest(?::VARCHAR[]))", [uids]).fetchall())


HOST_MATCH = "(s.host_name = ? OR starts_with(s.host_id, ?))"  # a host by name or a prefix of its id


def host_names(con: Con, host: str) -> list[tuple[str, str]]:
    """(hostname, host id) of the stored hosts that `host` names."""
    return con.execute(
        f"SELECT DISTINCT s.host_name, s.host_id FROM sweeps s WHERE {HOST_MATCH} ORDER BY 1", [host, host]
    ).fetchall()


def common_build(con: Con, base_host: str, head_host: str) -> str | None:
    """The newest build with measured runs on both hosts."""
    found = con.execute(
        f"""
        SELECT s.build_name FROM sweeps s WHERE {HOST_MATCH} AND s.build_name IN (
            SELECT s.build_name FROM sweeps s WHERE {HOST_MATCH})
        ORDER BY s.started_at DESC LIMIT 1""",
        [base_host, base_host, head_host, head_host],
    ).fetchone()
    return found[0] if found else None


def host_env(con: Con, host: str, build_name: str) -> dict | None:
    """The environment page of the newest sweep of the build on the host."""
    found = con.execute(
        f"SELECT s.env FROM sweeps s WHERE {HOST_MATCH} AND s.build_name = ? AND s.env IS NOT NULL "
        "ORDER BY s.started_at DESC LIMIT 1",
        [host, host, build_name],
    ).fetchone()
    return json.loads(found[0]) if found else None
