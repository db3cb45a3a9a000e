"""What a sweep ran, as markdown for the report: recipe, build, host, model files, the arms' parameters (those that
differ in a table, the common ones once), and the arms that measured nothing or less than planned, with why."""

from __future__ import annotations

import json

from orchestrator import tables
from orchestrator.machine import envinfo
from orchestrator.report.data import ModelFile, SweepData
from orchestrator.tables import md_code, md_text

NOT_OK = {"failed": "failed", "timeout": "timed out", "skipped": "skipped", "interrupted": "interrupted"}


def what_ran(sd: SweepData) -> list[str]:
    s, env = sd.sweep, _json(sd.sweep.get("env")) or {}
    build = (
        f"{md_code(s.get('build_name'))}: llama.cpp {md_code(s.get('upstream_commit') or s.get('commit'))}, "
        f"backend {md_text(s.get('backend') or '?')}"
        + (f", CUDA archs {md_text(s['cuda_archs'])}" if s.get("cuda_archs") else "")
    )
    started, ended = s.get("started_at"), s.get("ended_at")
    span = f"{_when(started)} to {_when(ended)}" if ended else f"{_when(started)}, not ended"
    if started and ended:
        span += f" ({tables.clock((ended - started).total_seconds())})"
    argv = _json(s.get("argv"))
    facts = [
        ("recipe", f"{md_code(s.get('recipe_path'))} (sha256 {md_text(str(s.get('recipe_hash'))[:12])})"),
        ("build", build),
        ("host", host_text(env)),
        *[(f"GPU {g.get('index')}", gpu_text(g)) for g in env.get("gpus") or []],
        (
            "runs",
            md_text(
                f"{s.get('runs')} measured, repeat {s.get('repeat')}, "
                f"{s.get('run_order') or 'interleaved'} order; sweep {s.get('status')}"
            ),
        ),
        ("when", md_text(span)),
        ("command", md_code(" ".join(["orch", *argv[1:]])) if argv else "-"),
        (
            "orch",
            md_text(
                f"{env.get('orch_version', '?')} ({env.get('orch_commit') or 'not a git checkout'}"
                f"{' with local changes' if env.get('orch_dirty') else ''})"
            ),
        ),
    ]
    return ["| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in facts], ""]


def host_text(env: dict) -> str:
    if not env:
        return "not recorded"
    ram = f", {env['ram_bytes'] / 2**30:.0f} GiB RAM" if env.get("ram_bytes") else ""
    return (
        f"{md_code(env.get('host'))}: "
        + md_text(f"{env.get('cpu_model')}, {env.get('cpu_logical_cores')} cores{ram}, {env.get('os')}")
        + ("" if env.get("gpus") else "; no GPU")
    )


def gpu_text(g: dict) -> str:
    memory = f" ({g['memory_total_bytes'] / 2**30:.0f} GiB)" if g.get("memory_total_bytes") else ""
    return md_text(f"{g.get('name')}{memory}: {envinfo.power_and_clocks_text(g)}")


def models_table(models: list[ModelFile]) -> list[str]:
    if not models:
        return ["No model file is named by the arms' command lines.", ""]
    rows = [
        {
            "role": m.role,
            "file": m.file,
            "size": _size(m.size_bytes),
            "quantisation": m.file_type,
            "architecture": m.architecture,
            "parameters": _count(m.parameters),
            "arms": ", ".join(map(str, m.arms)),
            "sha256": m.sha256[:12] if m.sha256 else None,
            "from": m.source,
        }
        for m in models
    ]
    return [tables.render(rows, "md"), ""]


def parameters(sd: SweepData) -> list[str]:
    """The parameters every arm shares, once, then one row per arm with the ones that differ and its reference."""
    params = [r.get("params") or {} for r in sd.rows]
    names = list(dict.fromkeys(k for p in params for k in p))
    common = [k for k in names if len({_text(p, k) for p in params}) == 1]
    varying = [k for k in names if k not in common]
    out = [
        "Every arm: "
        + (", ".join(md_code(f"{k}={_value(params[0][k])}") for k in common) or "no shared parameter")
        + ".",
        "",
    ]
    numbers = sd.numbers
    rows = [
        {
            "#": numbers[r["arm"]],
            "arm": r["arm"],
            **{k: _value(r["params"][k], quoted=False) if k in (r.get("params") or {}) else "-" for k in varying},
            "speedup against": _vs(r, numbers),
        }
        for r in sd.rows
    ]
    return out + [tables.render(rows, "md"), ""]


def not_measured(sd: SweepData) -> list[str]:
    """Arms with failed, skipped, timed-out or interrupted runs, and speculative arms that drafted nothing."""
    numbers, rows = sd.numbers, []
    for o in sd.outcomes:
        if o["status"] in NOT_OK:
            total = next((r["runs"] for r in sd.rows if r["arm"] == o["arm"]), o["runs"])
            rows.append(
                {
                    "#": numbers.get(o["arm"]),
                    "arm": o["arm"],
                    "what": NOT_OK[o["status"]],
                    "runs": f"{o['runs']} of {total}",
                    "class": o["failure_class"],
                    "why": _short(o["detail"]),
                }
            )
    for r in sd.rows:
        if r.get("idle"):
            rows.append(
                {
                    "#": numbers[r["arm"]],
                    "arm": r["arm"],
                    "what": "drafted nothing",
                    "runs": f"{r['idle']} of {r['runs']}",
                    "class": None,
                    "why": "ok runs whose speculation never produced a draft: plain decoding, so no speedup",
                }
            )
    if not rows:
        return ["Every run of every arm is ok, and every speculative arm drafted."]
    return [tables.render(sorted(rows, key=lambda x: x["#"] or 0), "md")]


def _vs(row: dict, numbers: dict[str, int]) -> str:
    if row.get("is_baseline"):
        return "(the baseline)"
    vs = row.get("vs")
    return f"#{numbers[vs]} {vs}" if vs in numbers else (vs or "-")


def _text(params: dict, key: str) -> str | None:
    return json.dumps(params[key], sort_keys=True, default=str) if key in params else None


def _value(value, quoted: bool = True) -> str:
    """A parameter as the recipe would write it: none, true, 4096, "text" (unquoted in a table cell)."""
    if isinstance(value, str):
        return json.dumps(value) if quoted else value
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str)
    return str(value).lower() if isinstance(value, bool) or value is None else str(value)


def _short(text: str | None, limit: int = 240) -> str | None:
    return text if not text or len(text) <= limit else text[: limit - 1] + "…"


def _size(n: int | None) -> str | None:
    return None if n is None else f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _count(n: int | None) -> str | None:
    return None if n is None else f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M"


def _when(moment) -> str:
    return moment.isoformat(sep=" ", timespec="seconds") + " UTC" if moment else "-"


def _json(text):
    return json.loads(text) if isinstance(text, str) else text
