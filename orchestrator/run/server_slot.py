"""One slot of a server-mode arm: its requests sent to the arm's llama-server (started once per arm by the sweep's
pool), each request's timings parsed and pooled into the run's metrics, a server that died stored with its log."""

from __future__ import annotations

from orchestrator import store
from orchestrator.errors import ServerFailed
from orchestrator.parse.modes import request_params
from orchestrator.parse.server import server_metrics
from orchestrator.run import client, server_run
from orchestrator.run.measuring import speed_text
from orchestrator.run.one_run import RunInputs, RunRecord, expects_speculation, stopped_record, telemetry_summary


def run_server_slot(inputs: RunInputs, timeout: float | None, pool: server_run.ServerPool) -> tuple[RunRecord, str]:
    """One server run: its record and its progress line. Ctrl-C: an interrupted record on the exception."""
    p = inputs.prepared
    params = request_params(p.arm.params)
    if stopped := stopped_record(inputs, params):
        return stopped, f"{stopped.status} ({p.stop_class})"
    row, folder = inputs.begin(params)
    before = inputs.measuring.host_snapshot()
    try:
        out = server_run.execute(
            pool,
            p.executed,
            params,
            expects_speculation=expects_speculation(p.executed),
            timeout=timeout,
            sampler=inputs.measuring.sampler,
        )
    except ServerFailed as exc:
        logs = pool.logs() or {"server_tail": exc.log_tail.encode()}  # whole logs, kept
        pool.stop()
        status = "timeout" if exc.failure_class == "timeout" else "failed"
        record = RunRecord(
            inputs.run_id,
            {
                **row,
                "status": status,
                "failure_class": exc.failure_class,
                "failure_detail": str(exc),
                "ended_at": store.utcnow(),
            },
            logs,
            folder=folder,
        )
        return record, f"{status} ({exc.failure_class}): {exc}"
    except KeyboardInterrupt as stop:
        stop.record = RunRecord(
            inputs.run_id, {**row, "status": "interrupted", "ended_at": store.utcnow()}, pool.logs(), folder=folder
        )
        raise
    rows = server_run.request_rows(inputs.run_id, out.results)
    errors = [r for r in rows if r["status"] != "ok"]
    timed_out = any(r["status"] == client.TIMED_OUT for r in rows)
    if timed_out:
        pool.stop()  # a server still streaming past the limit is not reused
    status = "timeout" if timed_out else "failed" if errors else "ok"
    parsed = server_metrics(
        rows,
        out.measured_log,
        wall_s=out.wall_s,
        concurrency=out.concurrency,
        metrics_delta=out.metrics_delta,
        offsets=out.measured_offsets,
    )
    samples = [x.to_dict() for x in out.samples]
    record = RunRecord(
        inputs.run_id,
        {
            **row,
            "status": status,
            "failure_class": "timeout" if timed_out else "other" if errors else None,
            "failure_detail": f"{len(errors)} of {len(rows)} requests failed: {errors[0]['error']}" if errors else None,
            "wall_s": out.wall_s,
            "executed_argv": out.command,
            "telemetry": telemetry_summary(out.samples, before),
            "ended_at": store.utcnow(),
        },
        out.logs,
        samples,
        parsed,
        rows,
        folder,
    )
    if errors:
        return (
            record,
            f"{status}: {len(errors)} of {len(rows)} requests failed ({errors[0]['error']}) run {inputs.run_id}",
        )
    return record, (
        f"ok, {len(rows)} requests, {speed_text(parsed.metrics, p, inputs.measuring)} pooled "
        f"({out.wall_s:.1f}s) run {inputs.run_id}"
    )
