"""The DuckDB results file: `db` opens it (migrated), `writes` changes it, `queries` reads it (every SELECT).

    with store.opened(path) as con:
        store.insert_run(con, {...})
        rows = queries.arm_runs(con, [sweep_id])
"""

from orchestrator.store.db import (
                                       connect,
                                       opened,
                                       rows_as_dicts,
                                       utc,
                                       utc_from_epoch,
                                       utcnow,
)
from orchestrator.store.writes import (
                                       METRIC_COLUMNS,
                                       create_sweep,
                                       end_sweep,
                                       fail_running_runs,
                                       insert_requests,
                                       insert_run,
                                       insert_telemetry,
                                       interrupt_running_runs,
                                       mark_output_differences,
                                       record_build,
                                       record_model,
                                       reopen_sweep,
                                       save_logs,
                                       save_metrics,
                                       update_run,
)

__all__ = ["connect", "opened", "rows_as_dicts", "utc", "utc_from_epoch", "utcnow", "METRIC_COLUMNS", "create_sweep",
           "end_sweep", "fail_running_runs", "insert_requests", "insert_run", "insert_telemetry",
           "interrupt_running_runs", "mark_output_differences", "record_build", "record_model", "reopen_sweep",
           "save_logs", "save_metrics", "update_run"]
