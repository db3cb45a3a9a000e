"""Re-derive stored metrics with the current parsers: CLI runs from their logs, server runs from their
request rows plus the measured part of their server log."""

from __future__ import annotations

import json

from orchestrator import parse
from orchestrator.run import server_run as server_runner
from orchestrator import store


def reparse_all(con) -> int:
    runs = store.rows_as_dicts(con.execute("""
        SELECT r.id, r.mode, r.wall_s, r.sweep_id, m.extra
        FROM runs r JOIN metrics m ON m.run_id = r.id
        WHERE r.id IN (SELECT run_id FROM run_logs) ORDER BY r.id"""))
    for run in runs:
        logs = store.read_logs(con, run["id"])
        if run["mode"] == "server":
            old = json.loads(run["extra"] or "{}")
            rows = store.rows_as_dicts(con.execute("SELECT * FROM requests WHERE run_id = ? ORDER BY seq", [run["id"]]))
            offsets = old.get("measured_log_offsets", {})
            parsed = server_runner.server_metrics(
                rows, server_runner.measured_log(logs, offsets), wall_s=run["wall_s"],
                concurrency=old.get("concurrency", 1), metrics_delta=old.get("metrics_delta", {}), offsets=offsets)
        else:
            parsed = parse.parse_text(logs.get("stderr", "") + "\n" + logs.get("stdout", ""))
        store.save_metrics(con, run["id"], parsed)
    for (sweep_id,) in con.execute("SELECT DISTINCT sweep_id FROM runs WHERE mode = 'server'").fetchall():
        server_runner.mark_output_differences(con, sweep_id)
    return len(runs)
