"""Server-mode runs: one llama-server per distinct server argv, the prompt set sent over HTTP per run.

A run (arm x repeat) is every prompt of the set once, `concurrency` at a time, after one uncounted
warm-up request per server start. Per-request timings go to `requests`; the run's metrics use the same
canonical names as CLI runs (pooled decode throughput, acceptance = sum accepted / sum drafted).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator import store
from orchestrator.errors import ServerFailed
from orchestrator.machine import telemetry
from orchestrator.parse.modes import request_params
from orchestrator.parse.server import counters_delta
from orchestrator.parse.server_log import WARMUP_MARK, read_server_log
from orchestrator.recipe import argv as flags
from orchestrator.recipe import dialect, prompts
from orchestrator.run import client
from orchestrator.run.server import Server


def server_command(executed: list[str], concurrency: int) -> list[str]:
    """N client threads need N slots: add --parallel N unless the recipe chose its own."""
    if concurrency > 1 and not set(flags.PARALLEL) & flags.flags_in(executed):
        return [*executed, "--parallel", str(concurrency)]
    return list(executed)


class ServerPool:
    """Keeps the current server while consecutive runs ask for the same argv; restarts when it changes."""

    def __init__(self, helps: dict[str, str], work_dir: Path | None = None):
        self.helps = helps
        self.work_dir = work_dir  # the sweep's: a recovery finds a dead orch's server logs there
        self.server: Server | None = None

    def ensure(self, argv: list[str], start_timeout: float) -> tuple[Server, bool]:
        if self.server and self.server.argv == argv and self.server.alive():
            return self.server, False
        self.stop()
        flags = dialect.parse_help(self.helps.get(Path(argv[0]).name, "")).accepted
        log_dir = Path(tempfile.mkdtemp(prefix="server-", dir=self.work_dir))
        self.server = Server(argv=argv, log_dir=log_dir, help_flags=flags, start_timeout=start_timeout)
        self.server.start()
        return self.server, True

    def logs(self) -> dict[str, bytes]:
        """Everything the current server wrote, for a run that failed with it (read before stop())."""
        if not self.server:
            return {}
        return {
            k: p.read_bytes()
            for k, p in (("stdout", self.server.stdout_path), ("stderr", self.server.stderr_path))
            if p.exists()
        }

    def stop(self) -> None:
        if self.server:
            self.server.stop()
            shutil.rmtree(self.server.log_dir, ignore_errors=True)
            self.server = None


def check_speculation(server: Server, warmup: client.RequestResult) -> None:
    """Current builds fall back silently to plain decoding; /slots (or the warm-up's draft_n) tells."""
    engaged = server.speculative_slots()
    if engaged is None:
        engaged = bool(warmup.timings.get("draft_n"))
    if not engaged:
        raise ServerFailed(
            "speculation not engaged: llama-server reported no drafts (check --spec-type and the "
            "draft model; llama-server before mid-2025 reports none at all: use "
            "llama-speculative-simple with such a build)",
            "spec_not_engaged",
            server.log_tail(),
        )


class LogCursor:
    """The part of the server's logs written during one run."""

    def __init__(self, server: Server, fresh: bool):
        self.paths = {"stdout": server.stdout_path, "stderr": server.stderr_path}
        self.start = {k: 0 if fresh else _size(p) for k, p in self.paths.items()}

    def read(self) -> dict[str, bytes]:
        out = {}
        for stream, path in self.paths.items():
            if path.exists():
                with open(path, "rb") as f:
                    f.seek(self.start[stream])
                    out[stream] = f.read()
        return out


SETTLE_S = 2.0  # the longest a run waits for the server to log the end of the requests it has answered


def settled_logs(cursor: LogCursor, wait_s: float = SETTLE_S) -> dict[str, bytes]:
    """cursor.read() once the log shows the end of every request it shows begun. llama.cpp writes its log from a
    thread of its own: a request the server has answered can be logged as ended a moment later (under load, after
    the run's end), and a log read at once then reads back as a request that never finished (a timeout). After
    wait_s, the log as it is."""
    deadline = time.monotonic() + wait_s
    while True:
        logs = cursor.read()
        begun = read_server_log(b"\n".join(logs.values()).decode(errors="replace"))
        if not begun.unfinished or time.monotonic() >= deadline:
            return logs
        time.sleep(0.02)


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


@dataclass(frozen=True)
class ServerRunResult:
    """What one server run hands back to run/one_run.py to parse and store."""

    # The server as it ran.
    command: list[str]  # argv as launched, host and port included
    concurrency: int  # client threads, as many as the server has slots
    # The measured requests (the warm-up is not among them).
    results: list[client.RequestResult]  # one per prompt, in the prompt set's order
    wall_s: float  # the whole batch, first request sent to last answer
    metrics_delta: dict[str, float]  # growth of /metrics' speculative counters over the batch
    # The server's logs over this run: all of it, and the measured part as text with where it starts.
    logs: dict[str, bytes]  # per stream, the warm-up's lines included
    measured_log: str  # the lines written during the measured requests
    measured_offsets: dict[str, int]  # per stream, where the measured part starts in `logs`
    samples: list[telemetry.Sample]  # the run's telemetry; [] when it is off


def execute(
    pool: ServerPool,
    executed: list[str],
    params: dict,
    *,
    expects_speculation: bool,
    timeout: float | None,
    sampler=None,
) -> ServerRunResult:
    """One server run: its requests, /metrics growth, logs and telemetry. Raises ServerFailed."""
    req = request_params(params)
    concurrency = int(req["concurrency"])
    options = client.RequestOptions(
        n_predict=int(req["n_predict"]),
        seed=int(req["seed"]),
        temperature=float(req["temperature"]),
        cache_prompt=bool(req["cache_prompt"]),
        ignore_eos=bool(req["ignore_eos"]),
    )
    _, prompt_list = prompts.load(req["prompt_set"])
    server, fresh = pool.ensure(server_command(executed, concurrency), float(req["server_timeout"]))
    cursor = LogCursor(server, fresh)
    watch = sampler(server.child.pid) if sampler else None
    try:
        if fresh:
            limit = timeout or 600
            warmup = client.complete(
                server.url, prompt_list[0], options, timeout=limit, deadline=time.monotonic() + limit
            )
            if warmup.status != "ok":
                raise ServerFailed(
                    f"warm-up request failed: {warmup.error}",
                    "timeout" if warmup.status == client.TIMED_OUT else "other",
                    server.log_tail(),
                )
            if expects_speculation:
                check_speculation(server, warmup)
            server.mark_log(WARMUP_MARK)  # the log says which request was the warm-up (parse/server_log.py)
        measured = LogCursor(server, fresh=False)  # the warm-up's lines are stored, not counted
        before = server.metrics()
        results, wall_s = client.send_all(
            server.url, prompt_list, options, concurrency=concurrency, timeout=timeout or 600
        )  # the whole run's limit
        metrics_delta = counters_delta(before, server.metrics())
        logs = settled_logs(cursor)  # the end of every answered request included
        measured_offsets = {k: measured.start[k] - cursor.start[k] for k in cursor.start}
        measured_log = b"\n".join(text[measured_offsets[k] :] for k, text in logs.items()).decode(errors="replace")
    finally:
        samples = watch.stop() if watch else []
    return ServerRunResult(
        command=server.command,
        concurrency=concurrency,
        results=results,
        wall_s=wall_s,
        metrics_delta=metrics_delta,
        logs=logs,
        measured_log=measured_log,
        measured_offsets=measured_offsets,
        samples=samples,
    )


def request_rows(run_id: int, results: list[client.RequestResult]) -> list[dict]:
    rows = []
    for seq, r in enumerate(results):
        t = r.timings
        rows.append(
            {
                "run_id": run_id,
                "seq": seq,
                "prompt_id": r.prompt.id,
                "category": r.prompt.category,
                "client": r.client,
                "status": r.status,
                "http_status": r.http_status,
                "error": r.error,
                "cache_n": t.get("cache_n"),
                "prompt_n": t.get("prompt_n"),
                "prompt_ms": t.get("prompt_ms"),
                "predicted_n": t.get("predicted_n"),
                "predicted_ms": t.get("predicted_ms"),
                "predicted_per_second": t.get("predicted_per_second"),
                "draft_n": t.get("draft_n", 0) if t else None,
                "draft_n_accepted": t.get("draft_n_accepted", 0) if t else None,
                "timings": json.dumps(t),
                "ttft_ms": r.ttft_ms,
                "wall_ms": r.wall_ms,
                "output_sha256": r.output_sha256,
                "output_chars": r.output_chars,
                "output_text": r.output_text,
                "started_at": store.utc_from_epoch(r.started),
            }
        )
    return rows
