"""How close orch's prediction before running comes to what each drafting arm then measured (issue 46, item 7).

Each sweep runs as `orch run` runs it: where no probe of this machine's costs (llama-bench) or of the pair's
acceptance on the workload is stored, the sweep probes first, then prints and stores each drafting arm's predicted
speedup against its control before the first run; the sweep then measures it. Printed per drafting arm: predicted
with its interval, measured with its interval, the error (predicted / measured - 1) and whether the measurement
fell inside the prediction's interval; then the median and the worst error. A benchmark: it prints figures (the
machine's noise decides them; nothing is asserted). Measure alone: a figure taken beside other work is noise.

The real pair (docs/draft-models.md), `make demo`'s three workloads and the draft-size sweep on code completion,
and Gemma 3 270M's n-gram arms on `make demo-gemma`'s four workloads (an n-gram setting is predicted from one
probe run of its own: run/lookup_probe):

    .venv/bin/orch models get qwen2.5-coder-pair --out models; .venv/bin/orch models get gemma-3-270m --out models
    ORCH_MODELS=models .venv/bin/python benchmarks/prediction.py [--build 0c1e570] [--repeat 3] [--only gemma]
    ORCH_MODELS=<tiny models> .venv/bin/python benchmarks/prediction.py --quick   # tiny models, seconds
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
import _where  # noqa: E402  (benchmarks/_where.py: the build and models a benchmark uses)

sys.path.insert(0, str(ROOT))

from orchestrator import store  # noqa: E402
from orchestrator.store import probes  # noqa: E402

ORCH = str(Path(sys.executable).parent / "orch")
SWEEPS = {
    "demo": [("real_pair.j2", "code_complete"), ("real_pair.j2", "repeat_list"), ("real_pair.j2", "open_prose")],
    "draft-size": [("pair_draft_sweep.j2", "code_complete")],
    "gemma": [("real_demo.j2", w) for w in ("code_edit", "repeat_list", "open_prose", "short_fact")],
}


def sweeps(quick: bool, only: list[str]) -> list[list[str]]:
    """The `orch run` arguments of each sweep."""
    if quick:
        return [[str(ROOT / "recipes" / "recipe_a.j2"), "--vars", str(ROOT / "recipes" / "tiny.toml")]]
    return [
        [str(ROOT / "recipes" / recipe), "--vars", str(ROOT / "recipes" / "workloads" / f"{work}.toml")]
        for group in only
        for recipe, work in SWEEPS[group]
    ]


def measured(db: Path) -> list[dict]:
    """Every drafting arm's prediction beside its measured speedup (summary JSON, against the same control)."""
    import json

    res = subprocess.run(
        [ORCH, "summary", "--last", "1000", "--format", "json", "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = {(r["sweep"], r["arm"]): r for r in json.loads(res.stdout)}
    with store.opened(db, read_only=True) as con:
        predicted = probes.predictions_of(con, sorted({s for s, _ in rows}))
    out = []
    for p in predicted:
        r = rows.get((p["sweep_id"], p["arm"]), {})
        work = (r.get("params") or {}).get("workload") or r.get("recipe")
        out.append(
            {
                "sweep": p["sweep_id"],
                "workload": work,
                "arm": p["arm"],
                "predicted": p["predicted"],
                "low": p["low"],
                "high": p["high"],
                "missing": p["missing"],
                "measured": r.get("speedup"),
                "m_low": r.get("speedup_low"),
                "m_high": r.get("speedup_high"),
                "tokens_per_pass": p["tokens_per_pass"],
                "measured_tpp": r.get("mean_accept_len"),
            }
        )
    return out


def report(rows: list[dict]) -> None:
    print(f"{'sweep':>5}  {'workload':<14} {'arm':<26} {'predicted':>22}  {'measured':>22}  {'error':>7}  inside")
    errors = []
    for r in rows:
        if r["predicted"] is None or not r["measured"]:
            said = (
                f"no prediction: {r['missing']}"
                if r["predicted"] is None
                else f"{r['predicted']:5.2f}x [{r['low']:.2f}, {r['high']:.2f}]  no speedup measured (drafted nothing)"
            )
            print(f"{r['sweep']:>5}  {r['workload']!s:<14} {r['arm']:<26} {said}")
            continue
        error = r["predicted"] / r["measured"] - 1
        errors.append((abs(error), r))
        inside = r["low"] <= r["measured"] <= r["high"]
        m_ci = f"[{r['m_low']:.2f}, {r['m_high']:.2f}]" if r["m_low"] is not None else ""
        print(
            f"{r['sweep']:>5}  {r['workload']!s:<14} {r['arm']:<26} "
            f"{r['predicted']:5.2f}x [{r['low']:.2f}, {r['high']:.2f}]  {r['measured']:5.2f}x {m_ci:>14}  "
            f"{error:+7.1%}  {'yes' if inside else 'NO'}"
        )
    if errors:
        worst = max(errors, key=lambda e: e[0])
        print(
            f"\n{len(errors)} drafting arms: median error {statistics.median(e for e, _ in errors):.1%}, worst "
            f"{worst[0]:.1%} ({worst[1]['arm']} on {worst[1]['workload']}); "
            f"{sum(r['low'] <= r['measured'] <= r['high'] for _, r in errors)} inside their interval"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny models, one sweep of one repeat (seconds)")
    ap.add_argument("--build", default=None, help="build reference (default: the newest)")
    ap.add_argument("--repeat", type=int, default=None, help="repeats per arm (default: the recipe's; --quick 1)")
    ap.add_argument("--db", type=Path, default=None, help="keep the results here (default: a temporary file)")
    ap.add_argument(
        "--only",
        action="append",
        choices=list(SWEEPS),
        default=None,
        help="only these sweeps (repeatable; default: all): make demo's, the draft-size sweep, Gemma's",
    )
    ap.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="DB",
        help="run nothing: the table of the sweeps already in this results file",
    )
    args = ap.parse_args()
    if args.report:
        report(measured(args.report))
        return
    build = _where.project(args.build, tiny=args.quick)
    with tempfile.TemporaryDirectory(prefix="orch-prediction-") as tmp:
        db = args.db or Path(tmp) / "results.duckdb"
        repeat = args.repeat or (1 if args.quick else None)
        for sweep in sweeps(args.quick, args.only or list(SWEEPS)):
            argv = [
                ORCH,
                "run",
                *sweep,
                "--build",
                build,
                "--db",
                str(db),
                "--no-summary",
                *(["--repeat", str(repeat)] if repeat else []),
            ]
            print("$ orch " + " ".join(Path(a).name if a.startswith(str(ROOT)) else a for a in argv[1:]), flush=True)
            res = subprocess.run(argv, env=os.environ, capture_output=True, text=True)
            for line in res.stderr.splitlines():
                if "predicted" in line or "no prediction" in line:
                    print("  " + line)
            if res.returncode not in (0, 15):  # 15: a run failed; the rest is measured
                raise SystemExit(f"orch run failed ({res.returncode}): {res.stderr[-2000:]}")
        report(measured(db))


if __name__ == "__main__":
    main()
