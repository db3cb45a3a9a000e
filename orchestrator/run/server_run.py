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
from pathlib import Path

from orchestrator.run import client
from orchestrator.recipe import dialect
from orchestrator import parse
from orchestrator.recipe import prompts
from orchestrator import store
from orchestrator.run.server import Server, ServerFailed

REQUEST_DEFAULTS = {"temperature": 0.0, "cache_prompt": False, "ignore_eos": False, "prompt_set": prompts.DEFAULT,
                    "concurrency": 1, "server_timeout": 120}
SPEC_COUNTERS = ("spec_decode_num_draft_tokens_total", "spec_decode_num_accepted_tokens_total",
                 "spec_decode_num_drafts_total")
PARALLEL_FLAGS = {"-np", "--parallel"}


def request_params(params: dict) -> dict:
    return {**REQUEST_DEFAULTS, **params}


def server_command(executed: list[str], concurrency: int) -> list[str]:
    """N client threads need N slots: add --parallel N unless the recipe chose its own."""
    if concurrency > 1 and not PARALLEL_FLAGS & set(executed):
        return [*executed, "--parallel", str(concurrency)]
    return list(executed)


class ServerPool:
    """Keeps the current server while consecutive runs ask for the same argv; restarts when it changes."""

    def __init__(self, helps: dict[str, str]):
        self.helps = helps
        self.server: Server | None = None

    def ensure(self, argv: list[str], start_timeout: float) -> tuple[Server, bool]:
        if self.server and self.server.argv == argv and self.server.alive():
            return self.server, False
        self.stop()
        flags = dialect.parse_help(self.helps.get(Path(argv[0]).name, "")).accepted
        self.server = Server(argv=argv, log_dir=Path(tempfile.mkdtemp(prefix="orch-server-")), help_flags=flags,
                             start_timeout=start_timeout)
        self.server.start()
        return self.server, True

    def logs(self) -> dict[str, bytes]:
        """Everything the current server wrote, for a run that failed with it (read before stop())."""
        if not self.server:
            return {}
        return {k: p.read_bytes() for k, p in (("stdout", self.server.stdout_path), ("stderr", self.server.stderr_path))
                if p.exists()}

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
        raise ServerFailed("speculation not engaged: llama-server runs without drafting (check --spec-type and "
                           "the draft model)", "spec_not_engaged", server.log_tail())


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


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def execute(pool: ServerPool, executed: list[str], params: dict, *, expects_speculation: bool,
            timeout: float | None, sampler=None) -> dict:
    """One server run; returns logs, request results and /metrics before/after. Raises ServerFailed."""
    req = request_params(params)
    concurrency = int(req["concurrency"])
    options = client.RequestOptions(n_predict=int(req["n_predict"]), seed=int(req["seed"]),
                                    temperature=float(req["temperature"]), cache_prompt=bool(req["cache_prompt"]),
                                    ignore_eos=bool(req["ignore_eos"]))
    _, prompt_list = prompts.load(req["prompt_set"])
    server, fresh = pool.ensure(server_command(executed, concurrency), float(req["server_timeout"]))
    cursor = LogCursor(server, fresh)
    out = {"cursor": cursor, "concurrency": concurrency, "command": server.command}
    watch = sampler(server.child.pid) if sampler else None
    try:
        if fresh:
            limit = timeout or 600
            warmup = client.complete(server.url, prompt_list[0], options, timeout=limit,
                                     deadline=time.monotonic() + limit)
            if warmup.status != "ok":
                raise ServerFailed(f"warm-up request failed: {warmup.error}",
                                   "timeout" if warmup.status == client.TIMED_OUT else "other", server.log_tail())
            if expects_speculation:
                check_speculation(server, warmup)
        measured = LogCursor(server, fresh=False)  # the warm-up's lines are stored, not counted
        before = server.metrics()
        out["results"], out["wall_s"] = client.send_all(server.url, prompt_list, options, concurrency=concurrency,
                                                        timeout=timeout or 600)  # the whole run's limit
        out["metrics_delta"] = _delta(before, server.metrics())
        out["measured_log"] = b"\n".join(measured.read().values()).decode(errors="replace")
        out["measured_offsets"] = {k: measured.start[k] - cursor.start[k] for k in cursor.start}
    finally:
        out["logs"] = cursor.read()
        out["samples"] = watch.stop() if watch else []
    return out


def _delta(before: dict, after: dict) -> dict:
    keys = [k for k in after if k.startswith(SPEC_COUNTERS) or k.startswith("spec_decode_num_accepted_tokens_per_pos")]
    return {k: after[k] - before.get(k, 0.0) for k in keys}


def request_rows(run_id: int, results: list[client.RequestResult]) -> list[dict]:
    rows = []
    for seq, r in enumerate(results):
        t = r.timings
        rows.append({"run_id": run_id, "seq": seq, "prompt_id": r.prompt.id, "category": r.prompt.category,
                     "client": r.client, "status": r.status, "http_status": r.http_status, "error": r.error,
                     "cache_n": t.get("cache_n"), "prompt_n": t.get("prompt_n"), "prompt_ms": t.get("prompt_ms"),
                     "predicted_n": t.get("predicted_n"), "predicted_ms": t.get("predicted_ms"),
                     "predicted_per_second": t.get("predicted_per_second"),
                     "draft_n": t.get("draft_n", 0) if t else None,
                     "draft_n_accepted": t.get("draft_n_accepted", 0) if t else None,
                     "timings": json.dumps(t), "ttft_ms": r.ttft_ms, "wall_ms": r.wall_ms,
                     "output_sha256": r.output_sha256, "output_chars": r.output_chars,
                     "started_at": store.utc_from_epoch(r.started)})
    return rows


def measured_log(logs: dict[str, str | bytes], offsets: dict[str, int]) -> str:
    """The stored server log of a run minus what came before its measurement (start-up, warm-up)."""
    parts = []
    for stream, text in logs.items():
        data = text.encode() if isinstance(text, str) else text
        parts.append(data[offsets.get(stream, 0):])
    return b"\n".join(parts).decode(errors="replace")


def server_metrics(rows: list[dict], log_text: str, *, wall_s: float | None, concurrency: int,
                   metrics_delta: dict, offsets: dict | None = None) -> parse.ParsedLog:
    """Run metrics from request rows (DB shape) and the run's server log; pure, so reparse can redo it."""
    ok = [r for r in rows if r["status"] == "ok"]
    total = {k: sum(r[k] or 0 for r in ok) for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms",
                                                      "draft_n", "draft_n_accepted")}
    from_log = parse.parse_text(log_text)
    m = dict.fromkeys(parse.METRIC_KEYS)
    m.update(n_predict=total["predicted_n"], n_drafted=total["draft_n"], n_accepted=total["draft_n_accepted"],
             prompt_eval_ms=total["prompt_ms"], prompt_eval_tokens=total["prompt_n"], eval_ms=total["predicted_ms"],
             eval_runs=len(ok), total_ms=wall_s * 1000 if wall_s else None,
             mean_accept_len=from_log.metrics.get("mean_accept_len"),
             accept_rate_per_pos=from_log.metrics.get("accept_rate_per_pos"))
    if total["draft_n"]:
        m["acceptance"] = total["draft_n_accepted"] / total["draft_n"]
    if total["predicted_ms"]:
        m["decode_tps"] = total["predicted_n"] / total["predicted_ms"] * 1000  # pooled over requests
    if total["prompt_ms"]:
        m["encode_tps"] = total["prompt_n"] / total["prompt_ms"] * 1000
    rates = [r["predicted_per_second"] for r in ok if r["predicted_per_second"]]
    ttfts = [r["ttft_ms"] for r in ok if r["ttft_ms"] is not None]
    log_acc = from_log.extra.get("server_acceptance") or []
    extra = {"n_requests": len(rows), "n_requests_ok": len(ok), "concurrency": concurrency,
             "request_mean_decode_tps": sum(rates) / len(rates) if rates else None,
             "aggregate_tps": total["predicted_n"] / wall_s if wall_s else None,
             "ttft_ms_mean": sum(ttfts) / len(ttfts) if ttfts else None,
             "server_log_acceptance": log_acc, "metrics_delta": metrics_delta, "measured_log_offsets": offsets or {}}
    return parse.ParsedLog(metrics=m, extra=extra, version=from_log.version)


def mark_output_differences(con, sweep_id: int) -> list[tuple[str, int, int]]:
    """For server arms at temperature 0, count outputs differing from the baseline's; (arm, differing, compared)."""
    rows = store.rows_as_dicts(con.execute("""
        SELECT r.id AS run_id, r.arm, count(*) AS compared,
               count(*) FILTER (WHERE q.output_sha256 <> b.output_sha256) AS differing
        FROM runs r
        JOIN runs rb ON rb.sweep_id = r.sweep_id AND rb.is_baseline AND rb.repeat_index = r.repeat_index
        JOIN requests q ON q.run_id = r.id AND q.status = 'ok'
        JOIN requests b ON b.run_id = rb.id AND b.prompt_id = q.prompt_id AND b.status = 'ok'
        WHERE r.sweep_id = ? AND r.mode = 'server' AND NOT r.is_baseline
          AND NOT coalesce(r.warmup, false) AND NOT coalesce(rb.warmup, false)
          AND CAST(r.params->>'temperature' AS DOUBLE) = 0 AND CAST(rb.params->>'temperature' AS DOUBLE) = 0
        GROUP BY r.id, r.arm ORDER BY r.id""", [sweep_id]))
    for row in rows:
        con.execute("UPDATE metrics SET outputs_differ = ? WHERE run_id = ?", [row["differing"], row["run_id"]])
    return [(r["arm"], r["differing"], r["compared"]) for r in rows]
