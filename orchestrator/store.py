"""The DuckDB results file: open (migrating), and write what the stages produce."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from . import migrations
from .errors import OrchError


def connect(path: Path) -> duckdb.DuckDBPyConnection:
    try:
        con = duckdb.connect(str(path))
    except duckdb.Error as exc:
        raise OrchError(f"cannot open results database {path} ({exc}); close other orch or duckdb "
                        f"sessions using it, or pass --db") from None
    migrations.apply(con)
    return con


BUILD_COLUMNS = ("id", "name", "commit", "upstream_commit", "source", "backend", "cuda_archs", "cmake_options",
                 "targets", "compiler", "compiler_version", "cuda_toolkit", "ccache", "duration_s", "status",
                 "failure", "dir", "log_path", "started_at", "finished_at")


def record_build(con: duckdb.DuckDBPyConnection, info: dict) -> None:
    """Insert or update one build attempt and its binaries (from a build.json-shaped dict)."""
    row = {c: info.get(c) for c in BUILD_COLUMNS}
    for c in ("cmake_options", "targets"):
        row[c] = json.dumps(row[c])
    row["cuda_archs"] = ";".join(info.get("cuda_archs") or []) or None
    con.execute("BEGIN TRANSACTION")
    con.execute("DELETE FROM binaries WHERE build_id = ?", [row["id"]])
    con.execute("DELETE FROM builds WHERE id = ?", [row["id"]])
    con.execute(f"INSERT INTO builds ({', '.join(BUILD_COLUMNS)}) VALUES ({', '.join('?' * len(BUILD_COLUMNS))})",
                [row[c] for c in BUILD_COLUMNS])
    for b in info.get("binaries", []):
        con.execute("INSERT INTO binaries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [row["id"], b["name"], b["path"], b["sha256"], b["version_text"], b["build_number"],
                     b["reported_commit"], b["help_text"]])
    con.execute("COMMIT")
