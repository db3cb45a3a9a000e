"""Server-mode run metrics from request rows (the `requests` table's shape) and the run's server log.

Pure, so a stored run can be derived again (`orch reparse`) without starting anything. Names are the same
canonical ones as CLI runs: pooled decode throughput, acceptance = sum accepted / sum drafted; mean acceptance
length, per-position rates and sequence acceptance from the growth of llama-server's /metrics counters over the
run, else pooled from the run's per-request log lines (parse.acceptance); never from the log's statistics line,
which counts over the server's whole life.
"""

from __future__ import annotations

import re

from orchestrator.parse import METRIC_KEYS, ParsedLog, parse_text
from orchestrator.parse.acceptance import from_counters, from_request_lines

# A /metrics sample line: `llamacpp:NAME{labels} VALUE` (labels only on the per-position series).
PROMETHEUS_LINE = re.compile(r"^llamacpp:(\w+)(\{[^}]*\})?\s+([-+0-9.eE]+|nan|inf)\s*$")


def parse_prometheus(text: str) -> dict[str, float]:
    """`llamacpp:NAME{labels} VALUE` lines of a /metrics body -> {"NAME{labels}": value}; other lines ignored."""
    out = {}
    for line in text.splitlines():
        if m := PROMETHEUS_LINE.match(line.strip()):
            try:
                out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
            except ValueError:
                continue
    return out


def counters_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The speculative counters' growth over a run (a series absent before started at 0)."""
    return {k: after[k] - before.get(k, 0.0) for k in after if k.startswith("spec_decode_")}


def measured_log(logs: dict[str, str | bytes], offsets: dict[str, int]) -> str:
    """The stored server log of a run minus what came before its measurement (start-up, warm-up)."""
    parts = []
    for stream, text in logs.items():
        data = text.encode() if isinstance(text, str) else text
        parts.append(data[offsets.get(stream, 0) :])
    return b"\n".join(parts).decode(errors="replace")


def decode_steps(row: dict) -> int:
    """The tokens a request's decode time covers as its build counts them: every generated token before 2026
    (f49e91787, 7841fc723: n / t), all but the first at 0c1e57098, whose server says "the first token is free, it
    comes from the logits of the last prompt batch" ((n - 1) / t; the time window is the same in every era). Told
    from the rate the build itself reported for the request (the JSON's predicted_per_second, the log's tokens per
    second): whichever of the two it matches."""
    n, ms, rate = row.get("predicted_n") or 0, row.get("predicted_ms"), row.get("predicted_per_second")
    if not n or not ms or rate is None:
        return n
    return min((n, n - 1), key=lambda k: abs(k / ms * 1000 - rate))


def server_metrics(
    rows: list[dict],
    log_text: str,
    *,
    wall_s: float | None,
    concurrency: int | None,
    metrics_delta: dict,
    offsets: dict | None = None,
) -> ParsedLog:
    """Run metrics from request rows (DB shape) and the run's server log; pure, so reparse can redo it."""
    ok = [r for r in rows if r["status"] == "ok"]
    total = {
        k: sum(r[k] or 0 for r in ok)
        for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "draft_n", "draft_n_accepted")
    }
    from_log = parse_text(log_text)
    m = dict.fromkeys(METRIC_KEYS)
    m.update(
        n_predict=total["predicted_n"],
        n_generated=total["predicted_n"],
        n_drafted=total["draft_n"],
        n_accepted=total["draft_n_accepted"],
        prompt_eval_ms=total["prompt_ms"],
        prompt_eval_tokens=total["prompt_n"],
        eval_ms=total["predicted_ms"],
        eval_runs=len(ok),
        total_ms=wall_s * 1000 if wall_s else None,
        spec_type=from_log.metrics.get("spec_type"),
    )
    from_log_requests = from_log.extra.get("server_acceptance") or []
    # The counters where the build has them; else the per-request lines, where every request's steps can be told.
    counted = from_counters(metrics_delta or {}) or from_request_lines(from_log_requests)
    m["mean_accept_len"] = counted.get("mean_accept_len")
    m["accept_rate_per_pos"] = counted.get("accept_rate_per_pos")
    seq = counted.get("seq")
    if seq:
        m.update(seq_acceptance=seq.value, seq_acceptance_low=seq.low, seq_acceptance_high=seq.high)
    if total["draft_n"]:
        m["acceptance"] = total["draft_n_accepted"] / total["draft_n"]
    if total["predicted_ms"]:  # pooled over requests, each counted as its build counts it
        m["decode_tps"] = sum(decode_steps(r) for r in ok) / total["predicted_ms"] * 1000
    if total["prompt_ms"]:
        m["encode_tps"] = total["prompt_n"] / total["prompt_ms"] * 1000
    rates = [r["predicted_per_second"] for r in ok if r["predicted_per_second"]]
    ttfts = [r["ttft_ms"] for r in ok if r["ttft_ms"] is not None]
    log_acc = from_log_requests
    extra = {
        "n_requests": len(rows),
        "n_requests_ok": len(ok),
        "concurrency": concurrency,
        "request_mean_decode_tps": sum(rates) / len(rates) if rates else None,
        "aggregate_tps": total["predicted_n"] / wall_s if wall_s else None,
        "ttft_ms_mean": sum(ttfts) / len(ttfts) if ttfts else None,
        "server_log_acceptance": log_acc,
        "metrics_delta": metrics_delta,
        "measured_log_offsets": offsets or {},
    }
    if seq:
        extra["seq_acceptance_source"] = seq.source
    return ParsedLog(metrics=m, extra=extra, version=from_log.version)


def top_choices(body: dict) -> list[tuple[int, float]] | None:
    """The target's most likely next tokens, (id, log-probability) best first, from a /completion answer asked
    with n_probs: `completion_probabilities[0].top_logprobs` (both recorded eras, 0c1e57098 and f49e91787; the
    log-probabilities come from the raw logits, whatever the sampling settings). None where the answer has no such
    list (an older server answers `probs` with texts and no ids: not read)."""
    first = (body.get("completion_probabilities") or [None])[0] if isinstance(body, dict) else None
    top = first.get("top_logprobs") if isinstance(first, dict) else None
    if not isinstance(top, list):
        return None
    out = []
    for choice in top:
        token, logprob = (choice.get("id"), choice.get("logprob")) if isinstance(choice, dict) else (None, None)
        if not isinstance(token, int) or not isinstance(logprob, (int, float)):
            return None
        out.append((token, float(logprob)))
    return out
