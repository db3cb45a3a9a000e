"""Migration 002: Sweeps, runs, metrics and raw logs: the tables every run is stored in."""

from __future__ import annotations

import duckdb


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
