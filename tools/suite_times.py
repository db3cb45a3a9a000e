"""Where the test suite's time goes: a JUnit XML report of a run (`make test JUNIT=FILE`, which passes
`--junitxml FILE` to pytest) summed by test file and by kind, as Markdown tables for docs/benchmarks.md.

A test's time in the report is its setup, call and teardown: a session fixture's first user carries its cost (the
cold builds, the Gemma download, the shared demo), so the kind of that file carries it too. Under pytest-xdist the
files run side by side on several workers: the sums are worker time, more than the wall time.

    .venv/bin/python tools/suite_times.py [LABEL=]FILE.xml [[LABEL=]FILE.xml ...] [--files 40]
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict

# What a file exercises, by the most expensive real part it starts (the rest: tiny models on the real builds).
KINDS = {
    "real builds": ("test_build_real", "test_build_additions", "test_default_build", "test_relocate", "test_bisect"),
    "real model (Gemma)": ("test_real_model", "test_models_get", "test_tune"),
    "real pair (Qwen2.5-Coder)": ("test_real_pair",),
    "Ray": ("test_ray_cluster",),
    # the README's and the docs' examples run (until the suite ran on two workers, test_readme also ran the Gemma demo)
    "docs": ("test_readme", "test_docs_figures", "test_docs", "test_output_width"),
}


def kind_of(path: str) -> str:
    if path.startswith("tests/unit/") and not path.endswith("/test_docs.py"):
        return "unit"
    stem = path.rsplit("/", 1)[-1].removesuffix(".py")
    return next((kind for kind, stems in KINDS.items() if stem in stems), "tiny-model integration")


def file_times(xml_path: str) -> dict[str, tuple[float, int]]:
    """test file -> (seconds, tests) from a JUnit XML report."""
    times: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/")
        path = path if path.startswith("tests/") else f"tests/{path}"
        path = path.split("/Test", 1)[0]  # a class's methods count to their file
        times[f"{path}.py"][0] += float(case.get("time") or 0)
        times[f"{path}.py"][1] += 1
    return {path: (seconds, n) for path, (seconds, n) in times.items()}


def by_kind(times: dict[str, tuple[float, int]]) -> dict[str, tuple[float, int]]:
    kinds: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for path, (seconds, n) in times.items():
        kinds[kind_of(path)][0] += seconds
        kinds[kind_of(path)][1] += n
    return {kind: (seconds, n) for kind, (seconds, n) in kinds.items()}


def table(rows: dict[str, list[tuple[float, int] | None]], labels: list[str], first: str) -> list[str]:
    """One row per key, a `seconds (tests)` column per report, slowest in the first report first."""
    lines = [f"| {first} | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    order = sorted(rows, key=lambda k: -max((c[0] for c in rows[k][:1] if c), default=0))
    for key in order:
        cells = [f"{c[0]:.0f} ({c[1]})" if c else "-" for c in rows[key]]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", metavar="LABEL=FILE.xml", help="one column per report")
    parser.add_argument("--files", type=int, default=40, help="the slowest files listed (default 40)")
    args = parser.parse_args()
    labels = [r.split("=", 1)[0] if "=" in r else r for r in args.reports]
    times = [file_times(r.split("=", 1)[-1]) for r in args.reports]
    kinds = [by_kind(t) for t in times]
    rows = {k: [kind.get(k) for kind in kinds] for k in dict.fromkeys(k for kind in kinds for k in kind)}
    rows["all"] = [(sum(s for s, _ in t.values()), sum(n for _, n in t.values())) for t in times]
    print("\n".join(table(rows, labels, "kind: seconds (tests)")) + "\n")
    files = {f: [t.get(f) for t in times] for f in dict.fromkeys(f for t in times for f in t)}
    slowest = dict(sorted(files.items(), key=lambda kv: -max(c[0] if c else 0 for c in kv[1]))[: args.files])
    print("\n".join(table({f.removeprefix("tests/"): v for f, v in slowest.items()}, labels, "file: seconds (tests)")))


if __name__ == "__main__":
    main()
