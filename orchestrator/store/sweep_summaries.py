"""Kept sweep summaries: each sweep's summary as every output draws it, written by the commands that store runs
(the sweep's end, reparse, import, repair) and read by `orch summary` instead of computing it again.

A kept summary is used only while it is current: its fingerprint, the hash of every stored row the summary reads
(the sweep, its build, its runs, their metrics, requests, telemetry and quality rows, whole rows), must equal the
same hash taken now, and it must come from the same code (analyze/summary_cache.code_key). A row changed by any means,
orch or a hand-written UPDATE, changes the hash, and the summary is computed from the runs again.
"""

from __future__ import annotations

import duckdb

from orchestrator.store.db import rows_as_dicts, utcnow

Con = duckdb.DuckDBPyConnection
ENGINE = duckdb.__version__  # a kept summary's numbers come from this DuckDB's arithmetic

# Per sweep, the sum (mod 2^64) of the hashes of the whole rows its summary reads (hash(<alias>) hashes the row
# as a struct; each alias ends in _row so that no column, such as telemetry's `t`, is hashed in its place).
# 0.07 s over 129k runs.
_FINGERPRINTS = """
WITH picked AS (SELECT id, build_id, hash(sweeps_row) AS h FROM sweeps sweeps_row
                WHERE id IN (SELECT unnest($ids::INTEGER[]))),
r AS (SELECT runs_row.sweep_id, runs_row.id, runs_row.quality_id, hash(runs_row) AS h FROM runs runs_row
      WHERE runs_row.sweep_id IN (SELECT id FROM picked)),
parts AS (
    SELECT id AS sweep_id, h FROM picked
    UNION ALL SELECT p.id, hash(builds_row) FROM picked p JOIN builds builds_row ON builds_row.id = p.build_id
    UNION ALL SELECT sweep_id, h FROM r
    UNION ALL SELECT r.sweep_id, hash(metrics_row) FROM metrics metrics_row JOIN r ON r.id = metrics_row.run_id
    UNION ALL SELECT r.sweep_id, hash(requests_row) FROM requests requests_row JOIN r ON r.id = requests_row.run_id
    UNION ALL SELECT r.sweep_id, hash(telemetry_row) FROM telemetry telemetry_row JOIN r ON r.id = telemetry_row.run_id
    UNION ALL SELECT r.sweep_id, hash(quality_row) FROM quality quality_row JOIN r ON quality_row.id = r.quality_id)
SELECT sweep_id, (sum(h) % 18446744073709551616)::UBIGINT AS fingerprint FROM parts GROUP BY sweep_id"""


def fingerprints(con: Con, sweep_ids: list[int]) -> dict[int, int]:
    return dict(con.execute(_FINGERPRINTS, {"ids": sweep_ids}).fetchall())


def current(con: Con, sweep_ids: list[int], code: str) -> list[dict]:
    """The kept summaries of these sweeps that are current (fingerprint and code), without their JSON and cells
    (row_texts, cells): sweep_id, arms, facts, warnings, verdict, csv_header; in sweep order."""
    return rows_as_dicts(con.execute(f"""
        WITH now AS ({_FINGERPRINTS})
        SELECT k.sweep_id, k.arms, k.facts, k.warnings, k.verdict, k.csv_header
        FROM sweep_summaries k JOIN now ON now.sweep_id = k.sweep_id AND now.fingerprint = k.fingerprint
        WHERE k.code = $code ORDER BY k.sweep_id""", {"ids": sweep_ids, "code": code}))


ROW_TEXTS = ("rows_json", "rows_csv")


def row_texts(con: Con, sweep_ids: list[int], kind: str) -> list[str]:
    """The kept rows (kind: ROW_TEXTS) of each of these sweeps that has an arm, in sweep order (joined by the
    caller: string_agg over 100 MB takes 0.9 s, fetching the pieces 0.1 s)."""
    assert kind in ROW_TEXTS, kind
    return [r[0] for r in con.execute(f"""
        SELECT k.{kind} FROM sweep_summaries k SEMI JOIN (SELECT unnest(?::INTEGER[]) AS id) i ON i.id = k.sweep_id
        WHERE k.arms > 0 ORDER BY k.sweep_id""", [sweep_ids]).fetchall()]


def cells(con: Con, sweep_ids: list[int], names: list[str]) -> dict[str, str]:
    """Per column name: a JSON array of [sweep id, that sweep's cells] (in no set order: ordering inside the
    aggregate doubles its time, and each sweep's cells carry its id)."""
    return dict(con.execute("""
        SELECT name, '[' || string_agg('[' || sweep_id || ',' || cells || ']', ',') || ']' FROM sweep_summary_cells
        WHERE sweep_id IN (SELECT unnest(?::INTEGER[])) AND name IN (SELECT unnest(?::VARCHAR[]))
        GROUP BY name""", [sweep_ids, names]).fetchall())


def keep(con: Con, code: str, fingerprint: dict[int, int], summaries: list[dict]) -> None:
    """Store these sweeps' summaries (replacing what was kept for them), with the fingerprints taken before
    they were computed. summaries: sweep_id, arms, rows_json, rows_csv, csv_header, facts, warnings, verdict,
    cells ({name: JSON})."""
    ids = [s["sweep_id"] for s in summaries]
    cell_rows = [(s["sweep_id"], name, text) for s in summaries for name, text in s["cells"].items()]
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM sweep_summaries WHERE sweep_id IN (SELECT unnest(?::INTEGER[]))", [ids])
        con.execute("DELETE FROM sweep_summary_cells WHERE sweep_id IN (SELECT unnest(?::INTEGER[]))", [ids])
        # One statement per table (lists unnested side by side): thousands of sweeps in one insert, not one each
        con.execute("""
            INSERT INTO sweep_summaries
            SELECT unnest($ids::INTEGER[]), unnest($fingerprints::UBIGINT[]), $code, unnest($arms::INTEGER[]),
                   unnest($json::VARCHAR[]), unnest($csv::VARCHAR[]), unnest($header::VARCHAR[]),
                   unnest($facts::VARCHAR[]), unnest($warnings::VARCHAR[]), unnest($verdicts::VARCHAR[]), $now""",
                    {"ids": ids, "fingerprints": [fingerprint[i] for i in ids], "code": code,
                     "arms": [s["arms"] for s in summaries], "json": [s["rows_json"] for s in summaries],
                     "csv": [s["rows_csv"] for s in summaries], "header": [s["csv_header"] for s in summaries],
                     "facts": [s["facts"] for s in summaries], "warnings": [s["warnings"] for s in summaries],
                     "verdicts": [s["verdict"] for s in summaries], "now": utcnow()})
        if cell_rows:
            sweeps, names, texts = map(list, zip(*cell_rows))
            con.execute("INSERT INTO sweep_summary_cells SELECT unnest(?::INTEGER[]), unnest(?::VARCHAR[]), "
                        "unnest(?::VARCHAR[])", [sweeps, names, texts])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def finished_sweeps(con: Con) -> list[int]:
    """Every sweep no orch is running now (what `orch repair` keeps summaries of)."""
    return [r[0] for r in con.execute("SELECT id FROM sweeps WHERE status <> 'running' ORDER BY id").fetchall()]
