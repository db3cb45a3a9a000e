"""Regenerate the docs' pictures (docs/figures/*.png) from real runs: `make docs-figures`.

Into a fresh results file in a temporary folder, with the orch of this checkout:
  1. `orch run recipes/real_demo.j2` on the weekday-list workload (Gemma 3 270M Q4_K_M), then `orch report`: the
     decode-per-arm, acceptance-against-speedup and acceptance-by-position figures;
  2. `orch tune recipes/tune.j2 --workload repeat_list`, then `orch report --tune 1`: the race;
  3. `recipes/spec_defaults.j2` (a draft model at the build's own drafting defaults) on the Qwen2.5-Coder pair at two
     builds, then `orch history`: a metric across builds, and `orch report` of the newer build's sweep: acceptance
     by draft position (n-gram arms print no per-position rates).
The PNGs are copied to docs/figures/ with MADE_BY.txt (every command, the builds, the host, the date), so a page
that shows a picture can say which command made it. `--tiny` draws every figure from the tiny models (seconds: what
the test suite checks); the committed pictures come from the real models (`orch models get gemma-3-270m` and
`orch models get qwen2.5-coder-pair` into --models).

    .venv/bin/python tools/docs_figures.py [--build 0c1e570] [--old-build f49e917] [--models DIR] [--tiny]
                                           [--out docs/figures]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORCH = [sys.executable, "-c", "from orchestrator.entry import main; main()"]
FIGURES = {"decode.png": "decode-sweep1.png", "acceptance.png": "acceptance-sweep1.png"}


def orch(args: list[str], env: dict, made: list[str]) -> None:
    made.append("orch " + " ".join(args))
    res = subprocess.run([*ORCH, *args], env=env, cwd=ROOT, capture_output=True, text=True)
    if res.returncode not in (0, 15):  # 15: a sweep stored with some failed runs still draws
        sys.exit(f"docs_figures: `orch {' '.join(args)}` failed ({res.returncode}): {res.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="0c1e570")
    parser.add_argument("--old-build", default="f49e917")
    parser.add_argument(
        "--models",
        type=Path,
        default=Path(os.environ.get("ORCH_MODELS", ROOT / "models")),
        help="the folder holding Gemma 3 270M and the Qwen2.5-Coder pair (orch models get "
        "gemma-3-270m, orch models get qwen2.5-coder-pair)",
    )
    parser.add_argument("--tiny", action="store_true", help="tiny models only (seconds): a check that it works")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "figures")
    args = parser.parse_args()
    made: list[str] = []
    with tempfile.TemporaryDirectory(prefix="orch-docs-figures-") as tmp:
        work = Path(tmp)
        tiny = work / "tiny"
        env = {**os.environ, "ORCH_DB": str(work / "results.duckdb"), "ORCH_MODELS": str(args.models)}
        if args.tiny:
            orch(["models", "tiny", "--out", str(tiny)], env, made)
            env["ORCH_MODELS"] = str(tiny)
            model = ["--set", "target=tiny-target.gguf", "--set", "n_predict=32", "--set", "threads=1"]
            pair, history = ["--vars", "recipes/tiny.toml"], {**env, "ORCH_MODELS": str(tiny)}
        else:
            model = ["--set", f"threads={os.cpu_count()}"]
            pair, history = ["--vars", "recipes/pair.toml", "--set", "n_predict=64", *model], env
        orch(
            [
                "run",
                "recipes/real_demo.j2",
                "--build",
                args.build,
                "--vars",
                "recipes/workloads/repeat_list.toml",
                "--repeat",
                "3",
                "--no-summary",
                *model,
            ],
            env,
            made,
        )
        orch(["report", "--last", "1", "--out", str(work / "report")], env, made)
        orch(
            ["tune", "recipes/tune.j2", "--build", args.build, "--workload", "repeat_list", "--max-runs", "4", *model],
            env,
            made,
        )
        orch(["report", "--tune", "1", "--out", str(work / "tune")], env, made)
        for build in (args.old_build, args.build):
            orch(
                ["run", "recipes/spec_defaults.j2", *pair, "--build", build, "--repeat", "2", "--no-summary"],
                history,
                made,
            )
        orch(
            [
                "history",
                "spec_defaults.j2",
                "--arm",
                "draft",
                "--metric",
                "acceptance",
                "--png",
                str(work / "history.png"),
            ],
            history,
            made,
        )
        # n-gram arms print no per-position rates; the draft model of spec_defaults does (the newer build's sweep)
        orch(["report", "--last", "1", "--out", str(work / "positions")], history, made)
        args.out.mkdir(parents=True, exist_ok=True)
        for name, drawn in FIGURES.items():
            shutil.copyfile(work / "report" / drawn, args.out / name)
        shutil.copyfile(next((work / "tune").glob("race-*.png")), args.out / "race.png")
        shutil.copyfile(next((work / "positions").glob("positions-*.png")), args.out / "positions.png")
        shutil.copyfile(work / "history.png", args.out / "history.png")
    when = datetime.now(UTC).isoformat(timespec="seconds")
    (args.out / "MADE_BY.txt").write_text(
        f"Made by tools/docs_figures.py{' --tiny' if args.tiny else ''} on {when}, host {platform.node()} "
        f"({os.cpu_count()} cores, {platform.machine()}), builds {args.build} and {args.old_build}, in a fresh "
        f"results file, with:\n" + "\n".join(made).replace(str(work), "DIR") + "\n"
    )
    print(f"docs_figures: {len(FIGURES) + 3} pictures in {args.out}")


if __name__ == "__main__":
    main()
