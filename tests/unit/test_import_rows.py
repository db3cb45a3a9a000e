"""An import checks its rows before it merges (issue 39): keys present and unique, log rows real gzip of their stated
size, migrations 1..N; a refusal is one line naming the table, the row and the check, with its own exit code, and
creates no results file. A stored row that is bad already (an older import, a hand edit) is survived by `orch show`,
`orch logs` and `orch reparse`. The property: an import of a forged export refuses, or adds exactly its rows."""

import gzip

import duckdb
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator import store
from orchestrator.cli import main
from orchestrator.errors import ExportRowRefused, StoredLogDamaged
from orchestrator.store import logs
from tests.unit.test_exchange import add_sweep
from tests.unit.test_import_safety import _manifest, _rewrite, export_dir, made_export  # noqa: F401 (fixture)

REFUSED = ExportRowRefused.exit_code


def _import(tmp_path, source, monkeypatch):
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "cache"))
    db = tmp_path / "new.duckdb"
    return CliRunner().invoke(main, ["import", str(source), "--db", str(db)]), db


BIG = gzip.compress(b"\0" * (8 << 20))  # 8 KB of gzip holding 8 MB


@pytest.mark.parametrize(
    "forge, said",
    [
        (
            lambda d: _rewrite(
                d, "sweeps", "INSERT INTO t SELECT * REPLACE (id + 100 AS id) FROM t WHERE recipe_path = 'recipes/b.j2'"
            ),
            r"table sweeps, uid=[0-9a-f-]+: 2 rows share this key",
        ),
        (
            lambda d: _rewrite(d, "runs", "UPDATE t SET uid = (SELECT min(uid) FROM t)"),
            r"table runs, uid=.*: \d rows share",
        ),
        (
            lambda d: _rewrite(d, "runs", "UPDATE t SET uid = NULL WHERE arm = 'draft'"),
            r"table runs, row \d: its key \(uid\) "
            r"is NULL",
        ),
        (
            lambda d: _rewrite(d, "run_logs", "UPDATE t SET gz = 'not gzip'::BLOB"),
            r"table run_logs, run_id=\d+, stream=\w+: not gzip data",
        ),
        (
            lambda d: _rewrite(d, "run_logs", f"UPDATE t SET gz = from_hex('{BIG.hex()}'), size_bytes = 5"),
            r"table run_logs, run_id=\d+, stream=\w+: it decompresses to more than its stated 5 bytes",
        ),
        (
            lambda d: _rewrite(d, "run_logs", "UPDATE t SET size_bytes = size_bytes + 1"),
            r"bytes where its size_bytes says",
        ),
        (
            lambda d: _manifest(d, lambda m: m["migrations"].remove(5)),
            r"table _migrations: its schema skips migration 5",
        ),
        (
            lambda d: _rewrite(d, "metrics", "UPDATE t SET decode_tps = 'NaN'::DOUBLE"),
            r"table metrics, row \d+: decode_tps = nan is no figure orch writes",
        ),
        (lambda d: _rewrite(d, "metrics", "UPDATE t SET decode_tps = 'inf'::DOUBLE"), r"decode_tps = inf is no figure"),
        (
            lambda d: _rewrite(d, "metrics", "UPDATE t SET decode_tps = -5"),
            r"decode_tps = -5.0 is no figure orch writes",
        ),
        (
            lambda d: _rewrite(d, "metrics", "UPDATE t SET acceptance = 1.5"),
            r"acceptance = 1.5 is no figure orch writes",
        ),
        (
            lambda d: _rewrite(d, "runs", f"UPDATE t SET params = '{'[' * 5000}1{']' * 5000}'::JSON"),
            r"table runs, row \d+: params is JSON nested 5000 deep \(orch's: at most 64\)",
        ),
        (
            lambda d: _rewrite(d, "sweeps", "UPDATE t SET recipe_text = repeat('x', 17000000)"),
            r"table sweeps, row \d+: recipe_text holds 17,000,000 characters",
        ),
    ],
)
def test_a_forged_export_is_refused_in_one_line_naming_table_row_and_check(
    tmp_path, export_dir, forge, said, monkeypatch
):
    forge(export_dir)
    result, db = _import(tmp_path, export_dir, monkeypatch)
    assert result.exit_code == REFUSED, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output, result.output
    assert __import__("re").search(said, result.output), result.output
    assert not db.exists()  # no results file for an import that cannot happen


def test_a_results_file_with_a_bad_row_is_refused_too(tmp_path, monkeypatch):
    source = tmp_path / "theirs.duckdb"
    with store.opened(source) as con:
        add_sweep(con)
        con.execute("UPDATE run_logs SET gz = 'x'::BLOB WHERE run_id = (SELECT min(run_id) FROM run_logs)")
    result, db = _import(tmp_path, source, monkeypatch)
    assert result.exit_code == REFUSED and f"{source}: table run_logs, run_id=" in result.output, result.output
    assert not db.exists()
    result, _ = _import(tmp_path, "/dev/null", monkeypatch)
    assert result.exit_code == 42 and "/dev/null is not a regular file" in result.output


def test_show_logs_and_reparse_survive_a_bad_row_stored_already(tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    with store.opened(db) as con:
        add_sweep(con)
        run_id = con.execute("SELECT min(run_id) FROM run_logs").fetchone()[0]
        con.execute(f"UPDATE run_logs SET gz = from_hex('{BIG.hex()}'), size_bytes = 5 WHERE run_id = ?", [run_id])
    shown = CliRunner().invoke(main, ["show", str(run_id), "--db", str(db)])
    assert shown.exit_code == 0 and "cannot be read: it decompresses to more than its stated 5 bytes" in shown.output
    written = CliRunner().invoke(main, ["logs", str(run_id), "--out", str(tmp_path / "o"), "--db", str(db)])
    assert written.exit_code == StoredLogDamaged.exit_code and written.output.count("\n") == 1, written.output
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())
    reparsed = CliRunner().invoke(main, ["reparse", "--db", str(db)])
    assert reparsed.exit_code == 0 and f"kept as stored, run {run_id}: run {run_id}'s stored" in reparsed.output


def test_unpacking_streams_with_a_cap_and_the_stated_size():
    data = b"log line\n" * 1000
    assert logs.unpacked(gzip.compress(data), len(data)) == data
    assert logs.unpacked(gzip.compress(data), len(data), keep=False) == b""
    for gz, size, said in (
        (gzip.compress(data)[:40], len(data), "truncated"),
        (b"xx", 2, "not gzip"),
        (gzip.compress(data), 10, "more than its stated 10 bytes"),
    ):
        with pytest.raises(ValueError, match=said):
            logs.unpacked(gz, size)
    with pytest.raises(ValueError, match="more than the 1,000 bytes"):
        logs.unpacked(gzip.compress(data), None, cap=1000)


TABLES = ("sweeps", "runs", "metrics", "run_logs", "requests", "telemetry")
FORGERIES = st.sampled_from(
    [
        ("runs", "UPDATE t SET uid = NULL WHERE rowid = 0"),
        ("runs", "INSERT INTO t SELECT * REPLACE (id + 1000 AS id) FROM t WHERE rowid = 0"),
        ("sweeps", "INSERT INTO t SELECT * REPLACE (id + 1000 AS id) FROM t WHERE rowid = 0"),
        ("metrics", "INSERT INTO t SELECT * FROM t WHERE rowid = 0"),
        ("run_logs", "UPDATE t SET gz = 'y'::BLOB WHERE rowid = 0"),
        ("run_logs", "UPDATE t SET size_bytes = 0 WHERE rowid = 0"),
        ("requests", "INSERT INTO t SELECT * FROM t WHERE rowid = 0"),
        ("telemetry", "UPDATE t SET uid = NULL WHERE rowid = 0"),
        ("runs", "DELETE FROM t WHERE rowid = 1"),  # fewer rows, each whole: imports, and exactly those
        ("telemetry", "DELETE FROM t"),
    ]
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    column_value=st.one_of(
        st.tuples(
            st.sampled_from(["decode_tps", "acceptance", "encode_tps", "mean_accept_len"]),
            st.floats(allow_nan=True, allow_infinity=True),
        ),
        st.tuples(st.sampled_from(["n_drafted", "n_accepted"]), st.integers(-(2**31), 2**31 - 1)),
    )
)
def test_an_imported_metric_is_refused_or_read_by_every_reader(tmp_path_factory, column_value):
    """Hypothesis over the values themselves: an export whose metric holds any number imports only where it is one
    orch could write, and then the summary reads it, in every format, without a traceback."""
    column, value = column_value
    tmp = tmp_path_factory.mktemp("values")
    made_export(tmp)
    literal = f"'{value}'::DOUBLE" if isinstance(value, float) else str(value)
    _rewrite(tmp / "out", "metrics", f"UPDATE t SET {column} = {literal} WHERE rowid = 0")
    db, env = tmp / "new.duckdb", {"ORCH_CACHE": str(tmp / "c")}
    result = CliRunner().invoke(main, ["import", str(tmp / "out"), "--db", str(db)], env=env)
    if result.exit_code != 0:
        assert result.exit_code == REFUSED and result.output.count("\n") == 1, result.output
        assert f"{column} = " in result.output and not db.exists()
        return
    for read in (["summary", "--last", "5", "--format", "json"], ["summary", "--last", "5"], ["runs"]):
        shown = CliRunner().invoke(main, [*read, "--db", str(db)], env=env)
        assert shown.exit_code == 0, (read, shown.output)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(forgeries=st.lists(FORGERIES, min_size=1, max_size=3))
def test_an_import_of_a_forged_export_refuses_or_adds_exactly_its_rows(tmp_path_factory, forgeries):
    tmp = tmp_path_factory.mktemp("forged")
    made_export(tmp)
    for table, sql in forgeries:
        _rewrite(tmp / "out", table, sql)
    with duckdb.connect() as reader:
        held = {
            t: reader.execute(f"SELECT count(*) FROM read_parquet('{tmp / 'out' / t}.parquet')").fetchone()[0]
            for t in TABLES
        }
    db = tmp / "new.duckdb"
    result = CliRunner().invoke(main, ["import", str(tmp / "out"), "--db", str(db)], env={"ORCH_CACHE": str(tmp / "c")})
    if result.exit_code != 0:
        assert result.exit_code in (REFUSED, 45) and result.output.count("\n") == 1, result.output
        assert not db.exists()
        return
    with store.opened(db, read_only=True) as con:
        stored = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    assert stored["sweeps"] == held["sweeps"] and stored["runs"] == held["runs"]
    for t in ("metrics", "run_logs", "requests", "telemetry"):  # rows of a run the export lacks are left out, said
        assert stored[t] <= held[t]
        if stored[t] < held[t]:
            assert f"{held[t] - stored[t]} {t} rows left out" in result.output


@pytest.mark.parametrize("made", ["fifo", "zero", "deep"])
def test_a_manifest_that_is_no_file_or_nests_too_deep_is_refused_in_one_line(tmp_path, export_dir, made, monkeypatch):
    """manifest.json is read as any file a user names: a FIFO in its place does not hang, a link to /dev/zero is
    not read for ever, and JSON nested past Python's stack is one line."""
    import os

    manifest = export_dir / "manifest.json"
    manifest.unlink()
    if made == "fifo":
        os.mkfifo(manifest)
    elif made == "zero":
        manifest.symlink_to("/dev/zero")
    else:
        manifest.write_text("[" * 100000 + "]" * 100000)
    result, db = _import(tmp_path, export_dir, monkeypatch)
    assert result.exit_code != 0 and "no readable manifest.json" in result.output, result.output
    assert "Traceback" not in result.output and not db.exists()
