"""Migration 001: The builds and binaries tables: what was built, how, and each binary's probes."""

from __future__ import annotations

import duckdb


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
