"""The DuckDB store: migrations applied once, schema as expected, build rows round-trip."""

import duckdb

from orchestrator import store
from orchestrator.store import migrations
from orchestrator.store.writes import BUILD_COLUMNS

BUILD = {
    "id": "0c1e57098-cpu@20261122T010000Z",
    "name": "0c1e57098-cpu",
    "commit": "0c1e57098bba" + "0" * 28,
    "upstream_commit": "0c1e57098bba" + "0" * 28,
    "source": "pypi:llama-cpp-python==0.3.36",
    "backend": "cpu",
    "cuda_archs": [],
    "cmake_options": {"CMAKE_BUILD_TYPE": "Release"},
    "targets": ["llama-server"],
    "compiler": "GNU",
    "compiler_version": "12.2.0",
    "cuda_toolkit": None,
    "ccache": True,
    "duration_s": 512.0,
    "status": "ok",
    "failure": None,
    "dir": "/b/0c1e57098-cpu",
    "log_path": "/b/0c1e57098-cpu/build.log",
    "started_at": "2026-11-22T01:00:00+00:00",
    "finished_at": "2026-11-22T01:08:32+00:00",
    "binaries": [
        {
            "name": "llama-server",
            "path": "/b/bin/llama-server",
            "sha256": "ab" * 32,
            "version_text": "version: 0.5.0-dev (build 1, commit 0c1e570)",
            "build_number": 1,
            "reported_commit": "0c1e570",
            "help_text": "-m, --model FNAME",
        }
    ],
}


def test_migrations_apply_once_and_are_recorded(tmp_path):
    path = tmp_path / "r.duckdb"
    store.connect(path).close()
    con = store.connect(path)  # second open: nothing pending
    assert migrations.apply(con) == []
    names = [r[0] for r in con.execute("SELECT name FROM _migrations ORDER BY id").fetchall()]
    assert names == [m.__name__ for m in migrations.MIGRATIONS]


def test_schema_snapshot(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    cols = con.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_name IN ('builds', 'binaries') ORDER BY table_name, ordinal_position"
    ).fetchall()
    binaries = [c for t, c in cols if t == "binaries"]
    builds = [c for t, c in cols if t == "builds"]
    assert binaries == [
        "build_id",
        "name",
        "path",
        "sha256",
        "version_text",
        "build_number",
        "reported_commit",
        "help_text",
    ]
    assert builds == list(BUILD_COLUMNS)


def test_record_build_round_trips_and_replaces(tmp_path):
    path = tmp_path / "r.duckdb"
    con = store.connect(path)
    store.record_build(con, BUILD)
    store.record_build(con, dict(BUILD, status="failed", failure="compile failed"))
    con.close()
    plain = duckdb.connect(str(path), read_only=True)  # the file opens in the plain client
    assert plain.execute("SELECT status, failure, cmake_options->>'CMAKE_BUILD_TYPE' FROM builds").fetchall() == [
        ("failed", "compile failed", "Release")
    ]
    assert plain.execute("SELECT name, sha256, build_number FROM binaries").fetchall() == [
        ("llama-server", "ab" * 32, 1)
    ]
