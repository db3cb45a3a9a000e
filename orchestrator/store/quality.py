"""Writes and reads of the quality tables (m012): quantized files and perplexity / KL-divergence results."""

from __future__ import annotations

import duckdb

from orchestrator.json_text import to_json
from orchestrator.store.db import rows_as_dicts, utcnow

QUALITY_KEY = ("model_sha256", "build_id", "text_sha256", "n_ctx", "cache_type_k", "cache_type_v", "base_sha256")


def record_quant(con: duckdb.DuckDBPyConnection, q: dict) -> None:
    """Insert or replace one quantized file (keyed by source sha256, requested type and build)."""
    con.execute(
        "DELETE FROM quants WHERE source_sha256 = ? AND requested = ? AND build = ?",
        [q["source_sha256"], q["requested"], q["build"]],
    )
    con.execute(
        "INSERT INTO quants VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            q["source_sha256"],
            q["requested"],
            q["build"],
            q["label"],
            q["replaced"],
            q["sha256"],
            q["path"],
            q["size_bytes"],
            to_json(q["tensor_types"]),
            to_json(q["type_bytes"]),
            to_json(q["fallbacks"]),
            utcnow(),
        ],
    )


def find_quality(con: duckdb.DuckDBPyConnection, key: dict) -> int | None:
    """The id of the newest quality row measured for key (QUALITY_KEY), or None."""
    where = " AND ".join(f"{k} IS NOT DISTINCT FROM ?" for k in QUALITY_KEY)
    row = con.execute(
        f"SELECT id FROM quality WHERE {where} ORDER BY id DESC LIMIT 1", [key[k] for k in QUALITY_KEY]
    ).fetchone()
    return row[0] if row else None


def insert_quality(con: duckdb.DuckDBPyConnection, row: dict) -> int:
    """Store one measurement (key columns plus whatever figures it has); its id."""
    row = {**row, "created_at": utcnow()}
    cols = list(row)
    return con.execute(
        f"INSERT INTO quality (id, {', '.join(cols)}) VALUES (nextval('quality_id_seq'), "
        f"{', '.join('?' * len(cols))}) RETURNING id",
        [row[c] for c in cols],
    ).fetchone()[0]


def link_run(con: duckdb.DuckDBPyConnection, run_id: int, quality_id: int) -> None:
    con.execute("UPDATE runs SET quality_id = ? WHERE id = ?", [quality_id, run_id])


def quality_rows(con: duckdb.DuckDBPyConnection, sweep_ids: list[int]) -> list[dict]:
    """run_quality rows of these sweeps (one per measured run that has a quality row)."""
    if not sweep_ids:
        return []
    marks = ", ".join("?" * len(sweep_ids))
    return rows_as_dicts(
        con.execute(
            f"SELECT * EXCLUDE (log, argv, stats) FROM run_quality WHERE sweep_id IN ({marks}) ORDER BY run_id",
            list(sweep_ids),
        )
    )


def quality_row(con: duckdb.DuckDBPyConnection, quality_id: int) -> dict:
    return rows_as_dicts(con.execute("SELECT * EXCLUDE (log, argv, stats) FROM quality WHERE id = ?", [quality_id]))[0]
