"""Migration 031: the decisions a finished tune's answers kept in words become typed, as m025 made the events'.

A tune's result (tunes.result) holds its answers; an answer stored before decisions were typed keeps each
candidate's exit as text ("dropped: slower than ..."). m025's reading tells each one's kind and numbers; a text it
cannot tell stays as it was (`orch tune --show` then says the answer does not read). A result that is not JSON, or
not an orch answer list, is left alone: an imported file's rows are data.
"""

from __future__ import annotations

import json

import duckdb

from orchestrator.store.migrations.m025_tune_decision_kinds import legacy_decision


def m031_typed_answer_decisions(con: duckdb.DuckDBPyConnection) -> None:
    for tune_id, result in con.execute("SELECT id, result FROM tunes WHERE result IS NOT NULL").fetchall():
        try:
            data = json.loads(result)
        except (TypeError, ValueError, RecursionError):
            continue
        answers = data.get("answers") if isinstance(data, dict) else None
        changed = False
        for answer in answers if isinstance(answers, list) else []:
            left = answer.get("left") if isinstance(answer, dict) else None
            for name, decision in list(left.items()) if isinstance(left, dict) else []:
                if isinstance(decision, str):
                    event, _, reason = decision.partition(": ")
                    kind, detail = legacy_decision(event, reason)
                    if kind is not None:
                        left[name] = {"kind": kind, "round": 0, **detail}
                        changed = True
        if changed:
            con.execute("UPDATE tunes SET result = ? WHERE id = ?", [json.dumps(data), tune_id])
