"""Imports are data, never instructions: a forged export cannot make orch remove or read a path, and a damaged
one is refused whole (one line, exit 45) with nothing written, not even an empty results file."""

import gzip
import hashlib
import json
import os
import shutil

import duckdb
import pytest
from click.testing import CliRunner

from orchestrator import proc, store
from orchestrator.cli import main
from orchestrator.errors import ExportDamaged
from orchestrator.store import exchange
from tests.unit.test_exchange import add_sweep


def made_export(folder):
    """Two sweeps stored in folder/a.duckdb and exported to folder/out (returned)."""
    with store.opened(folder / "a.duckdb") as con:
        add_sweep(con), add_sweep(con, "recipes/b.j2")
        exchange.export(con, folder / "out")
    return folder / "out"


@pytest.fixture
def export_dir(tmp_path):
    return made_export(tmp_path)


def _rewrite(export, table: str, sql: str, *, fix_manifest: bool = True) -> None:
    """Edit one table of an export with DuckDB, as a forger would, and (by default) make its manifest agree."""
    path = export / f"{table}.parquet"
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{path}')")
    con.execute(sql)
    con.execute(f"COPY t TO '{path}' (FORMAT PARQUET)")
    rows = con.execute("SELECT count(*) FROM t").fetchone()[0]
    con.close()
    if fix_manifest:
        manifest = json.loads((export / "manifest.json").read_text())
        manifest["tables"][table] = rows
        manifest["sha256"][table] = hashlib.sha256(path.read_bytes()).hexdigest()
        (export / "manifest.json").write_text(json.dumps(manifest))


def _tree(path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(path)), p.stat().st_size if p.is_file() else -1) for p in path.rglob("*"))


def test_a_forged_export_cannot_delete_or_read_a_directory(tmp_path, export_dir, monkeypatch):
    """The critical finding: a sweep row edited to `running`, owned by this host and a dead pid, with a work
    directory of the forger's choosing. Imported, nothing outside orch's own directories changes: the victim
    directory stays, none of its files is read into run_logs, and the sweep is stored inert (no owner, no work
    directory, interrupted)."""
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "cache"))
    victim = tmp_path / "precious"
    (victim / "run-1").mkdir(parents=True)
    (victim / "run-1" / "stdout").write_bytes(b"secret")
    (victim / "keep.txt").write_text("do not delete")
    me = proc.this_process()
    for work_dir in (victim, tmp_path / "cache" / "work" / (proc.work_dir_prefix(me) + "live")):
        _rewrite(
            export_dir,
            "sweeps",
            f"UPDATE t SET status = 'running', owner_host = '{me.host}', owner_pid = "
            f"999999, owner_started = 1, work_dir = '{work_dir}'",
        )
        _rewrite(export_dir, "runs", "UPDATE t SET status = 'running'")
        before = _tree(tmp_path / "precious")
        db = tmp_path / f"b-{work_dir.name}.duckdb"
        result = CliRunner().invoke(main, ["import", str(export_dir), "--db", str(db)])
        assert result.exit_code == 0, result.output
        with store.opened(db, read_only=True) as con:  # the open that runs recovery
            sweeps = con.execute("SELECT status, owner_host, owner_pid, owner_started, work_dir FROM sweeps").fetchall()
            runs = {r[0] for r in con.execute("SELECT status FROM runs").fetchall()}
            logs = {gzip.decompress(r[0]) for r in con.execute("SELECT gz FROM run_logs").fetchall()}
        assert sweeps == [("interrupted", None, None, None, None)] * 2
        assert runs == {"interrupted"}
        assert _tree(tmp_path / "precious") == before and not any(b"secret" in v for v in logs)


def test_recovery_removes_only_work_directories_orch_made_for_that_owner(tmp_path, monkeypatch):
    """Even a row written by hand (not through import) cannot point recovery elsewhere: only a directory in orch's
    work root whose name carries the sweep's own owner is read and removed."""
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "cache"))
    me = proc.this_process()
    dead = proc.Owner(me.host, me.pid, me.started - 1000)
    root = tmp_path / "cache" / "work"
    others = [tmp_path / "elsewhere", root / (proc.work_dir_prefix(me) + "a-live-orchs"), root / "not-named"]
    for path in others:
        (path / "run-1").mkdir(parents=True)
    db = tmp_path / "r.duckdb"
    with store.opened(db) as con:
        for path in others:
            store.create_sweep(
                con,
                {
                    "recipe_path": "r",
                    "recipe_hash": "h",
                    "recipe_text": "t",
                    "variables": {},
                    "build_id": "b",
                    "build_name": "b",
                    "status": "running",
                    "owner_host": dead.host,
                    "owner_pid": dead.pid,
                    "owner_started": dead.started,
                    "work_dir": str(path),
                    "started_at": store.utcnow(),
                },
            )
    link = root / (proc.work_dir_prefix(dead) + "link")
    os.symlink(tmp_path / "elsewhere", link)  # a symlink named right still points elsewhere
    with store.opened(db, read_only=True) as con:
        assert {r[0] for r in con.execute("SELECT status FROM sweeps").fetchall()} == {"interrupted"}
    assert all(p.is_dir() for p in others) and (tmp_path / "elsewhere" / "run-1").is_dir()


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / "run_logs.parquet").unlink(), "run_logs.parquet is missing"),
        (lambda d: (d / "runs.parquet").write_bytes((d / "runs.parquet").read_bytes()[:300]), "sha256 differs"),
        (lambda d: (d / "metrics.parquet").write_bytes(os.urandom(2000)), "sha256 differs"),
        (lambda d: _rewrite(d, "runs", "DELETE FROM t WHERE arm = 'draft'", fix_manifest=False), "sha256 differs"),
        (lambda d: _manifest(d, lambda m: m["tables"].update(runs=5)), "holds 4 runs rows where manifest.json lists 5"),
        (
            lambda d: _manifest(d, lambda m: [m["tables"].pop("run_logs"), m["sha256"].pop("run_logs")]),
            "lacks the table run_logs",
        ),
        (lambda d: _manifest(d, lambda m: m["tables"].update({"../../etc/passwd": 1})), "names tables orch does not"),
        (lambda d: _manifest(d, lambda m: m.update(tables=[1, 2])), "manifest.json is damaged"),
        (lambda d: _rewrite(d, "runs", "ALTER TABLE t ALTER repeat_index TYPE VARCHAR"), "repeat_index is VARCHAR"),
        (lambda d: _rewrite(d, "metrics", "ALTER TABLE t ADD COLUMN evil VARCHAR"), "evil is VARCHAR, not a column"),
        (lambda d: _truncated_and_rehashed(d, "requests"), "cannot be read as the requests table"),
    ],
)
def test_a_damaged_export_is_refused_whole_and_writes_nothing(tmp_path, export_dir, damage, message, monkeypatch):
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "cache"))
    damage(export_dir)
    db = tmp_path / "new.duckdb"
    result = CliRunner().invoke(main, ["import", str(export_dir), "--db", str(db)])
    assert result.exit_code == ExportDamaged.exit_code, result.output
    assert message in result.output and result.output.count("\n") == 1 and "Traceback" not in result.output
    assert not db.exists()  # no results file made for an import that cannot happen
    assert not list((tmp_path / "cache" / "work").glob("*"))  # staging removed


def test_a_good_and_a_damaged_source_together_write_nothing(tmp_path, export_dir, monkeypatch):
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "cache"))
    damaged = tmp_path / "damaged"
    shutil.copytree(export_dir, damaged)
    (damaged / "telemetry.parquet").unlink()
    db = tmp_path / "b.duckdb"
    with store.opened(db) as con:
        add_sweep(con, "recipes/mine.j2")
    result = CliRunner().invoke(main, ["import", str(export_dir), str(damaged), "--db", str(db)])
    assert result.exit_code == 45
    with store.opened(db, read_only=True) as con:
        assert con.execute("SELECT recipe_path FROM sweeps").fetchall() == [("recipes/mine.j2",)]


def _manifest(export, change) -> None:
    manifest = json.loads((export / "manifest.json").read_text())
    change(manifest)
    (export / "manifest.json").write_text(json.dumps(manifest))


def _truncated_and_rehashed(export, table: str) -> None:
    """A truncated file whose manifest was made to agree: only reading it can tell."""
    path = export / f"{table}.parquet"
    path.write_bytes(path.read_bytes()[:200])
    _manifest(export, lambda m: m["sha256"].update({table: hashlib.sha256(path.read_bytes()).hexdigest()}))


def test_an_export_carries_each_files_rows_and_sha256(export_dir):
    manifest = json.loads((export_dir / "manifest.json").read_text())
    for name, digest in manifest["sha256"].items():
        assert hashlib.sha256((export_dir / f"{name}.parquet").read_bytes()).hexdigest() == digest
    assert manifest["tables"]["runs"] == 4 and set(manifest["sha256"]) == set(manifest["tables"])


def test_a_killed_imports_or_shards_work_directory_is_removed_by_the_next_orch(tmp_path, monkeypatch):
    """SIGKILL during `orch import` left orch-import-*/staging.duckdb in the system temp dir forever; a Ray worker
    killed mid-round left orch-shard-*. Both now live in orch's work root under their owner's name, and the next
    orch to open a results file removes those whose owner is dead (a live owner's stay)."""
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "cache"))
    me = proc.this_process()
    dead_owner = proc.Owner(me.host, me.pid, me.started - 1000)
    root = tmp_path / "cache" / "work"
    dead = [root / (proc.work_dir_prefix(dead_owner, kind) + "x") for kind in proc.WORK_DIR_KINDS]
    live = [root / (proc.work_dir_prefix(me, kind) + "y") for kind in proc.WORK_DIR_KINDS]
    for d in dead + live:
        d.mkdir(parents=True)
        (d / "staging.duckdb").write_bytes(b"x")
    with store.opened(tmp_path / "r.duckdb"):
        pass
    assert sorted(p.name for p in root.iterdir()) == sorted(p.name for p in live)
