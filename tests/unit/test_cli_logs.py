"""`orch parse` and `orch logs` at the command line: what they print, the files they write, one line per error."""

import json
from pathlib import Path

from click.testing import CliRunner

from orchestrator import store
from orchestrator.cli.group import main
from orchestrator.errors import InvalidOption, NoStoredLogs, NoSuchRun, NothingRecognised

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def orch(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_parse_names_the_kind_the_files_the_failure_and_the_metrics():
    era = LOGS / "0c1e57098"
    text = orch("parse", era / "spec-simple-draft.stdout", era / "spec-simple-draft.stderr")
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[0].startswith("kind: speculative: ") and "failure: none" in lines
    assert f"file: {era / 'spec-simple-draft.stdout'}: output (the run's output" in text.output
    assert "           n_drafted: 69" in lines and "          n_accepted: 45" in lines
    as_json = json.loads(orch("parse", era / "fail-vocab-mismatch.stderr", "--json").output)
    assert (as_json["kind"], as_json["failure_class"]) == ("failed-run", "vocab_mismatch")
    assert "vocab type must match" in as_json["failure_detail"] and as_json["metrics"]["decode_tps"] is None
    server = json.loads(orch("parse", era / "server-draft.stderr", era / "server-draft.stdout", "--json").output)
    assert server["kind"] == "server" and server["metrics"]["n_drafted"] == 68  # as stored (.stored.json)


ERAS = {  # era -> (fixture, failure class): the same failures in the words of three llama.cpp eras
    "7841fc723": [
        ("fail-vocab-mismatch", "vocab_mismatch"),
        ("fail-unknown-flag", "unknown_flag"),
        ("fail-missing-draft", "model_load"),
        ("fail-out-of-memory", "out_of_memory"),
        ("spec-simple-draft", None),
        ("server-draft-unreported", "spec_not_engaged"),
    ],
    "f49e91787": [
        ("fail-unknown-flag", "unknown_flag"),
        ("completion-fail-missing-model", "model_load"),
        ("spec-simple-draft", None),
        ("server-draft-concurrency2", None),
    ],
    "0c1e57098": [
        ("fail-vocab-mismatch", "vocab_mismatch"),
        ("fail-unknown-spec-type", "spec_unsupported"),
        ("fail-no-spec-type", "spec_not_engaged"),
        ("spec-simple-draft", None),
        ("server-draft", None),
    ],
}


def test_parse_reads_three_eras_with_their_failure_classes():
    for era, cases in ERAS.items():
        for name, expected in cases:
            files = [LOGS / era / f"{name}.{s}" for s in ("stdout", "stderr")]
            result = orch("parse", *files, "--json")
            assert result.exit_code == 0, (era, name, result.output)
            reading = json.loads(result.output)
            assert reading["failure_class"] == expected, (era, name, reading)
            if expected is None:  # a run that worked: its figures were read
                assert reading["metrics"]["decode_tps"] > 0, (era, name)
            if name.startswith("server-draft") and expected is None:
                assert reading["metrics"]["n_drafted"] > 0, (era, name)


def test_parse_refuses_empty_binary_and_unrelated_files_in_one_line(tmp_path):
    files = {"empty.log": b"", "binary.log": bytes(range(256)) * 4, "notes.txt": b"Nothing to see here.\n"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        result = orch("parse", tmp_path / name)
        assert result.exit_code == NothingRecognised.exit_code == 28, name
        assert result.output.count("\n") == 1 and result.output.startswith(
            f"orch: error: nothing recognised in {tmp_path / name}: "
        ), result.output
        assert "llama-server" in result.output and "failed runs" in result.output


def stored_run(db: Path, logs: dict[str, bytes] | None, status: str = "ok") -> int:
    with store.opened(db) as con:
        sweep = store.create_sweep(
            con, {"recipe_path": "r.j2", "recipe_hash": "h", "recipe_text": "t", "status": "done"}
        )
        run = store.insert_run(
            con,
            {
                "sweep_id": sweep,
                "arm": "draft",
                "is_baseline": False,
                "repeat_index": 0,
                "status": status,
                "failure_class": None if logs else "vocab_mismatch",
                "failure_detail": None if logs else "draft d.gguf cannot speculate for t.gguf",
            },
        )
        if logs:
            store.save_logs(con, run, logs)
    return run


def test_logs_writes_every_stream_back_byte_for_byte_and_parse_reads_them(tmp_path):
    db = tmp_path / "r.duckdb"
    streams = {s: (LOGS / "f49e91787" / f"spec-simple-draft.{s}").read_bytes() for s in ("stdout", "stderr")}
    run = stored_run(db, streams)
    result = orch("logs", run, "--out", tmp_path / "out", "--db", db)
    assert result.exit_code == 0, result.output
    written = [Path(p) for p in result.output.splitlines()]
    assert written == [tmp_path / "out" / f"run-{run}.stderr.log", tmp_path / "out" / f"run-{run}.stdout.log"]
    assert {p.name.split(".")[1]: p.read_bytes() for p in written} == streams
    assert not list((tmp_path / "out").glob("*.partial"))
    parsed = json.loads(orch("parse", *written, "--json").output)
    assert parsed["kind"] == "speculative" and parsed["metrics"]["n_accepted"] == 40


def test_logs_defaults_to_the_current_folder(tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    run = stored_run(db, {"stderr": b"error: invalid argument: --bogus\n", "stdout": b""})
    monkeypatch.chdir(tmp_path)
    assert orch("logs", run, "--db", db).output.splitlines() == [f"run-{run}.stderr.log", f"run-{run}.stdout.log"]
    assert (tmp_path / f"run-{run}.stderr.log").read_bytes() == b"error: invalid argument: --bogus\n"


def test_logs_errors_are_one_line_each(tmp_path):
    db = tmp_path / "r.duckdb"
    never_launched = stored_run(db, None, status="failed")
    missing = orch("logs", 999, "--db", db)
    assert missing.exit_code == NoSuchRun.exit_code == 18 and missing.output.count("\n") == 1
    assert "no run 999" in missing.output and "orch runs" in missing.output
    empty = orch("logs", never_launched, "--out", tmp_path / "out", "--db", db)
    assert empty.exit_code == NoStoredLogs.exit_code == 29 and empty.output.count("\n") == 1
    assert f"run {never_launched} has no stored logs" in empty.output and "cannot speculate" in empty.output
    assert not (tmp_path / "out").exists()  # nothing half-made
    ran = stored_run(db, {"stderr": b"x\n"})
    (tmp_path / "file").write_text("")
    for out in (tmp_path / "file", tmp_path / "file" / "sub"):
        unwritable = orch("logs", ran, "--out", out, "--db", db)
        assert unwritable.exit_code == InvalidOption.exit_code and unwritable.output.count("\n") == 1, out
        assert unwritable.output.startswith("orch: error: ") and str(out) in unwritable.output


def test_parse_reads_llama_bench_output_as_a_bench_run_reads_it(tmp_path):
    recorded = LOGS.parent / "quality" / "0c1e57098" / "bench.stdout"  # four tests: pp64, tg16 at depths 0, 256
    four = json.loads(orch("parse", recorded, "--json").output)
    assert (four["kind"], four["failure_class"]) == ("bench", "parse_error") and "4 tests" in four["failure_detail"]
    tg = next(json.loads(line) for line in recorded.read_text().splitlines() if json.loads(line)["n_gen"])
    (tmp_path / "tg.jsonl").write_text(json.dumps(tg) + "\n")
    one = json.loads(orch("parse", tmp_path / "tg.jsonl", "--json").output)
    assert (one["kind"], one["failure_class"]) == ("bench", None)
    assert one["metrics"]["decode_tps"] == tg["avg_ts"] and one["extra"]["bench_test"].startswith("tg16")


def test_show_prints_the_end_of_a_long_log_and_says_where_the_whole_is(tmp_path):
    """Three 256 MiB streams made `orch show` print 805 MB at 1.9 GB of memory; it prints each stream's last 64 KiB
    (where a run says why it ended), names its size, and `orch logs` writes it whole."""
    db = tmp_path / "r.duckdb"
    lines = b"".join(b"line %06d of a long log\n" % i for i in range(40_000))  # 1 MB
    run = stored_run(db, {"stdout": b"short\n", "stderr": lines})
    result = orch("show", run, "--db", db)
    assert result.exit_code == 0, result.output
    assert (
        f"----- stderr ({len(lines)} bytes, its last 64 KiB: `orch logs {run}` writes it whole) -----" in result.output
    )
    assert "line 039999 of a long log" in result.output and "line 000001 of" not in result.output
    assert "----- stdout (6 bytes) -----\nshort" in result.output
    assert len(result.output) < 80_000
    whole = orch("logs", run, "--out", tmp_path / "out", "--db", db)
    assert (tmp_path / "out" / f"run-{run}.stderr.log").read_bytes() == lines and whole.exit_code == 0
