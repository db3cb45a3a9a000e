"""The DuckDB results file: `db` opens it (migrated), `writes` changes it, `queries` reads it (every SELECT).

with store.opened(path) as con:                  # a short write; read_only=True for a shared read
    store.insert_run(con, {...})
    rows = queries.arm_runs(con, [sweep_id])
db = store.Database(path)                          # a sweep: `with db.write() as con:` around each write
"""

from orchestrator.store.db import Database, connect, opened, rows_as_dicts, utc, utc_from_epoch, utcnow
from orchestrator.store.parity import check_outputs, mark_output_differences
from orchestrator.store.quality import find_quality, insert_quality, link_run, quality_row, record_quant
from orchestrator.store.writes import (
    METRIC_COLUMNS,
    StoredRun,
    claim_sweep,
    create_sweep,
    end_sweep,
    insert_requests,
    insert_run,
    insert_telemetry,
    interrupt_running_runs,
    record_build,
    record_model,
    reopen_sweep,
    reserve_run_ids,
    save_logs,
    save_metrics,
    store_runs,
    update_run,
)

__all__ = [
    "Database",
    "connect",
    "opened",
    "rows_as_dicts",
    "utc",
    "utc_from_epoch",
    "utcnow",
    "METRIC_COLUMNS",
    "claim_sweep",
    "create_sweep",
    "end_sweep",
    "insert_requests",
    "insert_run",
    "insert_telemetry",
    "interrupt_running_runs",
    "mark_output_differences",
    "check_outputs",
    "record_build",
    "record_model",
    "reopen_sweep",
    "reserve_run_ids",
    "save_logs",
    "save_metrics",
    "store_runs",
    "StoredRun",
    "update_run",
    "record_quant",
    "find_quality",
    "insert_quality",
    "link_run",
    "quality_row",
]
