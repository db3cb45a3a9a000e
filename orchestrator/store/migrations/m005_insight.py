"""Migration 005: Telemetry and the columns the insight views read."""

from __future__ import annotations

import duckdb


def m005_insight(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE TABLE telemetry (
            run_id INTEGER NOT NULL,
            t DOUBLE NOT NULL,               -- seconds since the run started
            gpu INTEGER,                     -- NULL: the host row (child process tree)
            mem_used_bytes BIGINT,
            util_pct DOUBLE,
            power_w DOUBLE,
            sm_clock_mhz INTEGER,
            mem_clock_mhz INTEGER,
            temp_c DOUBLE,
            throttle_reasons BIGINT,         -- NVML bitmask
            rss_bytes BIGINT,
            cpu_pct DOUBLE
        )""")
    for column in (
        "telemetry JSON",
        "memfit JSON",
        "memfit_warning VARCHAR",
        "bandwidth_bytes_per_s DOUBLE",
        "bandwidth_label VARCHAR",
        "decode_bytes BIGINT",
    ):
        con.execute(f"ALTER TABLE runs ADD COLUMN {column}")
    con.execute("ALTER TABLE sweeps ADD COLUMN env JSON")
    for column in (
        "n_head INTEGER",
        "n_head_kv INTEGER",
        "key_length INTEGER",
        "value_length INTEGER",
        "quant_mix JSON",
        "weight_bytes BIGINT",
        "expert_bytes BIGINT",
        "decode_bytes BIGINT",
    ):
        con.execute(f"ALTER TABLE models ADD COLUMN {column}")
