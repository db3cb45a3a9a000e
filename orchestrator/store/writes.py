"""Every write to the results file: builds, models, sweeps, runs, logs, metrics, requests, telemetry."""

from __future__ import annotations

import duckdb

from orchestrator.parse import (
    METRIC_KEYS as METRIC_COLUMNS,  # the metrics table has one column per key
)
from orchestrator.store.db import utc, utcnow
from orchestrator.store.logs import (
    save_logs as save_logs,  # the run's raw logs, gzipped
)
from orchestrator.tables import to_json

BUILD_COLUMNS = ("id", "name", "commit", "upstream_commit", "source", "backend", "cuda_archs", "cmake_options",
                 "targets", "compiler", "compiler_version", "cuda_toolkit", "ccache", "duration_s", "status",
                 "failure", "dir", "log_path", "started_at", "finished_at")


def record_build(con: duckdb.DuckDBPyConnection, info: dict) -> None:
    """Insert or update one build attempt and its binaries (from a build.json-shaped dict)."""
    row = {c: info.get(c) for c in BUILD_COLUMNS}
    for c in ("cmake_options", "targets"):
        row[c] = to_json(row[c])
    row["cuda_archs"] = ";".join(info.get("cuda_archs") or []) or None
    row["started_at"], row["finished_at"] = utc(row["started_at"]), utc(row["finished_at"])
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


def insert_telemetry(con: duckdb.DuckDBPyConnection, run_id: int, samples: list[dict]) -> None:
    cols = ("t", "gpu", "mem_used_bytes", "util_pct", "power_w", "sm_clock_mhz", "mem_clock_mhz", "temp_c",
            "throttle_reasons", "rss_bytes", "cpu_pct")
    if samples:
        con.executemany(f"INSERT INTO telemetry (run_id, {', '.join(cols)}) VALUES ({', '.join('?' * (len(cols) + 1))})",
                        [[run_id, *(s.get(c) for c in cols)] for s in samples])


def insert_requests(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    for row in rows:
        cols = list(row)
        con.execute(f"INSERT INTO requests ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    [row[c] for c in cols])


def record_model(con: duckdb.DuckDBPyConnection, info: dict) -> None:
    cols = [c for c in ("sha256", "path", "size_bytes", "architecture", "name", "parameters", "file_type",
                        "vocab_type", "vocab_size", "bos_id", "eos_id", "n_layers", "n_embd", "context_length",
                        "expert_count", "expert_used_count", "n_head", "n_head_kv", "key_length", "value_length",
                        "quant_mix", "weight_bytes", "expert_bytes", "decode_bytes") if c in info]
    info = {**info, "quant_mix": to_json(info.get("quant_mix"))}
    con.execute("DELETE FROM models WHERE sha256 = ?", [info["sha256"]])
    con.execute(f"INSERT INTO models ({', '.join(cols)}, inspected_at) VALUES ({', '.join('?' * (len(cols) + 1))})",
                [*(info[c] for c in cols), utcnow()])


def create_sweep(con: duckdb.DuckDBPyConnection, row: dict) -> int:
    row = {k: to_json(v) if k in ("variables", "host", "argv", "env") else v for k, v in row.items()}
    cols = list(row)
    return con.execute(f"INSERT INTO sweeps ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) RETURNING id",
                       [row[c] for c in cols]).fetchone()[0]


def end_sweep(con: duckdb.DuckDBPyConnection, sweep_id: int, status: str) -> None:
    con.execute("UPDATE sweeps SET status = ?, ended_at = ? WHERE id = ?", [status, utcnow(), sweep_id])


def insert_run(con: duckdb.DuckDBPyConnection, row: dict) -> int:
    json_cols = ("params", "rendered_argv", "executed_argv", "translations", "memfit")
    row = {k: to_json(v) if k in json_cols else v for k, v in row.items()}
    cols = list(row)
    return con.execute(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) RETURNING id",
                       [row[c] for c in cols]).fetchone()[0]


def measured_values(parsed) -> dict:
    """The measurement columns of a metrics row for a parse.ParsedLog, as stored (per-position rates as JSON)."""
    m = parsed.metrics
    values = {c: m.get(c) for c in METRIC_COLUMNS}
    values["accept_rate_per_pos"] = to_json(values["accept_rate_per_pos"])
    n_predict, n_drafted = m.get("n_predict"), m.get("n_drafted")
    values["draft_per_generated"] = n_drafted / n_predict if n_predict and n_drafted is not None else None
    return values


def save_metrics(con: duckdb.DuckDBPyConnection, run_id: int, parsed) -> None:
    """Replace the metrics row of run_id with what the parsers found (parse.ParsedLog)."""
    values = measured_values(parsed)
    values["extra"] = to_json(parsed.extra)
    values["version"] = to_json(parsed.version)
    values["parsed_at"] = utcnow()
    cols = ["run_id", *values]
    con.execute("DELETE FROM metrics WHERE run_id = ?", [run_id])
    con.execute(f"INSERT INTO metrics ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [run_id, *values.values()])


def update_run(con: duckdb.DuckDBPyConnection, run_id: int, **fields) -> None:
    sets = ", ".join(f"{k} = ?" for k in fields)
    con.execute(f"UPDATE runs SET {sets} WHERE id = ?", [*fields.values(), run_id])


def reopen_sweep(con: duckdb.DuckDBPyConnection, sweep_id: int, repeat: int) -> None:
    """A resumed sweep runs again, to `repeat` measurements per arm."""
    con.execute("UPDATE sweeps SET status = 'running', repeat = ? WHERE id = ?", [repeat, sweep_id])


def claim_sweep(con: duckdb.DuckDBPyConnection, sweep_id: int, *, owner_host: str, owner_pid: int,
                owner_started: float, work_dir: str, planned_runs: int) -> None:
    """A resumed sweep belongs to the orch resuming it (recovery.py reads the owner) and plans its remaining runs."""
    con.execute("UPDATE sweeps SET owner_host = ?, owner_pid = ?, owner_started = ?, owner_since = ?, work_dir = ?, "
                "planned_runs = ? WHERE id = ?",
                [owner_host, owner_pid, owner_started, utcnow(), work_dir, planned_runs, sweep_id])


def interrupt_running_runs(con: duckdb.DuckDBPyConnection, sweep_id: int) -> None:
    """Rows a stopped orch left `running` are marked interrupted (resume re-runs their slots)."""
    con.execute("UPDATE runs SET status = 'interrupted' WHERE sweep_id = ? AND status = 'running'", [sweep_id])


def fail_running_runs(con: duckdb.DuckDBPyConnection, sweep_id: int, detail: str) -> None:
    """Whatever stopped a sweep's loop, its stored rows must not claim to be running."""
    con.execute("UPDATE runs SET status = 'failed', failure_class = 'other', failure_detail = ?, ended_at = ? "
                "WHERE sweep_id = ? AND status = 'running'", [detail, utcnow(), sweep_id])
