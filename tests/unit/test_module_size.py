"""The tree's size rules as tests, not habits (docs/design.md, "The rules the tree keeps"): every module of
orchestrator/ holds at most 320 lines, so one module is one job a newcomer reads whole; no function in analyze/
takes more than 8 parameters, so a decision over many facts takes them as one typed input (analyze/warnings.py's
ArmFacts)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST_LINES = 320
MOST_PARAMETERS = 8


def test_every_module_holds_at_most_320_lines():
    over = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / "orchestrator").rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MOST_LINES
    }
    assert not over, f"modules over {MOST_LINES} lines (split one by the jobs it does): {over}"


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
    return len([n for n in names if n.arg not in ("self", "cls")])


def test_no_function_in_analyze_takes_more_than_8_parameters():
    wide = {
        f"{p.relative_to(ROOT)}:{fn.name}": n
        for p in sorted((ROOT / "orchestrator" / "analyze").rglob("*.py"))
        for fn in ast.walk(ast.parse(p.read_text()))
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and (n := _parameters(fn)) > MOST_PARAMETERS
    }
    assert not wide, f"functions over {MOST_PARAMETERS} parameters (take the facts as one dataclass): {wide}"
