"""The report's speed-against-quality part (quality mode sweeps): the seeds' table, one row per arm (quant or KV
cache type and context: estimated and measured peak memory, prefill and decode tok/s, PPL ± err, ΔPPL %, KLD,
same top p), and decode tok/s against quality loss with the Pareto front marked: the arms no other arm beats on
both speed and quality, the ones worth choosing between.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator import tables
from orchestrator.analyze.quality import pareto_front
from orchestrator.report.data import SweepData
from orchestrator.report.plots import plt, save

# Parameters that choose what the quality row measures: arms differing only in these share one front.
QUALITY_PARAMS = {"quant", "cache_type", "cache_type_k", "cache_type_v", "target", "model"}
METHOD = (
    "Quality is measured once per model file, build, text, context and KV-cache type with llama-perplexity on the "
    "evaluation text: PPL with its error, ΔPPL % = PPL / PPL(base) - 1 and the KL divergence of each next-token "
    "distribution from the base model's (mean), same top p the share of positions whose most likely token is the "
    "base's. Memory: `est.` is the pre-flight estimate (weights + KV cache), `peak` the measured peak resident set "
    "(CPU) of the speed run. The front joins the arms no other arm beats on both decode speed and quality loss.")


def section(sd: SweepData, out_dir: Path) -> list[str]:
    rows = [r for r in sd.rows if r.get("ppl") is not None]
    if not rows:
        return []
    out = ["### Speed against quality", "", METHOD, "", *table(sd, rows), ""]
    figure = speed_quality(sd, rows, out_dir / f"quality-sweep{sd.id}.png")
    if figure:
        out += [f"![decode tok/s against quality loss, sweep {sd.id}]({figure.name})", ""]
    return out


def table(sd: SweepData, rows: list[dict]) -> list[str]:
    numbers = sd.numbers
    shown = [{"#": numbers[r["arm"]], "arm": r["arm"], "est. memory": _mib(r.get("estimated_bytes")),
              "peak memory": _mib(r.get("peak_rss_bytes")), "prefill tok/s": _num(r.get("prompt_tps")),
              "decode tok/s": _num(r.get("decode_tps")),
              "PPL": None if r["ppl"] is None else f"{r['ppl']:.4g} ± {r['ppl_err'] or 0:.2g}",
              "ΔPPL %": None if r.get("dppl_pct") is None else f"{r['dppl_pct']:+.2f}",
              "KLD": None if r.get("kld") is None else f"{r['kld']:.4g}",
              "same top p": None if r.get("same_top_p") is None else f"{r['same_top_p']:.1f}%"}
             for r in rows]
    return [tables.render(shown, "md")]


def speed_quality(sd: SweepData, rows: list[dict], path: Path) -> Path | None:
    """decode tok/s against KLD (or ΔPPL % where no arm has a KLD), each arm numbered; one colour and one Pareto
    front per setting (the arm's parameters but its quantization and cache type: a 32K-deep arm is never weighed
    against an 8K one)."""
    use_kld = any(r.get("kld") is not None for r in rows)
    key, label = ("kld", "mean KL divergence from the base (lower is better)") if use_kld else \
        ("dppl_pct", "ΔPPL % against the base (lower is better)")
    varying = {k for r in rows for k, v in (r.get("params") or {}).items()
               if any((o.get("params") or {}).get(k) != v for o in rows)}
    groups: dict[str, list[tuple[float, float, int]]] = {}
    for r in rows:
        if r.get(key) is not None and r.get("decode_tps"):
            groups.setdefault(setting(r, varying), []).append((r[key], r["decode_tps"], sd.numbers[r["arm"]]))
    if not groups:
        return None
    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    for i, (name, pts) in enumerate(groups.items()):
        color = f"C{i % 10}"
        front = sorted((pts[j] for j in pareto_front([(x, y) for x, y, _ in pts])), key=lambda p: p[0])
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], color=color, alpha=0.5, zorder=2)
        ax.plot([p[0] for p in front], [p[1] for p in front], "o-", color=color, zorder=3,
                label=f"{name}: Pareto front" if name else "Pareto front")
        for x, y, n in pts:
            ax.annotate(str(n), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel(label)
    ax.set_ylabel("decode tok/s (mean of ok runs)")
    ax.set_title(f"Sweep {sd.id}: speed against quality (numbers: arms in the table)")
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    return save(fig, path)


def setting(row: dict, varying: set[str]) -> str:
    """The arm's varying parameters that are not what the quality measures (quant, cache type, model)."""
    params = row.get("params") or {}
    return ",".join(f"{k}={v}" for k, v in params.items()
                    if k in varying and k not in QUALITY_PARAMS and not k.startswith("quality_"))


def _mib(n) -> str | None:
    return None if n is None else f"{n / 2**20:.1f} MiB"


def _num(x) -> str | None:
    return None if x is None else f"{x:.1f}"
