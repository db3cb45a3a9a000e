"""Numbered schema migrations, applied in order on every open and recorded in `_migrations`.

Append new migrations; never edit one that has shipped. Timestamps are TIMESTAMP in UTC, written by
orch (TIMESTAMPTZ would need pytz in every Python client reading the file).
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


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


def m006_views(con: duckdb.DuckDBPyConnection) -> None:
    """Views over measurements only: no warm-ups, and for a slot re-run by --resume only its newest row."""
    con.execute("""
        CREATE VIEW measured_runs AS
        SELECT * FROM runs WHERE NOT coalesce(warmup, false)
        QUALIFY row_number() OVER (PARTITION BY sweep_id, arm, repeat_index ORDER BY id DESC) = 1""")
    con.execute("""
        CREATE VIEW run_summary AS
        SELECT r.id AS run_id, r.sweep_id, s.recipe_path, s.build_name, s.upstream_commit, r.arm, r.is_baseline,
               r.repeat_index, r.mode, r.status, r.failure_class, m.decode_tps, m.encode_tps, m.acceptance,
               m.n_drafted, m.n_accepted, m.n_predict, m.draft_per_generated, m.mean_accept_len, r.wall_s,
               r.peak_rss_bytes, r.started_at
        FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id""")
    con.execute("""
        CREATE VIEW arm_summary AS
        SELECT r.sweep_id, s.recipe_path, s.build_name, s.upstream_commit, r.arm, bool_or(r.is_baseline) AS is_baseline,
               count(*) AS runs, count(*) FILTER (WHERE r.status = 'ok') AS ok,
               avg(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps,
               stddev_samp(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps_stddev,
               min(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps_min,
               max(m.decode_tps) FILTER (WHERE r.status = 'ok') AS decode_tps_max,
               avg(m.acceptance) FILTER (WHERE r.status = 'ok') AS acceptance,
               avg(m.draft_per_generated) FILTER (WHERE r.status = 'ok') AS draft_per_generated,
               avg(m.encode_tps) FILTER (WHERE r.status = 'ok') AS prompt_tps,
               string_agg(DISTINCT r.failure_class, ',') AS failure_classes
        FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id
        GROUP BY r.sweep_id, s.recipe_path, s.build_name, s.upstream_commit, r.arm""")
    con.execute("""
        CREATE VIEW speedup_vs_baseline AS
        WITH ok AS (
            SELECT r.sweep_id, r.arm, r.is_baseline, r.repeat_index, m.decode_tps
            FROM measured_runs r JOIN metrics m ON m.run_id = r.id
            WHERE r.status = 'ok' AND m.decode_tps > 0
        )
        SELECT a.sweep_id, a.arm, count(*) AS pairs, exp(avg(ln(a.decode_tps / b.decode_tps))) AS speedup_paired,
               avg(a.decode_tps) / avg(b.decode_tps) AS speedup_of_means
        FROM ok a JOIN ok b ON b.sweep_id = a.sweep_id AND b.is_baseline AND b.repeat_index = a.repeat_index
        GROUP BY a.sweep_id, a.arm""")
    con.execute("""
        CREATE VIEW run_roofline AS  -- the decode bound: bandwidth / bytes read per decode step
        SELECT r.id AS run_id, r.sweep_id, r.arm, m.decode_tps, r.bandwidth_bytes_per_s, r.bandwidth_label,
               r.decode_bytes, r.bandwidth_bytes_per_s / r.decode_bytes AS bound_tps,
               100 * m.decode_tps / (r.bandwidth_bytes_per_s / r.decode_bytes) AS roofline_pct
        FROM measured_runs r LEFT JOIN metrics m ON m.run_id = r.id WHERE r.decode_bytes > 0""")


def m007_decode_samples(con: duckdb.DuckDBPyConnection) -> None:
    """The samples speedups pair on, defined once, and speedup_vs_baseline over them (as `orch summary` pairs).

    decode_samples: measured ok runs with a speed; a CLI run is one sample keyed by repeat (prompt_id ''), a server
    run one sample per ok request keyed by repeat and prompt, at that request's own rate. Before this the view
    paired server runs per repeat only, on pooled speeds, and disagreed with the summary.
    """
    con.execute("""
        CREATE VIEW decode_samples AS
        WITH ok AS (
            SELECT r.sweep_id, r.arm, r.is_baseline, r.mode, r.id AS run_id, r.repeat_index, m.decode_tps
            FROM measured_runs r JOIN metrics m ON m.run_id = r.id
            WHERE r.status = 'ok' AND m.decode_tps > 0
        )
        SELECT sweep_id, arm, is_baseline, mode, run_id, repeat_index, '' AS prompt_id, decode_tps AS tps
        FROM ok WHERE mode IS DISTINCT FROM 'server'
        UNION ALL
        SELECT o.sweep_id, o.arm, o.is_baseline, o.mode, o.run_id, o.repeat_index, q.prompt_id,
               q.predicted_n / q.predicted_ms * 1000
        FROM ok o JOIN requests q ON q.run_id = o.run_id
        WHERE o.mode = 'server' AND q.status = 'ok' AND q.predicted_ms > 0""")
    con.execute("DROP VIEW speedup_vs_baseline")
    con.execute("""
        CREATE VIEW speedup_vs_baseline AS
        SELECT a.sweep_id, a.arm, count(*) AS pairs, exp(avg(ln(a.tps / b.tps))) AS speedup_paired,
               avg(a.tps) / avg(b.tps) AS speedup_of_means
        FROM decode_samples a JOIN decode_samples b ON b.sweep_id = a.sweep_id AND b.is_baseline
             AND b.repeat_index = a.repeat_index AND b.prompt_id = a.prompt_id
        GROUP BY a.sweep_id, a.arm""")


def m008_controls(con: duckdb.DuckDBPyConnection) -> None:
    """Like-for-like speedups: control arms (recipe/control) and each run's reference arm.

    runs.is_control marks a control arm (the speculative program drafting nothing); runs.reference_arm names the
    arm a run's speedup is against (NULL for rows stored before: the sweep's baseline). decode_samples gains both,
    and speedup_vs_reference pairs each arm with its reference, while speedup_vs_baseline keeps pairing with the
    baseline (across programs where they differ, as its name says).
    """
    con.execute("ALTER TABLE runs ADD COLUMN is_control BOOLEAN DEFAULT false")
    con.execute("ALTER TABLE runs ADD COLUMN reference_arm VARCHAR")
    # Views over runs are re-created so that their column lists include the new columns.
    for view in ("speedup_vs_baseline", "decode_samples", "run_roofline", "arm_summary", "run_summary",
                 "measured_runs"):
        con.execute(f"DROP VIEW {view}")
    m006_views(con)
    con.execute("DROP VIEW speedup_vs_baseline")
    con.execute("""
        CREATE VIEW decode_samples AS
        WITH ok AS (
            SELECT r.sweep_id, r.arm, r.is_baseline, r.is_control, r.reference_arm, r.mode, r.id AS run_id,
                   r.repeat_index, m.decode_tps
            FROM measured_runs r JOIN metrics m ON m.run_id = r.id
            WHERE r.status = 'ok' AND m.decode_tps > 0
        )
        SELECT sweep_id, arm, is_baseline, is_control, reference_arm, mode, run_id, repeat_index, '' AS prompt_id,
               decode_tps AS tps
        FROM ok WHERE mode IS DISTINCT FROM 'server'
        UNION ALL
        SELECT o.sweep_id, o.arm, o.is_baseline, o.is_control, o.reference_arm, o.mode, o.run_id, o.repeat_index,
               q.prompt_id, q.predicted_n / q.predicted_ms * 1000
        FROM ok o JOIN requests q ON q.run_id = o.run_id
        WHERE o.mode = 'server' AND q.status = 'ok' AND q.predicted_ms > 0""")
    for name, match in (("speedup_vs_baseline", "b.is_baseline"),  # queries.PAIRED_WITH says the same
                        ("speedup_vs_reference", "(CASE WHEN a.reference_arm IS NULL THEN b.is_baseline "
                                                 "ELSE b.arm = a.reference_arm END)")):
        con.execute(f"""
            CREATE VIEW {name} AS
            SELECT a.sweep_id, a.arm, count(*) AS pairs, exp(avg(ln(a.tps / b.tps))) AS speedup_paired,
                   avg(a.tps) / avg(b.tps) AS speedup_of_means
            FROM decode_samples a JOIN decode_samples b ON b.sweep_id = a.sweep_id AND {match}
                 AND b.repeat_index = a.repeat_index AND b.prompt_id = a.prompt_id
            GROUP BY a.sweep_id, a.arm""")


MIGRATIONS = [m001_builds, m002_runs, m003_requests, m004_sweeps, m005_insight, m006_views, m007_decode_samples,
              m008_controls]


def apply(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply pending migrations; return the names applied."""
    con.execute("CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name VARCHAR, "
                "applied_at TIMESTAMP)")
    done = {row[0] for row in con.execute("SELECT id FROM _migrations").fetchall()}
    applied = []
    for number, migration in enumerate(MIGRATIONS, start=1):
        if number in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            migration(con)
            con.execute("INSERT INTO _migrations VALUES (?, ?, ?)", [number, migration.__name__, utcnow()])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(migration.__name__)
    return applied
