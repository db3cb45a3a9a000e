"""Re-derive stored metrics with the current parsers: CLI runs from their logs, server runs from their
request rows plus the measured part of their server log."""

from __future__ import annotations

import json

from orchestrator import parse
from orchestrator.parse.server import measured_log, server_metrics
from orchestrator.store import queries, writes


def reparse_all(con) -> int:
    runs = queries.runs_to_reparse(con)
    for run in runs:
        logs = queries.read_logs(con, run["id"])
        if run["mode"] == "server":
            old = json.loads(run["extra"] or "{}")
            offsets = old.get("measured_log_offsets", {})
            parsed = server_metrics(queries.request_rows(con, run["id"]), measured_log(logs, offsets),
                                    wall_s=run["wall_s"], concurrency=old.get("concurrency", 1),
                                    metrics_delta=old.get("metrics_delta", {}), offsets=offsets)
        else:
            parsed = parse.parse_run(logs.get("stdout", ""), logs.get("stderr", ""))
        writes.save_metrics(con, run["id"], parsed)
    for sweep_id in queries.server_sweep_ids(con):
        writes.mark_output_differences(con, sweep_id)
    return len(runs)
