"""cli/output.echo_json_or_text, the one way `--json` commands print, and the commands that use it."""

import json
from datetime import date
from pathlib import Path

from click.testing import CliRunner

from orchestrator.cli.group import main
from orchestrator.cli.output import echo_json_or_text

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def test_json_holds_what_json_cannot_as_text_and_never_makes_the_text(capsys):
    def text():
        raise AssertionError("the text is made under --json")

    echo_json_or_text({"day": date(2026, 1, 2), "path": Path("/x")}, True, text)
    assert json.loads(capsys.readouterr().out) == {"day": "2026-01-02", "path": "/x"}


def test_text_is_printed_as_made(capsys):
    echo_json_or_text({"a": 1}, False, lambda: "line 1\nline 2")
    assert capsys.readouterr().out == "line 1\nline 2\n"


def test_builds_json_is_the_list_and_the_broken_note_comes_with_the_table_only(orch_env):
    d = orch_env / "builds" / "aaaaaaaaa-cpu"
    d.mkdir(parents=True)
    gone = {"name": "llama-completion", "path": str(d / "bin" / "llama-completion")}  # never made: broken
    (d / "build.json").write_text(
        json.dumps(
            {
                "name": d.name,
                "commit": "a" * 40,
                "upstream_commit": "a" * 40,
                "backend": "cpu",
                "dir": str(d),
                "finished_at": "2026-11-22T00:00:00",
                "binaries": [gone],
            }
        )
    )
    (d / "orch-stamp.json").write_text("{}")
    listed = CliRunner().invoke(main, ["builds", "--json"])
    assert listed.exit_code == 0 and "is broken" not in listed.output
    assert [b["name"] for b in json.loads(listed.output)] == [d.name] and json.loads(listed.output)[0]["broken"]
    table = CliRunner().invoke(main, ["builds"])
    assert table.exit_code == 0 and table.output.splitlines()[0].split()[0] == "name"
    assert f"orch: {d.name} is broken; rebuild it with `orch build aaaaaaaaa" in table.output


def test_an_empty_mirror_lists_as_an_empty_json_list(orch_env):
    result = CliRunner().invoke(main, ["mirror", "list", "--json"])
    assert result.exit_code == 0 and json.loads(result.output) == []


def test_parse_prints_the_same_reading_as_json_or_lines():
    logs = [str(LOGS / "0c1e57098" / f"fail-vocab-mismatch.{s}") for s in ("stderr", "stdout")]
    as_json = json.loads(CliRunner().invoke(main, ["parse", *logs, "--json"]).output)
    lines = CliRunner().invoke(main, ["parse", *logs]).output.splitlines()
    assert as_json["failure_class"] == "vocab_mismatch" and as_json["kind"] == "failed-run"
    assert lines[0].startswith("kind: failed-run") and f"failure: vocab_mismatch ({as_json['failure_detail']})" in lines
