"""Numbered schema migrations, applied in order on every open and recorded in `_migrations`.

Append new migrations; never edit one that has shipped.
"""

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
            started_at TIMESTAMPTZ,
            finished_at TIMESTAMPTZ
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


MIGRATIONS = [m001_builds]


def apply(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply pending migrations; return the names applied."""
    con.execute("CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name VARCHAR, "
                "applied_at TIMESTAMPTZ DEFAULT current_timestamp)")
    done = {row[0] for row in con.execute("SELECT id FROM _migrations").fetchall()}
    applied = []
    for number, migration in enumerate(MIGRATIONS, start=1):
        if number in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            migration(con)
            con.execute("INSERT INTO _migrations (id, name) VALUES (?, ?)", [number, migration.__name__])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(migration.__name__)
    return applied
