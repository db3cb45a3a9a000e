"""The report's speed-against-quality part (quality mode sweeps): the seeds' table, one row per arm (quant or KV
cache type and context: estimated and measured peak memory, prefill and decode tok/s, PPL ± err, ΔPPL %, KLD,
same top p), and decode tok/s against quality loss with the Pareto front marked: the arms no other arm beats on
both speed and quality, the ones worth choosing between.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator import tables
from orchestrator.analyze import cells, stats
from orchestrator.analyze.quality import pareto_front
from orchestrator.report.data import SweepData
from orchestrator.report.plots import interval, plt, save

# Parameters that choose what the quality row measures: arms differing only in these share one front.
QUALITY_PARAMS = ("quant", "cache_type", "cache_type_k", "cache_type_v", "target", "model")  # in label order
METHOD = (
    "Quality is measured once per model file, build, text, context and KV-cache type with llama-perplexity on the "
    "evaluation text: PPL with its error, ΔPPL % = PPL / PPL(base) - 1 and the KL divergence of each next-token "
    "distribution from the base model's (mean), same top p the share of positions whose most likely token is the "
    "base's. Memory: `est.` is the pre-flight estimate (weights + KV cache), `peak` the measured peak resident set "
    "(CPU) of the speed run. Each figure has its error (± one standard error, as llama-perplexity gives it; ΔPPL's is "
    "that of the ratio PPL/PPL(base) over the same tokens, far below PPL's own). The front joins the arms no other "
    "arm beats on both decode speed and quality loss beyond their 95% intervals."
)


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
    # The quality figures' cells, errors included, are the summary's (analyze/cells): one place for their digits
    figures = {
        title: cells.texts(rows, column)
        for title, column in (("PPL", "ppl"), ("ΔPPL", "dppl_pct"), ("KLD", "kld"), ("same top p", "same_top_p"))
    }
    shown = [
        {
            "#": numbers[r["arm"]],
            "arm": r["arm"],
            "est. memory": _mib(r.get("estimated_bytes")),
            "peak memory": _mib(r.get("peak_rss_bytes")),
            "prefill tok/s": _num(r.get("prompt_tps")),
            "decode tok/s": _num(r.get("decode_tps")),
            **{title: texts[i] for title, texts in figures.items()},
        }
        for i, r in enumerate(rows)
    ]
    return [tables.render(shown, "md")]


def speed_quality(sd: SweepData, rows: list[dict], path: Path) -> Path | None:
    """decode tok/s (with its 95% interval) against KLD or ΔPPL % where no arm has a KLD (with llama-perplexity's
    error), each point labelled by its arm; one colour and one Pareto front per setting (the arm's parameters but
    its quantization and cache type: a 32K-deep arm is never weighed against an 8K one). The front drops a point
    only where another beats it beyond both intervals (analyze/quality.pareto_front)."""
    use_kld = any(r.get("kld") is not None for r in rows)
    key, err, label = (
        ("kld", "kld_err", "mean KL divergence from the base (95% interval; lower is better)")
        if use_kld
        else ("dppl_pct", "dppl_err", "ΔPPL % against the base (95% interval; lower is better)")
    )
    varying = {
        k
        for r in rows
        for k, v in (r.get("params") or {}).items()
        if any((o.get("params") or {}).get(k) != v for o in rows)
    }
    groups: dict[str, list[dict]] = {}
    for r in rows:
        if r.get(key) is not None and r.get("decode_tps"):
            groups.setdefault(setting(r, varying), []).append(r)
    if not groups:
        return None
    fig, ax = plt.subplots(figsize=(10, 6))
    for i, (name, arms) in enumerate(groups.items()):
        color = f"C{i % 10}"
        spans = [_point(r, key, err) for r in arms]
        front = sorted((spans[j] for j in pareto_front(spans)), key=lambda p: p[0])
        for (x, x_low, x_high, y, y_low, y_high), r in zip(spans, arms):
            ax.errorbar(x, y, xerr=[[x - x_low], [x_high - x]], fmt="o", color=color, alpha=0.6, capsize=2, zorder=2)
            interval(ax, "y", x, y_low, y_high, ecolor=color, alpha=0.6, capsize=2, zorder=2)  # may not hold y
            ax.annotate(
                f"{sd.numbers[r['arm']]} {_short(r, varying)}",
                (x, y),
                textcoords="offset points",
                xytext=(5, 4),
                fontsize=7,
            )
        ax.plot(
            [p[0] for p in front],
            [p[3] for p in front],
            "-",
            color=color,
            zorder=3,
            label=f"{name}: Pareto front" if name else "Pareto front",
        )
    ax.set_xlabel(label)
    ax.set_ylabel("decode tok/s (mean of ok runs, 95% interval)")
    ax.set_title(sd.figure_title("speed against quality"), fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)  # beside the axes: never over a point
    ax.grid(alpha=0.3)
    return save(fig, path)


def _point(row: dict, key: str, err: str) -> tuple[float, float, float, float, float, float]:
    """(loss, low, high, speed, low, high): both in their 95% intervals (the loss's from its standard error; either
    its value alone where no error is known)."""
    loss, speed = row[key], row["decode_tps"]
    return (
        loss,
        *stats.error_interval(loss, row.get(err)),
        speed,
        row.get("ci_low") or speed,
        row.get("ci_high") or speed,
    )


def _short(row: dict, varying: set[str]) -> str:
    """What a point's label says of its arm: the values that tell it apart (q4_0-asked-q2_k), else its name."""
    params = row.get("params") or {}
    told = [str(params[k]) for k in QUALITY_PARAMS if k in varying and k in params]
    return ", ".join(told) or row["arm"]


def setting(row: dict, varying: set[str]) -> str:
    """The arm's varying parameters that are not what the quality measures (quant, cache type, model)."""
    params = row.get("params") or {}
    return ",".join(
        f"{k}={v}"
        for k, v in params.items()
        if k in varying and k not in QUALITY_PARAMS and not k.startswith("quality_")
    )


def _mib(n) -> str | None:
    return None if n is None else f"{n / 2**20:.1f} MiB"


def _num(x) -> str | None:
    return None if x is None else f"{x:.1f}"
