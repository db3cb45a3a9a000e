"""Every write to the results file: builds, models, sweeps, runs, logs, metrics, requests, telemetry."""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from itertools import groupby

import duckdb

from orchestrator.json_text import to_json
from orchestrator.parse import METRIC_KEYS as METRIC_COLUMNS  # the metrics table has one column per key
from orchestrator.store.logs import save_logs as save_logs  # the run's raw logs, gzipped
from orchestrator.store.times import utc, utcnow

BUILD_COLUMNS = (
    "id",
    "name",
    "commit",
    "upstream_commit",
    "source",
    "backend",
    "cuda_archs",
    "cmake_options",
    "targets",
    "compiler",
    "compiler_version",
    "cuda_toolkit",
    "ccache",
    "duration_s",
    "status",
    "failure",
    "dir",
    "log_path",
    "started_at",
    "finished_at",
)


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
    con.execute(
        f"INSERT INTO builds ({', '.join(BUILD_COLUMNS)}) VALUES ({', '.join('?' * len(BUILD_COLUMNS))})",
        [row[c] for c in BUILD_COLUMNS],
    )
    for b in info.get("binaries", []):
        con.execute(
            "INSERT INTO binaries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                row["id"],
                b["name"],
                b["path"],
                b["sha256"],
                b["version_text"],
                b["build_number"],
                b["reported_commit"],
                b["help_text"],
            ],
        )
    con.execute("COMMIT")


def insert_telemetry(con: duckdb.DuckDBPyConnection, run_id: int, samples: list[dict]) -> None:
    cols = (
        "t",
        "gpu",
        "mem_used_bytes",
        "util_pct",
        "power_w",
        "sm_clock_mhz",
        "mem_clock_mhz",
        "temp_c",
        "throttle_reasons",
        "rss_bytes",
        "cpu_pct",
    )
    if samples:
        con.executemany(
            f"INSERT INTO telemetry (run_id, {', '.join(cols)}) VALUES ({', '.join('?' * (len(cols) + 1))})",
            [[run_id, *(s.get(c) for c in cols)] for s in samples],
        )


def insert_requests(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    for row in rows:
        cols = list(row)
        con.execute(
            f"INSERT INTO requests ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", [row[c] for c in cols]
        )


def record_model(con: duckdb.DuckDBPyConnection, info: dict) -> None:
    cols = [
        c
        for c in (
            "sha256",
            "path",
            "size_bytes",
            "architecture",
            "name",
            "parameters",
            "file_type",
            "vocab_type",
            "vocab_size",
            "bos_id",
            "eos_id",
            "n_layers",
            "n_embd",
            "context_length",
            "expert_count",
            "expert_used_count",
            "n_head",
            "n_head_kv",
            "key_length",
            "value_length",
            "quant_mix",
            "weight_bytes",
            "expert_bytes",
            "decode_bytes",
        )
        if c in info
    ]
    info = {**info, "quant_mix": to_json(info.get("quant_mix"))}
    con.execute("DELETE FROM models WHERE sha256 = ?", [info["sha256"]])
    con.execute(
        f"INSERT INTO models ({', '.join(cols)}, inspected_at) VALUES ({', '.join('?' * (len(cols) + 1))})",
        [*(info[c] for c in cols), utcnow()],
    )


def create_sweep(con: duckdb.DuckDBPyConnection, row: dict) -> int:
    row = {k: to_json(v) if k in ("variables", "host", "argv", "env", "arm_names") else v for k, v in row.items()}
    cols = list(row)
    return con.execute(
        f"INSERT INTO sweeps ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) RETURNING id",
        [row[c] for c in cols],
    ).fetchone()[0]


def end_sweep(con: duckdb.DuckDBPyConnection, sweep_id: int, status: str) -> None:
    con.execute("UPDATE sweeps SET status = ?, ended_at = ? WHERE id = ?", [status, utcnow(), sweep_id])


RUN_JSON_COLUMNS = ("params", "rendered_argv", "executed_argv", "translations", "memfit")


def insert_run(con: duckdb.DuckDBPyConnection, row: dict) -> int:
    row = {k: to_json(v) if k in RUN_JSON_COLUMNS else v for k, v in row.items()}
    cols = list(row)
    return con.execute(
        f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) RETURNING id",
        [row[c] for c in cols],
    ).fetchone()[0]


def measured_values(parsed) -> dict:
    """The measurement columns of a metrics row for a parse.ParsedLog, as stored (per-position rates as JSON)."""
    m = parsed.metrics
    values = {c: m.get(c) for c in METRIC_COLUMNS}
    values["accept_rate_per_pos"] = to_json(values["accept_rate_per_pos"])
    n_predict, n_drafted = m.get("n_predict"), m.get("n_drafted")
    values["draft_per_generated"] = n_drafted / n_predict if n_predict and n_drafted is not None else None
    return values


def metrics_row(parsed) -> dict:
    """A metrics row (without its run_id) for a parse.ParsedLog."""
    return {
        **measured_values(parsed),
        "extra": to_json(parsed.extra),
        "version": to_json(parsed.version),
        "parsed_at": utcnow(),
    }


def save_metrics(con: duckdb.DuckDBPyConnection, run_id: int, parsed) -> None:
    """Replace the metrics row of run_id with what the parsers found (parse.ParsedLog)."""
    values = metrics_row(parsed)
    cols = ["run_id", *values]
    con.execute("DELETE FROM metrics WHERE run_id = ?", [run_id])
    con.execute(
        f"INSERT INTO metrics ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", [run_id, *values.values()]
    )


def update_run(con: duckdb.DuckDBPyConnection, run_id: int, **fields) -> None:
    sets = ", ".join(f"{k} = ?" for k in fields)
    con.execute(f"UPDATE runs SET {sets} WHERE id = ?", [*fields.values(), run_id])


def reopen_sweep(con: duckdb.DuckDBPyConnection, sweep_id: int, repeat: int) -> None:
    """A resumed sweep runs again, to `repeat` measurements per arm."""
    con.execute("UPDATE sweeps SET status = 'running', repeat = ? WHERE id = ?", [repeat, sweep_id])


def claim_sweep(
    con: duckdb.DuckDBPyConnection,
    sweep_id: int,
    *,
    owner_host: str,
    owner_pid: int,
    owner_started: float,
    work_dir: str,
    planned_runs: int,
) -> None:
    """A resumed sweep belongs to the orch resuming it (recovery.py reads the owner) and plans its remaining runs."""
    con.execute(
        "UPDATE sweeps SET owner_host = ?, owner_pid = ?, owner_started = ?, owner_since = ?, work_dir = ?, "
        "planned_runs = ? WHERE id = ?",
        [owner_host, owner_pid, owner_started, utcnow(), work_dir, planned_runs, sweep_id],
    )


def interrupt_running_runs(con: duckdb.DuckDBPyConnection, sweep_id: int) -> None:
    """Rows a stopped orch left `running` are marked interrupted (resume re-runs their slots)."""
    con.execute("UPDATE runs SET status = 'interrupted' WHERE sweep_id = ? AND status = 'running'", [sweep_id])


@dataclass
class StoredRun:
    """A finished run as one write stores it (run/one_run.RunRecord without its folder)."""

    row: dict  # every runs column it sets, `id` included (reserved when its sweep opened)
    logs: dict[str, bytes] = field(default_factory=dict)
    samples: list[dict] = field(default_factory=list)
    parsed: object | None = None  # a parse.ParsedLog: its metrics row
    requests: list[dict] = field(default_factory=list)


TELEMETRY_COLUMNS = (
    "t",
    "gpu",
    "mem_used_bytes",
    "util_pct",
    "power_w",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "temp_c",
    "throttle_reasons",
    "rss_bytes",
    "cpu_pct",
)


def store_runs(con: duckdb.DuckDBPyConnection, runs: list[StoredRun]) -> None:
    """Insert finished runs whole, a few statements for all of them: rows, logs, telemetry, requests, metrics. A run
    whose metrics DuckDB refuses (a figure no column holds) is stored failed as parse_error, without them."""
    _insert_many(con, "runs", [{k: to_json(v) if k in RUN_JSON_COLUMNS else v for k, v in r.row.items()} for r in runs])
    if logs := [
        [r.row["id"], stream, len(data), gzip.compress(data, compresslevel=6)]
        for r in runs
        for stream, data in r.logs.items()
    ]:
        con.executemany("INSERT INTO run_logs VALUES (?, ?, ?, ?)", logs)
    if samples := [[r.row["id"], *(x.get(c) for c in TELEMETRY_COLUMNS)] for r in runs for x in r.samples]:
        con.executemany(
            f"INSERT INTO telemetry (run_id, {', '.join(TELEMETRY_COLUMNS)}) VALUES "
            f"({', '.join('?' * (len(TELEMETRY_COLUMNS) + 1))})",
            samples,
        )
    _insert_many(con, "requests", [q for r in runs for q in r.requests])
    measured = [r for r in runs if r.parsed is not None]
    try:
        _insert_many(con, "metrics", [{"run_id": r.row["id"], **metrics_row(r.parsed)} for r in measured])
    except duckdb.Error:  # one of them: each alone, the refused ones fail their run
        for r in measured:
            try:
                save_metrics(con, r.row["id"], r.parsed)
            except duckdb.Error as exc:
                update_run(
                    con,
                    r.row["id"],
                    status="failed",
                    failure_class="parse_error",
                    failure_detail=f"the results file refused its metrics: {str(exc).splitlines()[0]}"[:500],
                )


def _insert_many(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict]) -> None:
    """Rows inserted with one executemany per set of columns (a column a row leaves out keeps its default)."""
    for columns, group in groupby(rows, key=lambda r: tuple(r)):
        con.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            [list(r.values()) for r in group],
        )


def reserve_run_ids(con: duckdb.DuckDBPyConnection, count: int) -> list[int]:
    """The ids of `count` runs to come, taken from the runs sequence now: a run knows its number (its folder, its
    progress line) before its row is written, and no other writer can take it."""
    if count <= 0:
        return []
    return [r[0] for r in con.execute("SELECT nextval('run_ids') FROM range(?)", [count]).fetchall()]
