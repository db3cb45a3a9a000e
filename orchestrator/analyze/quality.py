"""Quality beside speed: each arm's perplexity / KL-divergence figures (quality mode) and the Pareto front of
decode speed against quality loss that the report marks.

An arm's runs all point at one quality row (its target file, build, text, context, KV-cache types and base);
where a resumed or re-measured sweep has several, the newest counts.
"""

from __future__ import annotations

import json

from orchestrator.store import quality as quality_store

COLUMNS = ("ppl", "dppl_pct", "kld", "same_top_p")  # the summary table's
# Every quality key a summary row has (None without a quality row): every row has the same keys, in one order
FIELDS = ("ppl", "ppl_err", "dppl_pct", "kld", "kld_p99", "same_top_p", "quality_ctx", "cache_type_k", "cache_type_v",
          "peak_rss_bytes", "estimated_bytes")


def arm_quality(con, sweep_ids: list[int]) -> dict[tuple[int, str], dict]:
    """(sweep, arm) -> {ppl, ppl_err, dppl_pct, kld, kld_p99, same_top_p, n_ctx, cache_type_k, cache_type_v}."""
    out: dict[tuple[int, str], dict] = {}
    for r in quality_store.quality_rows(con, sweep_ids):  # ordered by run id: the newest row wins
        key = (r["sweep_id"], r["arm"])
        peak = max(filter(None, [r["peak_rss_bytes"], (out.get(key) or {}).get("peak_rss_bytes")]), default=None)
        out[key] = {
            "ppl": r["ppl"], "ppl_err": r["ppl_err"], "dppl_pct": r["dppl_pct"], "kld": r["kld_mean"],
            "kld_p99": r["kld_p99"], "same_top_p": r["same_top_p"], "quality_ctx": r["n_ctx"],
            "cache_type_k": r["cache_type_k"], "cache_type_v": r["cache_type_v"], "peak_rss_bytes": peak,
            "estimated_bytes": estimated_bytes(r["memfit"])}
    return out


def estimated_bytes(memfit_json: str | None) -> int | None:
    """Weights plus KV cache of every model of the run, as the memory pre-flight estimated them before launch."""
    if not memfit_json:
        return None
    models = json.loads(memfit_json).get("models") or []
    return sum(m["weight_bytes"] + m["kv_bytes"] for m in models) or None


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points (loss, speed) no other point beats on both: lower or equal loss and higher or equal
    speed, better on at least one. Loss is ΔPPL % or KLD (lower is better), speed decode tok/s (higher)."""
    front = []
    for i, (loss, speed) in enumerate(points):
        dominated = any(lo <= loss and sp >= speed and (lo < loss or sp > speed)
                        for j, (lo, sp) in enumerate(points) if j != i)
        if not dominated:
            front.append(i)
    return front
