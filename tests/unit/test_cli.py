"""The orch command line: help texts, and bad input caught before any work starts."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.group import main
from orchestrator.errors import BackendUnavailable


def all_commands(group, prefix=()):
    for name in group.list_commands(None):  # loaded as asked for (group.COMMANDS)
        cmd = group.get_command(None, name)
        yield (*prefix, name), cmd
        if hasattr(cmd, "commands"):
            yield from all_commands(cmd, (*prefix, name))


def test_every_command_has_a_one_line_summary():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for path, cmd in all_commands(main):
        summary = cmd.get_short_help_str(limit=200)
        assert summary and not summary.endswith("..."), path
        if len(path) == 1:
            listed = next(line for line in result.output.splitlines() if line.strip().startswith(path[0] + " "))
            assert summary in listed, f"{path[0]}: summary cut in --help: {listed!r}"


def test_cuda_backend_without_nvcc_fails_in_one_line(orch_env, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: no nvcc, no git, no cmake
    result = CliRunner().invoke(main, ["build", "0c1e57098", "--backend", "cuda"])
    assert result.exit_code == BackendUnavailable.exit_code
    assert result.output.count("\n") == 1 and "nvcc" in result.output and "--backend cpu" in result.output
    assert not (orch_env / "builds").exists()  # nothing half-made


def test_bad_cuda_arch_is_rejected_before_resolution(orch_env, monkeypatch, tmp_path):
    (tmp_path / "nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0'\n")
    (tmp_path / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    result = CliRunner().invoke(main, ["build", "0c1e57098", "--backend", "cuda", "--cuda-arch", "native"])
    assert result.exit_code == 10 and "--cuda-arch 'native'" in result.output


def test_builds_lists_only_stamped_directories(orch_env):
    root = orch_env / "builds"
    for name, stamped in (("aaaaaaaaa-cpu", True), ("bbbbbbbbb-cpu", False)):
        d = root / name
        d.mkdir(parents=True)
        info = {
            "name": name,
            "commit": name[:9] * 4,
            "upstream_commit": name[:9] * 4,
            "backend": "cpu",
            "dir": str(d),
            "finished_at": "2026-11-22T00:00:00",
            "binaries": [],
        }
        (d / "build.json").write_text(json.dumps(info))
        if stamped:
            (d / "orch-stamp.json").write_text("{}")
    result = CliRunner().invoke(main, ["builds", "--json"])
    assert result.exit_code == 0
    assert [b["name"] for b in json.loads(result.output)] == ["aaaaaaaaa-cpu"]
    assert "aaaaaaaaa-cpu" in CliRunner().invoke(main, ["builds"]).output


def test_mirror_list_on_an_empty_mirror(orch_env):
    result = CliRunner().invoke(main, ["mirror", "list"])
    assert result.exit_code == 0 and "is empty" in result.output


def stored_sweep(db, build="0c1e57098-cpu", speeds=(100.0, 130.0, 90.0), status="ok", metrics=True):
    """A real results file with one noisy two-arm sweep on `build` (status: its runs', failed ones measure nothing)."""
    from orchestrator import store

    con = store.connect(db)
    con.execute(
        "INSERT INTO builds (id, name, commit, upstream_commit, backend, status, dir) VALUES "
        "(?, ?, ?, ?, 'cpu', 'ok', 'd') ON CONFLICT DO NOTHING",
        [build + "@1", build, build[:9] + "bba", build[:9] + "bba"],
    )
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": "recipes/recipe_a.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": "cli",
            "repeat": len(speeds),
            "build_name": build,
            "build_id": build + "@1",
            "status": "done",
        },
    )
    for rep, tps in enumerate(speeds):
        for arm in ("baseline", "draft"):
            run = store.insert_run(
                con,
                {
                    "sweep_id": sweep,
                    "build_id": build + "@1",
                    "arm": arm,
                    "is_baseline": arm == "baseline",
                    "params": {"draft_max": 16, "draft": "d.gguf" if arm == "draft" else None},
                    "repeat_index": rep,
                    "mode": "cli",
                    "status": status,
                },
            )
            if status == "ok" and metrics:
                con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, ?)", [run, tps])
    con.close()
    return sweep


def test_summary_help_explains_every_column_and_the_default_set():
    from orchestrator.analyze import glossary
    from orchestrator.analyze.summaries import compute

    text = CliRunner().invoke(main, ["summary", "--help"], terminal_width=200).output
    for column in [*compute.TABLE_COLUMNS, "PARAMETER"]:
        assert f"\n    {column} " in text, f"{column} is not explained in orch summary --help"
    assert (
        set(glossary.SUMMARY) == {*compute.TABLE_COLUMNS, "PARAMETER"}
        and compute.DEFAULT_COLUMNS == glossary.SUMMARY_DEFAULT
        and ", ".join(compute.DEFAULT_COLUMNS) in " ".join(text.split())
    )
    compare_help = CliRunner().invoke(main, ["compare", "--help"], terminal_width=200).output
    from orchestrator.analyze import compare_columns, side_by_side

    for column in [
        "recipe",
        "arm",
        "PARAMETER",
        *side_by_side.KEY_COLUMNS[:1],
        *compare_columns.SHOWN_KEYS,
        *compare_columns.FIGURES,
    ]:
        assert f"\n    {column} " in compare_help, f"{column} is not explained in orch compare --help"


def test_summary_columns_and_their_errors(orch_env):
    stored_sweep(orch_env / "results.duckdb")
    picked = CliRunner().invoke(main, ["summary", "--columns", "arm,speedup"])
    assert picked.exit_code == 0 and picked.output.splitlines()[0].split() == ["arm", "speedup"]
    as_json = CliRunner().invoke(main, ["summary", "--columns", "arm,draft_max", "--format", "json"])
    assert [set(r) for r in json.loads(as_json.stdout)] == [{"arm", "draft_max"}] * 2
    bad = CliRunner().invoke(main, ["summary", "--columns", "arm,tps"])
    assert bad.exit_code == 10 and "no such column tps" in bad.output and "decode_tps" in bad.output
    both = CliRunner().invoke(main, ["summary", "--wide", "--columns", "arm"])
    assert both.exit_code == 2 and "--wide" in both.output
    wide = CliRunner().invoke(main, ["summary", "--wide"]).output
    assert wide.splitlines()[0].split()[:3] == ["sweep", "recipe", "build"]
    # One line per warning kind naming its arms, wrapped to 80 columns off a terminal; the full texts on --explain.
    lines = wide.splitlines()
    first = next(i for i, x in enumerate(lines) if x.startswith("warning:"))
    warned = lines[first : next(i for i, x in enumerate(lines) if x.startswith("verdict:"))]
    joined = " ".join(line.strip() for line in warned)
    assert joined.startswith("warning: high_cv: decode speed varies more than 5% between runs (sweep 1: baseline")
    assert sum(line.startswith("warning: high_cv") for line in warned) == 1 and all(len(x) <= 80 for x in warned)
    assert "orch summary --explain" in wide
    explained = CliRunner().invoke(main, ["summary", "--wide", "--explain"]).output
    assert "warning: sweep 1, arm baseline (high_cv): decode speed varies" in explained
    assert CliRunner().invoke(main, ["summary", "--wide", "--explain", "1"]).output == explained  # sweep 1, not a code


def test_comparing_a_build_with_itself_is_flagged(orch_env):
    stored_sweep(orch_env / "results.duckdb")
    res = CliRunner().invoke(main, ["compare", "--base", "0c1e570", "--head", "0c1e57098-cpu"])
    assert res.exit_code == 0
    assert "warning: base and head are the same build (0c1e57098-cpu)" in res.output
    rows = [line for line in res.output.splitlines() if line.startswith(("baseline ", "draft "))]
    assert len(rows) == 2 and all(line.rstrip().endswith("same build") for line in rows)
    result = json.loads(
        CliRunner().invoke(main, ["compare", "--base", "0c1e570", "--head", "0c1e570", "--format", "json"]).stdout
    )
    assert result["same_build"] and {r["verdict"] for r in result["rows"]} == {"same build"}
    assert {r["ratio"] for r in result["rows"]} == {None}  # no ratio of a build's runs against themselves


def test_builds_and_mirror_tables_have_headers(orch_env):
    root = orch_env / "builds"
    d = root / "aaaaaaaaa-cpu"
    d.mkdir(parents=True)
    (d / "build.json").write_text(
        json.dumps(
            {
                "name": d.name,
                "commit": "a" * 40,
                "upstream_commit": "a" * 40,
                "backend": "cpu",
                "dir": str(d),
                "finished_at": "2026-11-22T00:00:00",
                "binaries": [],
            }
        )
    )
    (d / "orch-stamp.json").write_text("{}")
    lines = CliRunner().invoke(main, ["builds"]).output.splitlines()
    assert lines[0].split() == ["name", "commit", "backend", "finished", "state"]
    assert lines[2].startswith("aaaaaaaaa-cpu") and lines[3:5] == ["aaaaaaaaa-cpu:", "  tools: -"]
    assert f"dir: {d}" in " ".join(x.strip() for x in lines)  # a long path on its own line, whole
    wide = CliRunner().invoke(main, ["builds", "--wide"]).output.splitlines()
    assert wide[0].split() == ["name", "commit", "backend", "finished", "state", "tools", "spec", "methods", "dir"]


@pytest.mark.parametrize(
    "commit,methods",
    [
        # The MTP, EAGLE3 and DFlash era: every tool that speculates offers every method.
        ("0c1e57098", "draft-simple, draft-eagle3, draft-mtp, draft-dflash, draft-dspark, ngram-simple"),
        # Before --spec-type reached llama-speculative-simple: a draft model everywhere, n-gram methods in the server only.
        ("f49e91787", "draft-simple, ngram-cache (server), ngram-simple (server)"),
    ],
)
def test_builds_show_each_builds_speculation_methods_from_its_captured_help(orch_env, commit, methods):
    helps = Path(__file__).resolve().parents[1] / "fixtures" / "help" / commit
    d = orch_env / "builds" / f"{commit}-cpu"
    d.mkdir(parents=True)
    (d / "bin").mkdir()
    binaries = []
    for p in sorted(helps.glob("*.help.txt")):  # the build's binaries: never run here, only their help is read
        name = p.name.removesuffix(".help.txt")
        (d / "bin" / name).write_text("")
        (d / "bin" / name).chmod(0o755)
        binaries.append({"name": name, "path": str(d / "bin" / name), "help_path": str(p)})
    (d / "build.json").write_text(
        json.dumps(
            {
                "name": d.name,
                "commit": commit,
                "upstream_commit": commit,
                "backend": "cpu",
                "dir": str(d),
                "finished_at": "2026-11-22T00:00:00",
                "binaries": binaries,
            }
        )
    )
    (d / "orch-stamp.json").write_text("{}")
    res = CliRunner().invoke(main, ["builds"])
    shown = " ".join(line.strip() for line in res.output.splitlines())  # the methods line, wrapped to the terminal
    assert res.exit_code == 0 and methods in shown and "speculative-simple" in shown
    assert max(map(len, res.output.splitlines())) <= 120
    assert methods in CliRunner().invoke(main, ["builds", "--wide"]).output  # one row, however wide
    listed = json.loads(CliRunner().invoke(main, ["builds", "--json"]).output)[0]["spec_methods"]
    has_mtp = "draft-mtp" in listed.get("llama-speculative-simple", [])
    assert has_mtp == (commit == "0c1e57098") and "draft-simple" in listed["llama-server"]


def test_sweeps_lists_every_sweep_with_its_builds_runs_and_status_and_hints_point_there(orch_env):
    from orchestrator import store

    db = orch_env / "results.duckdb"
    store.connect(db).close()
    empty = CliRunner().invoke(main, ["sweeps"])
    assert empty.exit_code == 0 and "no sweeps stored yet" in empty.output
    stored_sweep(db)
    stored_sweep(db, build="f49e91787-cpu")
    listed = CliRunner().invoke(main, ["sweeps", "--format", "json"])
    rows = json.loads(listed.stdout)
    assert [(r["sweep"], r["recipe"], r["builds"], r["runs"], r["ok"], r["status"]) for r in rows] == [
        (1, "recipe_a.j2", "0c1e57098-cpu", 6, 6, "done"),
        (2, "recipe_a.j2", "f49e91787-cpu", 6, 6, "done"),
    ]
    assert CliRunner().invoke(main, ["sweeps", "--last", "1"]).output.splitlines()[-1].split()[:2] == [
        "2",
        "recipe_a.j2",
    ]
    missing = CliRunner().invoke(main, ["summary", "7"])
    assert missing.exit_code != 0 and "orch sweeps" in missing.output


def test_compare_fails_on_a_regression_only_when_asked_after_printing_the_comparison(orch_env):
    """--fail-on regression: exit 53 (asv continuous's gate) where a test is beyond the threshold and
    statistically slower; the table is printed first either way, and no regression exits 0."""
    from orchestrator.errors import Regressed

    stored_sweep(orch_env / "results.duckdb", "aaaaaaaaa-cpu", speeds=(100.0, 101.0, 99.0, 100.5, 100.2))
    stored_sweep(orch_env / "results.duckdb", "bbbbbbbbb-cpu", speeds=(80.0, 81.0, 79.5, 80.2, 80.6))
    plain = CliRunner().invoke(main, ["compare", "--base", "aaaaaaaaa", "--head", "bbbbbbbbb"])
    assert plain.exit_code == 0 and "regression" in plain.output
    gated = CliRunner().invoke(
        main, ["compare", "--base", "aaaaaaaaa", "--head", "bbbbbbbbb", "--fail-on", "regression"]
    )
    assert gated.exit_code == Regressed.exit_code and gated.output.startswith(plain.output)
    assert "2 test(s) regressed from aaaaaaaaa-cpu to bbbbbbbbb-cpu: baseline, draft" in gated.output
    better = CliRunner().invoke(
        main, ["compare", "--base", "bbbbbbbbb", "--head", "aaaaaaaaa", "--fail-on", "regression", "--format", "json"]
    )
    assert better.exit_code == 0 and {r["verdict"] for r in json.loads(better.stdout)["rows"]} == {"improvement"}


def test_the_regression_gate_fails_a_head_build_whose_runs_all_failed(orch_env):
    """A head build that crashes measures nothing: every test "newly failing", and --fail-on regression exits 53
    naming them (it passed the gate before, having no regression to find)."""
    from orchestrator.errors import Regressed

    stored_sweep(orch_env / "results.duckdb", "aaaaaaaaa-cpu", speeds=(100.0, 101.0, 99.0))
    stored_sweep(orch_env / "results.duckdb", "bbbbbbbbb-cpu", speeds=(100.0, 101.0, 99.0), status="failed")
    gated = CliRunner().invoke(
        main, ["compare", "--base", "aaaaaaaaa", "--head", "bbbbbbbbb", "--fail-on", "regression"]
    )
    assert gated.exit_code == Regressed.exit_code, gated.output
    assert (
        "2 test(s) regressed from aaaaaaaaa-cpu to bbbbbbbbb-cpu: baseline (newly failing), draft (newly "
        "failing)" in gated.output
    )
    turned = CliRunner().invoke(
        main, ["compare", "--base", "bbbbbbbbb", "--head", "aaaaaaaaa", "--fail-on", "regression"]
    )  # the other way: a base with nothing to judge by
    assert turned.exit_code == Regressed.exit_code and "baseline (newly ok)" in turned.output, turned.output
    stored_sweep(orch_env / "results.duckdb", "ccccccccc-cpu", speeds=(100.0, 101.0, 99.0), metrics=False)
    nothing = CliRunner().invoke(
        main, ["compare", "--base", "aaaaaaaaa", "--head", "ccccccccc", "--fail-on", "regression"]
    )  # ok runs, no figure: nothing measured either
    assert nothing.exit_code == Regressed.exit_code and "(no data)" in nothing.output, nothing.output


def test_every_command_that_prints_data_takes_json_and_it_is_the_same_as_format_json(orch_env):
    """One convention: --json on every data command, the same bytes as --format json where --format exists."""
    from orchestrator.cli.group import main as group

    stored_sweep(orch_env / "results.duckdb")
    for argv in (["summary"], ["sweeps"], ["query", "SELECT count(*) AS n FROM runs"]):
        by_flag = CliRunner().invoke(main, [*argv, "--json"])
        by_format = CliRunner().invoke(main, [*argv, "--format", "json"])
        assert by_flag.exit_code == by_format.exit_code == 0 and by_flag.stdout == by_format.stdout, argv
        json.loads(by_flag.stdout)
    both = CliRunner().invoke(main, ["summary", "--json", "--format", "csv"])
    assert both.exit_code == 2 and "--json is --format json" in both.output
    import duckdb

    with duckdb.connect(str(orch_env / "results.duckdb")) as con:  # text that reads as JSON stays text
        con.execute("UPDATE runs SET failure_detail = '[1]' WHERE id = 1")
        con.execute("UPDATE metrics SET extra = '{\"k\": 2}' WHERE run_id = 1")
    shown = json.loads(CliRunner().invoke(main, ["show", "1", "--json"]).stdout)
    assert shown["run"]["arm"] == "baseline" and shown["run"]["params"]["draft_max"] == 16
    assert shown["run"]["failure_detail"] == "[1]" and shown["metrics"]["extra"] == {"k": 2}
    assert shown["metrics"]["decode_tps"] == 100.0 and shown["logs"] == {}
    printing = {"runs", "show", "summary", "sweeps", "compare", "query", "builds", "history", "env", "parse", "tune"}
    lacking = [
        name
        for name in sorted(printing)
        if "--json" not in {o for p in group.get_command(None, name).params for o in p.opts}
    ]
    assert lacking == []


@pytest.mark.parametrize(
    "command", [["compare", "--base", "a", "--head", "b"], ["history", "r.j2"], ["bisect", "r.j2", "--commits", "a,b"]]
)
@pytest.mark.parametrize("threshold", ["lots", "inf%", "nan", "100%", "-5%"])
def test_a_threshold_that_cannot_gate_is_refused_alike_by_every_command(orch_env, command, threshold):
    """compare, history and bisect read --threshold one way: a change between 0% and 100%; NaN or inf% would turn
    `--fail-on regression` off without a word."""
    result = CliRunner().invoke(main, [*command, "--threshold", threshold])
    assert result.exit_code == 10 and "--threshold" in result.output and "0% and 100%" in result.output, result.output


def test_the_command_table_names_each_commands_module_and_summary():
    """`orch --help` (and `orch models --help`) list commands from a table without importing them (group.COMMANDS,
    models.MODEL_COMMANDS): each table must be the code's, every command in it and each summary the one its own
    --help starts with."""
    import importlib

    import click

    from orchestrator.cli.group import COMMANDS
    from orchestrator.cli.models import MODEL_COMMANDS, models_group

    for group, table in ((main, COMMANDS), (models_group, MODEL_COMMANDS)):
        for module in {m for m, _ in table.values()}:
            importlib.import_module(f"orchestrator.cli.{module}")
        ctx = click.Context(group)
        assert set(group.commands) == set(table)
        for name, (module, summary) in table.items():
            command = group.get_command(ctx, name)
            assert command.callback.__module__ == f"orchestrator.cli.{module}", name
            assert command.get_short_help_str(limit=300) == summary, name


@pytest.mark.integration  # starts a fresh interpreter: this one has loaded every command
def test_a_command_loads_only_its_own_module():
    """A command's module imports what it uses at its top, so asking for one command must not load the others'."""
    import subprocess
    import sys

    probe = (
        "import sys; from orchestrator.cli.group import main; import click; "
        "main.get_command(click.Context(main), 'runs'); "
        "print(sorted(m for m in sys.modules if m.startswith('orchestrator.cli.')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "orchestrator.cli.runs" in loaded
    for other in ("summary", "report", "tune", "bisect", "models", "probe", "run"):
        assert f"'orchestrator.cli.{other}'" not in loaded, other


def test_a_budget_past_what_a_tune_can_store_is_refused(orch_env):
    """--budget 100000000000000000000runs was taken and broke every later resume of that tune (TypeError)."""
    for budget in ("100000000000000000000runs", "999999999h"):
        result = CliRunner().invoke(main, ["tune", "recipes/tune.j2", "--budget", budget, "--dry-run"])
        assert result.exit_code == 2 and "more than any race can spend" in result.output, result.output
