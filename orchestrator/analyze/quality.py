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
FIELDS = (
    "ppl",
    "ppl_err",
    "dppl_pct",
    "dppl_err",
    "kld",
    "kld_err",
    "kld_p99",
    "same_top_p",
    "same_top_p_err",
    "quality_ctx",
    "cache_type_k",
    "cache_type_v",
    "peak_rss_bytes",
    "estimated_bytes",
)
# A figure's error as llama-perplexity prints it (one standard error): shown beside it wherever it is compared.
# ΔPPL's is that of PPL(Q)/PPL(base), computed over the same tokens, far below PPL's own (±9% on a 2,272-token text).
ERRORS = {"dppl_pct": "dppl_err", "kld": "kld_err", "same_top_p": "same_top_p_err", "ppl": "ppl_err"}


def arm_quality(con, sweep_ids: list[int]) -> dict[tuple[int, str], dict]:
    """(sweep, arm) -> {ppl, ppl_err, dppl_pct, kld, kld_p99, same_top_p, n_ctx, cache_type_k, cache_type_v}."""
    out: dict[tuple[int, str], dict] = {}
    for r in quality_store.quality_rows(con, sweep_ids):  # ordered by run id: the newest row wins
        key = (r["sweep_id"], r["arm"])
        peak = max(filter(None, [r["peak_rss_bytes"], (out.get(key) or {}).get("peak_rss_bytes")]), default=None)
        out[key] = {
            "ppl": r["ppl"],
            "ppl_err": r["ppl_err"],
            "dppl_pct": r["dppl_pct"],
            "dppl_err": None if r["ppl_ratio_err"] is None else 100 * r["ppl_ratio_err"],
            "kld": r["kld_mean"],
            "kld_err": r["kld_mean_err"],
            "kld_p99": r["kld_p99"],
            "same_top_p": r["same_top_p"],
            "same_top_p_err": r["same_top_p_err"],
            "quality_ctx": r["n_ctx"],
            "cache_type_k": r["cache_type_k"],
            "cache_type_v": r["cache_type_v"],
            "peak_rss_bytes": peak,
            "estimated_bytes": estimated_bytes(r["memfit"]),
        }
    return out


def estimated_bytes(memfit_json: str | None) -> int | None:
    """Weights plus KV cache of every model of the run, as the memory pre-flight estimated them before launch."""
    if not memfit_json:
        return None
    models = json.loads(memfit_json).get("models") or []
    return sum(m["weight_bytes"] + m["kv_bytes"] for m in models) or None


def pareto_front(points: list[tuple]) -> list[int]:
    """Indices of the points no other point beats on both loss (ΔPPL % or KLD, lower is better) and speed (decode
    tok/s, higher). A point is (loss, speed), or (loss, loss_low, loss_high, speed, speed_low, speed_high) with
    intervals (None where unknown: the value itself). With intervals a point is beaten only where the intervals
    say so: the other's loss interval at or below its own and its speed interval at or above, apart on at least
    one (two decode speeds whose intervals overlap are not told apart, so neither is dropped for it)."""
    spans = [_span(p) for p in points]
    front = []
    for i, (lo, _hi, _slow, sfast) in enumerate(spans):
        dominated = any(
            o_hi <= lo and o_slow >= sfast and (o_hi < lo or o_slow > sfast)
            for j, (o_lo, o_hi, o_slow, o_fast) in enumerate(spans)
            if j != i
        )
        if not dominated:
            front.append(i)
    return front


def _span(point: tuple) -> tuple[float, float, float, float]:
    """(loss low, loss high, speed low, speed high) of a point, its value where an end is unknown."""
    if len(point) == 2:
        return point[0], point[0], point[1], point[1]
    loss, loss_low, loss_high, speed, speed_low, speed_high = point
    return (
        loss if loss_low is None else loss_low,
        loss if loss_high is None else loss_high,
        speed if speed_low is None else speed_low,
        speed if speed_high is None else speed_high,
    )
