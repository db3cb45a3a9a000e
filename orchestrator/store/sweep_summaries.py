"""Kept sweep summaries: each sweep's summary as every output draws it, written by the commands that store runs
(the sweep's end, reparse, import, repair) and read by `orch summary` instead of computing it again.

A kept summary is used only while it is current: its fingerprint, the hash of every stored row the summary reads
(the sweep, its build, its runs, their metrics, requests, telemetry and quality rows, whole rows), must equal the
same hash taken now, and it must come from the same code (analyze/summaries/kept.code_key). A row changed by any means,
orch or a hand-written UPDATE, changes the hash, and the summary is computed from the runs again.

Hashing every sweep's rows takes 0.2 s at 100,000 runs, so each command that keeps summaries also stamps the file
(summary_stamp): which sweeps' kept summaries were current, beside one hash of each whole table. A read that finds
every table's hash as stamped (0.05 s) takes the stamp's word; any change since, anywhere, and it hashes each
sweep's rows as above.
"""

from __future__ import annotations

import duckdb

from orchestrator.store.db import meanwhile, rows_as_dicts, utcnow

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
    UNION ALL SELECT r.sweep_id, hash(quality_row) FROM quality quality_row JOIN r ON quality_row.id = r.quality_id
    UNION ALL SELECT sweep_id, hash(arm_predictions_row) FROM arm_predictions arm_predictions_row
              WHERE sweep_id IN (SELECT id FROM picked))
SELECT sweep_id, (sum(h) % 18446744073709551616)::UBIGINT AS fingerprint FROM parts GROUP BY sweep_id"""


def fingerprints(con: Con, sweep_ids: list[int]) -> dict[int, int]:
    return dict(con.execute(_FINGERPRINTS, {"ids": sweep_ids}).fetchall())


# The whole file as the kept summaries read it: each table's hash (the sum of its rows' hashes), and the kept
# summaries' own sweep, fingerprint and code. Equal to a stamp's, the file holds the rows the stamp was made on.
# Telemetry's rows are hashed without their uid (a random text that names a row for export and import, never
# read by a summary): at 2.6 million samples that halves the hash's time.
_FILE_FINGERPRINT = "SELECT " + " || ',' || ".join(
    [
        f"coalesce((SELECT sum(hash({t}_row)) FROM {t} {t}_row), 0)::VARCHAR"
        for t in ("sweeps", "builds", "runs", "metrics", "requests", "quality", "arm_predictions")
    ]
    + [
        "coalesce((SELECT sum(hash(*COLUMNS(lambda c: c <> 'uid'))) FROM telemetry), 0)::VARCHAR",
        "coalesce((SELECT sum(hash(sweep_id, fingerprint, code)) FROM sweep_summaries), 0)::VARCHAR",
    ]
)
_KEPT = "SELECT k.sweep_id, k.arms, k.facts, k.verdict FROM sweep_summaries k"


FEW_SWEEPS = 64  # up to this many, hashing their rows is quicker than one hash of every table (the stamp)


def current(con: Con, sweep_ids: list[int], code: str) -> list[dict]:
    """The kept summaries of these sweeps that are current (fingerprint and code), without their JSON and cells
    (row_texts, cells), warnings (warning_lines) and CSV header (row_texts: the same in every sweep, 4 MB of 4,000
    copies): sweep_id, arms, facts, verdict; in sweep order.
    For more than FEW_SWEEPS, where the file is as the stamp found it (stamp), the stamp says which; else each
    sweep's rows are hashed now."""
    if len(sweep_ids) > FEW_SWEEPS:
        stamp = meanwhile(con, stamped_current, code)  # the whole file hashed while the kept ones are read
        kept = rows_as_dicts(
            con.execute(
                f"{_KEPT} WHERE k.code = $code AND k.sweep_id IN (SELECT unnest($ids::INTEGER[])) ORDER BY k.sweep_id",
                {"ids": sweep_ids, "code": code},
            )
        )
        if (stamped := stamp.result()) is not None:
            stamped = set(stamped)
            return [k for k in kept if k["sweep_id"] in stamped]
    return current_by_rows(con, sweep_ids, code)


def current_by_rows(con: Con, sweep_ids: list[int], code: str) -> list[dict]:
    """current, judged by hashing each sweep's rows now (what the stamp saves a read)."""
    return rows_as_dicts(
        con.execute(
            f"""
        WITH now AS ({_FINGERPRINTS})
        {_KEPT} JOIN now ON now.sweep_id = k.sweep_id AND now.fingerprint = k.fingerprint
        WHERE k.code = $code ORDER BY k.sweep_id""",
            {"ids": sweep_ids, "code": code},
        )
    )


def stamped_current(con: Con, code: str) -> list[int] | None:
    """The sweeps whose kept summaries the stamp found current, where the file holds the rows it was made on and
    this code made it; else None."""
    stamped = con.execute("SELECT fingerprint, sweep_ids FROM summary_stamp WHERE code = ?", [code]).fetchone()
    return stamped[1] if stamped and stamped[0] == con.execute(_FILE_FINGERPRINT).fetchone()[0] else None


def stamp(con: Con, code: str) -> None:
    """Record which finished sweeps' kept summaries are current now, with the file's fingerprint: the reads that
    follow, while nothing changes, take the stamp's word. con: a write connection (orch's writes are exclusive)."""
    ids = [h["sweep_id"] for h in current_by_rows(con, finished_sweeps(con), code)]
    fingerprint = con.execute(_FILE_FINGERPRINT).fetchone()[0]
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM summary_stamp")
        con.execute("INSERT INTO summary_stamp VALUES (?, ?, ?, ?)", [code, fingerprint, ids, utcnow()])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def warning_lines(con: Con, sweep_ids: list[int]) -> dict[int, list[str]]:
    """The kept warning lines of these sweeps (the full texts: `orch summary --explain`), by sweep."""
    return {
        sweep: text.split("\n")
        for sweep, text in con.execute(
            "SELECT sweep_id, warnings FROM sweep_summaries WHERE sweep_id IN (SELECT unnest(?::INTEGER[])) "
            "AND warnings <> ''",
            [sweep_ids],
        ).fetchall()
    }


ROW_TEXTS = ("rows_json", "rows_csv", "csv_header")


def row_texts(con: Con, sweep_ids: list[int], kind: str) -> list[str]:
    """The kept rows or CSV header (kind: ROW_TEXTS) of each of these sweeps that has an arm, in sweep order
    (joined by the caller: string_agg over 100 MB takes 0.9 s, fetching the pieces 0.1 s)."""
    assert kind in ROW_TEXTS, kind
    return [
        r[0]
        for r in con.execute(
            f"""
        SELECT k.{kind} FROM sweep_summaries k SEMI JOIN (SELECT unnest(?::INTEGER[]) AS id) i ON i.id = k.sweep_id
        WHERE k.arms > 0 ORDER BY k.sweep_id""",
            [sweep_ids],
        ).fetchall()
    ]


def cells(con: Con, sweep_ids: list[int], names: list[str]) -> dict[str, str]:
    """Per column name: one JSON array of these sweeps' cells, sweep after sweep in sweep order (each sweep's
    array without its brackets, joined: one parse of the whole column, a third of the time of one per sweep)."""
    return dict(
        con.execute(
            """
        SELECT name, '[' || string_agg(cells[2:-2], ',' ORDER BY sweep_id) || ']' FROM sweep_summary_cells
        WHERE sweep_id IN (SELECT unnest(?::INTEGER[])) AND name IN (SELECT unnest(?::VARCHAR[]))
        GROUP BY name""",
            [sweep_ids, names],
        ).fetchall()
    )


def cells_by_value(con: Con, sweep_ids: list[int], name: str) -> list[tuple[str, list[int]]]:
    """Column `name`'s cells of these sweeps, each distinct JSON array once with the sweeps that hold it: for a
    column sweeps repeat (the parameters of a recipe run again and again), read and parsed once an array, not once
    a sweep (0.01 s where reading the parameters of 4,000 sweeps flat, as `cells` does, takes 0.15)."""
    return con.execute(
        """
        SELECT cells, list(sweep_id) FROM sweep_summary_cells
        WHERE sweep_id IN (SELECT unnest(?::INTEGER[])) AND name = ? GROUP BY cells""",
        [sweep_ids, name],
    ).fetchall()


def unlike_their_arms(con: Con, names: list[str]) -> list[int]:
    """The sweeps that have an arm whose kept cells are not exactly these columns, one cell per arm in each
    (changed by hand): kept anew by repair."""
    return [
        r[0]
        for r in con.execute(
            """
        SELECT k.sweep_id FROM sweep_summaries k LEFT JOIN sweep_summary_cells c ON c.sweep_id = k.sweep_id
        WHERE k.arms > 0 GROUP BY k.sweep_id, k.arms
        HAVING count(c.name) <> len($names::VARCHAR[]) OR count(DISTINCT c.name) <> count(c.name)
            OR bool_or(NOT list_contains($names::VARCHAR[], c.name)) OR bool_or(json_array_length(c.cells) <> k.arms)
        ORDER BY k.sweep_id""",
            {"names": names},
        ).fetchall()
    ]


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
        con.execute(
            """
            INSERT INTO sweep_summaries
            SELECT unnest($ids::INTEGER[]), unnest($fingerprints::UBIGINT[]), $code, unnest($arms::INTEGER[]),
                   unnest($json::VARCHAR[]), unnest($csv::VARCHAR[]), unnest($header::VARCHAR[]),
                   unnest($facts::VARCHAR[]), unnest($warnings::VARCHAR[]), unnest($verdicts::VARCHAR[]), $now""",
            {
                "ids": ids,
                "fingerprints": [fingerprint[i] for i in ids],
                "code": code,
                "arms": [s["arms"] for s in summaries],
                "json": [s["rows_json"] for s in summaries],
                "csv": [s["rows_csv"] for s in summaries],
                "header": [s["csv_header"] for s in summaries],
                "facts": [s["facts"] for s in summaries],
                "warnings": [s["warnings"] for s in summaries],
                "verdicts": [s["verdict"] for s in summaries],
                "now": utcnow(),
            },
        )
        if cell_rows:
            sweeps, names, texts = map(list, zip(*cell_rows))
            con.execute(
                "INSERT INTO sweep_summary_cells SELECT unnest(?::INTEGER[]), unnest(?::VARCHAR[]), "
                "unnest(?::VARCHAR[])",
                [sweeps, names, texts],
            )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def finished_sweeps(con: Con) -> list[int]:
    """Every sweep no orch is running now (what `orch repair` keeps summaries of)."""
    return [r[0] for r in con.execute("SELECT id FROM sweeps WHERE status <> 'running' ORDER BY id").fetchall()]
