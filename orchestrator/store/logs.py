"""A run's raw logs in the results file: one gzipped row per stream (stdout, stderr, a server's logs)."""

from __future__ import annotations

import gzip

import duckdb


def save_logs(con: duckdb.DuckDBPyConnection, run_id: int, logs: dict[str, bytes]) -> None:
    for stream, data in logs.items():
        con.execute("INSERT OR REPLACE INTO run_logs VALUES (?, ?, ?, ?)",
                    [run_id, stream, len(data), gzip.compress(data, compresslevel=6)])
