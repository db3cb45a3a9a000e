"""The tree's size rule as a test, not a habit: every module of orchestrator/ holds at most 320 lines, so one module
is one job a newcomer reads whole (docs/design.md, "The rules the tree keeps")."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST_LINES = 320


def test_every_module_holds_at_most_320_lines():
    over = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / "orchestrator").rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MOST_LINES}
    assert not over, f"modules over {MOST_LINES} lines (split one by the jobs it does): {over}"
