"""Numbered schema migrations, applied in order on every open and recorded in `_migrations`.

Append new migrations; never edit one that has shipped. Timestamps are TIMESTAMP in UTC, written by
orch (TIMESTAMPTZ would need pytz in every Python client reading the file).
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb

from orchestrator.store.bisect_migration import m013_bisects
from orchestrator.store.global_ids import m014_global_ids
from orchestrator.store.quality_migration import m012_quality
from orchestrator.store.summary_migration import m015_sweep_summaries
from orchestrator.store.view_migrations import (
    m006_views,
    m007_samples_and_controls,
    m009_costs,
    m016_derived_views,
)


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def utc_from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc).replace(tzinfo=None)


def utc(value):
    """An ISO string or aware datetime as naive UTC, the way every timestamp column stores it."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def m001_builds(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE TABLE builds (
            id VARCHAR PRIMARY KEY,          -- <dir name>@<start time>: one row per build attempt
            name VARCHAR NOT NULL,           -- build directory name, e.g. 0c1e57098-cpu
            commit VARCHAR NOT NULL,         -- full sha in the mirror
            upstream_commit VARCHAR NOT NULL,
            source VARCHAR,                  -- where the mirror got the commit
            backend VARCHAR NOT NULL,
            cuda_archs VARCHAR,
            cmake_options JSON,
            targets JSON,
            compiler VARCHAR,
            compiler_version VARCHAR,
            cuda_toolkit VARCHAR,
            ccache BOOLEAN,
            duration_s DOUBLE,
            status VARCHAR NOT NULL,         -- ok, failed, interrupted
            failure VARCHAR,
            dir VARCHAR NOT NULL,
            log_path VARCHAR,
            started_at TIMESTAMP,
            finished_at TIMESTAMP
        )""")
    con.execute("""
        CREATE TABLE binaries (
            build_id VARCHAR NOT NULL,       -- builds.id (no FOREIGN KEY: DuckDB cannot update a referenced row)
            name VARCHAR NOT NULL,
            path VARCHAR NOT NULL,
            sha256 VARCHAR NOT NULL,
            version_text VARCHAR,
            build_number INTEGER,            -- from --version; meaningless across mirrors: never compare
            reported_commit VARCHAR,
            help_text VARCHAR,               -- the dialect layer reads flags from here
            PRIMARY KEY (build_id, name)
        )""")


def m002_runs(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE TABLE models (
            sha256 VARCHAR PRIMARY KEY,
            path VARCHAR NOT NULL,           -- where it was last seen
            size_bytes BIGINT,
            architecture VARCHAR,
            name VARCHAR,
            parameters BIGINT,
            file_type VARCHAR,
            vocab_type VARCHAR,
            vocab_size INTEGER,
            bos_id INTEGER,
            eos_id INTEGER,
            n_layers INTEGER,
            n_embd INTEGER,
            context_length INTEGER,
            expert_count INTEGER,
            expert_used_count INTEGER,
            inspected_at TIMESTAMP
        )""")
    con.execute("CREATE SEQUENCE sweep_ids START 1")
    con.execute("""
        CREATE TABLE sweeps (
            id INTEGER PRIMARY KEY DEFAULT nextval('sweep_ids'),
            recipe_path VARCHAR NOT NULL,
            recipe_hash VARCHAR NOT NULL,    -- sha256 of the recipe text
            recipe_text VARCHAR NOT NULL,
            variables JSON,                  -- defaults < vars file < --set, as rendered
            mode VARCHAR,
            repeat INTEGER,
            build_id VARCHAR,                -- builds.id
            build_name VARCHAR,
            commit VARCHAR,
            upstream_commit VARCHAR,
            host JSON,
            argv JSON,                       -- the orch command line
            status VARCHAR,                  -- running, done, interrupted
            started_at TIMESTAMP,
            ended_at TIMESTAMP
        )""")
    con.execute("CREATE SEQUENCE run_ids START 1")
    con.execute("""
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY DEFAULT nextval('run_ids'),
            sweep_id INTEGER NOT NULL,
            build_id VARCHAR,
            arm VARCHAR NOT NULL,
            is_baseline BOOLEAN,
            params JSON,
            repeat_index INTEGER,
            mode VARCHAR,
            rendered_argv JSON,
            executed_argv JSON,
            translations JSON,               -- what the dialect layer changed, one sentence each
            status VARCHAR NOT NULL,         -- ok, failed, timeout, interrupted, skipped
            exit_code INTEGER,
            signal INTEGER,
            failure_class VARCHAR,           -- vocab_mismatch, unknown_flag, model_load, out_of_memory, timeout,
                                             -- crash_signal, spec_not_engaged, other
            failure_detail VARCHAR,
            wall_s DOUBLE,
            peak_rss_bytes BIGINT,
            cpu_s DOUBLE,
            target_sha256 VARCHAR,
            draft_sha256 VARCHAR,
            started_at TIMESTAMP,
            ended_at TIMESTAMP
        )""")
    con.execute("""
        CREATE TABLE run_logs (
            run_id INTEGER NOT NULL,
            stream VARCHAR NOT NULL,         -- stdout, stderr
            size_bytes BIGINT,
            gz BLOB,                         -- gzip of the raw bytes: nothing is ever truncated
            PRIMARY KEY (run_id, stream)
        )""")
    con.execute("""
        CREATE TABLE metrics (
            run_id INTEGER PRIMARY KEY,
            n_draft_max INTEGER,
            n_predict INTEGER,
            n_drafted INTEGER,
            n_accepted INTEGER,
            acceptance DOUBLE,               -- 0..1; NULL when nothing was drafted
            draft_per_generated DOUBLE,      -- drafted tokens per generated token
            encode_tps DOUBLE,
            decode_tps DOUBLE,
            prompt_eval_ms DOUBLE,
            prompt_eval_tokens INTEGER,
            eval_ms DOUBLE,
            eval_runs INTEGER,
            load_ms DOUBLE,
            total_ms DOUBLE,
            mean_accept_len DOUBLE,
            accept_rate_per_pos JSON,
            extra JSON,                      -- everything else the parsers found
            version JSON,                    -- version banner as printed
            parsed_at TIMESTAMP
        )""")


def m003_requests(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE TABLE requests (
            run_id INTEGER NOT NULL,
            seq INTEGER NOT NULL,            -- order sent within the run
            prompt_id VARCHAR,
            category VARCHAR,
            client INTEGER,                  -- client thread (concurrency > 1)
            status VARCHAR,                  -- ok, error
            http_status INTEGER,
            error VARCHAR,
            cache_n INTEGER,
            prompt_n INTEGER,
            prompt_ms DOUBLE,
            predicted_n INTEGER,
            predicted_ms DOUBLE,
            predicted_per_second DOUBLE,
            draft_n INTEGER,                 -- absent from the server's answer when nothing was drafted: 0
            draft_n_accepted INTEGER,
            timings JSON,                    -- the whole timings object as the server sent it
            ttft_ms DOUBLE,                  -- send to first streamed token
            wall_ms DOUBLE,
            output_sha256 VARCHAR,
            output_chars INTEGER,
            started_at TIMESTAMP,
            PRIMARY KEY (run_id, seq)
        )""")
    # Server arms at temperature 0: how many outputs differ from the baseline arm's for the same prompts.
    con.execute("ALTER TABLE metrics ADD COLUMN outputs_differ INTEGER")
    con.execute("ALTER TABLE runs ADD COLUMN prompt_set VARCHAR")


def m004_sweeps(con: duckdb.DuckDBPyConnection) -> None:
    # Warm-up runs are stored (nothing is dropped) but never count as measurements.
    con.execute("ALTER TABLE runs ADD COLUMN warmup BOOLEAN DEFAULT false")
    con.execute("ALTER TABLE sweeps ADD COLUMN run_order VARCHAR")


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
    for column in ("telemetry JSON", "memfit JSON", "memfit_warning VARCHAR", "bandwidth_bytes_per_s DOUBLE",
                   "bandwidth_label VARCHAR", "decode_bytes BIGINT"):
        con.execute(f"ALTER TABLE runs ADD COLUMN {column}")
    con.execute("ALTER TABLE sweeps ADD COLUMN env JSON")
    for column in ("n_head INTEGER", "n_head_kv INTEGER", "key_length INTEGER", "value_length INTEGER",
                   "quant_mix JSON", "weight_bytes BIGINT", "expert_bytes BIGINT", "decode_bytes BIGINT"):
        con.execute(f"ALTER TABLE models ADD COLUMN {column}")


def m008_sweep_owner(con: duckdb.DuckDBPyConnection) -> None:
    """Which orch runs a sweep (host, pid and that process's start time, so a reused pid is not taken for it), the
    directory its runs write logs to until they are stored, and how many runs it plans from owner_since on (for
    `orch watch`). A `running` sweep whose owner no longer lives is recovered on the next open (store/recovery.py)."""
    for column in ("owner_host VARCHAR", "owner_pid INTEGER", "owner_started DOUBLE", "owner_since TIMESTAMP",
                   "work_dir VARCHAR", "planned_runs INTEGER"):
        con.execute(f"ALTER TABLE sweeps ADD COLUMN {column}")


def m010_seq_acceptance(con: duckdb.DuckDBPyConnection) -> None:
    """Sequence acceptance (drafts accepted in full / drafts generated; NULL where the counters only bound it),
    its bounds (equal to it where it is exact) and the speculative implementation that drafted (`draft-mtp`,
    `draft-eagle3`, ...): parse/acceptance.py. `orch reparse` fills them for stored runs."""
    for column in ("seq_acceptance", "seq_acceptance_low", "seq_acceptance_high"):
        con.execute(f"ALTER TABLE metrics ADD COLUMN {column} DOUBLE")
    con.execute("ALTER TABLE metrics ADD COLUMN spec_type VARCHAR")



def m011_output_parity(con: duckdb.DuckDBPyConnection) -> None:
    """Output parity at temperature 0, CLI runs as well as server runs: beside metrics.outputs_differ (m003), how
    many outputs were compared with the baseline's and the first character position where one differs; the
    server requests' generated text, so that position can be found (the hash alone says only whether)."""
    con.execute("ALTER TABLE metrics ADD COLUMN outputs_compared INTEGER")
    con.execute("ALTER TABLE metrics ADD COLUMN first_diff_char INTEGER")
    con.execute("ALTER TABLE requests ADD COLUMN output_text VARCHAR")



MIGRATIONS = [m001_builds, m002_runs, m003_requests, m004_sweeps, m005_insight, m006_views,
              m007_samples_and_controls, m008_sweep_owner, m009_costs, m010_seq_acceptance, m011_output_parity,
              m012_quality, m013_bisects, m014_global_ids, m015_sweep_summaries, m016_derived_views]


def number(migration) -> int:
    """A migration's number is in its name (m014_global_ids: 14), not its place in the list, so migrations added
    on branches in parallel merge without renumbering, and a file records which ones it has by number."""
    return int(migration.__name__[1:4])


def pending(con: duckdb.DuckDBPyConnection) -> int:
    """How many migrations the file lacks (read-only: it changes nothing)."""
    if not con.execute("SELECT 1 FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = '_migrations'"
                       ).fetchone():
        return len(MIGRATIONS)
    done = {row[0] for row in con.execute("SELECT id FROM _migrations").fetchall()}
    return sum(number(m) not in done for m in MIGRATIONS)


def done_numbers(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The numbers of the migrations the file has (what an export records as its schema)."""
    return sorted(row[0] for row in con.execute("SELECT id FROM _migrations").fetchall())


def apply(con: duckdb.DuckDBPyConnection, only: set[int] | None = None) -> list[str]:
    """Apply pending migrations (with `only`, just those numbers: an older export's schema); the names applied."""
    con.execute("CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name VARCHAR, "
                "applied_at TIMESTAMP)")
    done = {row[0] for row in con.execute("SELECT id FROM _migrations").fetchall()}
    applied = []
    for migration in MIGRATIONS:
        n = number(migration)
        if n in done or (only is not None and n not in only):
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            migration(con)
            con.execute("INSERT INTO _migrations VALUES (?, ?, ?)", [n, migration.__name__, utcnow()])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(migration.__name__)
    return applied
