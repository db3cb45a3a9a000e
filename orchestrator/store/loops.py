"""Degenerate loops: each ok run's generated text measured for repetition when its sweep ends (parse/repetition.py),
stored as metrics.loop_share and degenerate_loop; the summary warns (`degenerate_loop`) and the verdict never calls
a speedup measured on such runs a win.

CLI runs: the generation read from stdout (parse/output.py), the prompt from the argv (what makes a repetition
literal). Server runs: each request's stored output; the run's share is its requests' largest, and it loops when
any request does. A server run's prompts are not stored beside the requests, so there no repetition is literal.
"""

from __future__ import annotations

import json

import duckdb

from orchestrator.parse import output
from orchestrator.parse.modes import mode_of
from orchestrator.parse.repetition import Repetition, repetition
from orchestrator.store import logs, queries

Con = duckdb.DuckDBPyConnection


def mark_loops(con: Con, sweep_id: int) -> int:
    """Store the loop measure on the sweep's ok runs that have a readable generated text; how many loop."""
    found: list[tuple[int, Repetition]] = []
    for r in queries.runs_for_loops(con, sweep_id):
        if mode_of(r["mode"]).serves:  # a text per request
            measured = [repetition(text) for text in r["outputs"] or [] if text]
            shares = [m for m in measured if m.loop_share is not None]
            if shares:
                worst = max(shares, key=lambda m: (m.degenerate_loop, m.loop_share))
                found.append((r["run_id"], worst))
            continue
        argv = json.loads(r["argv"] or "[]")
        text = output.generated_text(logs.stdout_text(con, r["run_id"]) or "", argv)
        if text:
            found.append((r["run_id"], repetition(text, output.prompt_of(argv))))
    if found:
        con.executemany(
            "UPDATE metrics SET loop_share = ?, degenerate_loop = ? WHERE run_id = ?",
            [[m.loop_share, m.degenerate_loop, run_id] for run_id, m in found],
        )
    return sum(m.degenerate_loop for _, m in found)
