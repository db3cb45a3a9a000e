"""Every warning explained from the one table the summary uses (analyze/warning_kinds.WARNING_KINDS): docs/warnings.md is
made from it and must equal what it makes now; `orch summary --explain CODE` prints one code's entry."""

from pathlib import Path

from click.testing import CliRunner

from orchestrator.analyze import warning_docs
from orchestrator.analyze.warning_kinds import WARNING_KINDS
from orchestrator.cli.group import main
from orchestrator.errors import InvalidOption

PAGE = Path(__file__).resolve().parents[2] / "docs" / "warnings.md"


def test_the_warnings_page_is_made_from_the_table_and_names_every_code_with_its_rule_and_action():
    page = PAGE.read_text()
    assert warning_docs.with_part(page) == page, (
        "docs/warnings.md is stale: run .venv/bin/python tools/warnings_page.py"
    )
    for k in WARNING_KINDS:
        assert k.gist and k.rule and k.action, k.code
        assert f"### {k.code}\n" in page and k.rule in page and k.action in page


def test_summary_explains_one_code_without_reading_results_and_refuses_an_unknown_one(tmp_path):
    runner = CliRunner()
    shown = runner.invoke(main, ["summary", "--explain", "below_break_even", "--db", str(tmp_path / "none.duckdb")])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert text.startswith("below_break_even: acceptance below the sweep's break-even when: ")
    assert "what to do: These drafts cost more than they save here" in text
    assert not (tmp_path / "none.duckdb").exists()  # a read command never writes
    wrong = runner.invoke(main, ["summary", "--explain", "no_such_code"])
    assert wrong.exit_code == InvalidOption.exit_code and "high_cv, bimodal" in wrong.output
