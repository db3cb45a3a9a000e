"""Migration 025: a tune decision's kind and numbers (tune_events.kind, .detail), read back by a resume instead of
its text.

Before, why a candidate left was only its words (tune_events.reason), and tune read verdicts back from them by
substring: rewording a message changed a verdict. Now tune/decisions.py stores the kind (infeasible, failed,
no_speed, drafted_nothing, output_changed, loops, dropped, winner, tied, refused) and the numbers (the JSON keys are
tune/decisions.Decision's fields); `reason` stays, its words for SQL and the report. Rows stored before are filled
from their words where the words tell the kind (every wording orch ever wrote does); a row they do not tell keeps
kind NULL and its words, and a resume of its tune says so in one line.
"""

from __future__ import annotations

import json
import re

import duckdb

WHERE = r"sweep (?P<sweep_id>\d+), repeat (?P<repeat>\d+)"
# The words of the guards (tune/guards.py before m025), each the kind it tells.
DISQUALIFIED = [
    ("failed", re.compile(rf"^(?P<status>failed|timeout) \((?P<failure_class>.*)\) in {WHERE}$")),
    ("no_speed", re.compile(rf"^no decode speed could be read in {WHERE}$")),
    ("drafted_nothing", re.compile(rf"^drafted nothing in {WHERE}: no speculation result$")),
    (
        "output_changed",
        re.compile(
            rf"^its output at temperature 0 differs from its control's \({WHERE}"
            rf"(?:, first at token (?P<first_diff_token>\d+))?\)"
        ),
    ),
    ("loops", re.compile(rf"^its output loops \({WHERE}\) where plain decoding's does not$")),
]
DROPPED = re.compile(
    r"^slower than (?P<against>.+): (?P<ratio>[0-9.]+)x its speed after (?P<runs>\d+) run\(s\), "
    r"p=(?P<p>\S+) \(Holm over (?P<family>\d+)\)$"
)
INFEASIBLE = re.compile(r"^(?P<status>\S+) before launch: (?P<note>.*)$", re.DOTALL)
REFUSED = re.compile(rf"\({WHERE}\)")
WHOLE = ("sweep_id", "repeat", "runs", "family", "first_diff_token")


def legacy_decision(event: str | None, reason: str | None) -> tuple[str | None, dict]:
    """(kind, numbers) of a decision stored as words (event, reason); (None, {}) where the words do not tell."""
    reason = reason or ""
    if event and reason.startswith(f"{event}: "):  # infeasible rows and answers' texts carry their event
        reason = reason[len(event) + 2 :]
    if event == "infeasible":
        found = INFEASIBLE.match(reason)
        return "infeasible", found.groupdict() if found else {"note": reason}
    if event == "disqualified":
        for kind, pattern in DISQUALIFIED:
            found = pattern.match(reason)
            if found:
                detail = _numbers(found.groupdict())
                if detail.get("failure_class") == "no class":
                    del detail["failure_class"]
                return kind, detail
        return None, {}
    if event == "dropped":
        found = DROPPED.match(reason)
        if not found:
            return "dropped", {"note": reason}
        detail = _numbers(found.groupdict())
        detail["ratio"], detail["p"] = float(detail["ratio"]), float(detail["p"])
        if detail["against"] == "plain decoding":
            del detail["against"]
        return "dropped", detail
    if event in ("winner", "tied"):
        return event, {"outcome": reason} if reason in ("winner", "equivalent", "unseparated") else {"note": reason}
    if event == "refused":
        found = REFUSED.search(reason)
        return "refused", _numbers(found.groupdict()) if found else {"note": reason}
    return None, {}


def _numbers(groups: dict) -> dict:
    return {k: int(v) if k in WHOLE else v for k, v in groups.items() if v is not None}


def m025_tune_decision_kinds(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("ALTER TABLE tune_events ADD COLUMN kind VARCHAR")
    con.execute("ALTER TABLE tune_events ADD COLUMN detail JSON")
    filled = []
    for row_id, event, reason in con.execute("SELECT id, event, reason FROM tune_events").fetchall():
        try:
            kind, detail = legacy_decision(event, reason)
            if kind:
                filled.append([kind, json.dumps(detail, allow_nan=False), row_id])
        except ValueError:  # a number that is none (p=nan): its words stay, its kind unknown
            continue
    if filled:
        con.executemany("UPDATE tune_events SET kind = ?, detail = ? WHERE id = ?", filled)
