"""orch export / orch import: results merged by global id between real DuckDB files (no processes)."""

import json

import duckdb
import pytest
from click.testing import CliRunner

from orchestrator import store
from orchestrator.cli import main
from orchestrator.errors import BadExport
from orchestrator.store import exchange, exchange_tables, migrations

BUILD = {
    "id": "b@1",
    "name": "0c1e57098-cpu",
    "commit": "c0ffee",
    "upstream_commit": "c0ffee",
    "backend": "cpu",
    "status": "ok",
    "dir": "/b",
    "binaries": [
        {
            "name": "llama-cli",
            "path": "/b/bin/llama-cli",
            "sha256": "ab",
            "version_text": "v",
            "build_number": 1,
            "reported_commit": "c0",
            "help_text": "-m",
        }
    ],
}


def add_sweep(con, recipe="recipes/a.j2", host="box1", speeds=(10.0, 15.0), env=None) -> int:
    """A sweep with a baseline and a draft arm, each run with metrics, logs, two requests and two samples."""
    store.record_build(con, BUILD)
    store.record_model(con, {"sha256": "t" * 64, "path": "/m/t.gguf", "size_bytes": 1})
    sweep_id = store.create_sweep(
        con,
        {
            "recipe_path": recipe,
            "recipe_hash": "h-" + recipe,
            "recipe_text": "t",
            "variables": {"n": 1},
            "build_id": "b@1",
            "build_name": "0c1e57098-cpu",
            "host_name": host,
            "host_id": host + "-id",
            "status": "done",
            "env": env,
            "started_at": store.utcnow(),
        },
    )
    for arm, tps in zip(("baseline", "draft"), speeds):
        run_id = store.insert_run(
            con,
            {
                "sweep_id": sweep_id,
                "arm": arm,
                "is_baseline": arm == "baseline",
                "repeat_index": 0,
                "status": "ok",
                "build_id": "b@1",
                "target_sha256": "t" * 64,
                "params": {"arm": arm},
            },
        )
        con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, ?)", [run_id, tps])
        store.save_logs(con, run_id, {"stdout": f"out {arm}".encode(), "stderr": b"err"})
        store.insert_requests(
            con, [{"run_id": run_id, "seq": i, "status": "ok", "predicted_n": 8 + i} for i in range(2)]
        )
        store.insert_telemetry(con, run_id, [{"t": 0.1 * i, "rss_bytes": 100 + i} for i in range(2)])
    return sweep_id


def content(con) -> dict:
    """Every travelling table's rows by global identity, local ids replaced by the uids they stand for."""
    return {
        "sweeps": sorted(con.execute("SELECT uid, recipe_path, host_name FROM sweeps").fetchall()),
        "runs": sorted(
            con.execute(
                "SELECT r.uid, s.uid, r.arm, r.status, m.decode_tps FROM runs r JOIN sweeps s "
                "ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id"
            ).fetchall()
        ),
        "logs": sorted(
            con.execute(
                "SELECT r.uid, l.stream, l.size_bytes FROM run_logs l JOIN runs r ON r.id = l.run_id"
            ).fetchall()
        ),
        "requests": sorted(
            con.execute(
                "SELECT q.uid, r.uid, q.seq, q.predicted_n FROM requests q JOIN runs r ON r.id = q.run_id"
            ).fetchall()
        ),
        "telemetry": sorted(
            con.execute("SELECT t.uid, r.uid, t.t FROM telemetry t JOIN runs r ON r.id = t.run_id").fetchall()
        ),
        "builds": con.execute("SELECT id FROM builds").fetchall(),
        "binaries": con.execute("SELECT build_id, name FROM binaries").fetchall(),
        "models": con.execute("SELECT sha256 FROM models").fetchall(),
    }


def test_importing_an_export_twice_changes_nothing_the_second_time(tmp_path):
    with store.opened(tmp_path / "a.duckdb") as con:
        add_sweep(con), add_sweep(con, "recipes/b.j2")
        exchange.export(con, tmp_path / "out")
        source = content(con)
    with store.opened(tmp_path / "c.duckdb") as con:
        first = exchange.import_source(con, tmp_path / "out")
        assert first.added["sweeps"] == 2 and first.added["runs"] == 4 and first.added["telemetry"] == 8
        assert content(con) == source  # every row, every link, by global id
        second = exchange.import_source(con, tmp_path / "out")
        assert sum(second.added.values()) == 0 and not second.conflicts
        assert second.present["runs"] == 4 and content(con) == source


def test_overlapping_exports_merge_into_one_copy_of_each_sweep(tmp_path):
    with store.opened(tmp_path / "a.duckdb") as con:
        ids = [add_sweep(con, f"recipes/{n}.j2") for n in "xyz"]
        exchange.export(con, tmp_path / "first", ids[:2])
        exchange.export(con, tmp_path / "second", ids[1:])
        source = content(con)
    with store.opened(tmp_path / "c.duckdb") as con:
        exchange.import_source(con, tmp_path / "first")
        report = exchange.import_source(con, tmp_path / "second")
        assert report.present["sweeps"] == 1 and report.added["sweeps"] == 1 and not report.conflicts
        assert content(con) == source


def test_two_databases_merge_into_a_third_with_their_ids_renumbered_and_links_kept(tmp_path):
    for name, host, speeds in (("a", "box1", (10.0, 15.0)), ("b", "box2", (20.0, 30.0))):
        with store.opened(tmp_path / f"{name}.duckdb") as con:
            assert add_sweep(con, host=host, speeds=speeds) == 1  # both files number their sweep 1
            exchange.export(con, tmp_path / name)
    with store.opened(tmp_path / "c.duckdb") as con:
        add_sweep(con, host="box3", speeds=(1.0, 2.0))  # the target has a sweep 1 of its own
        for name in ("a", "b"):
            exchange.import_source(con, tmp_path / name)
        rows = con.execute(
            "SELECT s.id, s.host_name, r.arm, m.decode_tps FROM sweeps s JOIN runs r ON "
            "r.sweep_id = s.id JOIN metrics m ON m.run_id = r.id ORDER BY s.id, r.arm"
        ).fetchall()
        assert rows == [
            (1, "box3", "baseline", 1.0),
            (1, "box3", "draft", 2.0),
            (2, "box1", "baseline", 10.0),
            (2, "box1", "draft", 15.0),
            (3, "box2", "baseline", 20.0),
            (3, "box2", "draft", 30.0),
        ]
        per_run = con.execute(
            "SELECT r.id, count(DISTINCT q.seq), count(DISTINCT t.uid), count(DISTINCT l.stream) "
            "FROM runs r JOIN requests q ON q.run_id = r.id JOIN telemetry t ON t.run_id = r.id "
            "JOIN run_logs l ON l.run_id = r.id GROUP BY r.id"
        ).fetchall()
        assert len(per_run) == 6 and all(row[1:] == (2, 2, 2) for row in per_run)
        # New rows continue the target's numbering.
        assert con.execute("SELECT nextval('run_ids')").fetchone()[0] == 7


def test_a_row_stored_with_other_content_is_reported_and_kept_while_the_rest_merges(tmp_path):
    with store.opened(tmp_path / "a.duckdb") as con:
        add_sweep(con)
        exchange.export(con, tmp_path / "before")
        con.execute("UPDATE runs SET status = 'failed' WHERE arm = 'draft'")
        con.execute("UPDATE metrics SET decode_tps = 99 WHERE run_id = (SELECT id FROM runs WHERE arm = 'draft')")
        draft_uid = con.execute("SELECT uid FROM runs WHERE arm = 'draft'").fetchone()[0]
        add_sweep(con, "recipes/new.j2")
        exchange.export(con, tmp_path / "after")
    db = tmp_path / "c.duckdb"
    with store.opened(db) as con:
        exchange.import_source(con, tmp_path / "before")
    result = CliRunner().invoke(main, ["import", str(tmp_path / "after"), "--db", str(db)])
    assert result.exit_code == 43, result.output
    assert f"runs uid={draft_uid}: status differ" in result.output and "metrics run_id=" in result.output
    with store.opened(db, read_only=True) as con:
        assert con.execute(
            "SELECT r.status, m.decode_tps FROM runs r JOIN metrics m ON m.run_id = r.id WHERE r.uid = ?", [draft_uid]
        ).fetchone() == ("ok", 15.0)  # kept as stored
        assert con.execute("SELECT count(*) FROM sweeps WHERE recipe_path = 'recipes/new.j2'").fetchone()[0] == 1


def old_database(path, rows=True):
    """A results file at the schema of m001..m011 (before global ids), with one sweep as that orch stored it."""
    con = duckdb.connect(str(path))
    migrations.apply(con, only=set(range(1, 12)))
    if rows:
        con.execute(
            "INSERT INTO sweeps (recipe_path, recipe_hash, recipe_text, build_name, status, host, env, "
            "started_at) VALUES ('recipes/a.j2', 'h', 't', 'b', 'done', '{\"hostname\": \"oldbox\"}', "
            '\'{"cpu_model": "EPYC", "gpus": [{"name": "RTX 3090"}]}\', TIMESTAMP \'2026-01-02 03:04:05\')'
        )
        for arm, tps in (("baseline", 10.0), ("draft", 15.0)):
            run_id = con.execute(
                "INSERT INTO runs (sweep_id, arm, is_baseline, repeat_index, status) "
                "VALUES (1, ?, ?, 0, 'ok') RETURNING id",
                [arm, arm == "baseline"],
            ).fetchone()[0]
            con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, ?)", [run_id, tps])
            con.execute("INSERT INTO telemetry (run_id, t) VALUES (?, 0.5), (?, 0.5)", [run_id, run_id])
    return con


def test_an_export_made_at_an_older_schema_imports_and_matches_the_upgraded_file(tmp_path):
    con = old_database(tmp_path / "old.duckdb")
    out = tmp_path / "old-export"
    out.mkdir()
    present = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    old_tables = [t.name for t in exchange_tables.TABLES if t.name in present]  # none of m012's yet
    for name in old_tables:  # what an export at that schema holds: its columns, no uids
        con.execute(f"COPY (SELECT * FROM {name}) TO '{out / (name + '.parquet')}' (FORMAT PARQUET)")
    counts = {name: con.execute(f"SELECT count(*) FROM {name}").fetchone()[0] for name in old_tables}
    (out / "manifest.json").write_text(
        json.dumps(
            {
                "format": "orch-export",
                "orch_version": "0.0.9",  # no sha256 yet
                "migrations": list(range(1, 12)),
                "tables": counts,
            }
        )
    )
    con.close()
    with store.opened(tmp_path / "c.duckdb") as con:
        report = exchange.import_source(con, out)
        assert report.added["runs"] == 2 and report.added["telemetry"] == 4
        assert con.execute("SELECT host_name, host_gpus FROM sweeps").fetchall() == [("oldbox", "RTX 3090")]
        again = exchange.import_source(con, out)
        assert sum(again.added.values()) == 0 and not again.conflicts
        # The old file itself, upgraded on open (m014 derives the same uids), is the same rows.
        upgraded = exchange.import_source(con, tmp_path / "old.duckdb")
        assert sum(upgraded.added.values()) == 0 and not upgraded.conflicts
        assert con.execute("SELECT count(*), count(DISTINCT uid) FROM telemetry").fetchone() == (4, 4)


def test_migration_m014_gives_old_rows_stable_uids_and_their_host(tmp_path):
    for name in ("one", "two"):
        old_database(tmp_path / f"{name}.duckdb").close()
    found = []
    for name in ("one", "two"):
        with store.opened(tmp_path / f"{name}.duckdb", read_only=True) as con:
            found.append(
                con.execute(
                    "SELECT s.uid, s.host_name, s.host_id, list(r.uid ORDER BY r.id) FROM sweeps s "
                    "JOIN runs r ON r.sweep_id = s.id GROUP BY ALL"
                ).fetchall()
            )
    assert found[0] == found[1]  # two copies of one old file: the same global ids
    ((uid, host, host_id, runs),) = found[0]
    assert host == "oldbox" and len(host_id) == 16 and len(set(runs)) == 2 and uid not in runs
    with store.opened(tmp_path / "new.duckdb") as con:  # new rows: random uids from the column default
        a, b = add_sweep(con), add_sweep(con)
        assert len({r[0] for r in con.execute("SELECT uid FROM sweeps WHERE id IN (?, ?)", [a, b]).fetchall()}) == 2


def test_an_export_from_a_newer_orch_or_no_export_at_all_is_refused(tmp_path):
    newer = tmp_path / "newer"
    newer.mkdir()
    (newer / "manifest.json").write_text(
        json.dumps({"format": "orch-export", "orch_version": "9.0", "migrations": [1, 2, 999], "tables": {}})
    )
    with store.opened(tmp_path / "c.duckdb") as con:
        with pytest.raises(BadExport, match="newer orch .9.0. .schema migrations 999"):
            exchange.import_source(con, newer)
        with pytest.raises(BadExport, match="not an orch export"):
            exchange.import_source(con, tmp_path)
        (tmp_path / "x.duckdb").write_bytes(b"not a database")
        with pytest.raises(BadExport, match="not a DuckDB results file"):
            exchange.import_source(con, tmp_path / "x.duckdb")
        assert con.execute("SELECT count(*) FROM sweeps").fetchone()[0] == 0  # nothing half-written
    result = CliRunner().invoke(main, ["import", str(newer), "--db", str(tmp_path / "c.duckdb")])
    assert result.exit_code == 42 and "upgrade orch" in result.output


def test_export_of_a_sweep_that_is_not_stored_names_it(tmp_path):
    db = tmp_path / "a.duckdb"
    with store.opened(db) as con:
        add_sweep(con)
    result = CliRunner().invoke(main, ["export", "1", "7", "--out", str(tmp_path / "out"), "--db", str(db)])
    assert result.exit_code == 42 and "no sweep 7" in result.output
    result = CliRunner().invoke(main, ["export", "--out", str(tmp_path / "out"), "--db", str(db)])
    assert result.exit_code == 0 and "exported 1 sweeps, 2 runs" in result.output
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["tables"]["builds"] == 1 and manifest["tables"]["binaries"] == 1
    assert manifest["migrations"][-1] == migrations.number(migrations.MIGRATIONS[-1])  # the file's schema


def test_quality_rows_travel_with_their_runs_and_links_follow_them(tmp_path):
    """A run measured in quality mode points at its quality row by local id: after an import into a file that
    numbers its quality rows differently, it still points at the same measurement; a run without one stays NULL."""
    from orchestrator.store import quality

    def measure(con, model, ppl):
        return quality.insert_quality(
            con,
            {
                "model_sha256": model,
                "build_id": "b@1",
                "text_sha256": "x",
                "n_ctx": 256,
                "cache_type_k": "f16",
                "cache_type_v": "f16",
                "ppl": ppl,
            },
        )

    with store.opened(tmp_path / "a.duckdb") as con:
        sweep = add_sweep(con)
        run = con.execute("SELECT id FROM runs WHERE sweep_id = ? AND arm = 'draft'", [sweep]).fetchone()[0]
        quality.link_run(con, run, measure(con, "q" * 64, 12.5))
        exchange.export(con, tmp_path / "out")
    with store.opened(tmp_path / "b.duckdb") as con:
        measure(con, "other" * 8, 99.0), measure(con, "other" * 8, 98.0)  # ids 1 and 2 taken here
        for _ in range(2):  # twice: the second import adds nothing
            exchange.import_source(con, tmp_path / "out")
        linked = con.execute(
            "SELECT r.arm, q.model_sha256, q.ppl FROM runs r LEFT JOIN quality q ON q.id = r.quality_id ORDER BY r.arm"
        ).fetchall()
        assert linked == [("baseline", None, None), ("draft", "q" * 64, 12.5)]
        assert con.execute("SELECT count(*) FROM quality").fetchone()[0] == 3
