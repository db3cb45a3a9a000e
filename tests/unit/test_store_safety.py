"""Reads cannot destroy or create data; a damaged file says so in one line and `orch repair` restores it; a sweep
whose orch died is recovered on the next open; every stop signal is one KeyboardInterrupt, then acknowledged."""

import signal

import duckdb
import pytest
from click.testing import CliRunner

from orchestrator import proc, store
from orchestrator.cli import main
from orchestrator.errors import DamagedSchema, DatabaseUnavailable, NoDatabase
from orchestrator.stops import on_signals as stop_on_signals
from orchestrator.store import schema, views

READ_COMMANDS = [
    ["runs"],
    ["summary"],
    ["show", "1"],
    ["query", "SELECT 1"],
    ["report", "--out", "r"],
    ["watch"],
    ["compare", "--base", "a", "--head", "b"],
]


def make_db(path, sweeps=0):
    with store.opened(path) as con:
        for _ in range(sweeps):
            store.create_sweep(
                con,
                {
                    "recipe_path": "r.j2",
                    "recipe_hash": "h",
                    "recipe_text": "t",
                    "variables": {},
                    "mode": "cli",
                    "repeat": 1,
                    "build_id": "b",
                    "build_name": "b",
                    "commit": "c",
                    "upstream_commit": "c",
                    "status": "done",
                    "started_at": store.utcnow(),
                },
            )
    return path


@pytest.mark.parametrize("argv", READ_COMMANDS, ids=lambda a: a[0])
def test_a_read_command_never_creates_a_database(tmp_path, argv):
    missing = tmp_path / "typo.duckdb"
    result = CliRunner().invoke(main, [*argv, "--db", str(missing)])
    assert result.exit_code == NoDatabase.exit_code, result.output
    assert f"no results database at {missing}" in result.output and len(result.output.strip().splitlines()) == 1
    assert not missing.exists()


def test_query_is_read_only_unless_write_is_given(tmp_path):
    db = make_db(tmp_path / "r.duckdb", sweeps=1)
    for sql in ("DROP TABLE run_logs", "DELETE FROM sweeps", "UPDATE runs SET status = 'ok'"):
        result = CliRunner().invoke(main, ["query", sql, "--db", str(db)])
        assert result.exit_code == 20 and "read-only: pass --write" in result.output, result.output
    assert CliRunner().invoke(main, ["runs", "--db", str(db)]).exit_code == 0  # nothing was dropped
    result = CliRunner().invoke(main, ["query", "--write", "DELETE FROM sweeps", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert CliRunner().invoke(
        main, ["query", "SELECT count(*) AS n FROM sweeps", "--db", str(db), "-f", "csv"]
    ).output.splitlines() == ["n", "0"]


def test_a_dropped_table_is_one_line_and_repair_restores_it(tmp_path):
    db = make_db(tmp_path / "r.duckdb", sweeps=2)
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE run_logs")
    con.execute("DROP VIEW decode_samples")
    con.execute("ALTER TABLE runs DROP COLUMN prompt_set")
    con.close()
    result = CliRunner().invoke(main, ["runs", "--db", str(db)])
    assert result.exit_code == DamagedSchema.exit_code
    assert result.output.strip() == (
        f"orch: error: results database {db} lacks table run_logs "
        f"(dropped by hand?): run `orch repair --db {db}` to restore them (rows already "
        f"deleted stay gone)"
    )  # a view is code (store/views.py): opening the file made decode_samples again, the table it cannot
    result = CliRunner().invoke(main, ["repair", "--db", str(db)])
    assert result.exit_code == 0 and "table run_logs" in result.output and "view" not in result.output
    assert "column runs.prompt_set" in result.output
    with store.opened(db, read_only=True) as con:
        assert schema.missing(con) == []
        assert con.execute("SELECT count(*) FROM sweeps").fetchone()[0] == 2  # what was stored is kept
        assert con.execute("SELECT count(*) FROM decode_samples").fetchone()[0] == 0  # the views work again
    assert CliRunner().invoke(main, ["repair", "--db", str(db)]).output.startswith("nothing to repair")


def test_repair_restores_every_object_and_the_id_sequences(tmp_path):
    db = make_db(tmp_path / "r.duckdb", sweeps=3)
    con = duckdb.connect(str(db))
    for name in reversed(views.NAMES):
        con.execute(f"DROP VIEW {name}")
    for table in ("runs", "sweeps"):
        con.execute(f"DROP TABLE {table}")
    con.execute("DROP SEQUENCE run_ids")
    con.close()
    with store.opened(db, check=False) as con:
        assert {"table runs", "table sweeps", "sequence run_ids"} <= set(schema.repair(con))
    fresh = store.connect(tmp_path / "fresh.duckdb")
    with store.opened(db, read_only=True) as con:

        def shape(c):
            return c.execute(
                "SELECT table_name, column_name, data_type FROM duckdb_columns() "
                "WHERE schema_name = 'main' ORDER BY ALL"
            ).fetchall()

        assert shape(con) == shape(fresh)
    fresh.close()


def test_a_file_that_is_not_a_database_is_one_line(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("not a database")
    result = CliRunner().invoke(main, ["runs", "--db", str(bad)])
    assert result.exit_code == DatabaseUnavailable.exit_code
    assert (
        result.output.startswith(f"orch: error: cannot open results database {bad}: ")
        and result.output.count("\n") == 1
    )


def test_a_sweep_whose_orch_died_is_recovered_on_the_next_read(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "cache"))
    db = make_db(tmp_path / "r.duckdb")
    me = proc.this_process()
    # Its work directory as orch makes one: in the work root, named after its owner (the dead one below).
    work = tmp_path / "cache" / "work" / (proc.work_dir_prefix(proc.Owner(me.host, me.pid, me.started - 1000)) + "x")
    with store.opened(db) as con:
        dead = store.create_sweep(
            con,
            {
                "recipe_path": "r.j2",
                "recipe_hash": "h",
                "recipe_text": "t",
                "variables": {},
                "mode": "cli",
                "repeat": 1,
                "build_id": "b",
                "build_name": "b",
                "commit": "c",
                "upstream_commit": "c",
                "status": "running",
                "started_at": store.utcnow(),
                "owner_host": me.host,
                "owner_pid": me.pid,
                "owner_started": me.started - 1000,
                "work_dir": str(work),
            },
        )  # pid reused
        alive = store.create_sweep(
            con,
            {
                "recipe_path": "r.j2",
                "recipe_hash": "h",
                "recipe_text": "t",
                "variables": {},
                "mode": "cli",
                "repeat": 1,
                "build_id": "b",
                "build_name": "b",
                "commit": "c",
                "upstream_commit": "c",
                "status": "running",
                "started_at": store.utcnow(),
                "owner_host": me.host,
                "owner_pid": me.pid,
                "owner_started": me.started,
            },
        )
        run = store.insert_run(
            con,
            {"sweep_id": dead, "arm": "draft", "status": "running", "repeat_index": 0, "started_at": store.utcnow()},
        )
    (work / f"run-{run}").mkdir(parents=True)
    (work / f"run-{run}" / "stderr").write_bytes(b"llama_model_loader: loaded meta data\n")
    with store.opened(db, read_only=True) as con:
        status = dict(con.execute("SELECT id, status FROM sweeps").fetchall())
        run_row = con.execute("SELECT status, failure_detail FROM runs WHERE id = ?", [run]).fetchone()
        logs = con.execute("SELECT stream, size_bytes FROM run_logs WHERE run_id = ?", [run]).fetchall()
    assert status == {dead: "interrupted", alive: "running"}  # the live owner's sweep is left alone
    assert run_row == ("interrupted", f"orch pid {me.pid} died while it ran; its partial logs were kept")
    assert logs == [("stderr", 37)]
    assert not work.exists()


def test_a_work_directory_no_row_names_is_removed_once_its_owner_is_dead(tmp_path, monkeypatch):
    """orch killed between making its work directory and storing the sweep row: no database leads to the
    directory, so its name carries its owner; the next orch to open a database removes it if that owner is dead,
    and leaves a live owner's and any other directory alone."""
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "cache"))
    me = proc.this_process()
    work = tmp_path / "cache" / "work"
    dead = work / (proc.work_dir_prefix(proc.Owner(me.host, me.pid, me.started - 1000)) + "ab12")  # pid reused
    live = work / (proc.work_dir_prefix(me) + "cd34")
    elsewhere = work / (proc.work_dir_prefix(proc.Owner("another-host", 1, 1.0)) + "ef56")
    for d in (dead, live, elsewhere, work / "sweep-unnamed"):
        (d / "run-1").mkdir(parents=True)
    assert proc.work_dir_owner(live.name) == me
    with store.opened(make_db(tmp_path / "r.duckdb"), read_only=True):
        pass
    assert sorted(p.name for p in work.iterdir()) == sorted([live.name, elsewhere.name, "sweep-unnamed"])


def _default_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # as a terminal starts orch (and leaves pytest)
        signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)


def test_the_first_stop_signal_interrupts_and_later_ones_are_acknowledged(capsys):
    _default_signals()  # pytest itself may run under nohup
    for first in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with stop_on_signals() as stopper:
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(first)
            signal.raise_signal(signal.SIGINT)  # during the shutdown: no second KeyboardInterrupt
            signal.raise_signal(signal.SIGTERM)
        assert stopper.first == first.name
        assert capsys.readouterr().err.count("already stopping") == 1
        assert signal.getsignal(first) == signal.SIG_IGN  # ignored from now on: orch is on its way out
        _default_signals()
    with stop_on_signals():
        pass
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # no signal came: the previous handlers are back


def test_a_stop_inside_a_write_waits_for_the_write_to_end(tmp_path):
    """A signal landing while DuckDB executes used to become DuckDB's RuntimeError('Query interrupted'): the run was
    stored failed, the sweep failed, and orch exited 1 with a traceback (a SIGTERM kill trial). Held, the write
    completes and the stop is raised right after it."""
    import threading

    _default_signals()
    db = store.Database(tmp_path / "r.duckdb")
    with stop_on_signals() as stopper:
        with pytest.raises(KeyboardInterrupt):
            with db.write() as con:
                threading.Timer(0.05, signal.raise_signal, [signal.SIGTERM]).start()
                total = con.execute("SELECT count(*) FROM range(400000000) t(x) WHERE x % 7 = 3").fetchone()[0]
                con.execute("CREATE TABLE after_the_signal AS SELECT ? AS total", [total])
        assert stopper.first == "SIGTERM"
    _default_signals()
    with db.read() as con:  # the query ran to its end and the write after the signal was made
        assert con.execute("SELECT total FROM after_the_signal").fetchone()[0] == len(range(3, 400000000, 7))


def test_under_nohup_a_hangup_does_not_stop_the_sweep():
    """`nohup orch run ... &` then closing the terminal: the sweep goes on (found by the kill trials, which ran
    under nohup and saw SIGHUP stop sweeps that should have outlived their terminal)."""
    _default_signals()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # what nohup hands its command
    try:
        with stop_on_signals() as stopper:
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            signal.raise_signal(signal.SIGHUP)  # ignored: no KeyboardInterrupt
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGTERM)  # the other signals still stop it
        assert stopper.first == "SIGTERM" and signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        _default_signals()


def test_summary_of_an_unknown_sweep_is_an_error(tmp_path):
    db = make_db(tmp_path / "r.duckdb", sweeps=1)
    result = CliRunner().invoke(main, ["summary", "1", "99999", "--db", str(db)])
    assert result.exit_code == 19 and "no sweep 99999" in result.output


def test_a_stop_that_lands_in_a_weakref_callback_is_delivered_at_the_next_check(capsys):
    import weakref

    from orchestrator import stops

    class Thing:
        pass

    with stop_on_signals() as stopper:
        thing = Thing()
        ref = weakref.ref(thing, lambda _: signal.raise_signal(signal.SIGTERM))  # the handler raises in the callback
        del thing  # Python only prints what a callback raises: without the hook, the stop would be lost
        assert ref() is None and stopper.lost
        with pytest.raises(KeyboardInterrupt):
            stops.check()
        stops.check()  # delivered once
    assert "Traceback" not in capsys.readouterr().err


def test_runs_a_dead_orch_had_not_stored_yet_are_stored_interrupted_with_their_logs(tmp_path, monkeypatch):
    """orch writes a few finished runs at a time (run/pending.py); a run waiting for its write, or in flight, has
    only its folder: its row in run.json and its logs. A SIGKILL then loses no run: the next open stores each such
    run interrupted, with its logs, and --resume measures it again."""
    import json

    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "cache"))
    db = make_db(tmp_path / "r.duckdb")
    me = proc.this_process()
    dead = proc.Owner(me.host, me.pid, me.started - 1000)
    work = tmp_path / "cache" / "work" / (proc.work_dir_prefix(dead) + "x")
    with store.opened(db) as con:
        sweep = store.create_sweep(
            con,
            {
                "recipe_path": "r.j2",
                "recipe_hash": "h",
                "recipe_text": "t",
                "variables": {},
                "build_id": "b",
                "build_name": "b",
                "status": "running",
                "started_at": store.utcnow(),
                "owner_host": dead.host,
                "owner_pid": dead.pid,
                "owner_started": dead.started,
                "work_dir": str(work),
            },
        )
        ids = store.reserve_run_ids(con, 3)
    for run_id, logs in zip(ids, ({"stdout": b"done", "stderr": b"decoded 8 tokens"}, {"stderr": b"half"}, {})):
        folder = work / f"run-{run_id}"
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(
            json.dumps(
                {
                    "id": run_id,
                    "sweep_id": sweep,
                    "arm": "a",
                    "repeat_index": 0,
                    "params": {"x": 1},
                    "started_at": "2026-11-25T01:02:03",
                }
            )
        )
        for name, data in logs.items():
            (folder / name).write_bytes(data)
    (work / "run-999").mkdir()  # a folder without its row: nothing to store
    with store.opened(db, read_only=True) as con:
        runs = con.execute("SELECT id, status, params, started_at IS NOT NULL FROM runs ORDER BY id").fetchall()
        logs = con.execute("SELECT run_id, stream FROM run_logs ORDER BY ALL").fetchall()
        status = con.execute("SELECT status FROM sweeps").fetchone()[0]
    assert [(r[0], r[1], json.loads(r[2]), r[3]) for r in runs] == [(i, "interrupted", {"x": 1}, True) for i in ids]
    assert logs == [(ids[0], "stderr"), (ids[0], "stdout"), (ids[1], "stderr")] and status == "interrupted"
    assert not work.exists()


def test_query_cannot_change_duckdbs_settings(tmp_path):
    """`CALL enable_logging(storage='file', ...)` made DuckDB abort orch (exit 134) on a read-only query: settings
    are locked for the SQL of orch query, with or without --write, in one line."""
    db = make_db(tmp_path / "r.duckdb", sweeps=1)
    for sql in (
        f"CALL enable_logging(storage='file', storage_config={{'path': '{tmp_path / 'log'}'}})",
        "SET threads = 1",
        "SET enable_external_access = true",
    ):
        for write in ([], ["--write"]):
            result = CliRunner().invoke(main, ["query", sql, *write, "--db", str(db)])
            assert result.exit_code == 20 and "leaves DuckDB's settings as they are" in result.output, result.output
            assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "log").exists()
    assert CliRunner().invoke(
        main, ["query", "SELECT count(*) AS n FROM sweeps", "--db", str(db), "-f", "csv"]
    ).output.splitlines() == ["n", "1"]


def test_a_failed_query_names_every_table_the_file_holds_and_the_columns_duckdb_could_have_meant(tmp_path):
    db = make_db(tmp_path / "r.duckdb", sweeps=1)
    table = CliRunner().invoke(main, ["query", "SELECT * FROM nosuch", "--db", str(db)])
    assert table.exit_code == 20
    for name in ("tunes", "tune_events", "bisects", "bisect_probes", "quality", "quants", "sweep_summaries"):
        assert name in table.output, name
    column = CliRunner().invoke(main, ["query", "SELECT nosuch FROM runs", "--db", str(db)])
    assert column.exit_code == 20 and "Candidate bindings" in column.output and "DESCRIBE runs" in column.output


def test_a_report_never_writes_through_a_link_in_its_folder(tmp_path):
    db = make_db(tmp_path / "r.duckdb", sweeps=1)
    out, kept = tmp_path / "rep", tmp_path / "mine.txt"
    out.mkdir()
    kept.write_text("my notes\n")
    (out / "report.md").symlink_to(kept)
    result = CliRunner().invoke(main, ["report", "--out", str(out), "--db", str(db)])
    assert result.exit_code == 10 and "holds symbolic links (report.md)" in result.output, result.output
    assert kept.read_text() == "my notes\n" and (out / "report.md").is_symlink()
